//! Benchmark: answering from verified queries without the LLM, and clarifying questions.
//!
//! Verified queries: every question of `bench/fixtures/verified_twins.json` (the 48 sample
//! questions and 44 defog questions, 4 per database) is stored with its gold SQL
//! (`ask.add_verified`, in its schema); then each of its twins (the same question in other
//! words), variants (the same words with another value of the same column) and near misses
//! (close words, another meaning) is asked through `ask.explain()` with the whole store in
//! place. A question answered from the store is right when the SQL that ran returns the rows
//! of its own gold SQL (the stored one for a twin, the variant's for a variant); a near miss
//! answered from the store is always wrong. Precision = right / answered from the store;
//! recall = right / (twins + variants). `ask.verified_min_cosine` is swept; the tuning part
//! (sample questions of even index, defog academic, advising, atis, broker, car_dealership)
//! chooses it, the reporting part (the rest) is reported.
//!
//! Clarification: with `ask.clarify = on` and every text column of the sample indexed, each
//! question of `bench/fixtures/clarify_traps.json` is asked; reported: how often pg_ask asks
//! back when it should (ambiguous) and when it should not (the controls).
//!
//! The LLM is a stand-in answering `SELECT 1` (only what happens before it matters here).

use std::collections::BTreeMap;

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_bench::{database, index_short_text, repo, sample_gold, sorted_rows as rows};
use pg_ask_core::evaluate::gold::gold_alternatives;
use postgres::Client;
use serde_json::Value;

const DB: &str = "pg_ask_verified_bench";
const THRESHOLDS: &[f64] = &[0.80, 0.85, 0.88, 0.90, 0.92, 0.95];
const TUNE_DBS: &[&str] = &["academic", "advising", "atis", "broker", "car_dealership"];

#[derive(Clone)]
struct Ask {
    part: &'static str,
    schema: String,
    question: String,
    kind: &'static str,
    /// The SQL whose rows are right (None: a near miss, never right from the store).
    gold: Option<String>,
}

/// The first of the gold SQL's alternatives, with ewallet's schema as the benchmark database
/// names it.
fn first_alternative(gold: &str) -> String {
    let gold = gold.replace("consumer_div.", "ewallet.");
    let gold = gold.as_str();
    gold_alternatives(gold).ok().and_then(|a| a.into_iter().next()).unwrap_or_else(|| gold.to_string())
}

