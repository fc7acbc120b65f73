//! In-backend tests of an evaluation with and without the knowledge layer: a run offers the
//! items ask() would offer the caller (ask.use_knowledge when the run started, recorded in
//! ask.eval_runs.knowledge), ask.eval_summary tells the two kinds of run apart, and
//! ask.eval_knowledge says which items the right and wrong answers used — only for the
//! caller's runs, and only items the caller may see. A table owner who is not superuser writes
//! the knowledge; an analyst with SELECT runs the suite; a role without privileges and an
//! attacker with a look-alike table and its own metric of the same name try to reach it.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script};
    use pgrx::prelude::*;

    use crate::pg::testing::{llm, one};

    const QUESTION: &str = "what is the revenue?";
    const GOLD: &str = "SELECT sum(amount_cents) / 100.0 FROM orders";
    /// What the model writes without the metric: the cents, not the dollars.
    const WITHOUT: &str = "SELECT sum(amount_cents) FROM orders";
    /// Only the knowledge layer brings these words into the prompt.
    const DESCRIPTION: &str = "total paid, in dollars";

    fn setup() {
        Spi::run(
            "CREATE ROLE ask_evk_owner; CREATE ROLE ask_evk_analyst; CREATE ROLE ask_evk_nopriv; CREATE ROLE ask_evk_attacker;
             CREATE SCHEMA shop AUTHORIZATION ask_evk_owner;
             CREATE SCHEMA att AUTHORIZATION ask_evk_attacker;
             GRANT USAGE ON SCHEMA shop, att TO PUBLIC;
             SET ROLE ask_evk_owner;
             CREATE TABLE shop.orders (id int, amount_cents int);
             INSERT INTO shop.orders VALUES (1, 1250), (2, 750);
             GRANT SELECT ON shop.orders TO ask_evk_analyst;
             RESET ROLE",
        )
        .unwrap();
    }

    #[pg_test]
    fn a_run_with_and_a_run_without_the_knowledge_layer_are_told_apart() {
        setup();
        // The owner's metric; the attacker's look-alike table, open to all, with a metric of the
        // same name and a description that would make the model answer right if offered.
        Spi::run("SET ROLE ask_evk_owner").unwrap();
        let metric = one::<i64>(&format!("SELECT ask.add_metric('revenue', 'shop.orders', 'sum(amount_cents) / 100.0', '{DESCRIPTION}')"));
        Spi::run(
            "RESET ROLE; SET ROLE ask_evk_attacker;
             CREATE TABLE att.orders (id int, amount_cents int); GRANT SELECT ON att.orders TO PUBLIC",
        )
        .unwrap();
        let lookalike = one::<i64>(&format!(
            "SELECT ask.add_metric('revenue', 'att.orders', 'sum(amount_cents) * 7', 'the {DESCRIPTION} of the attacker')"
        ));
        Spi::run("RESET ROLE").unwrap();

        let key = format!("<question>{QUESTION}</question>");
        let _s = llm(Script::default()
            .rule(Rule::new(&[&key, &format!("the {DESCRIPTION} of the attacker")], Reply::text("SELECT 'poisoned' AS x")))
            .rule(Rule::new(&[&key, DESCRIPTION], Reply::text(format!("```sql\n{GOLD}\n```"))))
            .rule(Rule::new(&[&key], Reply::text(format!("```sql\n{WITHOUT}\n```")))));

        // The analyst runs its suite with the knowledge layer, then without it.
        Spi::run("SET ROLE ask_evk_analyst").unwrap();
        let suite = format!(r#"[{{"question": "{QUESTION}", "gold_sql": "{GOLD}", "schema": "shop"}}]"#);
        Spi::run(&format!("SELECT ask.load_suite('money', '{suite}')")).unwrap();
        assert_eq!(one::<i32>("SELECT ask.evaluate_step('money', 'with')"), 1);
        assert_eq!(one::<i32>("SELECT ask.evaluate_step('money', 'with')"), 0, "the run is finished");
        assert_eq!(one::<i32>("SELECT ask.evaluate_step('money', 'with')"), 0, "and stays finished");
        Spi::run("SET ask.use_knowledge = off").unwrap();
        assert_eq!(one::<i32>("SELECT ask.evaluate_step('money', 'without')"), 1);
        assert_eq!(one::<i32>("SELECT ask.evaluate_step('money', 'without')"), 0);
        Spi::run("RESET ask.use_knowledge").unwrap();

        let summary = one::<String>(
            "SELECT string_agg(run_label || ':' || knowledge || ':' || correct || '/' || judged, ' ' ORDER BY run_label)
             FROM ask.eval_summary WHERE suite = 'money'",
        );
        assert_eq!(summary, "with:true:1/1 without:false:0/1", "the metric made the difference, and each run says which it was");

        // The run with knowledge was offered the owner's metric, never the look-alike's.
        let offered = one::<String>("SELECT (trace -> 'knowledge_offered')::text FROM ask.eval_results WHERE run_label = 'with'");
        assert_eq!(offered, format!("[{metric}]"), "the attacker's item ({lookalike}) is about a table the question does not read");
        let without = one::<bool>("SELECT trace ? 'knowledge_offered' FROM ask.eval_results WHERE run_label = 'without'");
        assert!(!without, "a run without the knowledge layer offers nothing");

        // Which items the right and wrong answers used.
        let used = one::<String>(
            "SELECT string_agg(format('%s %s %s offered=%s used=%s right=%s wrong=%s', run_label, kind, name, offered, used, used_right, used_wrong), '; ')
             FROM ask.eval_knowledge WHERE suite = 'money'",
        );
        assert_eq!(used, "with metric revenue offered=1 used=1 right=1 wrong=0");
        Spi::run("RESET ROLE").unwrap();

        // A role without privileges, and the attacker, see none of the analyst's runs.
        for role in ["ask_evk_nopriv", "ask_evk_attacker"] {
            Spi::run(&format!("SET ROLE {role}")).unwrap();
            assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_knowledge"), 0, "{role}");
            assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_summary"), 0, "{role}");
            Spi::run("RESET ROLE").unwrap();
        }

        // Once the analyst may no longer read the table, its report keeps the item's id but not
        // what the item says.
        Spi::run("REVOKE SELECT ON shop.orders FROM ask_evk_analyst; SET ROLE ask_evk_analyst").unwrap();
        let hidden = one::<String>("SELECT format('%s %s %s', item, kind, name) FROM ask.eval_knowledge WHERE suite = 'money'");
        assert_eq!(hidden, format!("{metric}  "), "the id alone: kind and name are NULL");
        Spi::run("RESET ROLE").unwrap();
    }
}
