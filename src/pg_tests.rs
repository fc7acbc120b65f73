//! In-backend tests (`cargo pgrx test`). Each runs in its own transaction, rolled back at the
//! end, against a stand-in LLM server started inside the test's backend on a free port.

#[pgrx::pg_schema]
pub(crate) mod tests {
    use llm_standin::{Reply, Rule, Script, StandIn};
    use pgrx::pg_sys::panic::CaughtError;
    use pgrx::prelude::*;
    use pgrx::JsonB;
    use serde_json::Value;

    use crate::errors::sqlstate_text;
    use crate::subxact::{self, OnSuccess};

    const SAMPLE: &str = "
        CREATE TABLE public.cities (id int PRIMARY KEY, name text NOT NULL, state text);
        COMMENT ON TABLE public.cities IS 'Cities we know';
        COMMENT ON COLUMN public.cities.name IS 'full city name';
        CREATE TABLE public.restaurants (id int PRIMARY KEY, name text NOT NULL,
            city_id int REFERENCES public.cities(id), cuisine text);
        CREATE TABLE public.secrets (id int PRIMARY KEY, payroll text);
        INSERT INTO public.cities VALUES (1, 'Los Angeles', 'CA'), (2, 'San Francisco', 'CA');
        INSERT INTO public.restaurants VALUES (1, 'Roma', 1, 'Italian'), (2, 'Le Petit', 2, 'French'),
            (3, 'Trattoria', 1, 'Italian');";

    const ITALIAN_SQL: &str = "```sql\nSELECT r.name FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id\nWHERE c.name = 'Los Angeles' AND r.cuisine = 'Italian' ORDER BY r.name;\n```";

    /// Embeddings from the stand-in server (deterministic pseudo-embeddings of `dim` dimensions)
    /// through the openai protocol.
    pub(crate) fn standin_embeddings(dim: usize) -> StandIn {
        let s = StandIn::start(Script::default()).expect("start the stand-in server");
        s.set_embedding_dim(dim);
        Spi::run(&format!(
            "SET ask.embedding_provider = 'openai'; SET ask.embedding_model = 'pseudo-{dim}'; SET ask.embedding_base_url = '{}/v1'",
            s.url()
        ))
        .unwrap();
        s
    }

    /// A stand-in server answering with `script`, and ask.base_url pointing at it.
    pub(crate) fn llm(script: Script) -> StandIn {
        let s = StandIn::start(script).expect("start the stand-in LLM server");
        Spi::run(&format!("SET ask.base_url = '{}/v1'", s.url())).unwrap();
        s
    }

    /// SQL generation for `question` answers `sql`; the answer stage answers `answer`.
    fn pipeline_script(question: &str, sql: &str, answer: &str) -> Script {
        Script::default()
            .rule(Rule::new(&["<schema>", question], Reply::text(sql)))
            .rule(Rule::new(&["<result", question], Reply::text(answer)))
    }

    fn setup() {
        Spi::run(SAMPLE).unwrap();
    }

    /// The SQLSTATE, message, detail and hint of the error `sql` raises (it must raise one).
    pub(crate) fn error_report_of(sql: &str) -> (String, String, Option<String>, Option<String>) {
        let sql = sql.to_string();
        match subxact::run(OnSuccess::RollBack, move || Spi::run(&sql).unwrap()) {
            Ok(()) => panic!("expected an error"),
            Err(CaughtError::PostgresError(r)) | Err(CaughtError::ErrorReport(r)) => (
                sqlstate_text(r.sql_error_code()),
                r.message().to_string(),
                r.detail().map(str::to_string),
                r.hint().map(str::to_string),
            ),
            Err(e @ CaughtError::RustPanic { .. }) => e.rethrow(),
        }
    }

    /// The SQLSTATE, message and hint of the error `sql` raises (it must raise one).
    pub(crate) fn error_of(sql: &str) -> (String, String, Option<String>) {
        let (code, message, _, hint) = error_report_of(sql);
        (code, message, hint)
    }

    /// The URL of a stand-in that was just shut down: nothing listens there.
    pub(crate) fn closed_url() -> String {
        let s = StandIn::start(Script::default()).unwrap();
        let url = s.url();
        s.shutdown();
        url
    }

    pub(crate) fn one<T: pgrx::FromDatum + pgrx::IntoDatum>(sql: &str) -> T {
        Spi::get_one::<T>(sql).unwrap().expect("a non-null value")
    }

