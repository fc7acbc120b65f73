//! In-backend tests of the verified query store: adding (guarded, run as the caller),
//! answering from it without an LLM call, examples in the prompt, feedback on a call,
//! verifying a suite, removing, and privileges (a role never sees, is shown or is answered
//! from a verified query over a table it cannot read).

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script};
    use pgrx::prelude::*;
    use pgrx::JsonB;

    use crate::pg::testing::*;

    const COUNT_SQL: &str = "SELECT count(*) AS restaurants FROM public.restaurants";

    #[pg_test]
    fn add_verified_checks_the_query_and_runs_it_as_the_caller() {
        setup();
        let id: i64 = one(&format!("SELECT ask.add_verified('How many restaurants are there?', '{COUNT_SQL}')"));
        // The same question and SQL again: the same row.
        let again: i64 = one(&format!("SELECT ask.add_verified('how many restaurants are there?', '{COUNT_SQL};')"));
        assert_eq!(id, again);
        let (tables, by, source): (String, String, String) = Spi::get_three_with_args(
            "SELECT tables::text, verified_by::text, source FROM ask.verified_queries WHERE id = $1",
            &[id.into()],
        )
        .map(|(a, b, c)| (a.unwrap(), b.unwrap(), c.unwrap()))
        .unwrap();
        assert_eq!((tables.as_str(), source.as_str()), ("{restaurants}", "manual"));
        assert_eq!(by, one::<String>("SELECT current_user::text"));
        // Refused by the guard: nothing stored.
        let (code, message, _) = error_of("SELECT ask.add_verified('remove them', 'DELETE FROM public.restaurants')");
        assert_eq!(code, "2F003", "{message}");
        // A query that fails is an error with the query's own SQLSTATE.
        let (code, message, _) = error_of("SELECT ask.add_verified('q', 'SELECT nme FROM public.restaurants')");
        assert_eq!(code, "42703", "{message}");
        assert!(message.starts_with("the verified query failed"), "{message}");
        let (code, _, _) = error_of("SELECT ask.add_verified('', 'SELECT 1')");
        assert_eq!(code, "22023");
        let (code, _, _) = error_of("SELECT ask.add_verified('q', 'SELECT 1', schema => 'no_such_schema')");
        assert_eq!(code, "3F000");
        // A query over no table would be every role's: refused.
        let (code, _, _) = error_of("SELECT ask.add_verified('one', 'SELECT 1')");
        assert_eq!(code, "22023");
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.verified_queries"), 1);
        // A table hidden behind a common table expression's name is still one it reads.
        let id: i64 = one(
            "SELECT ask.add_verified('how many?', 'SELECT (SELECT count(*) FROM restaurants) FROM (WITH restaurants AS (SELECT 1) SELECT 1) s', 'public')",
        );
        let tables: String = one(&format!("SELECT tables::text FROM ask.verified_queries WHERE id = {id}"));
        assert_eq!(tables, "{restaurants}");
    }

    #[pg_test]
    fn a_verified_question_is_answered_without_an_llm_call() {
        setup();
        let s = llm(Script::default());
        let id: i64 = one(&format!("SELECT ask.add_verified('How many restaurants are there?', '{COUNT_SQL}')"));
        let answer: String = one("SELECT ask('how many restaurants are there')");
        assert_eq!(answer, "restaurants: 3");
        assert!(s.requests().is_empty(), "no LLM call: {:?}", s.requests().len());
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('How many restaurants are there?')");
        assert_eq!(trace["source"], "verified");
        assert_eq!(trace["verified_id"], id);
        assert_eq!(trace["llm_calls"], 0);
        let st = &trace["stages"][0];
        assert_eq!((&st["stage"], &st["output"]["source"], &st["output"]["id"]), (&"verified".into(), &"verified".into(), &id.into()));
        // The call log has both calls, answered from the store; the store counts the uses.
        let call_id = trace["call_id"].as_i64().expect("explain shows the call id");
        let src: String = one(&format!("SELECT source FROM ask.questions WHERE id = {call_id}"));
        assert_eq!(src, "verified");
        assert_eq!(one::<i64>(&format!("SELECT uses FROM ask.verified_uses WHERE verified_id = {id}")), 2);
        assert_eq!(one::<i64>("SELECT verified_answers FROM ask.usage WHERE role = current_user::regrole"), 2);
        // Switched off, or examples only: the LLM is asked.
        Spi::run("SET ask.verified = examples").unwrap();
        let s2 = llm(Script::default().rule(Rule::new(&["<schema>"], Reply::text(COUNT_SQL))));
        one::<String>("SELECT ask('how many restaurants are there')");
        let reqs = s2.requests();
        assert_eq!(reqs.len(), 1);
        assert!(reqs[0].prompt.contains("<example>\n<question>How many restaurants are there?</question>"), "{}", reqs[0].prompt);
    }

    #[pg_test]
    fn a_question_with_another_value_the_memory_resolves_reuses_the_query() {
        setup();
        one::<i64>("SELECT ask.index_values('public.restaurants', ARRAY['cuisine'])");
        let s = llm(Script::default());
        let id: i64 = one(
            "SELECT ask.add_verified('Which restaurants serve Italian food?', 'SELECT name FROM public.restaurants WHERE cuisine = ''Italian'' ORDER BY name')",
        );
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('Which restaurants serve french food?')");
        assert_eq!(trace["verified_id"], id, "{trace}");
        assert_eq!(trace["final_sql"], "SELECT name FROM public.restaurants WHERE cuisine = 'French' ORDER BY name");
        assert_eq!(trace["stages"][0]["output"]["rule"], "template");
        assert!(s.requests().is_empty());
        // A value the column does not hold is no reason to skip the LLM.
        let s = llm(Script::default()
            .rule(Rule::new(&["<templates>"], Reply::text(r#"{"template": 1, "slots": {"s1": "Korean"}}"#)))
            .rule(Rule::new(&["<schema>"], Reply::text("SELECT name FROM public.restaurants WHERE cuisine = 'Korean'")))
            .rule(Rule::new(&["<literal>Korean</literal>"], Reply::text("Korean"))));
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('Which restaurants serve Korean food?')");
        assert_eq!(trace["final_sql"], "SELECT name FROM public.restaurants WHERE cuisine = 'Korean'", "the LLM kept it");
        assert_eq!(trace["source"], "llm", "{trace}");
        // The model chose the verified query as a template with 'Korean', which the memory
        // does not know in the column: not taken.
        let st = trace["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "template").expect("a template stage").clone();
        assert_eq!(st["output"]["taken"], false, "{st}");
        assert!(st["output"]["why"].as_str().unwrap().contains("not a value the memory knows"), "{st}");
        // The choice, generation, and between them the value choice: 'Korean' is none of the
        // column's few cuisines, which the LLM is shown all of (it may keep it). No rows: asked
        // again as an edit and afresh, the same query written both times, and the empty result
        // answers, said without a call.
        let reqs = s.requests();
        assert_eq!(reqs.len(), 5, "{reqs:?}");
        assert!(reqs[3].prompt.contains("returned no rows") && !reqs[4].prompt.contains("returned no rows"));
        assert!(reqs[0].prompt.contains("<templates>"));
        assert!(
            reqs[2].prompt.contains("<literal>Korean</literal>") && reqs[2].prompt.contains("<value>Italian</value>"),
            "{}",
            reqs[2].prompt
        );
    }

    #[pg_test]
    fn a_role_never_sees_or_is_answered_from_a_query_over_a_table_it_cannot_read() {
        setup();
        one::<i64>(&format!("SELECT ask.add_verified('How many restaurants are there?', '{COUNT_SQL}')"));
        one::<i64>("SELECT ask.add_verified('How many cities are there?', 'SELECT count(*) FROM public.cities')");
        Spi::run("CREATE ROLE ask_test_cities; GRANT SELECT ON public.cities TO ask_test_cities").unwrap();
        let s = llm(Script::default()
            .rule(Rule::new(&["<templates>"], Reply::text(r#"{"template": 0, "slots": {}}"#)))
            .rule(Rule::new(&["<schema>"], Reply::text("SELECT count(*) FROM public.cities")))
            .rule(Rule::new(&["<result"], Reply::text("ROWS"))));
        Spi::run("SET ROLE ask_test_cities").unwrap();
        let seen: Vec<String> =
            crate::pg::spi::select_rows("SELECT question FROM ask.verified_queries ORDER BY id", &[], |r| r.get::<String>(1)).unwrap();
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('How many restaurants are there?')");
        let (code, _, _) = error_of("SELECT ask.remove_verified(1)");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(seen, ["How many cities are there?"]);
        // Not answered from the restaurants query, which is not shown to the LLM either.
        assert_ne!(trace["source"], "verified", "{trace}");
        let reqs = s.requests();
        assert!(!reqs.is_empty());
        // The cities query is offered as a template and shown as an example; the restaurants
        // one is neither.
        let generate = reqs.iter().find(|r| r.prompt.contains("<schema>")).expect("a generation request");
        assert!(generate.prompt.contains("<example>\n<question>How many cities are there?</question>"), "{}", generate.prompt);
        assert!(reqs.iter().all(|r| !r.prompt.contains(COUNT_SQL) && !r.prompt.contains("<example>\n<question>How many restaurants")));
        // Nor may it remove a verified query it cannot see.
        assert_eq!(code, "42704");
        Spi::run("REVOKE ALL ON public.cities FROM ask_test_cities; DROP ROLE ask_test_cities").unwrap();
    }

    /// Another role that reads the same tables cannot tell from the store that a role asked
    /// a question: the counts of uses are kept per role, and the verified query's row shows
    /// none.
    #[pg_test]
    fn a_role_cannot_tell_from_the_counts_that_another_asked() {
        setup();
        let _s = llm(Script::default());
        let id: i64 = one(&format!("SELECT ask.add_verified('How many restaurants are there?', '{COUNT_SQL}')"));
        Spi::run(
            "CREATE ROLE ask_uses_a; CREATE ROLE ask_uses_b;
             GRANT SELECT ON public.restaurants TO ask_uses_a, ask_uses_b",
        )
        .unwrap();
        let row = format!("SELECT to_jsonb(v)::text FROM ask.verified_queries v WHERE id = {id}");
        let counts = format!("SELECT coalesce(sum(uses), 0)::bigint FROM ask.verified_uses WHERE verified_id = {id}");
        Spi::run("SET ROLE ask_uses_b").unwrap();
        let before: String = one(&row);
        Spi::run("RESET ROLE; SET ROLE ask_uses_a").unwrap();
        let answer: String = one("SELECT ask('how many restaurants are there')");
        assert!(answer.contains('3'), "{answer}");
        let a_counts: i64 = one(&counts);
        Spi::run("RESET ROLE; SET ROLE ask_uses_b").unwrap();
        let after: String = one(&row);
        let b_counts: i64 = one(&counts);
        let b_rows: i64 = one("SELECT count(*) FROM ask.verified_uses");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(a_counts, 1, "the asking role sees its own use");
        assert_eq!((b_counts, b_rows), (0, 0), "the other role sees no count of it");
        assert_eq!(before, after, "the verified query's row is the same before and after the other role's question");
        assert!(!after.contains("\"uses\"") && !after.contains("last_used"), "{after}");
        Spi::run("REVOKE ALL ON public.restaurants FROM ask_uses_a, ask_uses_b; DROP ROLE ask_uses_a, ask_uses_b").unwrap();
    }

    #[pg_test]
    fn feedback_turns_a_call_into_a_verified_query() {
        setup();
        let q = "how many Italian restaurants are there?";
        let _s = llm(Script::default().rule(Rule::new(&["<schema>", q], Reply::text("SELECT count(*) FROM public.restaurants"))));
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        let call = trace["call_id"].as_i64().expect("a call id");
        // The ledger names the call too.
        assert_eq!(one::<i64>(&format!("SELECT count(*) FROM ask.llm_calls WHERE call_id = {call}")), 1);
        // Wrong, with the corrected query: that one is verified.
        let fixed = "SELECT count(*) FROM public.restaurants WHERE cuisine = 'Italian'";
        let vid: i64 = Spi::get_one_with_args("SELECT ask.feedback($1, false, $2)", &[call.into(), fixed.into()]).unwrap().unwrap();
        let (question, sql): (String, String) =
            Spi::get_two_with_args("SELECT question, sql FROM ask.verified_queries WHERE id = $1", &[vid.into()])
                .map(|(a, b)| (a.unwrap(), b.unwrap()))
                .unwrap();
        assert_eq!((question.as_str(), sql.as_str()), (q, fixed));
        let fb: bool = one(&format!("SELECT feedback FROM ask.questions WHERE id = {call}"));
        assert!(!fb);
        // Asked again, the question is answered from the correction; marked right, its SQL is
        // the verified query it already is.
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        assert_eq!(trace["verified_id"], vid, "{trace}");
        let call2 = trace["call_id"].as_i64().unwrap();
        assert_eq!(one::<i64>(&format!("SELECT ask.feedback({call2}, true)")), vid);
        // Wrong without a correction verifies nothing; another role's call cannot be judged.
        assert!(Spi::get_one_with_args::<i64>("SELECT ask.feedback($1, false)", &[call.into()]).unwrap().is_none());
        Spi::run("CREATE ROLE ask_test_other").unwrap();
        Spi::run("SET ROLE ask_test_other").unwrap();
        let (code, _, hint) = error_of(&format!("SELECT ask.feedback({call}, true)"));
        Spi::run("RESET ROLE; DROP ROLE ask_test_other").unwrap();
        assert_eq!(code, "42704");
        assert!(hint.unwrap().contains("call_id"));
        let (code, _, _) = error_of(&format!("SELECT ask.feedback({call}, true, 'SELECT 1')"));
        assert_eq!(code, "22023");
    }

    #[pg_test]
    fn verify_suite_stores_every_gold_query_that_runs() {
        setup();
        let rows = serde_json::json!([
            {"question": "How many cities?", "gold_sql": "SELECT count(*) FROM public.cities"},
            {"question": "Which cuisines?", "gold_sql": "SELECT DISTINCT {cuisine, name} FROM public.restaurants"},
            {"question": "Broken", "gold_sql": "SELECT nothing FROM public.cities"},
        ]);
        Spi::get_one_with_args::<i32>("SELECT ask.load_suite('mine', $1)", &[JsonB(rows).into()]).unwrap();
        let n: i32 = one("SELECT ask.verify_suite('mine')");
        assert_eq!(n, 2);
        let sql: String = one("SELECT sql FROM ask.verified_queries WHERE question = 'Which cuisines?'");
        assert_eq!(sql, "SELECT DISTINCT cuisine FROM public.restaurants");
        assert_eq!(one::<String>("SELECT source FROM ask.verified_queries WHERE question = 'How many cities?'"), "suite");
        let (code, _, _) = error_of("SELECT ask.verify_suite('nobody')");
        assert_eq!(code, "42704");
    }

    #[pg_test]
    fn answers_come_only_from_verifiers_the_caller_trusts() {
        setup();
        Spi::run("CREATE ROLE ask_test_a; CREATE ROLE ask_test_b; GRANT SELECT ON public.restaurants TO ask_test_a, ask_test_b").unwrap();
        let s = llm(Script::default()
            .rule(Rule::new(&["<schema>"], Reply::text(COUNT_SQL)))
            .rule(Rule::new(&["<result"], Reply::text("ROWS"))));
        Spi::run("SET ROLE ask_test_a").unwrap();
        one::<i64>(&format!("SELECT ask.add_verified('How many restaurants are there?', '{COUNT_SQL}')"));
        // Another role's query is only an example for b...
        Spi::run("SET ROLE ask_test_b").unwrap();
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('How many restaurants are there?')");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(trace["source"], "llm", "{trace}");
        assert!(trace["stages"][0]["output"]["candidates"][0]["why"].as_str().unwrap().contains("verified by ask_test_a"), "{trace}");
        assert!(s.requests()[0].prompt.contains("<example>"));
        // ... until b is a member of a.
        Spi::run("GRANT ask_test_a TO ask_test_b; SET ROLE ask_test_b").unwrap();
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('How many restaurants are there?')");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(trace["source"], "verified", "{trace}");
        // A superuser is a member of every role to PostgreSQL, but takes answers only from
        // superusers, the extension's owner and itself: a's query is only an example for it.
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('How many restaurants are there?')");
        assert_eq!(trace["source"], "llm", "{trace}");
        // A membership a role with CREATEROLE granted is not trust: it made b a member of a role
        // it created and verified a query as that role.
        Spi::run(
            "DELETE FROM ask.verified_queries; REVOKE ask_test_a FROM ask_test_b;
             CREATE ROLE ask_test_creator CREATEROLE;
             SET ROLE ask_test_creator;
             CREATE ROLE ask_test_sneaky; GRANT ask_test_sneaky TO ask_test_b; GRANT ask_test_sneaky TO ask_test_creator;
             RESET ROLE;
             GRANT SELECT ON public.restaurants TO ask_test_sneaky;
             SET ROLE ask_test_sneaky",
        )
        .unwrap();
        one::<i64>(&format!("SELECT ask.add_verified('How many restaurants are there?', '{COUNT_SQL}')"));
        Spi::run("SET ROLE ask_test_b").unwrap();
        assert!(one::<bool>("SELECT pg_has_role('ask_test_sneaky', 'MEMBER')"));
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('How many restaurants are there?')");
        let suggested = one::<i64>("SELECT count(*) FROM ask.suggest_questions(5)");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(trace["source"], "llm", "{trace}");
        assert_eq!(suggested, 0, "nor is its query suggested");
        Spi::run(
            "DELETE FROM ask.verified_queries; REVOKE ALL ON public.restaurants FROM ask_test_a, ask_test_b, ask_test_sneaky;
             DROP ROLE ask_test_sneaky; DROP ROLE ask_test_creator; DROP ROLE ask_test_b; DROP ROLE ask_test_a",
        )
        .unwrap();
    }

    /// A verifier is known by OID: a role created with a dropped verifier's name does not take
    /// answers from the dropped one's queries as its own.
    #[pg_test]
    fn a_role_with_a_dropped_verifiers_name_is_not_its_verifier() {
        setup();
        let grant = "CREATE ROLE ask_test_heir; GRANT SELECT ON public.restaurants TO ask_test_heir";
        Spi::run(grant).unwrap();
        let _s = llm(Script::default()
            .rule(Rule::new(&["<schema>"], Reply::text(COUNT_SQL)))
            .rule(Rule::new(&["<result"], Reply::text("ROWS"))));
        let explain = || -> JsonB {
            Spi::run("SET ROLE ask_test_heir").unwrap();
            let trace = one::<JsonB>("SELECT ask.explain('How many restaurants are there?')");
            Spi::run("RESET ROLE").unwrap();
            trace
        };
        Spi::run("SET ROLE ask_test_heir").unwrap();
        one::<i64>(&format!("SELECT ask.add_verified('How many restaurants are there?', '{COUNT_SQL}')"));
        Spi::run("RESET ROLE").unwrap();
        let JsonB(own) = explain();
        assert_eq!(own["source"], "verified", "its own query answers it: {own}");
        Spi::run("REVOKE ALL ON public.restaurants FROM ask_test_heir; DROP ROLE ask_test_heir").unwrap();
        Spi::run(grant).unwrap();
        let JsonB(heir) = explain();
        assert_eq!(heir["source"], "llm", "the dropped role's query is another's: {heir}");
        // Nor may the heir remove it.
        let id: i64 = one("SELECT id FROM ask.verified_queries ORDER BY id LIMIT 1");
        Spi::run("SET ROLE ask_test_heir").unwrap();
        let (code, message, _) = error_of(&format!("SELECT ask.remove_verified({id})"));
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(code, "42501", "{message}");
        Spi::run("DELETE FROM ask.verified_queries; REVOKE ALL ON public.restaurants FROM ask_test_heir; DROP ROLE ask_test_heir").unwrap();
    }

    #[pg_test]
    fn only_the_verifier_the_owner_or_a_superuser_removes() {
        setup();
        Spi::run("CREATE ROLE ask_test_a; CREATE ROLE ask_test_b; GRANT SELECT ON public.cities TO ask_test_a, ask_test_b").unwrap();
        Spi::run("SET ROLE ask_test_a").unwrap();
        let id: i64 = one("SELECT ask.add_verified('How many cities?', 'SELECT count(*) FROM public.cities')");
        Spi::run("SET ROLE ask_test_b").unwrap();
        let (code, message, _) = error_of(&format!("SELECT ask.remove_verified({id})"));
        Spi::run("SET ROLE ask_test_a").unwrap();
        let removed: bool = one(&format!("SELECT ask.remove_verified({id})"));
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(code, "42501", "{message}");
        assert!(removed);
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.verified_queries"), 0);
        Spi::run("REVOKE ALL ON public.cities FROM ask_test_a, ask_test_b; DROP ROLE ask_test_a; DROP ROLE ask_test_b").unwrap();
    }

    #[pg_test]
    fn a_template_is_chosen_by_the_model_as_the_caller_and_only_from_trusted_verifiers() {
        setup();
        one::<i64>("SELECT ask.index_values('public.restaurants', ARRAY['cuisine'])");
        let italian = "SELECT name FROM public.restaurants WHERE cuisine = ''Italian'' ORDER BY name";
        let id: i64 = one(&format!("SELECT ask.add_verified('Which restaurants serve Italian food?', '{italian}')"));
        Spi::run(
            "CREATE ROLE ask_test_t; CREATE ROLE ask_test_b; CREATE ROLE ask_test_none;
             GRANT SELECT ON public.restaurants, public.cities TO ask_test_t, ask_test_b",
        )
        .unwrap();
        let s = llm(Script::default()
            .rule(Rule::new(&["<templates>", "French"], Reply::text(r#"{"template": 1, "slots": {"s1": "French"}}"#)))
            .rule(Rule::new(&["<templates>"], Reply::text(r#"{"template": 0, "slots": {}}"#)))
            .rule(Rule::new(&["<schema>"], Reply::text("SELECT name FROM public.restaurants")))
            .rule(Rule::new(&["<result"], Reply::text("ROWS"))));
        // A role that may read the table, answered from the superuser's verified query.
        Spi::run("SET ROLE ask_test_t").unwrap();
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('Which restaurants serve French cuisine?')");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!((&trace["source"], &trace["verified_id"]), (&"verified_template".into(), &id.into()), "{trace}");
        assert_eq!(trace["final_sql"], "SELECT name FROM public.restaurants WHERE cuisine = 'French' ORDER BY name");
        let reqs = s.requests();
        assert_eq!(reqs.len(), 1, "one call, the choice");
        assert!(reqs[0].body["grammar"].as_str().is_some_and(|g| g.contains("t1 ::=")), "{}", reqs[0].body);
        let st = trace["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "template").expect("a template stage").clone();
        assert_eq!(st["input"]["offered"][0]["sql"], "SELECT name FROM public.restaurants WHERE cuisine = {s1} ORDER BY name");
        assert_eq!((&st["output"]["taken"], &st["output"]["rows"]), (&true.into(), &1.into()));
        let src: String = one(&format!("SELECT source FROM ask.questions WHERE id = {}", trace["call_id"]));
        assert_eq!(src, "verified");

        // Row-level security holds for the filled query as for any: the caller's rows only.
        Spi::run(
            "ALTER TABLE public.restaurants ENABLE ROW LEVEL SECURITY;
             CREATE POLICY ask_test_not_french ON public.restaurants FOR SELECT TO ask_test_t USING (cuisine <> 'French');
             CREATE POLICY ask_test_all ON public.restaurants FOR SELECT TO ask_test_b USING (true)",
        )
        .unwrap();
        s.clear_requests();
        Spi::run("SET ROLE ask_test_t").unwrap();
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('Which restaurants serve French cuisine?')");
        Spi::run("RESET ROLE").unwrap();
        // Whichever way it was answered (the template, or generation when the memory does not
        // show the caller 'French'), the policy's hidden row is in no answer.
        let answer = trace["answer"].as_str().expect("an answer").to_string();
        assert!(!answer.contains("Le Petit"), "a row the policy hides reached the answer: {trace}");
        if trace["source"] == "verified_template" {
            assert_eq!(trace["final_sql"], "SELECT name FROM public.restaurants WHERE cuisine = 'French' ORDER BY name");
        }

        // Another role's verified query is never offered as a template.
        Spi::run("ALTER TABLE public.restaurants DISABLE ROW LEVEL SECURITY").unwrap();
        Spi::run("SET ROLE ask_test_b").unwrap();
        one::<i64>("SELECT ask.add_verified('Which restaurants are in which city?', 'SELECT r.name, c.name FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id')");
        Spi::run("RESET ROLE").unwrap();
        s.clear_requests();
        Spi::run("SET ROLE ask_test_t").unwrap();
        one::<JsonB>("SELECT ask.explain('Show me which city each restaurant is in')");
        Spi::run("RESET ROLE").unwrap();
        // (It may be an example in the generation prompt, as another role's verified query is.)
        let offered: Vec<String> = s.requests().into_iter().filter(|r| r.prompt.contains("<templates>")).map(|r| r.prompt).collect();
        assert!(offered.iter().all(|p| !p.contains("JOIN public.cities c ON")), "{offered:?}");

        // A role that may not read the table is offered nothing over it.
        s.clear_requests();
        Spi::run("SET ROLE ask_test_none").unwrap();
        let _ = error_report("SELECT ask.explain('Which restaurants serve French cuisine?')");
        Spi::run("RESET ROLE").unwrap();
        assert!(s.requests().iter().all(|r| !r.prompt.contains("<templates>")));
        Spi::run(
            "DROP POLICY ask_test_not_french ON public.restaurants; DROP POLICY ask_test_all ON public.restaurants;
             DELETE FROM ask.verified_queries; REVOKE ALL ON public.restaurants, public.cities FROM ask_test_t, ask_test_b;
             DROP ROLE ask_test_t; DROP ROLE ask_test_b; DROP ROLE ask_test_none",
        )
        .unwrap();
    }

    #[pg_test]
    fn a_name_the_database_holds_beside_a_code_is_a_slot_only_for_a_role_that_reads_that_row() {
        setup();
        Spi::run(
            "CREATE ROLE ask_test_o; CREATE ROLE ask_test_r; CREATE ROLE ask_test_p;
             CREATE SCHEMA ask_alias AUTHORIZATION ask_test_o",
        )
        .unwrap();
        // The tables' owner is no superuser.
        Spi::run(
            "SET ROLE ask_test_o;
             CREATE TABLE ask_alias.states (code text PRIMARY KEY, name text NOT NULL);
             CREATE TABLE ask_alias.places (id int PRIMARY KEY, name text NOT NULL, state_code text REFERENCES ask_alias.states (code));
             INSERT INTO ask_alias.states VALUES ('LA', 'Louisiana'), ('TX', 'Texas');
             INSERT INTO ask_alias.places VALUES (1, 'New Orleans', 'LA'), (2, 'Baton Rouge', 'LA'), (3, 'Austin', 'TX');
             GRANT USAGE ON SCHEMA ask_alias TO ask_test_r, ask_test_p;
             GRANT SELECT ON ask_alias.states, ask_alias.places TO ask_test_r;
             GRANT SELECT ON ask_alias.places TO ask_test_p;
             RESET ROLE",
        )
        .unwrap();
        let sql = "SELECT name FROM ask_alias.places WHERE state_code = ''LA'' ORDER BY name";
        one::<i64>(&format!("SELECT ask.add_verified('Which places are in Louisiana?', '{sql}')"));
        let s = llm(Script::default()
            .rule(Rule::new(&["<templates>", "Louisiana"], Reply::text(r#"{"template": 1, "slots": {"s1": "Louisiana"}}"#)))
            .rule(Rule::new(&["<templates>", "Texas"], Reply::text(r#"{"template": 1, "slots": {"s1": "Texas"}}"#)))
            .rule(Rule::new(&["<schema>"], Reply::text("SELECT name FROM ask_alias.places")))
            .rule(Rule::new(&["<result"], Reply::text("ROWS"))));
        let template_stage = |trace: &serde_json::Value| {
            trace["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "template").cloned().unwrap_or_default()
        };
        let ask_as = |role: &str, question: &str| {
            Spi::run(&format!("SET ROLE {role}")).unwrap();
            let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{question}')"));
            Spi::run("RESET ROLE").unwrap();
            trace
        };
        // A role that reads the states: 'LA' is the row ('LA', 'Louisiana'), a slot the
        // question's "Louisiana" fills with the verified value.
        let trace = ask_as("ask_test_r", "Name the Louisiana places.");
        let st = template_stage(&trace);
        assert_eq!(st["input"]["offered"][0]["sql"], "SELECT name FROM ask_alias.places WHERE state_code = {s1} ORDER BY name", "{trace}");
        assert_eq!((&trace["source"], &st["output"]["taken"]), (&"verified_template".into(), &true.into()), "{trace}");
        assert_eq!(trace["final_sql"], "SELECT name FROM ask_alias.places WHERE state_code = 'LA' ORDER BY name");
        // Another name is no spelling of the verified value: the memory would have to read it.
        let trace = ask_as("ask_test_r", "Which places are in Texas?");
        assert_eq!(trace["source"], "llm", "{trace}");
        assert_ne!(template_stage(&trace)["output"]["taken"], true, "{trace}");
        // A role that may not read the states learns nothing of them: no slot.
        let trace = ask_as("ask_test_p", "Name the Louisiana places.");
        assert_eq!(
            template_stage(&trace)["input"]["offered"][0]["sql"],
            "SELECT name FROM ask_alias.places WHERE state_code = 'LA' ORDER BY name",
            "{trace}"
        );
        // Nor one whose policy hides that row.
        Spi::run(
            "SET ROLE ask_test_o; ALTER TABLE ask_alias.states ENABLE ROW LEVEL SECURITY;
             CREATE POLICY not_la ON ask_alias.states FOR SELECT TO ask_test_r USING (code <> 'LA'); RESET ROLE",
        )
        .unwrap();
        let trace = ask_as("ask_test_r", "Name the Louisiana places.");
        assert_eq!(
            template_stage(&trace)["input"]["offered"][0]["sql"],
            "SELECT name FROM ask_alias.places WHERE state_code = 'LA' ORDER BY name",
            "{trace}"
        );
        drop(s);
        Spi::run(
            "DELETE FROM ask.verified_queries; DROP SCHEMA ask_alias CASCADE;
             DROP ROLE ask_test_o; DROP ROLE ask_test_r; DROP ROLE ask_test_p",
        )
        .unwrap();
    }
}
