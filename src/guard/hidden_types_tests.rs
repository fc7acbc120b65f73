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
}
