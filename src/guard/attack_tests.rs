//! In-backend tests of attacks on the guard from a review by a role of its own: an attacker
//! (`ask_att`) owns objects in the path of a victim's (`ask_vic`) query or a superuser's
//! verification — column defaults, rules, views and policies in an `ask.do()` step, domain
//! CHECKs calling effectful built-ins, a cascade's trigger, an overload of a listed function,
//! `ts_rewrite` running SQL text, an extension's function in a domain a superuser reaches —
//! and what must keep working (foreign tables, text search templates, citext, foreign keys,
//! information_schema, a table whose index or check constraint calls its owner's function).
//! Each test asserts what the guard promises; a failing one is an attack that broke through.

#[pgrx::pg_schema]
pub(super) mod tests {
    use llm_standin::Script;
    use pgrx::prelude::*;

    use crate::pg::subxact::{self, OnSuccess};
    use crate::pg::testing::*;

    fn locks() -> i64 {
        one::<i64>("SELECT count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid()")
    }

    fn lock_ids() -> String {
        Spi::get_one::<String>(
            "SELECT coalesce(string_agg(objid::text, ','), '') FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid()",
        )
        .unwrap()
        .unwrap_or_default()
    }

    pub(crate) fn search_path() -> String {
        one::<String>("SELECT current_setting('search_path')")
    }

    /// Runs `sql` keeping its effects on success; the error message otherwise.
    fn run_keep(sql: &str) -> Option<String> {
        let sql = sql.to_string();
        match subxact::run(OnSuccess::Release, move || Spi::run(&sql).unwrap()) {
            Ok(()) => None,
            Err(pgrx::pg_sys::panic::CaughtError::PostgresError(r)) | Err(pgrx::pg_sys::panic::CaughtError::ErrorReport(r)) => {
                Some(r.message().to_string())
            }
            Err(e) => e.rethrow(),
        }
    }

    pub(crate) fn roles() {
        Spi::run(
            "CREATE ROLE ask_att; CREATE ROLE ask_vic;
             CREATE SCHEMA att AUTHORIZATION ask_att; GRANT USAGE ON SCHEMA att TO PUBLIC;
             CREATE SCHEMA vic AUTHORIZATION ask_vic; GRANT USAGE ON SCHEMA vic TO PUBLIC;
             GRANT USAGE ON SCHEMA public TO ask_vic;
             SET ROLE ask_vic;
             CREATE TABLE vic.secret (s text); INSERT INTO vic.secret VALUES ('hunter2');
             RESET ROLE;",
        )
        .unwrap();
    }

    /// ask.do as the victim with one scripted reply; returns the error if any (effects kept).
    pub(crate) fn do_as_victim(reply: &str) -> Option<String> {
        Spi::run("SET ROLE ask_vic; SET ask.max_attempts = 1; SET ask.allow_writes = on").unwrap();
        let _s = llm(Script::reply_always(reply));
        let sp0 = search_path();
        let out = run_keep("SELECT ask.do('do the thing')");
        let sp1 = search_path();
        Spi::run("RESET ask.allow_writes").unwrap();
        Spi::run("RESET ROLE").unwrap();
        if sp0 != sp1 {
            return Some(format!("SEARCH_PATH CHANGED from {sp0} to {sp1}; ask.do result: {out:?}"));
        }
        out
    }

