//! Benchmark: value correction end to end, with a real model choosing where the memory is
//! unsure (`scripts/bench.sh values-llm [MODEL...]`).
//!
//! The databases of `bench/fixtures/values_unseen.json`, `values_held_out.json` and
//! `values_held_out2.json` are created (a schema per database, a table per fixture table, each
//! column holding its listed values), their value memory is built with the local
//! all-MiniLM-L6-v2 embeddings, and for each knowledge variant ('female' for 'F', 'Bombay' for
//! 'Mumbai') and each absent value `ask.correct_sql()` corrects `SELECT count(*) FROM t WHERE
//! col = 'literal'` with the LLM at `PG_ASK_LLM_URL`, under `ask.max_listed_values` 0 and 20.
//! Reported per part (tuning, reporting, held-out, held-out-2) and setting: wrong literals
//! fixed, kept, changed to another wrong value; legitimate values kept; LLM calls of the
//! `correct` stage (from the ledger). What a small model writes is a floor: the prompt is
//! the same for any model.
//!
//! Environment: `PG_ASK_LLM_URL` (OpenAI base URL), `PG_ASK_LLM_MODEL` (a label),
//! `PG_ASK_BENCH_LISTED` (the `ask.max_listed_values` settings, default `0,20`; the misses
//! printed with `VERBOSE` are the last setting's).

use std::collections::BTreeMap;

use pg_ask_bench::repo;
use postgres::Client;
use serde_json::Value;

const DB: &str = "pg_ask_values_llm_bench";
/// The cases: parts `tuning` and `reporting` (values_unseen.json), `held-out`
/// (values_held_out.json) and `held-out-2` (values_held_out2.json, written after the first
/// held-out part's misses were read), the last two only ever reported.
const FIXTURES: [&str; 3] =
    ["bench/fixtures/values_unseen.json", "bench/fixtures/values_held_out.json", "bench/fixtures/values_held_out2.json"];

struct Case {
    part: String,
    table: String,
    column: String,
    literal: String,
    /// The stored value meant, or None: a legitimate value to keep.
    gold: Option<String>,
}

#[derive(Default)]
struct Tally {
    wrong: usize,
    fixed: usize,
    kept_wrong: usize,
    miscorrected: usize,
    legit: usize,
    legit_kept: usize,
    calls: i64,
}

fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The fixtures' tables in PostgreSQL, their memory built; the cases.
fn load(c: &mut Client) -> Vec<Case> {
    let mut cases = Vec::new();
    for fixture in FIXTURES {
        let text = std::fs::read_to_string(repo().join(fixture)).expect("the fixture");
        let v: Value = serde_json::from_str(&text).expect("fixture JSON");
        load_fixture(c, &v, &mut cases);
    }
    cases
}

