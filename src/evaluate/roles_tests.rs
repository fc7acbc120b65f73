//! In-backend tests of whose evaluation suites, runs and results are: the role's that loaded
//! and ran them, by OID. Another role sees none of them; a renamed role keeps them; a role
//! created with a dropped role's name neither sees nor extends them (they stay, under the
//! dropped role's OID, for a superuser to remove).

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script};
    use pgrx::prelude::*;

    use crate::pg::testing::{error_of, llm, one};

    const SUITE: &str =
        r#"[{"question": "fruit names", "gold_sql": "SELECT name FROM fruits ORDER BY name", "schema": "shop", "category": "listing"}]"#;
    /// Every row of the evaluation tables and views the current role sees.
    const SEEN: &str = "SELECT (SELECT count(*) FROM ask.eval_suites) + (SELECT count(*) FROM ask.eval_questions)
                             + (SELECT count(*) FROM ask.eval_runs) + (SELECT count(*) FROM ask.eval_results)
                             + (SELECT count(*) FROM ask.eval_summary) + (SELECT count(*) FROM ask.eval_report)";
    const GRANTS: &str = "GRANT USAGE ON SCHEMA shop TO {r}; GRANT SELECT ON shop.fruits TO {r}";

    fn grant(role: &str) {
        Spi::run(&format!("CREATE ROLE {role}; {}", GRANTS.replace("{r}", role))).unwrap();
    }

    fn load_and_run(run: &str) {
        Spi::run(&format!("SELECT ask.load_suite('quiz', '{SUITE}')")).unwrap();
        assert_eq!(one::<i32>(&format!("SELECT ask.evaluate_step('quiz', '{run}')")), 1);
    }

    #[pg_test]
    fn suites_and_runs_are_kept_by_role_oid() {
        Spi::run("CREATE SCHEMA shop; CREATE TABLE shop.fruits (name text); INSERT INTO shop.fruits VALUES ('cherry'), ('plum')").unwrap();
        let _s = llm(Script::default().rule(Rule::new(&["<question>fruit names</question>"], Reply::text("SELECT name FROM fruits"))));
        grant("ask_ev_a");
        grant("ask_ev_b");

        // Role a loads and runs a suite: its suite, question, run, result, summary and report row.
        Spi::run("SET ROLE ask_ev_a").unwrap();
        load_and_run("r1");
        assert_eq!(one::<i64>(SEEN), 6);
        assert_eq!(one::<String>("SELECT owner::text FROM ask.eval_summary"), "ask_ev_a", "shown by name");

        // Role b sees none of it and cannot run it; its suite of the same name is its own.
        Spi::run("RESET ROLE; SET ROLE ask_ev_b").unwrap();
        assert_eq!(one::<i64>(SEEN), 0);
        let (code, msg, _) = error_of("SELECT ask.evaluate_step('quiz', 'r1')");
        assert_eq!(code, "42704", "{msg}");
        Spi::run(&format!("SELECT ask.load_suite('quiz', '{SUITE}')")).unwrap();
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_results"), 1, "b's suite replaced nothing of a's");
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_suites"), 2);

        // Renamed, role a keeps its rows, shown under its new name, and extends them.
        Spi::run("ALTER ROLE ask_ev_a RENAME TO ask_ev_renamed; SET ROLE ask_ev_renamed").unwrap();
        assert_eq!(one::<i64>(SEEN), 6, "the renamed role sees its rows");
        assert_eq!(one::<i32>("SELECT ask.evaluate_step('quiz', 'r2')"), 1, "and runs its suite again");
        assert_eq!(one::<String>("SELECT string_agg(DISTINCT owner::text, ',') FROM ask.eval_results"), "ask_ev_renamed");
        Spi::run("RESET ROLE").unwrap();

        // Dropped: its rows stay under its OID (shown as a number), no role's.
        Spi::run("REVOKE ALL ON SCHEMA shop FROM ask_ev_renamed; REVOKE ALL ON shop.fruits FROM ask_ev_renamed; DROP ROLE ask_ev_renamed")
            .unwrap();
        let orphans = "SELECT count(*) FROM ask.eval_results WHERE owner::text ~ '^[0-9]+$'";
        assert_eq!(one::<i64>(orphans), 2);

        // A new role with the old name sees none of them, cannot run the old suite, and its
        // own suite of that name and its run leave the old rows alone.
        grant("ask_ev_renamed");
        Spi::run("SET ROLE ask_ev_renamed").unwrap();
        assert_eq!(one::<i64>(SEEN), 0, "the new role with the old name sees nothing of the old one's");
        let (code, msg, _) = error_of("SELECT ask.evaluate_step('quiz', 'r1')");
        assert_eq!(code, "42704", "{msg}");
        load_and_run("r1");
        assert_eq!(one::<i64>(SEEN), 6, "its own rows only");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one::<i64>(orphans), 2, "the old rows are untouched");
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_results"), 3);
    }
}