    #[pg_test]
    fn ask_is_callable_without_schema_and_the_rest_lives_in_ask() {
        let n: i64 = one("SELECT count(*) FROM pg_proc WHERE proname = 'ask' AND pronamespace = 'public'::regnamespace");
        assert_eq!(n, 1);
        let n: i64 = one("SELECT count(*) FROM pg_proc WHERE proname IN ('sql','rows','explain') AND pronamespace = 'ask'::regnamespace");
        assert_eq!(n, 3);
    }

    #[pg_test]
    fn ask_answers_end_to_end_and_writes_the_ledger() {
        setup();
        let q = "which Italian restaurants are in LA?";
        let s = llm(pipeline_script(q, ITALIAN_SQL, "Roma and Trattoria are the Italian restaurants in Los Angeles."));
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
        assert!(reqs[1].prompt.contains("[\"Roma\"]") && reqs[1].prompt.contains("[\"Trattoria\"]"), "{}", reqs[1].prompt);

        let ledger: i64 = one("SELECT count(*) FROM ask.llm_calls WHERE outcome = 'ok' AND stage IN ('generate','answer') AND role = current_user AND prompt_tokens > 0");
        assert_eq!(ledger, 2);
    }

    #[pg_test]
    fn rows_as_the_answer_come_back_as_a_table() {
        setup();
        let q = "list the Italian restaurants in LA";
        let _llm = llm(pipeline_script(q, ITALIAN_SQL, "ROWS"));
        let answer: String = one(&format!("SELECT ask('{q}')"));
        assert_eq!(answer, " name\n-----------\n Roma\n Trattoria\n(2 rows)");
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
        // The literals were looked at; no value memory exists, so nothing changed.
        assert_eq!(stages, ["schema", "generate", "guard", "correct", "execute", "answer"]);
        assert_eq!(trace["stages"][3]["output"]["literals"][0]["decision"], "not_indexed", "{trace}");
        assert_eq!(trace["final_sql"].as_str().unwrap(), sql);
        assert!(trace["stages"][1]["ms"].as_f64().unwrap() > 0.0);
        assert_eq!(trace["stages"][4]["output"]["rows"], 2);
    }

