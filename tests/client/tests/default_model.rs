//! The default local model (Qwen2.5-Coder-1.5B-Instruct on llama.cpp's `llama-server`, as
//! `scripts/run.sh` and compose serve it) answers the README's first question right, asked by
//! a role without privileges beyond reading the sample's tables.
//!
//! One real question, not a suite (the benchmark measures the suites): with the model's own
//! first query, a written answer checked against the rows, the answer must state the rows'
//! count, 68. `scripts/test.sh` starts the server and sets `PG_ASK_LLM_DEFAULT_URL`.

use std::time::Instant;

use pg_ask_it::{connect_to, sample_database};
use serde_json::Value;

const DB: &str = "pg_ask_default_model";
const ROLE: &str = "dm_reader";

#[test]
fn the_default_model_answers_how_many_restaurants_there_are() {
    let url = std::env::var("PG_ASK_LLM_DEFAULT_URL").expect(
        "PG_ASK_LLM_DEFAULT_URL: the OpenAI base URL of llama-server serving qwen-coder; scripts/test.sh sets it (or: bash scripts/llm.sh start qwen-coder)",
    );
    let mut owner = sample_database(DB);
    owner
        .batch_execute(&format!(
            "DO $$ BEGIN CREATE ROLE {ROLE} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO {ROLE};"
        ))
        .unwrap();
    let mut c = connect_to(ROLE, DB);
    c.batch_execute(&format!(
        "SET ask.provider = 'openai'; SET ask.base_url = '{url}'; SET ask.model = 'qwen-coder'; SET ask.request_timeout = 300000"
    ))
    .unwrap();
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