/// One fixture's databases: a schema each, its tables filled and indexed; its cases.
fn load_fixture(c: &mut Client, v: &Value, cases: &mut Vec<Case>) {
    for db in v["databases"].as_array().expect("databases") {
        let schema = format!("vu_{}", db["name"].as_str().unwrap());
        c.batch_execute(&format!("CREATE SCHEMA {schema}")).unwrap();
        let mut tables: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
        for col in db["columns"].as_array().unwrap() {
            let (t, _) = col["column"].as_str().unwrap().split_once('.').unwrap();
            tables.entry(t.to_string()).or_default().push(col);
        }
        for (t, cols) in &tables {
            let names: Vec<String> = cols.iter().map(|c| quote_ident(c["column"].as_str().unwrap().split_once('.').unwrap().1)).collect();
            c.batch_execute(&format!(
                "CREATE TABLE {schema}.{t} ({})",
                names.iter().map(|n| format!("{n} text")).collect::<Vec<_>>().join(", ")
            ))
            .unwrap();
            for (col, name) in cols.iter().zip(&names) {
                let values: Vec<String> = col["values"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
                // Frequencies fall with the list's order, so that the listing's order is the fixture's.
                for (i, value) in values.iter().enumerate() {
                    c.execute(
                        &format!("INSERT INTO {schema}.{t} ({name}) SELECT $1 FROM generate_series(1, $2)"),
                        &[value, &((values.len() - i) as i32)],
                    )
                    .unwrap();
                }
                let column = col["column"].as_str().unwrap().split_once('.').unwrap().1.to_string();
                let part = db["part"].as_str().unwrap().to_string();
                for (written, stored) in col["variants"].as_object().unwrap() {
                    cases.push(Case {
                        part: part.clone(),
                        table: format!("{schema}.{t}"),
                        column: column.clone(),
                        literal: written.clone(),
                        gold: Some(stored.as_str().unwrap().to_string()),
                    });
                }
                for absent in col["absent"].as_array().unwrap() {
                    cases.push(Case {
                        part: part.clone(),
                        table: format!("{schema}.{t}"),
                        column: column.clone(),
                        literal: absent.as_str().unwrap().to_string(),
                        gold: None,
                    });
                }
            }
            c.query_one(&format!("SELECT ask.index_values('{schema}.{t}')"), &[]).unwrap();
        }
    }
}

/// The literal the corrected statement compares with.
fn literal_of(sql: &str) -> Option<String> {
    let start = sql.find(" = '")? + 4;
    let end = sql.rfind('\'')?;
    (end >= start).then(|| sql[start..end].replace("''", "'"))
}

fn main() {
    let url = std::env::var("PG_ASK_LLM_URL").expect("PG_ASK_LLM_URL");
    let model = std::env::var("PG_ASK_LLM_MODEL").unwrap_or_else(|_| "model".into());
    let mut admin = pg_ask_it::connect_as_is();
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {DB}")).unwrap();
    let mut c = pg_ask_it::connect_to("postgres", DB);
    c.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_ask CASCADE; SET ask.embedding_provider = 'local'").unwrap();
    let t = std::time::Instant::now();
    let cases = load(&mut c);
    eprintln!("{} cases; memory built in {:.1} s", cases.len(), t.elapsed().as_secs_f64());
    c.batch_execute(&format!(
        "SET ask.base_url = '{url}'; SET ask.provider = 'openai'; SET ask.model = '{model}'; SET ask.request_timeout = 120000"
    ))
    .unwrap();

    // With VERBOSE, each miss is printed with the model's reply, read from the response cache.
    let verbose = std::env::var_os("VERBOSE").is_some();
    if verbose {
        c.batch_execute("SET ask.cache = on").unwrap();
    }
    let mut tallies: BTreeMap<(String, i32), Tally> = BTreeMap::new();
    let mut misses: Vec<String> = Vec::new();
    let settings: Vec<i32> = std::env::var("PG_ASK_BENCH_LISTED")
        .unwrap_or_else(|_| "0,20".into())
        .split(',')
        .map(|n| n.trim().parse().expect("PG_ASK_BENCH_LISTED: numbers separated by commas"))
        .collect();
    let report = *settings.last().expect("a setting");
    for &listed in &settings {
        c.batch_execute(&format!("SET ask.max_listed_values = {listed}")).unwrap();
        for case in &cases {
            let sql = format!("SELECT count(*) FROM {} WHERE {} = {}", case.table, quote_ident(&case.column), quote_literal(&case.literal));
            let before: i64 = c.query_one("SELECT count(*) FROM ask.llm_calls WHERE stage = 'correct'", &[]).unwrap().get(0);
            let started: std::time::SystemTime = c.query_one("SELECT clock_timestamp()", &[]).unwrap().get(0);
            let out: Option<String> = match c.query_one("SELECT ask.correct_sql($1)", &[&sql]) {
                Ok(r) => r.get(0),
                Err(e) => {
                    eprintln!("{}: {}", case.literal, pg_ask_it::message(&e));
                    None
                }
            };
            let after: i64 = c.query_one("SELECT count(*) FROM ask.llm_calls WHERE stage = 'correct'", &[]).unwrap().get(0);
            let chosen = out.as_deref().and_then(literal_of).unwrap_or_else(|| case.literal.clone());
            let mut reply = || -> String {
                if !verbose {
                    return String::new();
                }
                c.query_opt(
                    "SELECT string_agg(reply->>'content', ' then ' ORDER BY created_at) FROM ask.llm_cache WHERE created_at >= $1",
                    &[&started],
                )
                .ok()
                .flatten()
                .and_then(|r| r.get::<_, Option<String>>(0))
                .map(|r| format!("  reply {r}"))
                .unwrap_or_default()
            };
            let t = tallies.entry((case.part.clone(), listed)).or_default();
            t.calls += after - before;
            let missed = match &case.gold {
                Some(g) => {
                    t.wrong += 1;
                    if chosen == *g {
                        t.fixed += 1;
                    } else if chosen == case.literal {
                        t.kept_wrong += 1;
                    } else {
                        t.miscorrected += 1;
                    }
                    (chosen != *g).then(|| format!("(meant {g:?})"))
                }
                None => {
                    t.legit += 1;
                    t.legit_kept += usize::from(chosen == case.literal);
                    (chosen != case.literal).then(|| "(absent)".to_string())
                }
            };
            if let Some(why) = missed.filter(|_| listed == report) {
                misses.push(format!("{} {}.{}: {:?} -> {:?} {why}{}", case.part, case.table, case.column, case.literal, chosen, reply()));
            }
        }
    }
    println!("model {model}");
    println!(
        "{:<10} {:>6} | {:>6} {:>7} {:>7} {:>7} | {:>6} {:>7} | {:>9}",
        "part", "listed", "wrong", "fixed", "kept", "other", "legit", "kept", "LLM calls"
    );
    for ((part, listed), t) in &tallies {
        let f = |n: usize, d: usize| if d == 0 { "-".to_string() } else { format!("{:.3}", n as f64 / d as f64) };
        println!(
            "{:<10} {:>6} | {:>6} {:>7} {:>7} {:>7} | {:>6} {:>7} | {:>9}",
            part,
            listed,
            t.wrong,
            f(t.fixed, t.wrong),
            f(t.kept_wrong, t.wrong),
            f(t.miscorrected, t.wrong),
            t.legit,
            f(t.legit_kept, t.legit),
            t.calls
        );
    }
    if std::env::var_os("VERBOSE").is_some() {
        for m in &misses {
            println!("{m}");
        }
    }
}
