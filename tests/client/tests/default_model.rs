//! The default local model (Qwen2.5-Coder-1.5B-Instruct on llama.cpp's `llama-server`, as
//! `scripts/run.sh` and compose serve it) answers the README's first question right, asked by
//! a role without privileges beyond reading the sample's tables.
//!
//! One real question, not a suite (the benchmark measures the suites): with the model's own
//! first query, a written answer checked against the rows, the answer must state the rows'
//! count, 68. `scripts/test.sh` starts the server and sets `PG_ASK_LLM_DEFAULT_URL`.

use std::time::Instant;

mod common;

use pg_ask_it::{connect_to, sample_database};
use serde_json::Value;

const DB: &str = "pg_ask_default_model";
const ROLE: &str = "dm_reader";

/// A session as the reader in a new sample database `db`, pointed at the default model.
fn reader_session(db: &str) -> postgres::Client {
    let url = std::env::var("PG_ASK_LLM_DEFAULT_URL").expect(
        "PG_ASK_LLM_DEFAULT_URL: the OpenAI base URL of llama-server serving qwen-coder; scripts/test.sh sets it (or: bash scripts/llm.sh start qwen-coder)",
    );
    let mut owner = sample_database(db);
    // The role is the cluster's and shared by the tests of this file, which run at once:
    // created one setup at a time, without any attribute.
    common::ensure_role(ROLE);
    owner.batch_execute(&format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {ROLE}")).unwrap();
    let mut c = connect_to(ROLE, db);
    c.batch_execute(&format!(
        "SET ask.provider = 'openai'; SET ask.base_url = '{url}'; SET ask.model = 'qwen-coder'; SET ask.request_timeout = 300000"
    ))
    .unwrap();
    c
}

#[test]
fn the_default_model_answers_how_many_restaurants_there_are() {
    let mut c = reader_session(DB);
    let t = Instant::now();
    let trace: Value =
        serde_json::from_str(&c.query_one("SELECT ask.explain('how many restaurants are there?')::text", &[]).unwrap().get::<_, String>(0))
            .unwrap();
    let seconds = t.elapsed().as_secs_f64();
    let answer = trace["answer"].as_str().unwrap_or_default().to_string();
    let sql = trace["final_sql"].as_str().unwrap_or_default().to_lowercase();
    println!("qwen-coder: {seconds:.1} s; SQL: {sql}; answer: {answer}");
    assert!(trace.get("error").is_none(), "{trace}");
    assert!(sql.contains("count(") && sql.contains("restaurants"), "{trace}");
    let stated: Vec<&str> = answer.split(|c: char| !c.is_ascii_digit()).filter(|w| !w.is_empty()).collect();
    assert!(stated.contains(&"68"), "the answer does not say 68: {answer}");
    assert!(stated.iter().all(|n| *n == "68"), "the answer states another number: {answer}");
}

/// The README's follow-up conversation with the default model, asked by the same reader: each
/// turn's SQL runs (whether its rows are the gold query's is reported, and scored by
/// `bench.sh conversations`), the two follow-ups are read as follow-ups (rewritten into
/// standalone questions), and the turns are kept as the reader's own, with the standalone
/// questions in the call log.
#[test]
fn the_default_model_follows_up_in_a_conversation() {
    let mut c = reader_session("pg_ask_default_model_conv");
    let rows = |c: &mut postgres::Client, sql: &str| -> Vec<String> {
        let mut v: Vec<String> = c.query(&format!("SELECT name FROM ({sql}) t"), &[]).unwrap().iter().map(|r| r.get(0)).collect();
        v.sort();
        v
    };
    let id: i64 = c.query_one("SELECT ask.conversation_start('README')", &[]).unwrap().get(0);
    let turns = [
        ("Which Italian restaurants are in LA?", "c.name = 'Los Angeles'"),
        ("and in San Francisco?", "c.name = 'San Francisco'"),
        ("only the ones rated above 4", "c.name = 'San Francisco' AND r.rating > 4"),
    ];
    for (q, cond) in turns {
        let t = Instant::now();
        let sql: String = c.query_one("SELECT ask.sql($1, conversation => $2)", &[&q, &id]).unwrap().get(0);
        println!("qwen-coder: {q} ({:.1} s): {sql}", t.elapsed().as_secs_f64());
        let gold = format!("SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE r.cuisine = 'Italian' AND {cond}");
        let got: Vec<String> = c
            .query(&format!("SELECT to_jsonb(t) ->> (SELECT k FROM jsonb_object_keys(to_jsonb(t)) k LIMIT 1) FROM ({sql}) t"), &[])
            .unwrap()
            .iter()
            .map(|r| r.get::<_, Option<String>>(0).unwrap_or_default())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        // What the model writes is the benchmark's to score (bench.sh conversations); here
        // the rows are reported, and what must hold whatever it writes is checked below.
        let right = got == rows(&mut c, &gold);
        println!("qwen-coder: turn rows {}", if right { "right" } else { "wrong" });
        assert!(sql.to_lowercase().contains("restaurants"), "{q}: {sql}");
    }
    let readings: Vec<String> = c
        .query("SELECT reading FROM ask.conversation_turns WHERE conversation_id = $1 ORDER BY turn", &[&id])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(readings, ["standalone", "rewritten", "rewritten"]);
    let logged: i64 = c
        .query_one(
            "SELECT count(*) FROM ask.conversation_turns t JOIN ask.questions q ON q.id = t.call_id
              WHERE t.conversation_id = $1 AND q.question = t.standalone AND t.role = current_user::regrole",
            &[&id],
        )
        .unwrap()
        .get(0);
    assert_eq!(logged, 3);
}