    #[pg_test]
    fn repairs_from_the_database_error() {
        setup();
        let q = "how many cities?";
        let _llm = llm(Script::default()
            .rule(Rule::new(&["<schema>", q], Reply::text("SELECT count(*) AS n FROM public.citys")).times(1))
            .rule(Rule::new(&["<schema>", q], Reply::text("SELECT count(*) AS n FROM public.cities")).last(&["relation \"public.citys\" does not exist"]))
            .rule(Rule::new(&["<result", q], Reply::text("There are 2 cities."))));
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        assert_eq!(trace["attempts"], 2, "{trace}");
        assert_eq!(trace["answer"], "There are 2 cities.");
        let failed = &trace["stages"][3];
        assert_eq!(failed["stage"], "execute");
        assert_eq!(failed["output"]["sqlstate"], "42P01");
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
        let script = pipeline_script(q, "SELECT count(*) AS n FROM public.cities", "Two.");
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
            let expected = match provider { "openai" => "/v1/chat/completions", "anthropic" => "/v1/messages", _ => "/api/chat" };
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
            .rule(Rule::new(&["<schema>", q], Reply::text("SELECT 1 AS one")))
            .rule(Rule::new(&["<result", q], Reply::text("One."))));
        let answer: String = one(&format!("SELECT ask('{q}')"));
        assert_eq!(answer, "One.");
        let attempts: i32 = one("SELECT http_attempts FROM ask.llm_calls WHERE stage = 'generate'");
        assert_eq!(attempts, 3);
    }

    #[pg_test]
    fn retry_after_beyond_the_timeout_gives_up_at_once() {
        setup();
        let _llm = llm(Script::default().rule(Rule::new(&["slow down"], Reply::Status { code: 429, retry_after: Some(30), body: String::new() })));
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
            Reply::Status { code: 401, retry_after: None, body: format!("{{\"error\":{{\"message\":\"Incorrect API key provided: {key}\"}}}}") },
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

    #[pg_test]
    fn a_volatile_function_is_refused_by_the_database_layer() {
        setup();
        Spi::run("CREATE TABLE public.canary_log (id int, note text);
                  CREATE FUNCTION public.canary_bump() RETURNS int LANGUAGE sql VOLATILE
                  AS $$ INSERT INTO public.canary_log VALUES (1, 'bumped') RETURNING 1 $$;").unwrap();
        let s = llm(Script::reply_always("SELECT public.canary_bump()"));
        let (code, msg, _) = error_of("SELECT ask.sql('bump it')");
        assert_eq!(code, "2F003", "{msg}");
        assert!(msg.contains("volatile"), "{msg}");
        assert_eq!(s.requests().len(), 3, "refusals go back to the LLM up to ask.max_attempts");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.canary_log"), 0);
    }

    /// The canary schema of the hostile corpus, and the corpus itself.
    fn corpus() -> Value {
        let corpus: Value = serde_json::from_str(include_str!("../pgrx-tests/hostile_replies.json")).unwrap();
        for stmt in corpus["canary_setup"].as_array().unwrap() {
            Spi::run(stmt.as_str().unwrap()).unwrap();
        }
        corpus
    }

    /// Every reply of the hostile corpus is refused (SQLSTATE 2F003) and changes nothing.
    #[pg_test]
    fn hostile_corpus_is_refused_with_nothing_changed() {
        let corpus = corpus();
        let hostile = corpus["hostile"].as_array().unwrap();
        assert!(hostile.len() >= 60, "corpus has {} entries", hostile.len());
        let fingerprint = "SELECT (SELECT md5(string_agg(id || note, ',' ORDER BY id)) FROM public.canary)
            || (SELECT md5(string_agg(id || note, ',' ORDER BY id)) FROM public.canary_log)
            || (SELECT last_value || is_called::text FROM public.canary_seq)
            || (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace)";
        let before: String = one(fingerprint);
        let s = llm(Script::default());
        Spi::run("SET ask.max_attempts = 1").unwrap();
        for entry in hostile {
            let name = entry["name"].as_str().unwrap();
            s.set_script(Script::reply_always(entry["reply"].as_str().unwrap()));
            let (code, msg, _) = error_of("SELECT ask.sql('do the thing')");
            assert!(code == "2F003" || (code == "22P02" && msg.contains("no SQL")), "{name}: {code} {msg}");
            if entry["layer"] == "db" {
                assert!(msg.contains("volatile"), "{name} is refused by the database layer: {msg}");
            }
            assert_eq!(one::<String>(fingerprint), before, "{name} changed something");
        }
    }

    /// Every safe reply of the corpus runs.
    #[pg_test]
    fn safe_corpus_runs() {
        let corpus = corpus();
        let s = llm(Script::default());
        Spi::run("SET ask.max_attempts = 1").unwrap();
        for entry in corpus["safe"].as_array().unwrap() {
            let name = entry["name"].as_str().unwrap();
            s.set_script(Script::reply_always(entry["reply"].as_str().unwrap()));
            let sql = subxact::run(OnSuccess::RollBack, || Spi::get_one::<String>("SELECT ask.sql('read something')").unwrap());
            assert!(matches!(sql, Ok(Some(_))), "{name} should run: {sql:?}");
        }
    }

    fn cosine(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (*x as f64) * (*y as f64)).sum()
    }

    #[pg_test]
    fn local_embeddings_match_the_reference_model() {
        let la: Vec<f32> = one("SELECT ask.embed_real('Los Angeles')");
        let la2: Vec<f32> = one("SELECT ask.embed_real('LA')");
        assert_eq!(la.len(), 384);
        let norm: f64 = cosine(&la, &la);
        assert!((norm - 1.0).abs() < 1e-5, "L2-normalised: {norm}");
        // The numpy reference (shared/tools/minilm_reference.py) gives 0.8424.
        let c = cosine(&la, &la2);
        assert!((c - 0.8424).abs() < 1e-3, "cosine('Los Angeles', 'LA') = {c}");
        Spi::run("SET LOCAL search_path = public, ask").unwrap();
        let dims: i32 = one("SELECT vector_dims(ask.embed('Los Angeles'))");
        assert_eq!(dims, 384);
    }

    #[pg_test]
    fn embeddings_over_http_and_off() {
        let s = llm(Script::default());
        for provider in ["openai", "ollama"] {
            Spi::run(&format!("SET ask.embedding_provider = '{provider}'; SET ask.embedding_base_url = '{}/v1'", s.url())).unwrap();
            let v: Vec<f32> = one("SELECT ask.embed_real('Los Angeles')");
            assert_eq!(v, llm_standin::pseudo_embedding("Los Angeles", llm_standin::DEFAULT_EMBEDDING_DIM), "{provider}");
        }
        let paths: Vec<String> = s.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(paths, ["/v1/embeddings", "/api/embed"]);
        Spi::run("SET ask.embedding_provider = 'off'").unwrap();
        let (code, msg, hint) = error_of("SELECT ask.embed_real('x')");
        assert_eq!(code, "0A000", "{msg}");
        assert!(hint.unwrap().contains("ask.embedding_provider"));
    }

    pub(crate) fn similar(sql: &str) -> Vec<(String, f64, String)> {
        Spi::connect(|c| {
            c.select(sql, None, &[])
                .unwrap()
                .map(|r| (r.get::<String>(1).unwrap().unwrap(), r.get::<f64>(2).unwrap().unwrap(), r.get::<String>(3).unwrap().unwrap()))
                .collect()
        })
    }

    #[pg_test]
    fn value_memory_finds_what_is_stored() {
        setup();
        let n: i64 = one("SELECT ask.index_values('public.cities')");
        assert_eq!(n, 3, "Los Angeles, San Francisco (name) and CA (state)");
        let found = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'LA', 5)");
        let (value, score, method) = &found[0];
        assert_eq!((value.as_str(), method.as_str()), ("Los Angeles", "embedding"), "{found:?}");
        assert!((score - 0.8424).abs() < 2e-3, "{found:?}");
        let typo = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'San Fransisco')");
        assert!(typo.iter().any(|(v, s, m)| v == "San Francisco" && m == "trigram" && *s > 0.5), "{typo:?}");
        // Rebuilding replaces the memory instead of adding to it.
        Spi::run("UPDATE public.cities SET name = 'Los Angeles County' WHERE id = 1").unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.cities', ARRAY['name'])"), 2);
        let after = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'Los Angeles', 10)");
        assert!(after.iter().all(|(v, _, _)| v != "Los Angeles"), "{after:?}");
    }

    #[pg_test]
    fn value_memory_respects_privileges_and_rls() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities')").unwrap();
        Spi::run("CREATE ROLE ask_test_partial; GRANT SELECT (id, state) ON public.cities TO ask_test_partial;").unwrap();
        Spi::run("SET ROLE ask_test_partial").unwrap();
        let (code, msg, _) = error_of("SELECT * FROM ask.similar_values('public.cities', 'name', 'LA')");
        assert_eq!(code, "42501", "{msg}");
        let ok = similar("SELECT * FROM ask.similar_values('public.cities', 'state', 'California')");
        assert!(ok.iter().any(|(v, _, _)| v == "CA"), "a readable column is searchable: {ok:?}");
        let (code, msg, _) = error_of("SELECT count(*) FROM ask.value_memory");
        assert_eq!(code, "42501", "{msg}");
        let (code, msg, _) = error_of("SELECT ask.index_values('public.restaurants')");
        assert_eq!(code, "42501", "only the owner indexes: {msg}");
        Spi::run("RESET ROLE").unwrap();
        Spi::run("ALTER TABLE public.restaurants ENABLE ROW LEVEL SECURITY").unwrap();
        let (code, msg, hint) = error_of("SELECT ask.index_values('public.restaurants')");
        assert_eq!(code, "42501", "{msg}");
        assert!(hint.unwrap().contains("allow_rls"));
        assert_eq!(one::<i64>("SELECT ask.index_values('public.restaurants', allow_rls => true)"), 5);
    }

    #[pg_test]
    fn dropped_columns_leave_no_stale_values() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities')").unwrap();
        Spi::run("ALTER TABLE public.cities DROP COLUMN state").unwrap();
        let (code, msg, _) = error_of("SELECT * FROM ask.similar_values('public.cities', 'state', 'CA')");
        assert_eq!(code, "42703", "{msg}");
        // A new column of the same name does not inherit the old one's memory.
        Spi::run("ALTER TABLE public.cities ADD COLUMN state text").unwrap();
        assert!(similar("SELECT * FROM ask.similar_values('public.cities', 'state', 'CA')").is_empty());
    }

    /// The per-backend description cache follows DDL, comments, grants and role switches.
    #[pg_test]
    fn schema_description_cache_follows_changes() {
        setup();
        let s = llm(Script::reply_always("SELECT 1 AS one"));
        let prompt = |s: &StandIn| -> String {
            Spi::run("SELECT ask.sql('anything')").unwrap();
            s.requests().last().unwrap().prompt.clone()
        };
        assert!(!prompt(&s).contains("public.fresh"));
        Spi::run("CREATE TABLE public.fresh (id int)").unwrap();
        assert!(prompt(&s).contains("TABLE public.fresh"));
        Spi::run("COMMENT ON TABLE public.fresh IS 'just made'").unwrap();
        assert!(prompt(&s).contains("TABLE public.fresh  -- just made"));
        Spi::run("COMMENT ON COLUMN public.fresh.id IS 'the key'").unwrap();
        assert!(prompt(&s).contains("id integer  -- the key"));
        Spi::run("ALTER TABLE public.fresh ADD COLUMN label text").unwrap();
        assert!(prompt(&s).contains("label text"));
        Spi::run("CREATE ROLE ask_test_cache; GRANT SELECT ON public.cities TO ask_test_cache").unwrap();
        Spi::run("SET ROLE ask_test_cache").unwrap();
        let p = prompt(&s);
        assert!(p.contains("TABLE public.cities") && !p.contains("public.fresh"), "{p}");
        Spi::run("RESET ROLE; GRANT SELECT ON public.fresh TO ask_test_cache; SET ROLE ask_test_cache").unwrap();
        assert!(prompt(&s).contains("TABLE public.fresh"));
        Spi::run("RESET ROLE; REVOKE SELECT ON public.fresh FROM ask_test_cache; SET ROLE ask_test_cache").unwrap();
        assert!(!prompt(&s).contains("public.fresh"));
        Spi::run("RESET ROLE").unwrap();
        Spi::run("DROP TABLE public.fresh").unwrap();
        assert!(!prompt(&s).contains("public.fresh"));
    }

    #[pg_test]
    fn literals_are_corrected_from_the_value_memory() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities')").unwrap();
        let q = "Italian restaurants in LA";
        let _llm = llm(pipeline_script(
            q,
            "SELECT r.name FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id WHERE c.name = 'LA' AND r.cuisine = 'Italian' ORDER BY r.name",
            "ROWS",
        ));
        let sql: String = one(&format!("SELECT ask.sql('{q}')"));
        assert!(sql.contains("c.name = 'Los Angeles'"), "{sql}");
        assert!(sql.contains("r.cuisine = 'Italian'"), "untouched: {sql}");
        let n: i64 = one(&format!("SELECT count(*) FROM ask.rows('{q}')"));
        assert_eq!(n, 2);
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        let correct = trace["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "correct").unwrap().clone();
        assert_eq!(correct["output"]["changed"], true, "{correct}");
        // Without the LLM: a case slip is fixed, a legitimate absent value is left alone.
        let fixed: String = one("SELECT ask.correct_sql($$SELECT id FROM public.cities WHERE name = 'san francisco'$$, use_llm => false)");
        assert_eq!(fixed, "SELECT id FROM public.cities WHERE name = 'San Francisco'");
        let kept: String = one("SELECT ask.correct_sql($$SELECT id FROM public.cities WHERE name = 'Gotham'$$, use_llm => false)");
        assert_eq!(kept, "SELECT id FROM public.cities WHERE name = 'Gotham'");
    }

    const SHOP: &str = "
        CREATE TABLE public.suppliers (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, name text NOT NULL UNIQUE);
        CREATE TABLE public.purchases (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            supplier_id int NOT NULL REFERENCES public.suppliers(id), fruit text NOT NULL,
            kg numeric NOT NULL CHECK (kg > 0), price numeric NOT NULL);";

    fn shop_llm(plan: &str) -> StandIn {
        llm(Script::default()
            .rule(Rule::new(&["chain of SQL steps", "<instruction>"], Reply::text(plan)))
            .rule(Rule::new(&["what was just done"], Reply::text("Recorded supplier ABC and a purchase of 24 kg of cherries at 0.8."))))
    }

    #[pg_test]
    fn ask_do_runs_a_chain_and_fills_placeholders() {
        Spi::run(SHOP).unwrap();
        let s = shop_llm(
            "1. INSERT INTO public.suppliers (name) VALUES ('ABC') RETURNING id;\n\
             2. INSERT INTO public.purchases (supplier_id, fruit, kg, price) VALUES (<id>, 'cherry', 24, 0.8);",
        );
        let (code, _, hint) = error_of("SELECT ask.do('We restocked from supplier ABC: 24 kg cherry at 0.8')");
        assert_eq!(code, "42501", "off by default");
        assert!(hint.unwrap().contains("ask.allow_writes"));
        Spi::run("SET ask.allow_writes = on").unwrap();
        let JsonB(out) = one::<JsonB>("SELECT ask.do('We restocked from supplier ABC: 24 kg cherry at 0.8')");
        let steps = out["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2, "{out}");
        assert!(steps[1]["sql"].as_str().unwrap().contains("VALUES (1, 'cherry'"), "{out}");
        assert!(out["summary"].as_str().unwrap().contains("24 kg"));
        let n: i64 = one("SELECT count(*) FROM public.purchases p JOIN public.suppliers s ON s.id = p.supplier_id WHERE s.name = 'ABC'");
        assert_eq!(n, 1);
        // Plan and summary only: the placeholder was filled from step 1's row without the LLM.
        assert_eq!(s.requests().len(), 2);
    }

    #[pg_test]
    fn ask_do_failing_step_keeps_nothing() {
        Spi::run(SHOP).unwrap();
        Spi::run("SET ask.allow_writes = on").unwrap();
        let _s = shop_llm(
            "1. INSERT INTO public.suppliers (name) VALUES ('XYZ') RETURNING id;\n\
             2. INSERT INTO public.purchases (supplier_id, fruit, kg, price) VALUES (<id>, 'plum', -5, 1.0);",
        );
        let (code, msg, _) = error_of("SELECT ask.do('Bought -5 kg of plums from XYZ')");
        assert_eq!(code, "23514", "the CHECK violation's own SQLSTATE: {msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.suppliers WHERE name = 'XYZ'"), 0, "step 1 rolled back too");
    }

    #[pg_test]
    fn ask_do_never_runs_ddl() {
        Spi::run(SHOP).unwrap();
        Spi::run("SET ask.allow_writes = on").unwrap();
        let _s = shop_llm("1. INSERT INTO public.suppliers (name) VALUES ('Q');\n2. DROP TABLE public.purchases;");
        let (code, msg, _) = error_of("SELECT ask.do('clean up')");
        assert_eq!(code, "2F003", "{msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.suppliers"), 0);
        assert_eq!(one::<i64>("SELECT count(*) FROM pg_class WHERE relname = 'purchases'"), 1);
    }

    #[pg_test]
    fn refresh_values_adds_new_and_drops_vanished_values() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities')").unwrap();
        Spi::run("INSERT INTO public.cities VALUES (4, 'Chicago', NULL); UPDATE public.cities SET name = 'San Jose' WHERE id = 2").unwrap();
        assert_eq!(one::<i64>("SELECT ask.refresh_values('public.cities')"), 3, "+Chicago +San Jose -San Francisco");
        assert_eq!(one::<i64>("SELECT ask.refresh_values('public.cities')"), 0, "nothing left to do");
        let found = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'Chicago', 10)");
        assert_eq!(found[0].0, "Chicago");
        assert!(found.iter().all(|(v, _, _)| v != "San Francisco"), "{found:?}");
        // A dropped column's memory is forgotten by a refresh of everything.
        Spi::run("ALTER TABLE public.cities DROP COLUMN state").unwrap();
        Spi::run("SELECT ask.refresh_values()").unwrap();
        let columns: i64 = one("SELECT count(*) FROM ask.value_columns");
        assert_eq!(columns, 1, "only cities.name is left");
    }

    #[pg_test]
    fn a_trigger_keeps_the_memory_current_for_any_writer() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities', ARRAY['name'])").unwrap();
        Spi::run("SELECT ask.keep_values_current('public.cities')").unwrap();
        // A writer who may not read the table still keeps its memory current (as its owner).
        Spi::run("CREATE ROLE ask_test_writer; GRANT INSERT ON public.cities TO ask_test_writer").unwrap();
        Spi::run("SET ROLE ask_test_writer").unwrap();
        Spi::run("INSERT INTO public.cities VALUES (7, 'Boston', 'MA')").unwrap();
        Spi::run("RESET ROLE").unwrap();
        let found = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'Boston', 3)");
        assert_eq!(found[0].0, "Boston", "{found:?}");
        Spi::run("SELECT ask.keep_values_current('public.cities', false)").unwrap();
        Spi::run("INSERT INTO public.cities VALUES (8, 'Denver', 'CO')").unwrap();
        let found = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'Denver', 3)");
        assert!(found.iter().all(|(v, _, _)| v != "Denver"), "{found:?}");
    }
}
