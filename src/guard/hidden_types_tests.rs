//! In-backend tests of types a statement names outside its expressions.
/// Types named outside the expressions a walk sees: a column definition list of a function in
/// FROM, XMLTABLE's columns, a type named in a string (`pg_input_is_valid`). A domain there
/// whose CHECK calls an effectful built-in (which no function hook is asked about) is refused
/// like a cast to it, and its effect never happens.
#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::*;

    #[pg_test]
    fn types_named_outside_expressions_are_held_to_the_allow_list() {
        Spi::run(
            "CREATE ROLE ask_ht_att; CREATE SCHEMA ask_ht AUTHORIZATION ask_ht_att; GRANT USAGE ON SCHEMA ask_ht TO PUBLIC;
             SET ROLE ask_ht_att;
             CREATE DOMAIN ask_ht.probe AS text CHECK (pg_catalog.set_config('application_name', 'pwned', false) IS NOT NULL);
             RESET ROLE;
             SET application_name = 'clean'",
        )
        .unwrap();
        for sql in [
            "SELECT r.a FROM pg_catalog.jsonb_to_record('{\"a\": \"x\"}') AS r(a ask_ht.probe)",
            "SELECT r.a FROM ROWS FROM (pg_catalog.jsonb_to_record('{\"a\": \"x\"}') AS (a ask_ht.probe)) AS r",
            "SELECT x.a FROM XMLTABLE('/r' PASSING '<r><a>x</a></r>'::xml COLUMNS a ask_ht.probe PATH 'a') AS x",
            "SELECT pg_catalog.pg_input_is_valid('x', 'ask_ht.probe')",
        ] {
            let (code, message, _) = error_of(&format!("SELECT * FROM ask.query($q${sql}$q$)"));
            // Refused by the guard (XMLTABLE already by its parser); on PostgreSQL 15
            // pg_input_is_valid does not exist.
            assert!(matches!(code.as_str(), "2F003" | "42883" | "42601"), "{sql}: {code} {message}");
            assert_eq!(one::<String>("SELECT current_setting('application_name')"), "clean", "{sql}");
        }
        // The same domain named by a cast is refused as before.
        let (code, _, _) = error_of("SELECT * FROM ask.query($q$SELECT 'x'::ask_ht.probe$q$)");
        assert_eq!(code, "2F003");
    }

    /// A domain's CHECK that PostgreSQL evaluates before any check of the statement: while
    /// parse analysis reads an array or composite literal of a column's type, or through a type
    /// input function the statement calls with a type chosen at run time. Its call of an
    /// effectful built-in is refused as it is about to start (42501, naming it), or the
    /// statement before it runs (2F003); on main before this test, parse analysis ran it and
    /// the guard refused the statement only afterwards.
    #[pg_test]
    fn a_domain_check_never_runs_before_the_guard_looks() {
        Spi::run(
            "CREATE ROLE ask_pa_att; CREATE ROLE ask_pa_victim; CREATE SCHEMA ask_pa AUTHORIZATION ask_pa_att;
             GRANT USAGE ON SCHEMA ask_pa TO PUBLIC;
             SET ROLE ask_pa_att;
             CREATE DOMAIN ask_pa.d AS int CHECK (pg_catalog.set_config('application_name', 'leak:' || VALUE, false) IS NOT NULL);
             CREATE TYPE ask_pa.comp AS (x ask_pa.d);
             CREATE TABLE ask_pa.events (id int, tags ask_pa.d[], c ask_pa.comp);
             GRANT SELECT ON ask_pa.events TO PUBLIC;
             RESET ROLE",
        )
        .unwrap();
        Spi::run("SET ROLE ask_pa_victim").unwrap();
        for (sql, expected) in [
            ("SELECT id FROM ask_pa.events WHERE tags @> '{7}'", "42501"),
            ("SELECT id FROM ask_pa.events WHERE c = '(1)'::ask_pa.comp", "42501"),
            ("SELECT '{1}'::ask_pa.d[]", "42501"),
            ("SELECT pg_catalog.domain_in('5', 'ask_pa.d'::regtype, -1)::text", "2F003"),
            ("SELECT pg_catalog.record_in('(5)', 'ask_pa.comp'::regtype, -1)::text", "2F003"),
            ("SELECT pg_catalog.array_in('{5}', 'ask_pa.d'::regtype, -1)::text", "2F003"),
            ("SELECT pg_catalog.int4in('5')", "2F003"),
        ] {
            let (code, message, _) = error_of(&format!("SELECT * FROM ask.query($q${sql}$q$)"));
            assert_eq!(code, expected, "{sql}: {message}");
            if expected == "42501" {
                assert!(message.contains("set_config"), "{sql}: {message}");
            }
        }
        // A stable built-in in the CHECK (one that opens a relation, which other sessions see
        // in pg_locks): refused while the statement is analysed, and wherever else the domain
        // is reached.
        Spi::run(
            "SET ROLE ask_pa_att;
             CREATE VIEW ask_pa.v AS SELECT 1 AS x;
             CREATE DOMAIN ask_pa.s AS int CHECK (pg_catalog.pg_get_viewdef('ask_pa.v'::regclass) IS NOT NULL);
             CREATE TABLE ask_pa.marks (id int, tags ask_pa.s[]);
             GRANT SELECT ON ask_pa.marks TO PUBLIC;
             SET ROLE ask_pa_victim",
        )
        .unwrap();
        let (code, message, _) = error_of("SELECT * FROM ask.query($q$SELECT id FROM ask_pa.marks WHERE tags @> '{7}'$q$)");
        assert_eq!(code, "42501", "{message}");
        assert!(message.contains("pg_get_viewdef") && message.contains("analysed"), "{message}");
        let (code, message, _) = error_of("SELECT * FROM ask.query($q$SELECT 5::ask_pa.s$q$)");
        assert_eq!(code, "2F003", "{message}");
        assert!(message.contains("not immutable"), "{message}");
        Spi::run("RESET ROLE").unwrap();
    }

    /// Another role's row-level-security policy or view calling a stable built-in that other
    /// sessions can observe (a lock on the relation it names, a transaction id): it runs as the
    /// caller, after the statement passed every check, with a value the caller may read. It is
    /// refused as it is about to start (42501, naming it); before this test it ran.
    #[pg_test]
    fn a_policy_or_view_never_signals_through_a_lock_or_a_transaction_id() {
        Spi::run(
            "CREATE ROLE ask_sc_att; CREATE ROLE ask_sc_victim; CREATE SCHEMA ask_sc AUTHORIZATION ask_sc_att;
             GRANT USAGE ON SCHEMA ask_sc TO PUBLIC;
             SET ROLE ask_sc_att;
             CREATE VIEW ask_sc.v1 AS SELECT 1 AS x;
             CREATE TABLE ask_sc.board (id int);
             INSERT INTO ask_sc.board VALUES (1);
             ALTER TABLE ask_sc.board ENABLE ROW LEVEL SECURITY;
             CREATE POLICY look ON ask_sc.board USING (pg_catalog.pg_get_viewdef('ask_sc.v1'::regclass) IS NOT NULL);
             CREATE TABLE ask_sc.ids (id int);
             INSERT INTO ask_sc.ids VALUES (1);
             ALTER TABLE ask_sc.ids ENABLE ROW LEVEL SECURITY;
             CREATE POLICY look ON ask_sc.ids USING (pg_catalog.txid_current() IS NOT NULL);
             CREATE VIEW ask_sc.invoker WITH (security_invoker = true) AS
                 SELECT id, pg_catalog.pg_get_viewdef('ask_sc.v1'::regclass) IS NOT NULL AS seen FROM ask_sc.board;
             GRANT SELECT ON ask_sc.board, ask_sc.ids, ask_sc.invoker TO PUBLIC;
             RESET ROLE",
        )
        .unwrap();
        Spi::run("SET ROLE ask_sc_victim").unwrap();
        for (sql, name) in [
            ("SELECT id FROM ask_sc.board", "pg_get_viewdef"),
            ("SELECT id FROM ask_sc.ids", "txid_current"),
            ("SELECT id FROM ask_sc.invoker", "pg_get_viewdef"),
        ] {
            let (code, message, _) = error_of(&format!("SELECT * FROM ask.query($q${sql}$q$)"));
            assert_eq!(code, "42501", "{sql}: {message}");
            assert!(message.contains(name), "{sql}: {message}");
        }
        // The caller's own reads of such tables outside pg_ask are PostgreSQL's business.
        assert_eq!(one::<i64>("SELECT count(*) FROM ask_sc.board"), 1);
        Spi::run("RESET ROLE").unwrap();
    }
}
