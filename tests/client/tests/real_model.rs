//! pg_ask against a real model: llama.cpp's `llama-server` serving SmolLM2-135M-Instruct
//! (`scripts/llm.sh start`), over the two protocols it speaks (OpenAI chat completions and
//! Anthropic messages), on the sample database.
//!
//! A 135M model often writes wrong SQL, so these tests never assert its words. They assert what
//! must hold whatever it says: every call ends with a result or with a SQLSTATE of README.md's
//! error table (never an internal error, a panic or a hang); the ledger carries the token counts
//! the server reported; repairs stop within `ask.max_attempts`; a cancel during generation ends
//! the call within a second (on a loaded machine; the benchmark times it) and the session stays
//! usable; and nothing a reply contains runs beyond the guard (the sample's data and catalog are the same after every read-only call).
//!
//! `scripts/test.sh` starts the server and sets `PG_ASK_LLM_URL` (its OpenAI base URL,
//! `http://127.0.0.1:PORT/v1`) and `PG_ASK_LLM_MODEL`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Once;
use std::thread;
use std::time::{Duration, Instant};

use pg_ask_it::{connect_to, message, sample_database, sqlstate};
use postgres::Client;
use serde_json::Value;

const DB: &str = "pg_ask_real";
/// Completion tokens per call: enough for a query and a short answer, small enough that a
/// model repeating itself to the limit costs seconds, not minutes.
const MAX_TOKENS: i32 = 160;
const MAX_ATTEMPTS: i32 = 2;

fn llm_url() -> String {
    std::env::var("PG_ASK_LLM_URL").expect(
        "PG_ASK_LLM_URL: the real LLM server's OpenAI base URL; scripts/test.sh sets it (or: bash scripts/llm.sh start, then PG_ASK_LLM_URL=$(bash scripts/llm.sh url))",
    )
}

fn llm_model() -> String {
    std::env::var("PG_ASK_LLM_MODEL").unwrap_or_else(|_| "smollm2".into())
}

#[derive(Clone, Copy, Debug)]
enum Protocol {
    OpenAi,
    Anthropic,
}

/// The SQLSTATEs of README.md's error table, read from the README itself, so that the test
/// follows what users are told.
fn documented_sqlstates() -> BTreeSet<String> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&readme).unwrap_or_else(|e| panic!("read {}: {e}", readme.display()));
    let codes: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.get(..5).filter(|c| l[5..].starts_with('`') && c.chars().all(|ch| ch.is_ascii_alphanumeric())))
        .map(str::to_string)
        .collect();
    assert!(codes.len() >= 10 && codes.contains("2F003"), "README.md's error table was not found: {codes:?}");
    codes
}

static DATABASE: Once = Once::new();

/// A fresh database with the sample loaded and pg_ask created, once per test run.
fn database() {
    DATABASE.call_once(|| {
        let mut c = sample_database(DB);
        // A role of its own for each test that reads the ledger: every role sees only its own
        // ledger rows, so the other tests' calls do not mix in.
        for role in ["real_ledger_openai", "real_ledger_anthropic"] {
            c.batch_execute(&format!(
                "DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
                 GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role};"
            ))
            .unwrap();
        }
    });
}

/// A session pointed at the real model over `protocol`.
fn session(protocol: Protocol) -> Client {
    session_as("postgres", protocol)
}

/// [`session`] as `role`.
fn session_as(role: &str, protocol: Protocol) -> Client {
    session_at(role, protocol, &llm_url(), &llm_model())
}

