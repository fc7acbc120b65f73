//! In-backend tests of `ask()`, `ask.sql()`, `ask.rows()`, `ask.explain()`: the pipeline end to
//! end against a stand-in LLM server, protocols, faults, retries, the key, limits.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script, StandIn};
    use pgrx::prelude::*;
    use pgrx::JsonB;
    use serde_json::Value;

    use crate::pg::testing::*;

    #[pg_test]
    fn ask_is_callable_without_schema_and_the_rest_lives_in_ask() {
        let n: i64 = one("SELECT count(*) FROM pg_proc WHERE proname = 'ask' AND pronamespace = 'public'::regnamespace");
        assert_eq!(n, 1);
        let n: i64 = one("SELECT count(*) FROM pg_proc WHERE proname IN ('sql','rows','explain') AND pronamespace = 'ask'::regnamespace");
        assert_eq!(n, 3);
    }

    /// Rows wider than the answer says by itself: the model writes the answer.
    const ITALIAN_WIDE_SQL: &str = "SELECT r.id, r.name, r.cuisine, c.name AS city, c.state FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id WHERE c.name = 'Los Angeles' AND r.cuisine = 'Italian' ORDER BY r.name";

    #[pg_test]
    fn ask_answers_end_to_end_and_writes_the_ledger() {
        setup();
        let q = "which Italian restaurants are in LA?";
        let s = llm(pipeline_script(q, ITALIAN_WIDE_SQL, "Roma and Trattoria are the Italian restaurants in Los Angeles."));
        let answer: String = one(&format!("SELECT ask('{q}')"));
        assert_eq!(answer, "Roma and Trattoria are the Italian restaurants in Los Angeles.");

        let reqs = s.requests();
        assert_eq!(reqs.len(), 2);
        // The schema prompt describes the readable tables with keys and comments.
        let prompt = &reqs[0].prompt;
        assert!(prompt.contains("TABLE public.cities  -- Cities we know"), "{prompt}");
        assert!(prompt.contains("city_id integer REFERENCES public.cities(id)"), "{prompt}");
        assert!(prompt.contains("name text NOT NULL  -- full city name"), "{prompt}");
        // The answer prompt carries the real rows.
        assert!(reqs[1].prompt.contains("\"Roma\"") && reqs[1].prompt.contains("\"Trattoria\""), "{}", reqs[1].prompt);

        let ledger: i64 = one("SELECT count(*) FROM ask.llm_calls WHERE outcome = 'ok' AND stage IN ('generate','answer') AND role = current_user::regrole AND prompt_tokens > 0");
        assert_eq!(ledger, 2);
    }

    #[pg_test]
    fn rows_as_the_answer_come_back_as_a_table() {
        setup();
        let q = "list the Italian restaurants in LA";
        let _llm = llm(pipeline_script(q, ITALIAN_WIDE_SQL, "ROWS"));
        let answer: String = one(&format!("SELECT ask('{q}')"));
        assert!(answer.starts_with(" id | name ") && answer.contains(" Trattoria ") && answer.ends_with("\n(2 rows)"), "{answer}");
    }

    #[pg_test]
    fn sql_rows_and_explain() {
        setup();
        let q = "Italian places in LA";
        let _llm = llm(pipeline_script(q, ITALIAN_SQL, "ROWS"));
        let sql: String = one(&format!("SELECT ask.sql('{q}')"));
        assert!(sql.starts_with("SELECT r.name FROM public.restaurants r") && !sql.ends_with(';'), "{sql}");
        let rows: Vec<Value> = Spi::connect(|c| {
            c.select(&format!("SELECT r FROM ask.rows('{q}') r"), None, &[])
                .unwrap()
                .map(|row| row.get::<JsonB>(1).unwrap().unwrap().0)
                .collect()
        });
        assert_eq!(rows, vec![serde_json::json!({"name": "Roma"}), serde_json::json!({"name": "Trattoria"})]);
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        let stages: Vec<&str> = trace["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
        // The literals were looked at; no value memory exists, so nothing changed. The model
        // wrote its first query itself (auto), and it ran: no grammar was built.
        assert_eq!(stages, ["schema", "generate", "guard", "correct", "execute", "answer"]);
        assert_eq!(trace["stages"][3]["output"]["literals"][0]["decision"], "not_indexed", "{trace}");
        assert_eq!(trace["final_sql"].as_str().unwrap(), sql);
        assert!(trace["stages"][1]["ms"].as_f64().unwrap() > 0.0);
        assert_eq!(trace["stages"][1]["output"]["unconstrained"], "free_first");
        assert_eq!(trace["stages"][4]["output"]["rows"], 2);
        // On, the grammar of the described tables constrains the first call.
        Spi::run("SET ask.sql_grammar = on").unwrap();
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}, constrained')"));
        let stages: Vec<&str> = trace["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
        assert_eq!(&stages[..3], ["schema", "grammar", "generate"], "{trace}");
        assert_eq!(trace["stages"][2]["output"]["constrained"], "grammar");
        Spi::run("RESET ask.sql_grammar").unwrap();
    }

    #[pg_test]
    fn repairs_from_the_database_error() {
        setup();
        let q = "how many cities?";
        // An edit repair, which shows the database's error (`auto` asks a missing relation
        // afresh).
        Spi::run("SET ask.first_repair = edit").unwrap();
        let _llm =
            llm(Script::default().rule(Rule::new(&["<schema>", q], Reply::text("SELECT count(*) AS n FROM public.citys")).times(1)).rule(
                Rule::new(&["<schema>", q], Reply::text("SELECT count(*) AS n FROM public.cities"))
                    .last(&["relation \"public.citys\" does not exist"]),
            ));
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        assert_eq!(trace["attempts"], 2, "{trace}");
        assert_eq!(trace["answer"], "n: 2");
        let failed = trace["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "execute").unwrap();
        assert_eq!(failed["output"]["sqlstate"], "42P01");
    }

    /// Schema `p` owned by the non-superuser `{p}_owner`, its table `shops` under forced
    /// row-level security (a row is seen by the role that keeps it: 'Mine' by `{p}_reader`,
    /// 'Theirs' by no role of the test) and readable by `{p}_reader`; `{p}_nobody` has the
    /// schema's USAGE and nothing else. `more` runs as the owner after it.
    fn shops_under_policy(p: &str, more: &str) {
        Spi::run(&format!(
            "CREATE ROLE {p}_owner; CREATE ROLE {p}_reader; CREATE ROLE {p}_nobody;
             CREATE SCHEMA {p} AUTHORIZATION {p}_owner;
             GRANT USAGE ON SCHEMA {p} TO {p}_reader, {p}_nobody;
             SET ROLE {p}_owner;
             CREATE TABLE {p}.shops (id int PRIMARY KEY, name text NOT NULL, keeper name NOT NULL);
             INSERT INTO {p}.shops VALUES (1, 'Mine', '{p}_reader'), (2, 'Theirs', 'someone_else');
             ALTER TABLE {p}.shops ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
             CREATE POLICY own ON {p}.shops USING (keeper = current_user);
             GRANT SELECT ON {p}.shops TO {p}_reader;
             {more}
             RESET ROLE"
        ))
        .unwrap();
    }

    /// The rows of `ask.rows(q)` as the current role reads them.
    fn rows_of(q: &str) -> Vec<Value> {
        Spi::connect(|c| {
            c.select(&format!("SELECT r FROM ask.rows('{q}') r"), None, &[])
                .unwrap()
                .map(|row| row.get::<JsonB>(1).unwrap().unwrap().0)
                .collect()
        })
    }

    /// `{p}_nobody` (see [`shops_under_policy`]) asks `q`: an error, and `{p}.shops` described
    /// in no request `s` received. Leaves the session's role and search path reset.
    fn nobody_is_answered_nothing(p: &str, q: &str, s: &StandIn) {
        s.clear_requests();
        Spi::run(&format!("RESET ROLE; SET ROLE {p}_nobody")).unwrap();
        let failed = error_report(&format!("SELECT ask.sql('{q}')"));
        Spi::run("RESET ROLE; RESET search_path").unwrap();
        assert!(failed.is_some(), "no answer for a role that reads nothing");
        assert!(!s.requests().iter().any(|r| r.prompt.contains(&format!("{p}.shops"))), "described to a role that cannot read it");
    }

    /// A query over a column its table lacks, which PostgreSQL's hint names in another table of
    /// the query, runs again with that column, with no repair call: as the caller, under the
    /// owner's forced row-level security. A role without privileges gets no description and
    /// no rows.
    #[pg_test]
    fn a_column_postgresql_names_runs_as_the_caller_under_its_policies() {
        setup();
        shops_under_policy(
            "ask_named",
            "CREATE TABLE ask_named.sales (id int PRIMARY KEY, shop_id int NOT NULL REFERENCES ask_named.shops(id), amount int NOT NULL);
             INSERT INTO ask_named.sales VALUES (1, 1, 10), (2, 2, 20);
             GRANT SELECT ON ask_named.sales TO ask_named_reader;",
        );
        let q = "Which shops made sales?";
        const WROTE: &str = "SELECT T2.name FROM ask_named.shops AS T1 JOIN ask_named.sales AS T2 ON T2.shop_id = T1.id";
        let s = llm(Script::default().rule(Rule::new(&["<schema>", q], Reply::text(WROTE))));
        Spi::run("SET ROLE ask_named_reader; SET search_path = ask_named").unwrap();
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}', max_attempts => 1)"));
        assert_eq!(
            trace["final_sql"], "SELECT t1.name FROM ask_named.shops AS T1 JOIN ask_named.sales AS T2 ON T2.shop_id = T1.id",
            "{trace}"
        );
        let stage =
            trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "named_column").expect("a named_column stage").clone();
        assert_eq!(stage["output"], serde_json::json!({"from": "t2.name", "to": "t1.name"}));
        assert_eq!(rows_of(q), vec![serde_json::json!({"name": "Mine"})], "the reader's shop only");
        assert!(s.requests().iter().all(|r| !r.prompt.contains("does not exist")), "no repair was asked");
        // A role that may read neither table.
        nobody_is_answered_nothing("ask_named", q, &s);
    }

    /// A query that returns nothing for the caller (its rows hidden by a non-superuser owner's
    /// forced row-level security) is asked again once with why; the next query runs as the
    /// caller under the same policy, and when it returns nothing too, the first empty result
    /// answers; so is one whose rows left out a value the question quotes. A role without
    /// privileges gets no description and no answer.
    #[pg_test]
    fn a_query_that_returned_nothing_is_asked_again_as_the_caller_under_its_policies() {
        setup();
        shops_under_policy("ask_nothing", "");
        let q = "Which shops does someone else keep?";
        const HIDDEN: &str = "SELECT name FROM ask_nothing.shops WHERE keeper = 'someone_else'";
        const ALL: &str = "SELECT name FROM ask_nothing.shops";
        // Asked again with why: the next query's rows, the reader's own only.
        let s = llm(Script::default()
            .rule(Rule::new(&["returned no rows", HIDDEN], Reply::text(ALL)))
            .rule(Rule::new(&["<schema>", q], Reply::text(HIDDEN))));
        Spi::run("SET ROLE ask_nothing_reader; SET search_path = ask_nothing, public").unwrap();
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        assert_eq!(trace["final_sql"], ALL, "{trace}");
        let stage = trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "nothing").expect("a nothing stage").clone();
        assert_eq!(stage["output"], serde_json::json!({"rows": 0, "asked_again": true}));
        assert_eq!(rows_of(q), vec![serde_json::json!({"name": "Mine"})], "the reader's shop only");
        // The edit and the fresh ask write the same query: the empty result answers, the reason
        // told once.
        drop(s);
        let q = "Which shops does someone else run?";
        let s = llm(Script::default().rule(Rule::new(&["<schema>", q], Reply::text(HIDDEN))));
        let answer: String = one(&format!("SELECT ask('{q}')"));
        assert_eq!(answer, "Nothing was found.");
        assert_eq!(s.requests().iter().filter(|r| r.prompt.contains("returned no rows")).count(), 1, "asked again once");
        assert_eq!(s.requests().len(), 3, "written, edited, asked afresh");
        // Rows from a query that left out a value the question quotes: asked again once with
        // the value named; the next query runs as the caller under the same policy.
        drop(s);
        let q = r#"Which shops are called "Mine" or "Theirs"?"#;
        const ONE: &str = "SELECT name FROM ask_nothing.shops WHERE name = 'Mine'";
        const BOTH: &str = "SELECT name FROM ask_nothing.shops WHERE name IN ('Mine', 'Theirs')";
        let s = llm(Script::default()
            .rule(Rule::new(&[r#"does not use the value "Theirs""#, ONE], Reply::text(BOTH)))
            .rule(Rule::new(&["<schema>", q], Reply::text(ONE))));
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        assert_eq!(trace["final_sql"], BOTH, "{trace}");
        let stage = trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "quoted").expect("a quoted stage").clone();
        assert_eq!(stage["output"], serde_json::json!({"left_out": ["Theirs"], "rows": 1, "asked_again": true}));
        assert_eq!(rows_of(q), vec![serde_json::json!({"name": "Mine"})], "the reader's shop only, not the one it named");
        // A role that may read nothing.
        nobody_is_answered_nothing("ask_nothing", q, &s);
    }

    /// A ratio the model wrote as a division of two integers divides exactly, as the caller
    /// under a non-superuser owner's forced row-level security: the reader's shops only, and the
    /// built-in `numeric` though a hostile role's domain of that name over `integer` comes first
    /// on the caller's search path (the keyword names the built-in type); the first row of a
    /// descending sort is the reader's highest value, not NULL; a table named nearly as the
    /// described one is read as that one, not as the hostile role's table of the name first on
    /// the path; a join that only multiplies rows runs as `EXISTS` under the joined table's own
    /// policy; month names come in calendar order. A role without privileges gets no
    /// description and no answer.
    #[pg_test]
    fn a_ratio_of_integers_divides_exactly_as_the_caller_under_its_policies() {
        setup();
        shops_under_policy("ask_ratio", "");
        Spi::run(
            "INSERT INTO ask_ratio.shops VALUES (3, 'Mine too', 'ask_ratio_reader'), (4, 'Other', 'ask_ratio_reader');
             CREATE ROLE ask_ratio_att; CREATE SCHEMA ask_ratio_att AUTHORIZATION ask_ratio_att;
             GRANT USAGE ON SCHEMA ask_ratio_att TO PUBLIC;
             SET ROLE ask_ratio_att; CREATE DOMAIN ask_ratio_att.numeric AS integer; RESET ROLE",
        )
        .unwrap();
        let q = "What share of the shops have a name starting with Mine?";
        const WROTE: &str = "SELECT count(*) FILTER (WHERE name LIKE 'Mine%') / count(*) AS share FROM ask_ratio.shops";
        Spi::run("SET search_path = ask_ratio_att, ask_ratio, pg_catalog").unwrap();
        let (s, trace) = explained_as_reader(q, WROTE);
        let exact = WROTE.replace(") / count", ")::numeric / count");
        assert_eq!(trace["final_sql"], exact, "{trace}");
        let stage = trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "fraction").expect("a fraction stage").clone();
        assert_eq!(stage["input"]["sql"], WROTE);
        // Two of the reader's three shops; of all four 0.5, and as an integer division 0.
        let rows = rows_of(q);
        let share = rows[0]["share"].as_f64().unwrap_or_else(|| panic!("{rows:?}"));
        assert!((share - 2.0 / 3.0).abs() < 1e-9, "{rows:?}");
        // `numeric` is the keyword's type, not the domain of that name first on the path.
        let cast: String = one("SELECT pg_catalog.format_type(pg_catalog.pg_typeof(1::numeric), NULL)");
        assert_eq!(cast, "numeric");
        // The best rating: the reader's highest, not its shop without one, nor a hidden one.
        drop(s);
        Spi::run("RESET ROLE").unwrap();
        Spi::run("ALTER TABLE ask_ratio.shops ADD COLUMN rating int; UPDATE ask_ratio.shops SET rating = CASE id WHEN 1 THEN 3 WHEN 2 THEN 9 WHEN 4 THEN 5 END").unwrap();
        let q = "Which shop has the best rating?";
        const TOP: &str = "SELECT name FROM ask_ratio.shops ORDER BY rating DESC LIMIT 1";
        let (s, trace) = explained_as_reader(q, TOP);
        assert_eq!(trace["final_sql"], TOP.replace("DESC", "DESC NULLS LAST"), "{trace}");
        assert_eq!(rows_of(q), vec![serde_json::json!({"name": "Other"})]);
        // A table named nearly as the described one: run with the described table's qualified
        // name, not the hostile role's table of that name first on the reader's path, and
        // under the owner's policy.
        drop(s);
        Spi::run(
            "RESET ROLE; SET ROLE ask_ratio_att; CREATE TABLE ask_ratio_att.shops (id int, name text);
             INSERT INTO ask_ratio_att.shops VALUES (9, 'Mine, hostile'); RESET ROLE",
        )
        .unwrap();
        let q = "How many shops have a name starting with Mine?";
        const NEAR: &str = "SELECT count(*) AS n FROM shop WHERE name LIKE 'Mine%'";
        let (s, trace) = explained_as_reader(q, NEAR);
        assert_eq!(trace["final_sql"], NEAR.replace("FROM shop", "FROM ask_ratio.shops"), "{trace}");
        assert_eq!(rows_of(q), vec![serde_json::json!({"n": 2})]);
        // A join that only multiplies rows runs as EXISTS, under the visits' own policy: each of
        // the reader's visited shops once, not once per visit, and not shop 4, whose visit the
        // policy hides from it.
        drop(s);
        Spi::run(
            "RESET ROLE; SET ROLE ask_ratio_owner;
             CREATE TABLE ask_ratio.visits (id int PRIMARY KEY, shop_id int NOT NULL REFERENCES ask_ratio.shops(id));
             INSERT INTO ask_ratio.visits VALUES (1, 1), (2, 1), (3, 1), (4, 2), (5, 4);
             ALTER TABLE ask_ratio.visits ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
             CREATE POLICY not_four ON ask_ratio.visits USING (shop_id <> 4);
             GRANT SELECT ON ask_ratio.visits TO ask_ratio_reader; RESET ROLE",
        )
        .unwrap();
        let q = "Which shops were visited?";
        const FAN: &str = "SELECT s.name FROM ask_ratio.visits v JOIN ask_ratio.shops s ON v.shop_id = s.id";
        let (s, trace) = explained_as_reader(q, FAN);
        let once = "SELECT s.name FROM ask_ratio.shops s WHERE EXISTS (SELECT 1 FROM ask_ratio.visits v WHERE v.shop_id = s.id)";
        assert_eq!(trace["final_sql"], once, "{trace}");
        assert_eq!(rows_of(q), vec![serde_json::json!({"name": "Mine"})]);
        // Month names sorted as text run again in calendar order, and a range of them compares
        // their places, through pg_catalog's functions, not the hostile role's `lower` first on
        // the reader's path; the reader's shops only.
        drop(s);
        Spi::run(
            "RESET ROLE; ALTER TABLE ask_ratio.shops ADD COLUMN opened text;
             UPDATE ask_ratio.shops SET opened = (ARRAY['March', 'April', 'January', 'February'])[id];
             SET ROLE ask_ratio_att; CREATE FUNCTION ask_ratio_att.lower(text) RETURNS text LANGUAGE sql AS 'SELECT ''dec''';
             RESET ROLE",
        )
        .unwrap();
        let q = "How many shops opened in each month, in order of the month?";
        let (s, trace) = explained_as_reader(q, "SELECT opened, count(*) AS n FROM ask_ratio.shops GROUP BY opened ORDER BY opened");
        assert!(trace["final_sql"].as_str().unwrap().contains("ORDER BY pg_catalog.array_position(ARRAY['jan', "), "{trace}");
        let months: Vec<Value> = rows_of(q).iter().map(|r| r["opened"].clone()).collect();
        assert_eq!(months, ["January", "February", "March"], "calendar order, the reader's shops only");
        drop(s);
        let q = "How many shops opened from January to February?";
        let (s, trace) = explained_as_reader(q, "SELECT count(*) AS n FROM ask_ratio.shops WHERE opened BETWEEN 'January' AND 'February'");
        assert!(trace["final_sql"].as_str().unwrap().ends_with(" BETWEEN 1 AND 2"), "{trace}");
        assert_eq!(rows_of(q), vec![serde_json::json!({"n": 2})]);
        Spi::run("RESET ROLE; RESET search_path").unwrap();
        nobody_is_answered_nothing("ask_ratio", q, &s);
    }

    /// `ask.explain(q)` as `ask_ratio_reader` (the role stays set), the model writing `wrote`:
    /// the stand-in, kept for the calls after, and the trace.
    fn explained_as_reader(q: &str, wrote: &str) -> (StandIn, Value) {
        let s = llm(Script::default().rule(Rule::new(&["<schema>", q], Reply::text(wrote))));
        Spi::run("SET ROLE ask_ratio_reader").unwrap();
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}', max_attempts => 1)"));
        (s, trace)
    }

    #[pg_test]
    fn a_table_the_role_cannot_read_is_never_described() {
        setup();
        Spi::run("CREATE ROLE ask_test_reader; GRANT SELECT ON public.cities, public.restaurants TO ask_test_reader; GRANT SELECT (id) ON public.secrets TO ask_test_reader;").unwrap();
        let q = "what is in the payroll?";
        let s = llm(pipeline_script(q, "SELECT payroll FROM public.secrets", "ROWS"));
        Spi::run("SET ROLE ask_test_reader").unwrap();
        let (code, msg, _) = error_of(&format!("SELECT ask('{q}', max_attempts => 1)"));
        Spi::run("RESET ROLE").unwrap();
        // The LLM saw cities and restaurants, and of secrets only the readable column.
        let prompt = &s.requests()[0].prompt;
        assert!(prompt.contains("TABLE public.cities") && prompt.contains("TABLE public.restaurants"));
        assert!(prompt.contains("TABLE public.secrets\n  id integer PRIMARY KEY\n"), "{prompt}");
        assert!(!prompt.contains("payroll text"), "{prompt}");
        // And the SQL it wrote anyway failed on the privilege check, as the role.
        assert_eq!(code, "42501", "{msg}");
        assert!(msg.contains("permission denied"), "{msg}");
    }

    #[pg_test]
    fn without_a_selection_memory_the_search_path_schemas_are_described() {
        setup();
        Spi::run(
            "CREATE SCHEMA ask_test_zoo; CREATE TABLE ask_test_zoo.animals (id int PRIMARY KEY, species text);
             CREATE SCHEMA ask_test_farm; CREATE TABLE ask_test_farm.crops (id int PRIMARY KEY, crop text);",
        )
        .unwrap();
        let s = llm(Script::reply_always("SELECT count(*) FROM ask_test_zoo.animals"));
        // Only the zoo is on the path: only its table is described.
        Spi::run("SET search_path = ask_test_zoo").unwrap();
        let _ = Spi::get_one::<String>("SELECT ask.sql('how many animals?')");
        let prompt = s.requests()[0].prompt.clone();
        assert!(prompt.contains("TABLE ask_test_zoo.animals"), "{prompt}");
        assert!(!prompt.contains("crops") && !prompt.contains("public.cities"), "{prompt}");
        // Two schemas on the path: both.
        Spi::run("SET search_path = ask_test_zoo, ask_test_farm").unwrap();
        let _ = Spi::get_one::<String>("SELECT ask.sql('how many animals?')");
        let prompt = s.requests()[1].prompt.clone();
        assert!(prompt.contains("TABLE ask_test_zoo.animals") && prompt.contains("TABLE ask_test_farm.crops"), "{prompt}");
        assert!(!prompt.contains("public.cities"), "{prompt}");
        // A path whose schemas hold no readable table: every readable table.
        Spi::run("CREATE SCHEMA ask_test_empty; SET search_path = ask_test_empty").unwrap();
        let _ = Spi::get_one::<String>("SELECT ask.sql('how many animals?')");
        let prompt = s.requests()[2].prompt.clone();
        assert!(
            prompt.contains("ask_test_zoo.animals") && prompt.contains("ask_test_farm.crops") && prompt.contains("public.cities"),
            "{prompt}"
        );
        Spi::run("RESET search_path").unwrap();
    }

    #[pg_test]
    fn no_readable_tables_is_a_clear_error() {
        Spi::run("CREATE ROLE ask_test_nobody").unwrap();
        let _llm = llm(Script::reply_always("SELECT 1"));
        Spi::run("SET ROLE ask_test_nobody").unwrap();
        let (code, msg, hint) = error_of("SELECT ask('anything?')");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(code, "42501", "{msg}");
        assert!(msg.contains("no tables"), "{msg}");
        assert!(hint.unwrap().contains("GRANT SELECT"));
    }

    #[pg_test]
    fn each_protocol_works() {
        setup();
        let q = "count cities";
        // Rows the model is asked to answer from, so that each protocol's answer call runs too.
        let script = pipeline_script(q, "SELECT id, name, state, id AS n FROM public.cities", "Two.");
        for provider in ["openai", "anthropic", "ollama"] {
            let s = llm(script.clone());
            Spi::run(&format!("SET ask.provider = '{provider}'")).unwrap();
            if provider == "anthropic" {
                Spi::run("SET ask.api_key = 'sk-ant-test-key'").unwrap();
            }
            if provider != "openai" {
                Spi::run(&format!("SET ask.base_url = '{}'", s.url())).unwrap();
            }
            let answer: String = one(&format!("SELECT ask('{q}')"));
            assert_eq!(answer, "Two.", "{provider}");
            let path = &s.requests()[0].path;
            let expected = match provider {
                "openai" => "/v1/chat/completions",
                "anthropic" => "/v1/messages",
                _ => "/api/chat",
            };
            assert_eq!(path, expected);
        }
        Spi::run("RESET ask.provider; RESET ask.api_key").unwrap();
    }

    #[pg_test]
    fn faults_become_specific_errors() {
        setup();
        let q = "fault?";
        let cases: Vec<(Reply, &str, &str)> = vec![
            (Reply::Malformed, "08P01", "not valid JSON"),
            (Reply::Truncated, "08P01", "cut off"),
            (Reply::Empty, "22004", "empty reply"),
            (Reply::status(500), "58000", "HTTP 500"),
            (Reply::status(404), "42704", "HTTP 404"),
        ];
        Spi::run("SET ask.request_timeout = 1500").unwrap();
        for (reply, code, needle) in cases {
            let _llm = llm(Script::default().rule(Rule::new(&[q], reply.clone())));
            let (got, msg, hint) = error_of(&format!("SELECT ask('{q}')"));
            assert_eq!(got, code, "{reply:?}: {msg}");
            assert!(msg.contains(needle), "{reply:?}: {msg}");
            assert!(hint.is_some(), "{reply:?} has a hint");
        }
        // Nothing listens on a port that was just closed.
        let closed = closed_url();
        Spi::run(&format!("SET ask.base_url = '{closed}/v1'")).unwrap();
        let (got, msg, hint) = error_of(&format!("SELECT ask('{q}')"));
        assert_eq!(got, "08001", "{msg}");
        assert!(hint.unwrap().contains("ask.base_url"));
        // A failed call is in the ledger with its kind (ask.explain returns instead of raising,
        // so its transaction keeps the row).
        let _llm = llm(Script::default().rule(Rule::new(&[q], Reply::Malformed)));
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        assert_eq!(trace["error"]["kind"], "malformed", "{trace}");
        let kinds: String = one("SELECT string_agg(outcome || ':' || stage, ',') FROM ask.llm_calls");
        assert_eq!(kinds, "malformed:generate");
    }

    #[pg_test]
    fn retries_429_and_5xx_then_succeeds() {
        setup();
        let q = "retry me";
        let _llm = llm(Script::default()
            .rule(Rule::new(&["<schema>", q], Reply::status(429)).times(1))
            .rule(Rule::new(&["<schema>", q], Reply::status(503)).times(1))
            .rule(Rule::new(&["<schema>", q], Reply::text("SELECT 1 AS one"))));
        let answer: String = one(&format!("SELECT ask('{q}')"));
        assert_eq!(answer, "one: 1");
        let attempts: i32 = one("SELECT http_attempts FROM ask.llm_calls WHERE stage = 'generate'");
        assert_eq!(attempts, 3);
    }

    #[pg_test]
    fn retry_after_beyond_the_timeout_gives_up_at_once() {
        setup();
        let _llm =
            llm(Script::default().rule(Rule::new(&["slow down"], Reply::Status { code: 429, retry_after: Some(30), body: String::new() })));
        Spi::run("SET ask.request_timeout = 2000").unwrap();
        let t = std::time::Instant::now();
        let (code, msg, hint) = error_of("SELECT ask('slow down')");
        assert_eq!(code, "53000", "{msg}");
        assert!(hint.unwrap().contains("retry after 30 s"));
        assert!(t.elapsed() < std::time::Duration::from_secs(2), "gave up without waiting: {:?}", t.elapsed());
    }

    #[pg_test]
    fn the_api_key_never_leaks() {
        setup();
        let key = "sk-test-SECRET-0123456789";
        let s = llm(Script::default().rule(Rule::new(
            &["leak"],
            Reply::Status {
                code: 401,
                retry_after: None,
                body: format!("{{\"error\":{{\"message\":\"Incorrect API key provided: {key}\"}}}}"),
            },
        )));
        Spi::run(&format!("SET ask.api_key = '{key}'")).unwrap();
        let shown: String = one("SELECT current_setting('ask.api_key')");
        assert_eq!(shown, "********");
        let (code, msg, hint) = error_of("SELECT ask('leak')");
        assert_eq!(code, "28000");
        assert!(msg.contains("Incorrect API key provided: [redacted]"), "{msg}");
        assert!(!msg.contains(key) && !hint.unwrap().contains(key));
        let JsonB(trace) = one::<JsonB>("SELECT ask.explain('leak')");
        assert!(!trace.to_string().contains(key), "{trace}");
        assert!(trace.to_string().contains("[redacted]"));
        let leaked: i64 = one(&format!("SELECT count(*) FROM ask.llm_calls WHERE error LIKE '%{key}%'"));
        assert_eq!(leaked, 0);
        // The key did reach the server, in the header only.
        assert_eq!(s.requests()[0].header("authorization"), Some(format!("Bearer {key}").as_str()));
        Spi::run("RESET ask.api_key").unwrap();
    }

    #[pg_test]
    fn row_limit_cuts_the_result() {
        setup();
        let q = "numbers";
        let _llm = llm(pipeline_script(q, "SELECT g AS n FROM generate_series(1, 100) g", "ROWS"));
        Spi::run("SET ask.row_limit = 5").unwrap();
        let n: i64 = one(&format!("SELECT count(*) FROM ask.rows('{q}')"));
        assert_eq!(n, 5);
    }

    #[pg_test]
    fn generated_sql_runs_under_ask_statement_timeout() {
        setup();
        let q = "count a lot";
        let _llm = llm(pipeline_script(q, "SELECT count(*) FROM generate_series(1, 500000000)", "ROWS"));
        Spi::run("SET ask.statement_timeout = 300").unwrap();
        let t = std::time::Instant::now();
        let (code, msg, _) = error_of(&format!("SELECT ask('{q}')"));
        assert_eq!(code, "57014", "{msg}");
        assert!(msg.contains("ask.statement_timeout"), "{msg}");
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        // The session goes on.
        assert_eq!(one::<i32>("SELECT 1"), 1);
    }

    /// A year asked and one of its days written: the year runs, as the caller, under its
    /// row-level security; a role without the privilege is refused as before.
    #[pg_test]
    fn a_year_asked_runs_as_the_year_under_the_callers_privileges() {
        let q = "How many visits were there in 2023?";
        Spi::run(
            "CREATE ROLE ask_year_owner; CREATE ROLE ask_year_none;
             GRANT USAGE, CREATE ON SCHEMA public TO ask_year_owner; GRANT USAGE ON SCHEMA ask TO ask_year_owner, ask_year_none",
        )
        .unwrap();
        let _llm = llm(pipeline_script(q, "SELECT count(*) AS n FROM public.visits v WHERE v.d = '2023-01-01'", "ROWS"));
        Spi::run("SET ROLE ask_year_owner").unwrap();
        Spi::run(
            "CREATE TABLE public.visits (d date NOT NULL, who text NOT NULL);
             INSERT INTO public.visits VALUES ('2023-01-01', 'me'), ('2023-05-04', 'me'), ('2023-11-30', 'them'),
                 ('2022-12-31', 'me'), ('2024-01-01', 'me');
             ALTER TABLE public.visits ENABLE ROW LEVEL SECURITY; ALTER TABLE public.visits FORCE ROW LEVEL SECURITY;
             CREATE POLICY mine ON public.visits USING (who = 'me')",
        )
        .unwrap();
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        assert_eq!(
            trace["final_sql"], "SELECT count(*) AS n FROM public.visits v WHERE (v.d >= '2023-01-01' AND v.d < '2024-01-01')",
            "{trace}"
        );
        let year = trace["stages"].as_array().unwrap().iter().find(|st| st["stage"] == "whole_year").expect("whole_year").clone();
        assert_eq!(year["output"]["widened"][0]["from"], "v.d = '2023-01-01'", "{year}");
        // Two of the year's three rows are the owner's to read: row-level security holds.
        let JsonB(rows) = one::<JsonB>(&format!("SELECT jsonb_agg(r) FROM ask.rows('{q}') r"));
        assert_eq!(rows[0]["n"], 2, "{rows}");
        Spi::run("RESET ROLE").unwrap();
        Spi::run("SET ROLE ask_year_none").unwrap();
        let (code, message, _) = error_of(&format!("SELECT ask.sql('{q}')"));
        assert_eq!(code, "42501", "{message}");
        Spi::run("RESET ROLE").unwrap();
        Spi::run("DROP TABLE public.visits").unwrap();
    }
}
