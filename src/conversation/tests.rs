//! In-backend tests of conversations: a follow-up read in the light of the turn before (and
//! shown its SQL to edit), a question that stands alone read as it stands, the turns kept per
//! role under row-level security, feedback per turn, ending and forgetting, and the roles that
//! may not reach another's conversation. Also `ask.tables()` and `ask.query()`, which clients
//! such as the MCP endpoint call.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script};
    use pgrx::prelude::*;
    use pgrx::JsonB;

    use crate::pg::testing::*;

    const LA: &str = "Which Italian restaurants are in Los Angeles?";
    const SF: &str = "Which Italian restaurants are in San Francisco?";
    const LA_SQL: &str = "SELECT r.name FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id WHERE c.name = 'Los Angeles' AND r.cuisine = 'Italian'";
    const SF_COUNT: &str = "How many Italian restaurants are in San Francisco?";
    const SF_COUNT_SQL: &str = "SELECT count(*) FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id WHERE c.name = 'San Francisco' AND r.cuisine = 'Italian'";
    const SF_SQL: &str = "SELECT r.name FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id WHERE c.name = 'San Francisco' AND r.cuisine = 'Italian'";

    fn script() -> Script {
        Script::default()
            // The rewrite of the follow-up, and the generation of the question it became (tried
            // first: its prompt also holds the earlier question, as the query to edit).
            .rule(Rule::new(
                &["<latest_question>and in San Francisco?</latest_question>"],
                Reply::text(format!("Standalone question: {SF}")),
            ))
            // A new question the model rewords in words of its own, and a follow-up that has
            // none of the words that often open one.
            .rule(Rule::new(
                &["<latest_question>How many cities are there?</latest_question>"],
                Reply::text("What is the number of cities?"),
            ))
            .rule(Rule::new(&["<latest_question>How many are there?</latest_question>"], Reply::text(SF_COUNT)))
            .rule(Rule::new(
                &["<schema>", &format!("<question>{SF_COUNT}</question>")],
                Reply::text(format!("```sql\n{SF_COUNT_SQL}\n```")),
            ))
            .rule(Rule::new(&["<schema>", &format!("<question>{SF}</question>")], Reply::text(format!("```sql\n{SF_SQL}\n```"))))
            .rule(Rule::new(&["<schema>", &format!("<question>{LA}</question>")], Reply::text(format!("```sql\n{LA_SQL}\n```"))))
            .rule(Rule::new(&["<schema>", "How many cities"], Reply::text("```sql\nSELECT count(*) FROM public.cities\n```")))
            .rule(Rule::new(&["<result"], Reply::text("Here they are.")))
    }

    fn roles() {
        Spi::run(
            "CREATE ROLE ask_conv_a; CREATE ROLE ask_conv_b; CREATE ROLE ask_conv_none;
             GRANT SELECT ON public.restaurants, public.cities TO ask_conv_a, ask_conv_b;
             GRANT USAGE ON SCHEMA ask TO ask_conv_a, ask_conv_b, ask_conv_none",
        )
        .unwrap();
    }

    #[pg_test]
    fn a_follow_up_is_rewritten_and_edits_the_turn_before() {
        setup();
        roles();
        let s = llm(script());
        Spi::run("SET ROLE ask_conv_a").unwrap();
        let id: i64 = one("SELECT ask.conversation_start('Italian food')");
        let first: String = one(&format!("SELECT ask.sql('{LA}', conversation => {id})"));
        assert_eq!(first, LA_SQL);
        // A follow-up: rewritten into a standalone question, generation shown the turn
        // before's SQL to edit.
        s.clear_requests();
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('and in San Francisco?', conversation => {id})"));
        assert_eq!(trace["final_sql"], SF_SQL, "{trace}");
        assert_eq!(trace["reading"]["reading"], "rewritten");
        assert_eq!(trace["reading"]["standalone"], SF);
        assert_eq!(trace["reading"]["follows"], 1);
        let stage = trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "follow_up").expect("a follow_up stage").clone();
        assert_eq!(stage["output"]["standalone"], SF, "{stage}");
        let generation: Vec<String> = s.requests().into_iter().filter(|r| r.prompt.contains("<schema>")).map(|r| r.prompt).collect();
        assert!(generation.iter().any(|p| p.contains("<previous>") && p.contains(LA_SQL)), "{generation:?}");
        // A follow-up with none of the words that open one ("How many are there?") is read as
        // one: the model's rewrite took its subject from the turn before.
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('How many are there?', conversation => {id})"));
        assert_eq!(trace["reading"]["reading"], "rewritten", "{trace}");
        assert_eq!(trace["reading"]["standalone"], SF_COUNT);
        assert_eq!(trace["reading"]["follows"], 2);
        assert_eq!(trace["final_sql"], SF_COUNT_SQL);
        // A new question is read by the model too, and stands alone: the model reworded it in
        // words of its own, nothing taken from the turn before; it is answered as asked.
        s.clear_requests();
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('How many cities are there?', conversation => {id})"));
        assert_eq!(trace["reading"]["reading"], "standalone", "{trace}");
        assert!(s.requests().iter().any(|r| r.prompt.contains("<latest_question>How many cities are there?")));
        let stage = trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "follow_up").expect("a follow_up stage").clone();
        assert_eq!(stage["output"]["rewrite"], "What is the number of cities?", "{stage}");
        assert_eq!(trace["final_sql"], "SELECT count(*) FROM public.cities", "{trace}");
        // The turns, as the role reads them.
        let turns: Vec<(i32, String, String, Option<i64>)> = Spi::connect(|c| {
            c.select(
                &format!(
                    "SELECT turn, reading, standalone, row_count FROM ask.conversation_turns WHERE conversation_id = {id} ORDER BY turn"
                ),
                None,
                &[],
            )
            .unwrap()
            .map(|r| {
                (
                    r.get::<i32>(1).unwrap().unwrap(),
                    r.get::<String>(2).unwrap().unwrap(),
                    r.get::<String>(3).unwrap().unwrap(),
                    r.get::<i64>(4).unwrap(),
                )
            })
            .collect()
        });
        assert_eq!(turns.len(), 4, "{turns:?}");
        assert_eq!((turns[1].1.as_str(), turns[1].2.as_str()), ("rewritten", SF));
        assert_eq!((turns[2].1.as_str(), turns[2].2.as_str()), ("rewritten", SF_COUNT));
        assert_eq!((turns[3].1.as_str(), turns[3].2.as_str()), ("standalone", "How many cities are there?"));
        assert_eq!(turns[0].3, Some(2));
        // The call log has the question as it was answered, and feedback works per turn.
        let call: i64 = one(&format!("SELECT call_id FROM ask.conversation_turns WHERE conversation_id = {id} AND turn = 2"));
        assert_eq!(one::<String>(&format!("SELECT question FROM ask.questions WHERE id = {call}")), SF);
        let vid: i64 = one(&format!("SELECT ask.feedback({call}, true)"));
        assert_eq!(one::<String>(&format!("SELECT question FROM ask.verified_queries WHERE id = {vid}")), SF);
        Spi::run("RESET ROLE").unwrap();

        // Another role reaches none of it: not its rows, not a turn of it.
        Spi::run("SET ROLE ask_conv_b").unwrap();
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.conversations"), 0);
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.conversation_turns"), 0);
        let (code, message, _) = error_of(&format!("SELECT ask.sql('and in San Francisco?', conversation => {id})"));
        assert_eq!(code, "42704", "{message}");
        let (code, _, _) = error_of(&format!("SELECT ask.conversation_end({id})"));
        assert_eq!(code, "42704");
        assert!(!one::<bool>(&format!("SELECT ask.conversation_forget({id})")));
        let (code, _, _) = error_of("SELECT ask.conversation_purge('0 seconds', all_roles => true)");
        assert_eq!(code, "42501");
        // It cannot write the tables itself either.
        let (code, _, _) = error_of(&format!("INSERT INTO ask.conversation_turns (conversation_id, turn, role, question, standalone, reading) VALUES ({id}, 9, 'ask_conv_a', 'x', 'x', 'standalone')"));
        assert_eq!(code, "42501");
        Spi::run("RESET ROLE").unwrap();

        // A role without privileges may start one, and its question fails as any would.
        Spi::run("SET ROLE ask_conv_none").unwrap();
        let mine: i64 = one("SELECT ask.conversation_start()");
        let (code, _, _) = error_of(&format!("SELECT ask.sql('{LA}', conversation => {mine})"));
        assert_eq!(code, "42501");
        assert_eq!(one::<i64>(&format!("SELECT count(*) FROM ask.conversation_turns WHERE conversation_id = {mine}")), 0);
        Spi::run("RESET ROLE").unwrap();

        // Ended: no more turns; forgotten: gone with its turns.
        Spi::run("SET ROLE ask_conv_a").unwrap();
        assert!(one::<bool>(&format!("SELECT ask.conversation_end({id})")));
        assert!(!one::<bool>(&format!("SELECT ask.conversation_end({id})")));
        let (code, _, hint) = error_of(&format!("SELECT ask.sql('{LA}', conversation => {id})"));
        assert_eq!(code, "55000");
        assert!(hint.unwrap_or_default().contains("conversation_start"));
        assert!(one::<bool>(&format!("SELECT ask.conversation_forget({id})")));
        assert_eq!(one::<i64>(&format!("SELECT count(*) FROM ask.conversation_turns WHERE conversation_id = {id}")), 0);
        let other: i64 = one("SELECT ask.conversation_start()");
        assert_eq!(one::<i64>("SELECT ask.conversation_purge('0 seconds')"), 1);
        assert_eq!(one::<i64>(&format!("SELECT count(*) FROM ask.conversations WHERE id = {other}")), 0);
        Spi::run("RESET ROLE").unwrap();
        Spi::run("DELETE FROM ask.conversations; DELETE FROM ask.verified_queries").unwrap();
    }

    /// A question that names, as its own subject, a table the turn before neither read nor named
    /// is answered as asked, without the model's reading; a table the caller may not read is no
    /// such subject (the model reads the question as any other).
    #[pg_test]
    fn a_question_naming_another_readable_table_is_answered_as_asked() {
        const CHEFS: &str = "Which chefs are Italian?";
        const CHEFS_SQL: &str = "SELECT full_name FROM public.chefs WHERE nationality = 'Italian'";
        setup();
        roles();
        Spi::run(
            "CREATE TABLE public.chefs (id int PRIMARY KEY, full_name text NOT NULL, nationality text);
             INSERT INTO public.chefs VALUES (1, 'Lucia Bianchi', 'Italian'), (2, 'Amélie Laurent', 'French');
             GRANT SELECT ON public.chefs TO ask_conv_a",
        )
        .unwrap();
        let s = llm(script()
            // What the model would make of it, had it been asked: the turn before's subject kept.
            .rule(Rule::new(
                &[&format!("<latest_question>{CHEFS}</latest_question>")],
                Reply::text("Which chefs of the Italian restaurants in Los Angeles are Italian?"),
            ))
            .rule(Rule::new(&["<schema>", &format!("<question>{CHEFS}</question>")], Reply::text(CHEFS_SQL)))
            .rule(Rule::new(
                &["<latest_question>How many secrets are there?</latest_question>"],
                Reply::text("How many secrets are there?"),
            ))
            .rule(Rule::new(&["<schema>", "secrets"], Reply::text("SELECT count(*) FROM public.secrets"))));
        Spi::run("SET ROLE ask_conv_a").unwrap();
        let id: i64 = one("SELECT ask.conversation_start()");
        assert_eq!(one::<String>(&format!("SELECT ask.sql('{LA}', conversation => {id})")), LA_SQL);
        s.clear_requests();
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{CHEFS}', conversation => {id})"));
        assert_eq!(trace["reading"]["reading"], "standalone", "{trace}");
        assert_eq!(trace["final_sql"], CHEFS_SQL, "{trace}");
        let stage = trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "follow_up").expect("a follow_up stage").clone();
        assert_eq!(stage["output"]["names"], "chefs", "{stage}");
        assert!(stage.get("prompt_tokens").is_none(), "no call: {stage}");
        assert!(!s.requests().iter().any(|r| r.prompt.contains("<latest_question>")), "the model was not asked to read it");
        // `secrets` is a table of the database, not one the role may read: the model reads the
        // question (which then fails on the table, as it would alone).
        s.clear_requests();
        let failed = error_report(&format!("SELECT ask.sql('How many secrets are there?', conversation => {id})"));
        assert!(failed.is_some(), "the role reads no secrets");
        assert!(s.requests().iter().any(|r| r.prompt.contains("<latest_question>How many secrets are there?")));
        Spi::run("RESET ROLE").unwrap();
        Spi::run("DELETE FROM ask.conversations").unwrap();
    }

    /// A follow-up that names a value in place of the turn before's, answered by the model with
    /// both, runs with the one it names, as the caller and under its row-level security.
    #[pg_test]
    fn a_value_named_in_place_of_the_turn_befores_replaces_it() {
        const ITALIAN: &str = "Which restaurants are Italian?";
        const ITALIAN_SQL: &str = "SELECT r.name FROM public.restaurants r WHERE r.cuisine = 'Italian'";
        const BOTH: &str = "Which restaurants are Italian and French?";
        setup();
        roles();
        let _s = llm(Script::default()
            .rule(Rule::new(&["<latest_question>and the French ones?</latest_question>"], Reply::text(BOTH)))
            .rule(Rule::new(
                &["<schema>", &format!("<question>{BOTH}</question>")],
                Reply::text("SELECT r.name FROM public.restaurants r WHERE r.cuisine IN ('Italian', 'French')"),
            ))
            .rule(Rule::new(&["<schema>", &format!("<question>{ITALIAN}</question>")], Reply::text(ITALIAN_SQL))));
        Spi::run(
            "ALTER TABLE public.restaurants ENABLE ROW LEVEL SECURITY;
             CREATE POLICY ask_conv_not_roma ON public.restaurants FOR SELECT TO ask_conv_a USING (name <> 'Roma')",
        )
        .unwrap();
        Spi::run("SET ROLE ask_conv_a").unwrap();
        let id: i64 = one("SELECT ask.conversation_start()");
        assert_eq!(one::<String>(&format!("SELECT ask.sql('{ITALIAN}', conversation => {id})")), ITALIAN_SQL);
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('and the French ones?', conversation => {id})"));
        assert_eq!(trace["final_sql"], "SELECT r.name FROM public.restaurants r WHERE r.cuisine = 'French'", "{trace}");
        let stage = trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "replaced").expect("a replaced stage").clone();
        assert_eq!(stage["output"]["replaced"][0]["from"], "r.cuisine IN ('Italian', 'French')", "{stage}");
        assert_eq!(trace["reading"]["standalone"], "Which restaurants are French?", "{trace}");
        assert_eq!(
            one::<String>(&format!("SELECT standalone FROM ask.conversation_turns WHERE conversation_id = {id} AND turn = 2")),
            "Which restaurants are French?"
        );
        // The turn before's rows as the role reads them: one Italian restaurant of two.
        assert_eq!(one::<i64>(&format!("SELECT row_count FROM ask.conversation_turns WHERE conversation_id = {id} AND turn = 1")), 1);
        Spi::run("RESET ROLE").unwrap();
        Spi::run("DROP POLICY ask_conv_not_roma ON public.restaurants; ALTER TABLE public.restaurants DISABLE ROW LEVEL SECURITY; DELETE FROM ask.conversations").unwrap();
    }

    #[pg_test]
    fn a_turn_keeps_only_the_rows_row_level_security_shows() {
        setup();
        roles();
        let _s = llm(script());
        Spi::run(
            "ALTER TABLE public.restaurants ENABLE ROW LEVEL SECURITY;
             CREATE POLICY ask_conv_not_trattoria ON public.restaurants FOR SELECT TO ask_conv_a USING (name <> 'Trattoria')",
        )
        .unwrap();
        Spi::run("SET ROLE ask_conv_a").unwrap();
        let id: i64 = one("SELECT ask.conversation_start()");
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{LA}', conversation => {id})"));
        assert!(!trace["answer"].as_str().unwrap_or_default().contains("Trattoria"), "{trace}");
        assert_eq!(one::<i64>(&format!("SELECT row_count FROM ask.conversation_turns WHERE conversation_id = {id}")), 1);
        Spi::run("RESET ROLE").unwrap();
        Spi::run("DROP POLICY ask_conv_not_trattoria ON public.restaurants; ALTER TABLE public.restaurants DISABLE ROW LEVEL SECURITY; DELETE FROM ask.conversations").unwrap();
    }

    #[pg_test]
    fn tables_and_query_go_by_the_callers_privileges_and_the_guard() {
        setup();
        roles();
        Spi::run("CREATE POLICY ask_conv_la ON public.cities FOR SELECT TO ask_conv_a USING (name = 'Los Angeles'); ALTER TABLE public.cities ENABLE ROW LEVEL SECURITY").unwrap();
        Spi::run("SET ROLE ask_conv_a").unwrap();
        let listed: String = one(
            "SELECT string_agg(schema_name || '.' || table_name || ':' || coalesce(description, ''), ' ' ORDER BY 1) FROM ask.tables()",
        );
        assert_eq!(listed, "public.cities:Cities we know public.restaurants:");
        let JsonB(row) = one::<JsonB>("SELECT ask.query('SELECT count(*) AS n FROM public.cities')");
        assert_eq!(row["n"], 1, "row-level security holds");
        for (sql, code) in [
            ("SELECT * FROM public.secrets", "42501"),
            ("DELETE FROM public.cities", "2F003"),
            ("COMMIT; DELETE FROM public.cities", "2F003"),
            ("/* read only */ DELETE FROM public.cities", "2F003"),
            ("SELECT * FROM pg_read_file('/etc/passwd')", "2F003"),
        ] {
            let (got, message, _) = error_of(&format!("SELECT * FROM ask.query($q${sql}$q$)"));
            assert_eq!(got, code, "{sql}: {message}");
        }
        Spi::run("RESET ROLE").unwrap();
        Spi::run("SET ROLE ask_conv_none").unwrap();
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.tables()"), 0);
        Spi::run("RESET ROLE").unwrap();
        Spi::run("DROP POLICY ask_conv_la ON public.cities; ALTER TABLE public.cities DISABLE ROW LEVEL SECURITY").unwrap();
    }

    /// pg_ask keeps a role's rows by OID: a role dropped, and another created later with its
    /// name, sees none of the first one's conversations, turns, questions, ledger rows, cached
    /// replies or counts of verified queries, and cannot continue its conversation.
    #[pg_test]
    fn a_role_created_with_a_dropped_roles_name_inherits_nothing() {
        setup();
        let _s = llm(script());
        let grant = "CREATE ROLE ask_conv_heir; GRANT SELECT ON public.restaurants, public.cities TO ask_conv_heir";
        Spi::run(grant).unwrap();
        Spi::run("SET ask.cache = on").unwrap();
        Spi::run("SELECT ask.add_verified('How many cities are there?', 'SELECT count(*) FROM public.cities')").unwrap();
        Spi::run("SET ROLE ask_conv_heir").unwrap();
        let id: i64 = one("SELECT ask.conversation_start('mine')");
        one::<String>(&format!("SELECT ask.sql('{LA}', conversation => {id})"));
        one::<String>("SELECT ask.sql('How many cities are there?')");
        let seen = "SELECT (SELECT count(*) FROM ask.conversations) + (SELECT count(*) FROM ask.conversation_turns)
                         + (SELECT count(*) FROM ask.questions) + (SELECT count(*) FROM ask.llm_calls)
                         + (SELECT count(*) FROM ask.verified_uses)";
        assert!(one::<i64>(seen) >= 6, "the first role sees its own rows");
        Spi::run("RESET ROLE").unwrap();
        let cached = "SELECT count(*) FROM ask.llm_cache WHERE role::text = 'ask_conv_heir'";
        assert!(one::<i64>(cached) > 0);
        Spi::run("REVOKE ALL ON public.restaurants, public.cities FROM ask_conv_heir; DROP ROLE ask_conv_heir").unwrap();
        Spi::run(grant).unwrap();
        Spi::run("SET ROLE ask_conv_heir").unwrap();
        assert_eq!(one::<i64>(seen), 0, "the new role with the old name sees nothing of the old one's");
        let (code, _, _) = error_of(&format!("SELECT ask.sql('{SF}', conversation => {id})"));
        assert_eq!(code, "42704", "the old role's conversation is not the new one's");
        assert!(!one::<bool>(&format!("SELECT ask.conversation_forget({id})")), "nothing of the new role's to forget");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one::<i64>(cached), 0, "no cached reply is the new role's");
    }
}