/// [`session_as`] with the model `model` at `url`.
fn session_at(role: &str, protocol: Protocol, url: &str, model: &str) -> Client {
    database();
    let mut c = connect_to(role, DB);
    let url = url.to_string();
    let (provider, base) = match protocol {
        Protocol::OpenAi => ("openai", url.clone()),
        // Anthropic's messages API lives at /v1/messages of the same server.
        Protocol::Anthropic => ("anthropic", url.trim_end_matches('/').trim_end_matches("/v1").to_string()),
    };
    c.batch_execute(&format!(
        "SET ask.provider = '{provider}'; SET ask.base_url = '{base}'; SET ask.model = '{}';
         SET ask.max_tokens = {MAX_TOKENS}; SET ask.max_attempts = {MAX_ATTEMPTS}; SET ask.temperature = 0;
         SET ask.request_timeout = 120000; SET client_min_messages = warning",
        model
    ))
    .unwrap();
    c
}

/// A fingerprint of the sample's data and of every relation in the database: equal before and
/// after a read-only call, whatever the model wrote.
fn fingerprint(c: &mut Client) -> String {
    c.query_one(
        "SELECT md5(concat_ws('|',
            (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM states t),
            (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM cities t),
            (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM restaurants t),
            (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM chefs t),
            (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM reviews t),
            (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM inspections t),
            (SELECT string_agg(c.oid::regclass::text || ':' || c.relkind::text, ',' ORDER BY c.oid)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'),
            (SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles)))",
        &[],
    )
    .unwrap()
    .get(0)
}

/// Whether an error is the README's "the statement's own" row: generated SQL that failed after
/// all attempts, or a failed `ask.do()` step, raised with PostgreSQL's own SQLSTATE (never an
/// internal error or a system error).
fn statement_failure(code: &str, msg: &str) -> bool {
    let own = msg.starts_with("the generated SQL failed after") || (msg.starts_with("step ") && msg.contains(" failed: "));
    own && !code.starts_with("XX") && !code.starts_with("58")
}

/// A call's outcome: a value, or a documented SQLSTATE. An internal error (XX000), an
/// undocumented code or a lost connection fails the test.
fn documented<T>(what: &str, r: Result<T, postgres::Error>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            let code = sqlstate(&e);
            assert!(
                documented_sqlstates().contains(&code) || statement_failure(&code, &message(&e)),
                "{what}: SQLSTATE {code} is not in README.md's error table: {}",
                message(&e)
            );
            eprintln!("{what}: {code} {}", message(&e));
            None
        }
    }
}

const QUESTIONS: [&str; 3] = [
    "how many restaurants are there?",
    "which Italian restaurants are in LA?",
    "what is the average rating of restaurants in San Francisco?",
];

fn every_entry_point_ends_documented(protocol: Protocol) {
    let mut c = session(protocol);
    let before = fingerprint(&mut c);
    for q in QUESTIONS {
        let started = Instant::now();
        let answer: Option<String> =
            documented(&format!("{protocol:?} ask({q:?})"), c.query_one("SELECT ask($1)", &[&q]).map(|r| r.get(0)));
        if let Some(a) = &answer {
            assert!(!a.trim().is_empty(), "ask() answered with nothing");
        }
        eprintln!("{protocol:?} ask({q:?}) took {:.1} s: {answer:?}", started.elapsed().as_secs_f64());
    }
    if let Some(sql) = documented::<String>("ask.sql", c.query_one("SELECT ask.sql($1)", &[&QUESTIONS[0]]).map(|r| r.get(0))) {
        // What ask.sql() returns passed the guard: one read-only statement that runs.
        c.batch_execute("BEGIN READ ONLY").unwrap();
        let ran = c.simple_query(&sql);
        c.batch_execute("ROLLBACK").unwrap();
        assert!(ran.is_ok(), "ask.sql() returned SQL that does not run read-only: {sql}: {:?}", ran.err());
    }
    if let Some(rows) = documented::<Vec<postgres::Row>>("ask.rows", c.query("SELECT ask.rows($1)::text", &[&QUESTIONS[1]])) {
        for r in rows {
            let obj: Value = serde_json::from_str(&r.get::<_, String>(0)).unwrap();
            assert!(obj.is_object(), "ask.rows() returned a row that is not an object: {obj}");
        }
    }
    assert_eq!(fingerprint(&mut c), before, "a read-only call changed the database");
}