fn main() {
    let mut c = database(DB);
    let standin = StandIn::start(Script::default().rule(Rule::new(&[], Reply::text("SELECT 1")))).unwrap();
    c.batch_execute(&format!(
        "ALTER DATABASE {DB} SET ask.base_url = '{}/v1'; ALTER DATABASE {DB} SET ask.max_attempts = 1",
        standin.url()
    ))
    .unwrap();
    let mut c = pg_ask_it::connect_to("postgres", DB);
    c.batch_execute("ANALYZE").unwrap();
    let fixtures: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("bench/fixtures/verified_twins.json")).unwrap()).unwrap();

    let t = std::time::Instant::now();
    let mut schemas: Vec<String> = vec!["public".into()];
    for e in fixtures["defog"].as_array().unwrap() {
        let db = e["db"].as_str().unwrap().to_string();
        if !schemas.contains(&db) {
            schemas.push(db);
        }
    }
    for s in &schemas {
        index_short_text(&mut c, s);
    }
    println!("value memory of short text columns: {:.1} s", t.elapsed().as_secs_f64());

    // The store, and the questions to ask.
    let mut asks: Vec<Ask> = Vec::new();
    let mut stored = 0;
    for (section, entries) in [("sample", &fixtures["sample"]), ("defog", &fixtures["defog"])] {
        for (i, e) in entries.as_array().unwrap().iter().enumerate() {
            let (schema, gold) = if section == "sample" {
                let q = e["stored"].as_str().unwrap();
                let gold = sample_gold(q);
                ("public".to_string(), gold)
            } else {
                (e["db"].as_str().unwrap().to_string(), first_alternative(&defog_gold(e["stored"].as_str().unwrap())))
            };
            let part = if section == "sample" {
                if i % 2 == 0 {
                    "tune"
                } else {
                    "report"
                }
            } else if TUNE_DBS.contains(&schema.as_str()) {
                "tune"
            } else {
                "report"
            };
            match c.query_one("SELECT ask.add_verified($1, $2, $3)", &[&e["stored"].as_str().unwrap(), &gold, &schema]) {
                Ok(_) => stored += 1,
                Err(err) => {
                    eprintln!("not stored ({schema}): {}: {}", e["stored"], pg_ask_it::message(&err));
                    continue;
                }
            }
            for tw in e["twins"].as_array().unwrap() {
                asks.push(Ask {
                    part,
                    schema: schema.clone(),
                    question: tw.as_str().unwrap().into(),
                    kind: "twin",
                    gold: Some(gold.clone()),
                });
            }
            for v in e["variants"].as_array().into_iter().flatten() {
                let vg = first_alternative(v["sql"].as_str().unwrap());
                asks.push(Ask {
                    part,
                    schema: schema.clone(),
                    question: v["question"].as_str().unwrap().into(),
                    kind: "variant",
                    gold: Some(vg),
                });
            }
            for n in e["near_misses"].as_array().unwrap() {
                asks.push(Ask {
                    part,
                    schema: schema.clone(),
                    question: n["question"].as_str().unwrap().into(),
                    kind: "near_miss",
                    gold: None,
                });
            }
        }
    }
    println!("verified queries stored: {stored}; questions to ask: {}", asks.len());

    // Right answers, computed once.
    let truth: Vec<Option<Vec<String>>> = asks.iter().map(|a| a.gold.as_ref().and_then(|g| rows(&mut c, &a.schema, g))).collect();

    let mut summary: BTreeMap<(String, String), (usize, usize, usize)> = BTreeMap::new();
    for &th in THRESHOLDS {
        c.batch_execute(&format!("SET ask.verified_min_cosine = {th}")).unwrap();
        // (part, kind) -> (asked, answered from the store, right)
        let mut tally: BTreeMap<(&str, &str), (usize, usize, usize)> = BTreeMap::new();
        let mut stage_ms: Vec<f64> = Vec::new();
        for (a, right_rows) in asks.iter().zip(&truth) {
            c.batch_execute(&format!("SET search_path = {}", a.schema)).unwrap();
            let trace: Value = c
                .query_one("SELECT ask.explain($1)::text", &[&a.question])
                .map(|r| serde_json::from_str(&r.get::<_, String>(0)).unwrap())
                .unwrap();
            c.batch_execute("RESET search_path").unwrap();
            if let Some(ms) =
                trace["stages"].as_array().and_then(|s| s.iter().find(|s| s["stage"] == "verified")).and_then(|s| s["ms"].as_f64())
            {
                stage_ms.push(ms);
            }
            let entry = tally.entry((a.part, a.kind)).or_default();
            entry.0 += 1;
            if trace["source"] != "verified" {
                if th == 0.90 && a.kind != "near_miss" && std::env::var_os("PG_ASK_BENCH_VERBOSE").is_some() {
                    let why = trace["stages"][0]["output"]["candidates"][0].clone();
                    println!("  not from the store ({} {}): {:?}: {why}", a.part, a.kind, a.question);
                }
                continue;
            }
            entry.1 += 1;
            let sql = trace["final_sql"].as_str().unwrap_or_default();
            let ran = rows(&mut c, &a.schema, sql);
            let right = right_rows.is_some() && ran == *right_rows;
            if right {
                entry.2 += 1;
            } else {
                println!("  wrong from the store at {th} ({} {}): {:?} -> {sql}", a.part, a.kind, a.question);
            }
        }
        stage_ms.sort_by(f64::total_cmp);
        let p = |q: f64| stage_ms.get(((stage_ms.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0);
        println!("\n== ask.verified_min_cosine = {th}  (verified stage: p50 {:.2} ms, p95 {:.2} ms)", p(0.5), p(0.95));
        for part in ["tune", "report"] {
            let (mut asked, mut answered, mut right, mut positives) = (0, 0, 0, 0);
            for ((pt, kind), (n, ans, r)) in &tally {
                if *pt != part {
                    continue;
                }
                println!("  {part:6} {kind:9} asked {n:4}  from the store {ans:4}  right {r:4}");
                asked += n;
                answered += ans;
                right += r;
                if *kind != "near_miss" {
                    positives += n;
                }
            }
            let precision = if answered > 0 { right as f64 / answered as f64 } else { 1.0 };
            let recall = right as f64 / positives.max(1) as f64;
            println!(
                "  {part:6} precision {precision:.3} ({right}/{answered})  recall {recall:.3} ({right}/{positives})  of {asked} asked"
            );
            summary.insert((format!("{th:.2}"), part.to_string()), (answered, right, positives));
        }
    }
    println!("\n== summary: threshold, part, precision, recall");
    for ((th, part), (answered, right, positives)) in &summary {
        let precision = if *answered > 0 { *right as f64 / *answered as f64 } else { 1.0 };
        println!("{th} {part:6} precision {precision:.3} recall {:.3}", *right as f64 / (*positives).max(1) as f64);
    }

    clarification(&mut c);
}

fn defog_gold(question: &str) -> String {
    static ROWS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    let rows = ROWS.get_or_init(|| {
        // Read by PostgreSQL's own CSV parser.
        let path = std::fs::canonicalize(repo().join("../shared/datasets/defog/questions_gen_postgres.csv")).unwrap();
        let mut c = pg_ask_it::connect_to("postgres", DB);
        c.batch_execute(&format!(
            "CREATE TEMP TABLE q (question text, query text, db_name text, query_category text, instructions text);
             COPY q FROM '{}' (FORMAT csv, HEADER true);",
            path.display()
        ))
        .unwrap();
        c.query("SELECT question, query FROM q", &[]).unwrap().iter().map(|r| (r.get(0), r.get(1))).collect()
    });
    // Compared on letters and digits: the fixture's copy may quote differently than the CSV.
    let key = |s: &str| s.chars().filter(|c| c.is_alphanumeric()).collect::<String>().to_lowercase();
    rows.iter().find(|(q, _)| key(q) == key(question)).map(|(_, g)| g.clone()).unwrap_or_else(|| panic!("no defog question {question:?}"))
}

fn clarification(c: &mut Client) {
    let traps: Value = serde_json::from_str(&std::fs::read_to_string(repo().join("bench/fixtures/clarify_traps.json")).unwrap()).unwrap();
    c.batch_execute("SET ask.clarify = on; SET ask.verified = off; SET search_path = public").unwrap();
    let (mut amb, mut amb_asked, mut clear, mut clear_asked) = (0, 0, 0, 0);
    let mut ms: Vec<f64> = Vec::new();
    for q in traps["questions"].as_array().unwrap() {
        let question = q["question"].as_str().unwrap();
        let trace: Value = c
            .query_one("SELECT ask.explain($1)::text", &[&question])
            .map(|r| serde_json::from_str(&r.get::<_, String>(0)).unwrap())
            .unwrap();
        let asked = trace["source"] == "clarify";
        if let Some(st) = trace["stages"].as_array().and_then(|s| s.iter().find(|s| s["stage"] == "clarify")) {
            ms.push(st["ms"].as_f64().unwrap_or(0.0));
        }
        let shown =
            trace["stages"].as_array().and_then(|s| s.iter().find(|s| s["stage"] == "clarify")).map(|s| s["output"]["asked_back"].clone());
        if q["ambiguous"] == true {
            amb += 1;
            amb_asked += asked as usize;
            if !asked {
                println!("  not asked back (ambiguous): {question}");
            }
        } else {
            clear += 1;
            clear_asked += asked as usize;
            if asked {
                println!("  asked back (clear): {question} -> {}", shown.unwrap_or_default());
            }
        }
    }
    println!("\n== clarification (sample database, ask.clarify = on)");
    println!("ambiguous questions asked back: {amb_asked}/{amb} ({:.2})", amb_asked as f64 / amb.max(1) as f64);
    println!("clear questions asked back: {clear_asked}/{clear} ({:.2})", clear_asked as f64 / clear.max(1) as f64);
    if !ms.is_empty() {
        ms.sort_by(f64::total_cmp);
        println!("clarify stage when ambiguities were found: p50 {:.2} ms, max {:.2} ms", ms[ms.len() / 2], ms[ms.len() - 1]);
    }
}