    /// 1. Column DEFAULTs (added by the rewriter, after write_step_refusal's analysis) and a
    ///    CHECK constraint calling built-in volatile functions run as the victim in ask.do.
    #[pg_test]
    fn a1_do_insert_defaults_run_volatile_builtins() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.inbox (x int,
                 l boolean DEFAULT pg_catalog.pg_try_advisory_lock(101),
                 sp text DEFAULT pg_catalog.set_config('search_path', 'att, pg_catalog, public', false));
             GRANT INSERT ON att.inbox TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        let out = do_as_victim("Step 1: add\n```sql\nINSERT INTO att.inbox (x) VALUES (1);\n```");
        let sp = search_path();
        let ids = lock_ids();
        assert!(locks() == 0 && !sp.contains("att"), "BROKE defaults: locks [{ids}], search_path {sp}, do: {out:?}");
    }

    /// 1b. A domain's DEFAULT on a column the step does not set: the rewriter adds it as it
    ///     adds a column's, and it ran as the writer (a review found a superuser's `search_path`
    ///     hijacked this way). Refused, the domain named; the writer's own domain still works.
    #[pg_test]
    fn a1b_do_insert_domain_default_is_held_to_the_list() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE DOMAIN att.stamp AS text DEFAULT pg_catalog.set_config('search_path', 'att, pg_catalog, public', false);
             CREATE TABLE att.requests (msg text, stamp att.stamp);
             GRANT INSERT, SELECT ON att.requests TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        let out = do_as_victim("Step 1: add\n```sql\nINSERT INTO att.requests (msg) VALUES ('hi');\n```");
        let sp = search_path();
        let rows = one::<i64>("SELECT count(*) FROM att.requests");
        assert!(!sp.contains("att") && rows == 0, "BROKE domain default: search_path {sp}, rows {rows}, do: {out:?}");
        let out = out.unwrap_or_default();
        assert!(out.contains("att.stamp"), "the refusal names the domain: {out}");
        // The victim's own domain with a volatile default is its own code.
        Spi::run(
            "SET ROLE ask_vic;
             CREATE DOMAIN vic.tag AS text DEFAULT pg_catalog.md5(pg_catalog.random()::text);
             CREATE TABLE vic.notes (msg text, tag vic.tag);
             RESET ROLE;",
        )
        .unwrap();
        let out = do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.notes (msg) VALUES ('mine');\n```");
        assert_eq!(out, None);
        assert_eq!(one::<i64>("SELECT count(*) FROM vic.notes WHERE tag IS NOT NULL"), 1);
    }

    /// 1c. A deferrable constraint trigger on another role's table fires at COMMIT, after every
    ///     check made while the step runs: a write that would queue it is refused.
    #[pg_test]
    fn a1c_do_insert_deferred_trigger_is_held_to_the_list() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.guestbook (msg text);
             CREATE TABLE att.loot (who text);
             GRANT INSERT, SELECT ON att.guestbook, att.loot TO PUBLIC;
             CREATE FUNCTION att.later() RETURNS trigger LANGUAGE plpgsql AS
                 $f$ BEGIN INSERT INTO att.loot VALUES (current_user); RETURN NULL; END $f$;
             CREATE CONSTRAINT TRIGGER later AFTER INSERT ON att.guestbook
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION att.later();
             RESET ROLE;",
        )
        .unwrap();
        let out = do_as_victim("Step 1: sign\n```sql\nINSERT INTO att.guestbook VALUES ('hello');\n```");
        // What COMMIT would fire, fired now.
        Spi::run("SET CONSTRAINTS ALL IMMEDIATE").unwrap();
        let loot = Spi::get_one::<String>("SELECT string_agg(who, ',') FROM att.loot").unwrap().unwrap_or_default();
        assert!(loot.is_empty(), "BROKE deferred trigger: ran as {loot}, do: {out:?}");
        let out = out.unwrap_or_default();
        assert!(out.contains("deferrable trigger later") && out.contains("at COMMIT"), "the refusal names the trigger: {out}");
    }

    /// 2. A DO ALSO rule (the rewriter is not run by write_step_refusal).
    #[pg_test]
    fn a2_do_insert_rule_action_runs() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.box2 (x int);
             CREATE TABLE att.loot2 (who text, what text);
             CREATE RULE r2 AS ON INSERT TO att.box2 DO ALSO
                 INSERT INTO att.loot2 VALUES (current_user, pg_catalog.pg_try_advisory_lock(102)::text
                      || pg_catalog.set_config('search_path', 'att, pg_catalog, public', false));
             GRANT INSERT ON att.box2 TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        let out = do_as_victim("Step 1: add\n```sql\nINSERT INTO att.box2 VALUES (1);\n```");
        let loot = Spi::get_one::<String>("SELECT string_agg(who || ':' || what, ';') FROM att.loot2").unwrap().unwrap_or_default();
        let sp = search_path();
        let ids = lock_ids();
        assert!(locks() == 0 && !sp.contains("att"), "BROKE rule: locks [{ids}], search_path {sp}, loot {loot}, do: {out:?}");
    }

    /// 3. A SELECT step of ask.do over a view / an RLS policy / a domain with volatile built-ins:
    ///    execute_step checks the statement before the rewriter, so the view's and the
    ///    policy's functions are not checked for volatility.
    #[pg_test]
    fn a3_do_select_step_view_policy() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.plain (x int); INSERT INTO att.plain VALUES (1), (2);
             CREATE VIEW att.vw AS SELECT x, pg_catalog.pg_try_advisory_lock(103) AS l,
                    pg_catalog.set_config('search_path', 'att, pg_catalog, public', false) AS sp FROM att.plain;
             CREATE TABLE att.pol (x int); INSERT INTO att.pol VALUES (1);
             ALTER TABLE att.pol ENABLE ROW LEVEL SECURITY;
             CREATE POLICY p ON att.pol USING (pg_catalog.pg_try_advisory_lock(104));
             GRANT SELECT ON att.plain, att.vw, att.pol TO PUBLIC; GRANT INSERT ON att.plain TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        // The read path refuses both (volatility after the rewriter).
        Spi::run("SET ROLE ask_vic").unwrap();
        let r1 = error_report("SELECT * FROM ask.query('SELECT x FROM att.vw')");
        let r2 = error_report("SELECT * FROM ask.query('SELECT x FROM att.pol')");
        Spi::run("RESET ROLE").unwrap();
        let read_locks = lock_ids();
        let out = do_as_victim(
            "Step 1: read\n```sql\nSELECT x FROM att.vw;\n```\nStep 2: read\n```sql\nSELECT x FROM att.pol;\n```\nStep 3: add\n```sql\nINSERT INTO att.plain VALUES (3);\n```",
        );
        let sp = search_path();
        let ids = lock_ids();
        assert!(
            locks() == 0 && !sp.contains("att"),
            "BROKE select step: locks [{ids}] (after read path: [{read_locks}], read refusals {r1:?} {r2:?}), search_path {sp}, do: {out:?}"
        );
    }

    /// 4. A domain CHECK calling a volatile built-in, reached by a cast in a read (ask.query):
    ///    contain_volatile_functions does not look into domain constraints; the session lock
    ///    outlives the rolled-back subtransaction.
    #[pg_test]
    fn a4_read_domain_check_volatile_builtin() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE DOMAIN att.vdom AS int CHECK (pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext(VALUE::text)::bigint));
             CREATE TABLE att.dt (d att.vdom); GRANT SELECT, INSERT ON att.dt TO PUBLIC;
             RESET ROLE; SET ROLE ask_vic;",
        )
        .unwrap();
        let r = error_report("SELECT * FROM ask.query('SELECT 5::att.vdom AS v')");
        let r2 = error_report("SELECT * FROM ask.query($q$SELECT count(*) FROM att.dt WHERE d = '7'::att.vdom$q$)");
        Spi::run("RESET ROLE").unwrap();
        let ids = lock_ids();
        assert!(locks() == 0, "BROKE domain read: locks [{ids}], {r:?} {r2:?}");
    }

    /// 5. A foreign-key cascade: the RI query runs as the child table's owner (the attacker),
    ///    whose trigger function then counts as "the caller's own function" (CURRENT_USER).
    ///    (An AFTER trigger is queued to the outer query and refused as the victim; a BEFORE
    ///    trigger fires inside the RI query.)
    #[pg_test]
    fn a5_do_delete_fk_cascade_trigger() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.parent (id int PRIMARY KEY); INSERT INTO att.parent VALUES (1), (2);
             CREATE TABLE att.child (pid int REFERENCES att.parent ON DELETE CASCADE); INSERT INTO att.child VALUES (1);
             CREATE TABLE att.loot5 (who text);
             CREATE FUNCTION att.trg() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 INSERT INTO att.loot5 VALUES (current_user || '/' || session_user);
                 PERFORM pg_catalog.pg_advisory_lock(105);
                 PERFORM pg_catalog.set_config('search_path', 'att, pg_catalog, public', false);
                 RETURN OLD;
             END $$;
             CREATE TRIGGER t BEFORE DELETE ON att.child FOR EACH ROW EXECUTE FUNCTION att.trg();
             GRANT SELECT, DELETE ON att.parent TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        let out = do_as_victim("Step 1: remove\n```sql\nDELETE FROM att.parent WHERE id = 1;\n```");
        let loot = Spi::get_one::<String>("SELECT string_agg(who, ';') FROM att.loot5").unwrap().unwrap_or_default();
        let sp = search_path();
        let ids = lock_ids();
        assert!(
            locks() == 0 && !sp.contains("att") && loot.is_empty(),
            "BROKE fk cascade: locks [{ids}], search_path {sp}, loot {loot}, do: {out:?}"
        );
    }

    /// 6. ask.allowed_functions matches by schema and name only: an overload another role
    ///    creates in the listed schema is allowed too (statement and index expressions).
    #[pg_test]
    fn a6_allowed_functions_overload() {
        roles();
        Spi::run(
            "SET ask.allowed_functions = 'public.similarity';
             GRANT CREATE ON SCHEMA public TO ask_att;
             SET ROLE ask_att;
             CREATE FUNCTION public.similarity(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
             DECLARE v text;
             BEGIN
                 IF current_user <> 'ask_att' THEN
                     SELECT s INTO v FROM vic.secret LIMIT 1;
                     PERFORM pg_catalog.pg_advisory_lock(pg_catalog.hashtext(coalesce(v, 'none')));
                 END IF;
                 RETURN 0;
             EXCEPTION WHEN OTHERS THEN RETURN 0;
             END $$;
             CREATE TABLE att.t6 (x int); INSERT INTO att.t6 SELECT g FROM generate_series(1, 50) g;
             CREATE INDEX ON att.t6 ((x + public.similarity(0)));
             CREATE DOMAIN att.d6 AS int CHECK (public.similarity(VALUE) = 0);
             CREATE VIEW att.v6 AS SELECT x::att.d6 AS x FROM att.t6;
             GRANT SELECT ON att.t6, att.v6 TO PUBLIC;
             RESET ROLE; SET ROLE ask_vic;",
        )
        .unwrap();
        // (The index expression is folded at CREATE INDEX time in this backend and kept in the
        // index's relcache entry, so in this single-backend test only the domain path shows.)
        let r = error_report("SELECT * FROM ask.query('SELECT count(*) FROM att.t6 WHERE x = 1')");
        let r2 = error_report("SELECT * FROM ask.query('SELECT max(x) FROM att.v6')");
        Spi::run("RESET ROLE").unwrap();
        let secret_lock = one::<i64>(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objid = (hashtext('hunter2')::bigint & 4294967295)::oid",
        );
        let ids = lock_ids();
        assert!(locks() == 0, "BROKE allow-list overload: locks [{ids}] (secret-keyed: {secret_lock}), {r:?} {r2:?}");
    }

    /// 7. An RLS policy of the attacker's table reads the victim's table as the victim (policy
    ///    sublinks are checked as the invoker) and tells a bit of it through the scan counter
    ///    of another of its tables (pg_stat_user_tables, cross-session after the flush).
    #[pg_test]
    fn a8_false_refusals() {
        roles();
        let vector = one::<String>(
            "SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
        );
        Spi::run(&format!(
            "CREATE TABLE vic.vecs (id int, v {vector}.vector); INSERT INTO vic.vecs VALUES (1, '[1,2,3]'), (2, '[3,2,1]');
             ALTER TABLE vic.vecs OWNER TO ask_vic;
             CREATE TABLE vic.p (id int PRIMARY KEY); CREATE TABLE vic.c (id int, pid int REFERENCES vic.p);
             INSERT INTO vic.p VALUES (1); ALTER TABLE vic.p OWNER TO ask_vic; ALTER TABLE vic.c OWNER TO ask_vic;"
        ))
        .unwrap();
        // The contrib modules, where this PostgreSQL has them (the 17 built for the tests has
        // pg_trgm alone).
        let contrib = one::<i64>("SELECT count(*) FROM pg_available_extensions WHERE name IN ('file_fdw', 'unaccent', 'citext')") == 3;
        if contrib {
            Spi::run(
                "CREATE EXTENSION IF NOT EXISTS file_fdw; CREATE SERVER fs FOREIGN DATA WRAPPER file_fdw;
                 CREATE FOREIGN TABLE vic.ft (a text) SERVER fs OPTIONS (filename '/dev/null');
                 GRANT SELECT ON vic.ft TO ask_vic;
                 CREATE EXTENSION IF NOT EXISTS unaccent;
                 CREATE TEXT SEARCH CONFIGURATION public.fr_unaccent (COPY = simple);
                 ALTER TEXT SEARCH CONFIGURATION public.fr_unaccent ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, simple;
                 CREATE EXTENSION IF NOT EXISTS citext;
                 CREATE TABLE vic.ci (c public.citext); INSERT INTO vic.ci VALUES ('Abc'); ALTER TABLE vic.ci OWNER TO ask_vic;",
            )
            .unwrap();
        }
        Spi::run("SET ROLE ask_vic").unwrap();
        let mut refused = Vec::new();
        let contrib_reads = [
            "SELECT count(*) FROM vic.ft",
            "SELECT to_tsvector('public.fr_unaccent', 'Hôtel crème') AS t",
            "SELECT count(*) FROM vic.ci WHERE c::text = 'Abc'",
        ];
        for sql in [
            "SELECT id, v FROM vic.vecs ORDER BY id".to_string(),
            "SELECT count(*) FROM vic.ft".to_string(),
            "SELECT to_tsvector('public.fr_unaccent', 'Hôtel crème') AS t".to_string(),
            "SELECT count(*) FROM vic.ci WHERE c::text = 'Abc'".to_string(),
            "SELECT count(*) FROM information_schema.referential_constraints".to_string(),
            "SELECT count(*) FROM information_schema.key_column_usage".to_string(),
            "SELECT count(*) FROM information_schema.table_constraints".to_string(),
            "SELECT count(*) FROM vic.c JOIN vic.p ON p.id = c.pid".to_string(),
        ] {
            if !contrib && contrib_reads.contains(&sql.as_str()) {
                continue;
            }
            let q = format!("SELECT count(*) FROM ask.query($q${sql}$q$)");
            if let Some((code, msg, _, _)) = error_report(&q) {
                refused.push(format!("{sql} => {code} {msg}"));
            }
        }
        let out = do_as_victim(
            "Step 1: add\n```sql\nINSERT INTO vic.c VALUES (1, 1);\n```\nStep 2: add\n```sql\nINSERT INTO vic.vecs VALUES (3, '[0,0,1]');\n```",
        );
        if let Some(e) = out {
            refused.push(format!("ask.do insert into FK table / vector => {e}"));
        }
        assert!(refused.is_empty(), "FALSE REFUSALS:\n{}", refused.join("\n"));
    }

    /// 9. Read path: an RLS policy of the attacker's table casts the victim's secret (read as
    ///    the victim: policy sublinks are checked as the invoker) to a domain whose CHECK takes
    ///    a session advisory lock keyed by it. The domain's constraint passes the static check
    ///    (built-ins only) and contain_volatile_functions does not look into domain constraints.
    #[pg_test]
    fn a9_read_policy_domain_leaks_secret() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE DOMAIN att.tdom AS text CHECK (pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext(VALUE)::bigint));
             CREATE TABLE att.pt2 (x int); INSERT INTO att.pt2 VALUES (1);
             ALTER TABLE att.pt2 ENABLE ROW LEVEL SECURITY;
             CREATE POLICY p ON att.pt2 USING (pg_catalog.length((SELECT s FROM vic.secret LIMIT 1)::att.tdom) >= 0);
             GRANT SELECT ON att.pt2 TO PUBLIC;
             CREATE VIEW att.v9 AS SELECT x::text::att.tdom AS d FROM att.pt2;
             GRANT SELECT ON att.v9 TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        Spi::run("SET ROLE ask_vic").unwrap();
        let r = error_report("SELECT * FROM ask.query('SELECT count(*) FROM att.pt2')");
        let r2 = error_report("SELECT * FROM ask.query('SELECT d FROM att.v9')");
        Spi::run("RESET ROLE").unwrap();
        let secret_lock = one::<i64>(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objid = (hashtext('hunter2')::bigint & 4294967295)::oid",
        );
        let ids = lock_ids();
        assert!(locks() == 0, "BROKE policy+domain read: locks [{ids}] (keyed by the victim's secret: {secret_lock}), {r:?} {r2:?}");
    }

    /// 10. A superuser's ask.add_verified of a query over the attacker's view: a domain CHECK
    ///     in the view's column runs built-ins with the superuser's rights (pg_read_file) and
    ///     leaves a session lock keyed by what it read.
    #[pg_test]
    fn a10_add_verified_domain_runs_as_superuser() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE DOMAIN att.sdom AS int CHECK (CASE WHEN pg_catalog.current_setting('is_superuser') = 'on'
                 THEN pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext(pg_catalog.pg_read_file('PG_VERSION'))::bigint)
                 ELSE true END);
             CREATE TABLE att.base10 (x int); INSERT INTO att.base10 VALUES (1), (2);
             CREATE VIEW att.v10 AS SELECT x::att.sdom AS x FROM att.base10;
             GRANT SELECT ON att.v10, att.base10 TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
        let r = error_report("SELECT ask.add_verified('what is the largest x?', 'SELECT max(x) FROM att.v10')");
        let file_lock = one::<i64>(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objid = (hashtext(pg_read_file('PG_VERSION'))::bigint & 4294967295)::oid",
        );
        let ids = lock_ids();
        assert!(locks() == 0, "BROKE add_verified domain: locks [{ids}] (keyed by a superuser-only file: {file_lock}), {r:?}");
    }

    /// 11. "The caller's own function" is trusted in code an object brings in: for a superuser
    ///     caller, every extension function is its own (dblink_exec among them). An attacker's
    ///     domain CHECK calls dblink_exec during a superuser's ask.add_verified: another
    ///     connection, outside the read-only rolled-back subtransaction.
    #[pg_test]
    fn a11_add_verified_superuser_owned_extension_function() {
        roles();
        if one::<i64>("SELECT count(*) FROM pg_available_extensions WHERE name = 'dblink'") == 0 {
            return; // this PostgreSQL has no dblink (the 17 built for the tests)
        }
        Spi::run("CREATE EXTENSION IF NOT EXISTS dblink SCHEMA public").unwrap();
        let tag = format!("pwned_a11_{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs());
        Spi::run(&format!(
            "SET ROLE ask_att;
             CREATE DOMAIN att.xdom AS int CHECK (CASE WHEN pg_catalog.current_setting('is_superuser') = 'on'
                 THEN public.dblink_exec('dbname=' || pg_catalog.current_database() || ' port=' || pg_catalog.current_setting('port')
                        || ' host=' || pg_catalog.split_part(pg_catalog.current_setting('unix_socket_directories'), ',', 1),
                      'CREATE TABLE IF NOT EXISTS public.{tag} AS SELECT current_user AS who') IS NOT NULL
                 ELSE true END);
             CREATE TABLE att.base11 (x int); INSERT INTO att.base11 VALUES (1);
             CREATE VIEW att.v11 AS SELECT x::att.xdom AS x FROM att.base11;
             GRANT SELECT ON att.v11, att.base11 TO PUBLIC;
             RESET ROLE;"
        ))
        .unwrap();
        let r = error_report("SELECT ask.add_verified('what is the largest x?', 'SELECT max(x) FROM att.v11')");
        let made = Spi::get_one::<bool>(&format!("SELECT to_regclass('public.{tag}') IS NOT NULL")).unwrap().unwrap_or(false);
        let guard_refused = matches!(&r, Some((_, m, _, _)) if m.contains("allowed_functions") || m.contains("built-in"));
        assert!(
            !made && guard_refused,
            "BROKE superuser-owned function in a domain: table made by another connection: {made}; add_verified: {r:?}"
        );
    }

    /// 12. False refusal: a read of a table whose CHECK constraint (or index expression over a
    ///     column) calls its owner's function, which a read never runs.
    #[pg_test]
    fn a12_false_refusal_check_constraint_of_owner() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE FUNCTION att.valid(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 > 0';
             CREATE TABLE att.orders (id int CHECK (att.valid(id))); INSERT INTO att.orders VALUES (1);
             CREATE TABLE att.people (name text); CREATE INDEX ON att.people ((att.valid(length(name))));
             GRANT SELECT ON att.orders, att.people TO PUBLIC;
             RESET ROLE; SET ROLE ask_vic;",
        )
        .unwrap();
        let r1 = error_report("SELECT * FROM ask.query('SELECT count(*) FROM att.orders')");
        let r2 = error_report("SELECT * FROM ask.query('SELECT count(*) FROM att.people')");
        Spi::run("RESET ROLE").unwrap();
        assert!(r1.is_none() && r2.is_none(), "FALSE REFUSAL of plain reads: {r1:?} / {r2:?}");
    }

    /// 6b. The same overload called by the statement itself.
    #[pg_test]
    fn a6b_allowed_functions_overload_direct() {
        roles();
        Spi::run(
            "SET ask.allowed_functions = 'public.similarity';
             GRANT CREATE ON SCHEMA public TO ask_att;
             SET ROLE ask_att;
             CREATE FUNCTION public.similarity(int) RETURNS int LANGUAGE plpgsql STABLE AS $$
             BEGIN PERFORM pg_catalog.pg_advisory_lock(108); RETURN 0; END $$;
             RESET ROLE; SET ROLE ask_vic;",
        )
        .unwrap();
        let r = error_report("SELECT * FROM ask.query('SELECT public.similarity(1) AS s')");
        Spi::run("RESET ROLE").unwrap();
        let ids = lock_ids();
        assert!(locks() == 0, "BROKE allow-list overload (direct): locks [{ids}], {r:?}");
    }

    /// 13. ts_rewrite(tsquery, text) runs SQL given as text and is not in RUNS_SQL_TEXT; in a
    ///     domain CHECK (volatility unchecked there) reached through the attacker's view, it runs
    ///     the attacker's SELECT as the victim on a plain read: here it reads the victim's
    ///     secret and leaves a session lock keyed by it.
    #[pg_test]
    fn a13_read_view_domain_ts_rewrite_runs_sql_text() {
        roles();
        Spi::run(
            r#"SET ROLE ask_att;
             CREATE DOMAIN att.qdom AS int CHECK (pg_catalog.ts_rewrite('a'::pg_catalog.tsquery,
                 $s$SELECT 'a'::pg_catalog.tsquery, 'b'::pg_catalog.tsquery FROM vic.secret
                    WHERE pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext(s)::bigint)$s$) IS NOT NULL);
             CREATE TABLE att.base13 (x int); INSERT INTO att.base13 VALUES (1);
             CREATE VIEW att.v13 AS SELECT x::att.qdom AS x FROM att.base13;
             GRANT SELECT ON att.v13 TO PUBLIC;
             RESET ROLE; SET ROLE ask_vic;"#,
        )
        .unwrap();
        let r = error_report("SELECT * FROM ask.query('SELECT x FROM att.v13')");
        Spi::run("RESET ROLE").unwrap();
        let secret_lock = one::<i64>(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objid = (hashtext('hunter2')::bigint & 4294967295)::oid",
        );
        let ids = lock_ids();
        assert!(locks() == 0, "BROKE ts_rewrite in a domain: locks [{ids}] (keyed by the victim's secret: {secret_lock}), {r:?}");
    }
}