#[test]
fn every_entry_point_ends_with_a_result_or_a_documented_error_openai() {
    every_entry_point_ends_documented(Protocol::OpenAi);
}

#[test]
fn every_entry_point_ends_with_a_result_or_a_documented_error_anthropic() {
    every_entry_point_ends_documented(Protocol::Anthropic);
}

/// ask.explain() returns its trace whether or not the run succeeded; the ledger rows of the
/// call carry the server's token counts, and generation stops within ask.max_attempts.
fn trace_ledger_and_attempts(protocol: Protocol) {
    let role = match protocol {
        Protocol::OpenAi => "real_ledger_openai",
        Protocol::Anthropic => "real_ledger_anthropic",
    };
    let mut c = session_as(role, protocol);
    let since: i64 = c.query_one("SELECT coalesce(max(id), 0) FROM ask.llm_calls", &[]).unwrap().get(0);
    let trace: Value = serde_json::from_str(
        &c.query_one("SELECT ask.explain($1)::text", &[&"which cities have more than one restaurant?"]).unwrap().get::<_, String>(0),
    )
    .unwrap();
    let attempts = trace["attempts"].as_u64().expect("attempts in the trace");
    assert!((1..=MAX_ATTEMPTS as u64).contains(&attempts), "attempts {attempts} outside 1..={MAX_ATTEMPTS}: {trace}");
    let sql_calls =
        trace["stages"].as_array().unwrap().iter().filter(|s| matches!(s["stage"].as_str(), Some("generate" | "repair"))).count();
    assert!(sql_calls <= MAX_ATTEMPTS as usize, "{sql_calls} SQL generations for max_attempts {MAX_ATTEMPTS}: {trace}");
    if let Some(err) = trace.get("error") {
        eprintln!("{protocol:?} explain ended with {err}");
    }

    let rows = c
        .query(
            "SELECT stage, provider, outcome, prompt_tokens, completion_tokens FROM ask.llm_calls WHERE id > $1 AND role = current_user::regrole ORDER BY id",
            &[&since],
        )
        .unwrap();
    assert_eq!(rows.len() as u64, trace["llm_calls"].as_u64().unwrap(), "one ledger row per LLM call of the trace: {trace}");
    let (mut prompt, mut completion) = (0i64, 0i64);
    for r in &rows {
        let (stage, outcome): (String, String) = (r.get(0), r.get(2));
        let (p, k): (Option<i32>, Option<i32>) = (r.get(3), r.get(4));
        if outcome == "ok" {
            let (p, k) = (p.expect("prompt tokens of an answered call"), k.expect("completion tokens of an answered call"));
            assert!(p > 0 && k > 0, "stage {stage}: the server counts tokens, the ledger has {p}/{k}");
            assert!(k <= MAX_TOKENS, "stage {stage}: {k} completion tokens over ask.max_tokens {MAX_TOKENS}");
            prompt += p as i64;
            completion += k as i64;
        }
    }
    assert_eq!(prompt as u64, trace["prompt_tokens"].as_u64().unwrap());
    assert_eq!(completion as u64, trace["completion_tokens"].as_u64().unwrap());
}

#[test]
fn the_trace_and_the_ledger_carry_the_servers_token_counts_openai() {
    trace_ledger_and_attempts(Protocol::OpenAi);
}

#[test]
fn the_trace_and_the_ledger_carry_the_servers_token_counts_anthropic() {
    trace_ledger_and_attempts(Protocol::Anthropic);
}

