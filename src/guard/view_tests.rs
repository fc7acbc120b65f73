//! In-backend tests of another role's `security_invoker` view read through pg_ask: the view
//! runs its owner's query with the reader's privileges, and which relations its branches scan
//! is counted in statistics every role reads (an eighth review read a victim's secret from
//! `pg_stat_user_tables.seq_scan` after a rolled-back read). Such a view may read only what
//! its owner may; the reader's own views, a superuser's and the views reading what their
//! owner may read still work.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use super::super::attack_tests::tests::{do_as_victim, roles};
    use crate::pg::testing::*;

    /// `read` run through `ask.query()` as the current role is refused, the message naming
    /// every part of `named`.
    fn refused_naming(read: &str, named: &[&str]) {
        let r = error_report(&format!("SELECT * FROM ask.query($q${read}$q$)"));
        let said = r.as_ref().map(|r| r.1.clone()).unwrap_or_default();
        assert!(named.iter().all(|n| said.contains(n)), "BROKE {read}: {r:?}");
    }

    #[pg_test]
    fn another_roles_invoker_view_reads_only_what_its_owner_may() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.c_104 (x int); CREATE TABLE att.other (x int); INSERT INTO att.other VALUES (1);
             CREATE VIEW att.news WITH (security_invoker = true) AS
                 SELECT 'news'::text AS headline FROM vic.secret
                  WHERE (CASE pg_catalog.ascii(pg_catalog.substr(s, 1, 1)) WHEN 104 THEN EXISTS (SELECT FROM att.c_104) ELSE true END) IS NOT NULL;
             CREATE VIEW att.wrapped WITH (security_invoker = true) AS SELECT headline FROM att.news;
             CREATE VIEW att.fine WITH (security_invoker = true) AS SELECT x FROM att.other;
             GRANT SELECT ON att.c_104, att.other, att.news, att.wrapped, att.fine TO PUBLIC;
             RESET ROLE;
             GRANT SELECT ON vic.secret TO ask_vic;
             SET ROLE ask_vic;
             CREATE VIEW vic.mine AS SELECT headline FROM att.wrapped;
             CREATE VIEW vic.own WITH (security_invoker = true) AS SELECT s FROM vic.secret;
             RESET ROLE;",
        )
        .unwrap();
        Spi::run("SET ROLE ask_vic").unwrap();
        for read in ["SELECT headline FROM att.news", "SELECT headline FROM att.wrapped", "SELECT headline FROM vic.mine"] {
            refused_naming(read, &["another role's", "vic.secret"]);
        }
        // Reads the view's owner may make itself, and the reader's own view.
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.query('SELECT x FROM att.fine')"), 1);
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.query('SELECT s FROM vic.own')"), 1);
        Spi::run("RESET ROLE").unwrap();
        // A superuser's invoker view over the same table is the database's own.
        Spi::run("CREATE VIEW public.admin_news WITH (security_invoker = true) AS SELECT s FROM vic.secret; GRANT SELECT ON public.admin_news TO ask_vic")
            .unwrap();
        Spi::run("SET ROLE ask_vic").unwrap();
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.query('SELECT s FROM public.admin_news')"), 1);
        Spi::run("RESET ROLE").unwrap();
    }

    /// A ninth review's: a column the owner may not read of a table it may read one column of,
    /// rows row-level security hides from the owner, a sequence, another role's policy reading
    /// the reader's table, another role's plain view over `pg_stats`.
    #[pg_test]
    fn another_roles_code_reads_no_column_row_sequence_or_statistic_of_the_reader() {
        roles();
        Spi::run(
            "SET ROLE ask_vic;
             CREATE TABLE vic.cols (id int, s text); INSERT INTO vic.cols VALUES (1, 'hunter2');
             GRANT SELECT (id) ON vic.cols TO ask_att;
             CREATE TABLE vic.rows (who text, s text); INSERT INTO vic.rows VALUES ('ask_vic', 'mine');
             ALTER TABLE vic.rows ENABLE ROW LEVEL SECURITY;
             CREATE POLICY own ON vic.rows USING (who = current_user);
             GRANT SELECT ON vic.rows TO ask_att;
             CREATE SEQUENCE vic.private; SELECT nextval('vic.private');
             RESET ROLE;
             SET ROLE ask_att;
             CREATE VIEW att.v_cols WITH (security_invoker = true) AS SELECT s FROM vic.cols;
             CREATE VIEW att.v_rows WITH (security_invoker = true) AS SELECT s FROM vic.rows;
             CREATE VIEW att.v_seq WITH (security_invoker = true) AS SELECT last_value FROM vic.private;
             CREATE TABLE att.pol (x int); INSERT INTO att.pol VALUES (1);
             ALTER TABLE att.pol ENABLE ROW LEVEL SECURITY;
             CREATE POLICY p ON att.pol USING (EXISTS (SELECT FROM vic.secret WHERE s LIKE 'h%'));
             CREATE VIEW att.stats AS SELECT histogram_bounds::text AS h FROM pg_catalog.pg_stats WHERE tablename = 'secret';
             CREATE VIEW att.v_whole WITH (security_invoker = true) AS SELECT t::text AS r FROM vic.cols t;
             CREATE VIEW att.p_rows AS SELECT s FROM vic.rows;
             CREATE VIEW att.activity AS SELECT query FROM pg_catalog.pg_stat_activity;
             GRANT SELECT ON att.v_cols, att.v_rows, att.v_seq, att.pol, att.stats, att.v_whole, att.p_rows, att.activity TO PUBLIC;
             RESET ROLE;
             GRANT SELECT ON vic.secret TO ask_vic;",
        )
        .unwrap();
        Spi::run("SET ROLE ask_vic").unwrap();
        for (read, named) in [
            ("SELECT s FROM att.v_cols", "vic.cols.s"),
            ("SELECT s FROM att.v_rows", "vic.rows"),
            ("SELECT last_value FROM att.v_seq", "vic.private"),
            ("SELECT x FROM att.pol", "vic.secret"),
            ("SELECT h FROM att.stats", "pg_stats"),
            ("SELECT r FROM att.v_whole", "vic.cols"),
            ("SELECT s FROM att.p_rows", "vic.rows"),
            ("SELECT query FROM att.activity", "pg_stat_activity"),
        ] {
            refused_naming(read, &[named]);
        }
        Spi::run("RESET ROLE").unwrap();
    }

    /// Another role's view and policy call their functions as the reader: built-ins whose
    /// result follows the calling session (other sessions' queries, read directly rather than
    /// through `pg_stat_activity`) and functions only the reader may execute are refused, at
    /// every level of the views read; the reader's own view and a superuser's call them.
    #[pg_test]
    fn another_roles_code_calls_nothing_that_follows_the_reader() {
        roles();
        Spi::run(
            "CREATE FUNCTION public.private_note() RETURNS text STABLE LANGUAGE sql AS $$ SELECT 'note' $$;
             REVOKE EXECUTE ON FUNCTION public.private_note() FROM PUBLIC;
             GRANT EXECUTE ON FUNCTION public.private_note() TO ask_vic;
             SET ask.allowed_functions = 'public.private_note';
             SET ROLE ask_att;
             CREATE VIEW att.sessions AS SELECT a.query FROM pg_catalog.pg_stat_get_activity(NULL::int) a;
             CREATE VIEW att.backends AS SELECT pg_catalog.pg_stat_get_backend_activity(b) AS query FROM pg_catalog.pg_stat_get_backend_idset() b;
             CREATE VIEW att.note AS SELECT public.private_note() AS n;
             CREATE VIEW att.outer_sessions WITH (security_invoker = true) AS SELECT query FROM att.sessions;
             CREATE TABLE att.pid (x int); INSERT INTO att.pid VALUES (1);
             ALTER TABLE att.pid ENABLE ROW LEVEL SECURITY;
             CREATE POLICY p ON att.pid USING (pg_catalog.pg_backend_pid() OPERATOR(pg_catalog.>) 0);
             GRANT SELECT ON att.sessions, att.backends, att.note, att.outer_sessions, att.pid TO PUBLIC;
             RESET ROLE;
             SET ROLE ask_vic;
             CREATE VIEW vic.mine AS SELECT query FROM att.sessions;
             CREATE VIEW vic.own AS SELECT a.query, public.private_note() AS n FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) a;
             RESET ROLE;
             CREATE VIEW public.admin_sessions AS SELECT a.query FROM pg_catalog.pg_stat_get_activity(NULL::int) a;
             GRANT SELECT ON public.admin_sessions TO ask_vic;",
        )
        .unwrap();
        Spi::run("SET ROLE ask_vic").unwrap();
        for (read, named) in [
            ("SELECT query FROM att.sessions", "pg_stat_get_activity()"),
            ("SELECT query FROM att.backends", "pg_stat_get_backend_"),
            ("SELECT n FROM att.note", "private_note(), which its owner may not execute"),
            ("SELECT query FROM att.outer_sessions", "att.sessions"),
            ("SELECT query FROM vic.mine", "att.sessions"),
            ("SELECT x FROM att.pid", "pg_backend_pid()"),
        ] {
            refused_naming(read, &[named, "another role's"]);
        }
        // The reader's own view, and a superuser's, run the same calls.
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.query('SELECT n FROM vic.own')"), 1);
        assert!(one::<i64>("SELECT count(*) FROM ask.query('SELECT query FROM public.admin_sessions')") >= 1);
        Spi::run("RESET ROLE").unwrap();
    }

    /// An eleventh review's: the views another role's code reads that someone else owns run in
    /// the reader's session too: a superuser's system views over the reader's prepared
    /// statements and cursors, the reader's user mappings' options, a third role's view of
    /// rows by `current_user`, in a view or in a policy; the reader's own view by reader. A
    /// system view that shows the same to everyone is read, by any superuser too.
    #[pg_test]
    fn what_another_roles_code_reads_of_other_owners_follows_no_reader() {
        roles();
        Spi::run(
            "CREATE ROLE ask_app; CREATE SCHEMA app AUTHORIZATION ask_app; GRANT USAGE ON SCHEMA app TO PUBLIC;
             CREATE FOREIGN DATA WRAPPER ask_dummy_fdw; CREATE SERVER ask_srv FOREIGN DATA WRAPPER ask_dummy_fdw;
             CREATE USER MAPPING FOR ask_vic SERVER ask_srv OPTIONS (user 'vic_remote', password 'Secr3t');
             GRANT USAGE ON FOREIGN SERVER ask_srv TO ask_vic;
             SET ROLE ask_app;
             CREATE TABLE app.orders (owner name, card text);
             INSERT INTO app.orders VALUES ('ask_vic', '4111-9999'), ('ask_att', '0000');
             CREATE VIEW app.my_orders AS SELECT card FROM app.orders WHERE owner = current_user;
             GRANT SELECT ON app.my_orders TO PUBLIC;
             RESET ROLE;
             SET ROLE ask_vic;
             CREATE VIEW vic.mine AS SELECT s FROM vic.secret WHERE current_user = 'ask_vic';
             GRANT SELECT ON vic.mine TO ask_att;
             RESET ROLE;
             SET ROLE ask_att;
             CREATE VIEW att.ps AS SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements) AS c;
             CREATE VIEW att.cur AS SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_cursors) AS c;
             CREATE VIEW att.um AS SELECT (SELECT pg_catalog.count(*) FROM information_schema.user_mapping_options) AS c;
             CREATE VIEW att.mo AS SELECT (SELECT pg_catalog.count(*) FROM app.my_orders) AS c;
             CREATE VIEW att.vm AS SELECT (SELECT pg_catalog.count(*) FROM vic.mine) AS c;
             CREATE VIEW att.tables AS SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'att' AND tablename = 'lookup';
             CREATE TABLE att.lookup (id int); INSERT INTO att.lookup VALUES (1);
             ALTER TABLE att.lookup ENABLE ROW LEVEL SECURITY;
             CREATE POLICY p ON att.lookup USING ((SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements) >= 0);
             GRANT SELECT ON att.ps, att.cur, att.um, att.mo, att.vm, att.tables, att.lookup TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        Spi::run("SET ROLE ask_vic").unwrap();
        for (read, named) in [
            ("SELECT c FROM att.ps", "pg_prepared_statement"),
            ("SELECT c FROM att.cur", "pg_cursor"),
            ("SELECT c FROM att.um", "information_schema."),
            ("SELECT c FROM att.mo", "app.my_orders"),
            ("SELECT c FROM att.vm", "vic.mine"),
            ("SELECT id FROM att.lookup", "pg_prepared_statement"),
        ] {
            refused_naming(read, &[named]);
        }
        Spi::run("RESET ROLE").unwrap();
        // A write step through another role's policy that reads the writer's prepared statements.
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.inbox (x int); ALTER TABLE att.inbox ENABLE ROW LEVEL SECURITY;
             CREATE POLICY ins ON att.inbox FOR INSERT WITH CHECK ((SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements) >= 0);
             CREATE POLICY sel ON att.inbox FOR SELECT USING (true);
             GRANT SELECT, INSERT ON att.inbox TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        let refused = do_as_victim("Step 1: add\n```sql\nINSERT INTO att.inbox (x) VALUES (1);\n```");
        assert!(refused.as_deref().is_some_and(|e| e.contains("pg_prepared_statement")), "BROKE the write step: {refused:?}");
        assert_eq!(one::<i64>("SELECT count(*) FROM att.inbox"), 0);
        Spi::run("SET ROLE ask_vic").unwrap();
        // The same catalog view for everyone: read by the reader, and by the superuser whose
        // own views the system views are.
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.query('SELECT tablename FROM att.tables')"), 1);
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.query('SELECT tablename FROM att.tables')"), 1);
    }

    /// A twelfth review's: another role's foreign table as an inheritance child or a partition
    /// of that role's table is read with the reader's user mapping like the foreign table read
    /// by name (refused since the tenth review): refused, read or written; and another role's
    /// view learns the reader's search path by what it makes visible.
    #[pg_test]
    fn another_roles_foreign_child_or_partition_and_visibility_are_refused() {
        roles();
        Spi::run(
            "CREATE FOREIGN DATA WRAPPER ask_dummy_fdw; CREATE SERVER ask_srv FOREIGN DATA WRAPPER ask_dummy_fdw;
             CREATE USER MAPPING FOR ask_vic SERVER ask_srv OPTIONS (user 'vic_remote');
             GRANT USAGE ON FOREIGN SERVER ask_srv TO ask_att;
             SET ROLE ask_att;
             CREATE TABLE att.parent (s text);
             CREATE FOREIGN TABLE att.fchild () INHERITS (att.parent) SERVER ask_srv OPTIONS (table_name 'secret');
             CREATE TABLE att.pp (s text) PARTITION BY LIST (s);
             CREATE FOREIGN TABLE att.fpart PARTITION OF att.pp DEFAULT SERVER ask_srv;
             CREATE VIEW att.iv WITH (security_invoker = true) AS SELECT s FROM att.parent;
             CREATE TABLE att.t2 (x int); INSERT INTO att.t2 VALUES (1); ALTER TABLE att.t2 ENABLE ROW LEVEL SECURITY;
             CREATE POLICY p2 ON att.t2 USING ((SELECT pg_catalog.count(*) FROM att.parent) >= 0);
             CREATE VIEW att.visible AS SELECT pg_catalog.count(*) AS c FROM pg_catalog.pg_class c WHERE pg_catalog.pg_table_is_visible(c.oid);
             GRANT SELECT, DELETE ON att.parent, att.fchild, att.pp, att.fpart, att.iv, att.t2, att.visible TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        Spi::run("SET ROLE ask_vic").unwrap();
        for (read, named) in [
            ("SELECT s FROM att.parent", "att.fchild"),
            ("SELECT s FROM att.pp", "att.fpart"),
            ("SELECT s FROM att.iv", "att.fchild"),
            ("SELECT x FROM att.t2", "att.fchild"),
            ("SELECT c FROM att.visible", "pg_table_is_visible()"),
        ] {
            refused_naming(read, &[named]);
        }
        Spi::run("RESET ROLE").unwrap();
        // A write through the parent is refused before it runs (the foreign scan never starts).
        let refused = do_as_victim("Step 1: clean\n```sql\nDELETE FROM att.pp WHERE s = 'x';\n```");
        assert!(refused.as_deref().is_some_and(|e| e.contains("att.fpart") && e.contains("user mapping")), "BROKE the write: {refused:?}");
    }
}