#[test]
fn a_cancel_during_generation_ends_the_call_within_a_second() {
    let mut c = session(Protocol::OpenAi);
    // Long enough that the model is still generating when the cancel comes: unconstrained, as
    // a grammar ends a query early.
    c.batch_execute("SET ask.max_tokens = 4000; SET ask.sql_grammar = off; SET ask.structured_output = off").unwrap();
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let token = c.cancel_token();
    let asker = thread::spawn(move || {
        let r = c.query_one("SELECT ask('write a very long list of every restaurant with every review, one by one')", &[]);
        (c, r.err(), Instant::now())
    });
    let mut watcher = connect_to("postgres", DB);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let active: bool = watcher
            .query_one("SELECT coalesce(bool_or(state = 'active'), false) FROM pg_stat_activity WHERE pid = $1", &[&pid])
            .unwrap()
            .get(0);
        if active {
            break;
        }
        assert!(Instant::now() < deadline, "the call never started");
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(1500)); // the model is generating
    let sent = Instant::now();
    token.cancel_query(postgres::NoTls).unwrap();
    let (mut c, err, ended) = asker.join().unwrap();
    let err = err.expect("the cancelled call failed");
    assert_eq!(sqlstate(&err), "57014", "{}", message(&err));
    let took = ended.duration_since(sent);
    eprintln!("cancel during real generation ended the call after {} ms", took.as_millis());
    // A bound with room for a loaded machine (two llama.cpp servers and three other tests
    // share two cores here); the cancellation benchmark measures the time itself.
    assert!(took < Duration::from_millis(1000), "the cancel took {took:?}");
    let one: i32 = c.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1, "the session is usable after the cancel");
}

#[test]
fn ask_do_runs_only_what_the_guard_allows_and_keeps_nothing_on_rollback() {
    let mut c = session(Protocol::OpenAi);
    let before = fingerprint(&mut c);
    // Without ask.allow_writes, refused before any LLM call.
    let e = c.query_one("SELECT ask.do('add a city called Springfield in the United States')", &[]).unwrap_err();
    assert_eq!(sqlstate(&e), "42501", "{}", message(&e));
    // With writes allowed, a chain ends documented; the caller's rollback keeps nothing.
    c.batch_execute("BEGIN; SET LOCAL ask.allow_writes = on").unwrap();
    let r = documented("ask.do", c.query_one("SELECT ask.do('add a city called Springfield in the United States')::text", &[]));
    if let Some(row) = r {
        let steps: Value = serde_json::from_str(&row.get::<_, String>(0)).unwrap();
        eprintln!("ask.do: {steps}");
    }
    c.batch_execute("ROLLBACK").unwrap();
    assert_eq!(fingerprint(&mut c), before, "a rolled-back ask.do() left something behind");
}

#[test]
fn shadow_replay_scores_the_real_models_answer() {
    let mut c = session(Protocol::OpenAi);
    c.batch_execute(
        "DROP TABLE IF EXISTS real_pets; CREATE TABLE real_pets (id int PRIMARY KEY, name text NOT NULL, kind text NOT NULL);
         SELECT ask.shadow_enable('real_pets');
         INSERT INTO real_pets VALUES (1, 'Rex', 'dog'), (2, 'Tom', 'cat');
         INSERT INTO real_pets VALUES (3, 'Fido', 'dog');
         DELETE FROM real_pets WHERE id = 2;",
    )
    .unwrap();
    for prompting in ["zero_shot", "few_shot"] {
        let r = documented(
            "shadow_replay",
            c.query_one(
                "SELECT score, tokens, true_answer::text FROM ask.shadow_replay('SELECT name FROM real_pets WHERE kind = ''dog''', prompting => $1)",
                &[&prompting],
            ),
        );
        if let Some(row) = r {
            let score: f64 = row.get(0);
            assert!((0.0..=1.0).contains(&score), "score {score}");
            let tokens: Option<i64> = row.get(1);
            assert!(tokens.unwrap_or(0) > 0, "the server counted the tokens");
            let truth: Value = serde_json::from_str(&row.get::<_, String>(2)).unwrap();
            assert_eq!(truth, serde_json::json!([["Rex"], ["Fido"]]), "the truth is PostgreSQL's");
        }
    }
    let recorded: i64 = c.query_one("SELECT count(*) FROM ask.shadow_replays WHERE query LIKE '%real_pets%'", &[]).unwrap().get(0);
    assert!(recorded >= 1);
    c.batch_execute("SELECT ask.shadow_disable('real_pets'); DROP TABLE real_pets").unwrap();
}

#[test]
fn a_small_benchmark_runs_to_the_end() {
    let mut c = session(Protocol::OpenAi);
    let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/incondb");
    let sql = std::fs::read_to_string(datasets.join("1_sql.json")).expect("InConDB workload 1 in ../shared/datasets");
    let nl = std::fs::read_to_string(datasets.join("1_nl.json")).unwrap();
    c.query_one("SELECT ask.load_workload('real_w1', $1::text::jsonb, $2::text::jsonb)", &[&sql, &nl]).unwrap();
    c.batch_execute("SET ask.concurrency = 2").unwrap();
    documented(
        "CALL ask.benchmark",
        c.batch_execute("CALL ask.benchmark('real_w1', 2, 0.5, 0.5, 3, ARRAY['sql','nl'], ARRAY['zero_shot'], 5)"),
    );
    let (n, bad): (i64, i64) = {
        let r = c
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE score NOT BETWEEN 0 AND 1) FROM ask.benchmark_samples s
                   JOIN ask.benchmark_runs r ON r.id = s.run_id WHERE r.workload = 'real_w1'",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!((n, bad), (6, 0), "3 samples × 2 encodings, each scored in [0, 1]");
    let status: String = c.query_one("SELECT status FROM ask.benchmark_runs WHERE workload = 'real_w1'", &[]).unwrap().get(0);
    assert_eq!(status, "done");
}

#[test]
fn a_small_evaluation_runs_to_the_end() {
    let mut c = session(Protocol::OpenAi);
    c.batch_execute("SET ask.concurrency = 2").unwrap();
    let suite = serde_json::json!([
        {"question": "How many restaurants are there?", "gold_sql": "SELECT count(*) FROM restaurants"},
        {"question": "How many cities are in California?", "gold_sql": "SELECT count(*) FROM cities WHERE state_code = 'CA'"},
        {"question": "List the names of the French chefs.", "gold_sql": "SELECT full_name FROM chefs WHERE nationality = 'French'"},
    ]);
    let n: i32 = c.query_one("SELECT ask.load_suite('real_small', $1::text::jsonb)", &[&suite.to_string()]).unwrap().get(0);
    assert_eq!(n, 3);
    documented("CALL ask.evaluate", c.batch_execute("CALL ask.evaluate('real_small', 'smollm2')"));
    let rows = c.query("SELECT outcome, ex FROM ask.eval_results WHERE suite = 'real_small' AND run_label = 'smollm2'", &[]).unwrap();
    assert_eq!(rows.len(), 3, "every question has a result");
    for r in rows {
        let outcome: String = r.get(0);
        assert!(["correct", "wrong_result", "prediction_error", "gold_failed"].contains(&outcome.as_str()), "outcome {outcome}");
    }
    let (evaluated, ex): (i64, f64) = {
        let r = c
            .query_one("SELECT evaluated, ex::float8 FROM ask.eval_summary WHERE suite = 'real_small' AND run_label = 'smollm2'", &[])
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(evaluated, 3);
    assert!((0.0..=1.0).contains(&ex), "EX {ex}");
}

/// Questions over the sample for the constrained tests: counts, filters on text and numbers,
/// a join, a date range.
const CONSTRAINED_QUESTIONS: [&str; 6] = [
    "how many restaurants are there?",
    "which Italian restaurants are in LA?",
    "what is the average rating of restaurants in San Francisco?",
    "which chefs are French?",
    "how many reviews gave 5 stars in 2023?",
    "which restaurants failed an inspection?",
];

/// With the SQL grammar and the JSON schemas on, whatever the model: every SQL reply that the
/// server did not cut at the token limit parses, passes the guard and, when run, names no
/// table or column that does not exist; every fixed-shape reply not cut is read from its JSON
/// schema, without the free-text parser.
fn constrained_replies_hold(url: &str, model: &str) {
    let mut c = session_at("postgres", Protocol::OpenAi, url, model);
    c.batch_execute("SET ask.sql_grammar = on; SET ask.structured_output = on; SET ask.max_tokens = 400").unwrap();
    let (mut sql_replies, mut cut, mut shaped, mut failed) = (0, 0, 0, 0);
    for q in CONSTRAINED_QUESTIONS {
        let trace: Value = serde_json::from_str(&c.query_one("SELECT ask.explain($1)::text", &[&q]).unwrap().get::<_, String>(0)).unwrap();
        let stages = trace["stages"].as_array().unwrap();
        for (i, st) in stages.iter().enumerate() {
            let out = &st["output"];
            if let Some(e) = st["error"].as_str() {
                // A call that failed (a documented error) has no reply to check.
                eprintln!("{model}: {q}: stage {} failed: {e}", st["stage"]);
                failed += 1;
                continue;
            }
            let Some(reply) = out["reply"].as_str() else { continue };
            if out["finish"] == "length" {
                cut += 1;
                continue;
            }
            match st["stage"].as_str().unwrap() {
                "generate" | "repair" => {
                    sql_replies += 1;
                    assert_eq!(out["constrained"], "grammar", "{model}: {q}: {st}");
                    let guard = stages[i + 1..]
                        .iter()
                        .find(|s| s["stage"] == "guard" && s["attempt"] == st["attempt"])
                        .unwrap_or_else(|| panic!("{model}: {q}: no SQL was read from a constrained reply: {reply}"));
                    if guard["output"]["reason"] == "repeats_failed" {
                        continue;
                    }
                    assert_eq!(guard["output"]["allowed"], true, "{model}: {q}: the guard refused a constrained reply: {guard}");
                    if let Some(ex) = stages[i + 1..].iter().find(|s| s["stage"] == "execute" && s["attempt"] == st["attempt"]) {
                        let state = ex["output"]["sqlstate"].as_str().unwrap_or("");
                        assert!(
                            !matches!(state, "42P01" | "42703" | "3F000"),
                            "{model}: {q}: constrained SQL named something that does not exist: {ex}"
                        );
                    }
                }
                _ => {
                    shaped += 1;
                    assert_eq!(out["constrained"], "json_schema", "{model}: {q}: {st}");
                    assert_eq!(out["read"], "structured", "{model}: {q}: a JSON-constrained reply needed the free-text parser: {reply}");
                }
            }
        }
    }
    eprintln!(
        "{model}: {sql_replies} SQL replies and {shaped} fixed-shape replies checked, {cut} cut at the token limit, {failed} calls failed"
    );
    // On a loaded machine some calls may fail or be cut; the check needs replies to check.
    assert!(sql_replies >= 1, "{model}: no SQL reply finished within the token limit to check ({cut} cut, {failed} failed)");
}

#[test]
fn with_constraints_on_smollm2s_replies_parse_and_name_only_what_exists() {
    constrained_replies_hold(&llm_url(), &llm_model());
}

#[test]
fn with_constraints_on_gemmas_replies_parse_and_name_only_what_exists() {
    let url = std::env::var("PG_ASK_LLM_GEMMA_URL").expect(
        "PG_ASK_LLM_GEMMA_URL: the OpenAI base URL of a llama-server serving Gemma 3 270M; scripts/test.sh sets it (or: PG_ASK_LLM_PORT=8432 PG_ASK_LLM_RUN=/var/tmp/pg_ask-gemma bash scripts/llm.sh start gemma3)",
    );
    constrained_replies_hold(&url, "gemma3");
}
