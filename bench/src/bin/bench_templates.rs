//! Benchmark: verified templates with a real model (llama-server, started by
//! `scripts/bench.sh templates MODEL`).
//!
//! The 48 sample questions are stored as verified queries with their gold SQL. Then asked
//! through `ask.sql()`, with the store on: the twins and variants of
//! `bench/fixtures/verified_twins.json`, the paraphrases of
//! `bench/fixtures/template_paraphrases.json` (worded to differ: synonyms, reordering, other
//! question forms), and the near misses of both files (another comparison, direction,
//! negation, aggregate, grouping or column), which must never be answered from the store.
//! With the store off (`ask.verified = off`) the twins, variants and paraphrases are asked
//! again, for execution accuracy without it.
//!
//! A question is answered from the store when pg_ask says so (its NOTICE: by a rule, without
//! an LLM call, or as a template whose values the model chose). Precision = answered from the
//! store and right / answered from the store, near misses included (never right); recall =
//! answered from the store and right / the twins, variants and paraphrases. EX counts every
//! answer, from the store or generated. Latency is the wall time of `ask.sql()` from the
//! client, by how the question was answered.
//!
//! The questions come in three parts, reported apart and together: `tuning`, the fixtures above,
//! from whose misses and wrong answers the template step's rules were written; `held-out`,
//! `bench/fixtures/template_heldout.json` (one more paraphrase and near miss per stored
//! question), written for reporting only, from whose two wrong answers one later rule was
//! written; and `held-out-2`, `bench/fixtures/template_heldout2.json` (two more paraphrases and
//! one more near miss per stored question), written before any rule change after that.
//!
//! Environment: `PG_ASK_LLM_URL` (the server's OpenAI base URL), `PG_ASK_LLM_MODEL`,
//! `PG_ASK_BENCH_KINDS` (the kinds to ask, default all: twin, variant, paraphrase, near_miss),
//! `PG_ASK_BENCH_STORE` (`on,off` by default; `on` alone skips the pass without the store),
//! `PG_ASK_BENCH_PARTS` (the parts to ask, default all: tuning, held-out, held-out-2).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pg_ask_bench::{index_short_text, repo, sample_gold, sorted_rows};
use postgres::{Client, NoTls};
use serde_json::Value;

const DB: &str = "pg_ask_templates_bench";

struct Ask {
    question: String,
    kind: &'static str,
    /// `tuning`: the fixtures the template step's rules were written from; `held-out` and
    /// `held-out-2`: `template_heldout.json` and `template_heldout2.json`, written for reporting.
    part: &'static str,
    /// The SQL whose rows are right (None: a near miss).
    gold: Option<String>,
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

fn connect_with_notices() -> (Client, Arc<Mutex<Vec<String>>>) {
    let host = env("PG_ASK_IT_HOST");
    let port: u16 = std::env::var("PG_ASK_IT_PORT").unwrap_or_else(|_| "5432".into()).parse().unwrap();
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = notices.clone();
    let client = postgres::Config::new()
        .host(&host)
        .port(port)
        .user("postgres")
        .dbname(DB)
        .notice_callback(move |n| sink.lock().unwrap_or_else(|e| e.into_inner()).push(n.message().to_string()))
        .connect(NoTls)
        .unwrap();
    (client, notices)
}

/// (store, part, kind) → (asked, answered from the store, right from the store, right overall).
type Tally<'a> = BTreeMap<(&'a str, &'a str, &'a str), (usize, usize, usize, usize)>;

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (url, model) = (env("PG_ASK_LLM_URL"), env("PG_ASK_LLM_MODEL"));
    let kinds = std::env::var("PG_ASK_BENCH_KINDS").unwrap_or_else(|_| "twin,variant,paraphrase,near_miss".into());
    drop(pg_ask_bench::database(DB));
    let mut admin = pg_ask_it::connect_to("postgres", DB);
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {DB} SET ask.provider = 'openai'; ALTER DATABASE {DB} SET ask.base_url = '{url}';
             ALTER DATABASE {DB} SET ask.model = '{model}'; ALTER DATABASE {DB} SET ask.max_attempts = 2;
             ALTER DATABASE {DB} SET ask.request_timeout = '300s'; ANALYZE"
        ))
        .unwrap();
    index_short_text(&mut admin, "public");
    let (mut c, notices) = connect_with_notices();

    let twins: Value = serde_json::from_str(&std::fs::read_to_string(repo().join("bench/fixtures/verified_twins.json")).unwrap()).unwrap();
    let paraphrases: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("bench/fixtures/template_paraphrases.json")).unwrap()).unwrap();
    let heldout: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("bench/fixtures/template_heldout.json")).unwrap()).unwrap();
    let heldout2: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("bench/fixtures/template_heldout2.json")).unwrap()).unwrap();
    let mut asks = Vec::new();
    for (((e, p), h), h2) in twins["sample"]
        .as_array()
        .unwrap()
        .iter()
        .zip(paraphrases["sample"].as_array().unwrap())
        .zip(heldout["sample"].as_array().unwrap())
        .zip(heldout2["sample"].as_array().unwrap())
    {
        let stored = e["stored"].as_str().unwrap();
        for other in [p, h, h2] {
            assert_eq!(stored, other["stored"].as_str().unwrap(), "the fixtures follow the sample suite");
        }
        let gold = sample_gold(stored);
        c.query_one("SELECT ask.add_verified($1, $2, 'public')", &[&stored, &gold]).unwrap();
        let text = |v: &Value| v.as_str().map(str::to_string).unwrap_or_else(|| v["question"].as_str().unwrap().to_string());
        for t in e["twins"].as_array().unwrap() {
            asks.push(Ask { question: text(t), kind: "twin", part: "tuning", gold: Some(gold.clone()) });
        }
        for v in e["variants"].as_array().into_iter().flatten() {
            asks.push(Ask { question: text(v), kind: "variant", part: "tuning", gold: Some(v["sql"].as_str().unwrap().to_string()) });
        }
        for t in p["paraphrases"].as_array().unwrap() {
            asks.push(Ask { question: text(t), kind: "paraphrase", part: "tuning", gold: Some(gold.clone()) });
        }
        // A near miss that differs only in a number the template writes in is a variant here.
        let variants: Vec<&Value> = p["variants"].as_array().into_iter().flatten().collect();
        for v in &variants {
            asks.push(Ask { question: text(v), kind: "variant", part: "tuning", gold: Some(v["sql"].as_str().unwrap().to_string()) });
        }
        for n in e["near_misses"].as_array().unwrap().iter().chain(p["near_misses"].as_array().unwrap()) {
            if !variants.iter().any(|v| v["question"] == n["question"]) {
                asks.push(Ask { question: text(n), kind: "near_miss", part: "tuning", gold: None });
            }
        }
        for t in h["paraphrases"].as_array().unwrap() {
            asks.push(Ask { question: text(t), kind: "paraphrase", part: "held-out", gold: Some(gold.clone()) });
        }
        for n in h["near_misses"].as_array().unwrap() {
            asks.push(Ask { question: text(n), kind: "near_miss", part: "held-out", gold: None });
        }
        for t in h2["paraphrases"].as_array().unwrap() {
            asks.push(Ask { question: text(t), kind: "paraphrase", part: "held-out-2", gold: Some(gold.clone()) });
        }
        for n in h2["near_misses"].as_array().unwrap() {
            asks.push(Ask { question: text(n), kind: "near_miss", part: "held-out-2", gold: None });
        }
    }
    let parts = std::env::var("PG_ASK_BENCH_PARTS").unwrap_or_else(|_| "tuning,held-out,held-out-2".into());
    asks.retain(|a| kinds.split(',').any(|k| k == a.kind) && parts.split(',').any(|p| p == a.part));
    let truth: Vec<Option<Vec<String>>> = asks.iter().map(|a| a.gold.as_deref().and_then(|g| sorted_rows(&mut c, "public", g))).collect();
    println!("model {model}: {} questions ({kinds}; {parts})", asks.len());

    let mut tally: Tally = BTreeMap::new();
    let mut seconds: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    let stores = std::env::var("PG_ASK_BENCH_STORE").unwrap_or_else(|_| "on,off".into());
    for store in ["on", "off"].into_iter().filter(|s| stores.split(',').any(|x| x == *s)) {
        c.batch_execute(&format!(
            "SET ask.verified = {store}; SET client_min_messages = {}",
            if store == "on" { "debug1" } else { "notice" }
        ))
        .unwrap();
        for (a, right_rows) in asks.iter().zip(&truth) {
            if store == "off" && a.gold.is_none() {
                continue;
            }
            notices.lock().unwrap().clear();
            let t = Instant::now();
            let sql: Option<String> = c.query_one("SELECT ask.sql($1)", &[&a.question]).ok().map(|r| r.get(0));
            let s = t.elapsed().as_secs_f64();
            let said = notices.lock().unwrap().join("\n");
            let how = if said.contains("as a template") {
                "template"
            } else if said.contains("without an LLM call") {
                "rule"
            } else {
                "llm"
            };
            seconds.entry((store, how)).or_default().push(s);
            let right = match (&sql, right_rows) {
                (Some(sql), Some(want)) => sorted_rows(&mut c, "public", sql).as_ref() == Some(want),
                _ => false,
            };
            let e = tally.entry((store, a.part, a.kind)).or_default();
            e.0 += 1;
            if how != "llm" {
                e.1 += 1;
                e.2 += usize::from(right);
                if !right {
                    println!(
                        "  wrong from the store ({how}, {} {}): {:?} -> {}",
                        a.part,
                        a.kind,
                        a.question,
                        sql.as_deref().unwrap_or("(failed)")
                    );
                }
            }
            e.3 += usize::from(right);
            if store == "on" && a.gold.is_some() && how == "llm" {
                let why = said.lines().find_map(|l| l.split_once("no verified template answered: ").map(|(_, w)| w.to_string()));
                println!(
                    "  missed ({} {}, {}): {:?}: {}",
                    a.part,
                    a.kind,
                    if right { "right" } else { "wrong" },
                    a.question,
                    why.as_deref().unwrap_or("no template offered")
                );
            }
        }
    }
    for part in ["tuning", "held-out", "held-out-2", "all"] {
        summary(&model, part, &tally);
    }
    for ((store, how), s) in &seconds {
        println!("  seconds per question, store {store}, {how:8}: median {:.2} over {}", median(s.clone()), s.len());
    }
}

/// Precision, recall and EX of one part of the questions (`all`: every part asked), by kind.
fn summary(model: &str, part: &str, tally: &Tally) {
    let sum = |store: &str, kind: &str| {
        tally
            .iter()
            .filter(|((s, p, k), _)| *s == store && *k == kind && (part == "all" || *p == part))
            .fold((0, 0, 0, 0), |a, (_, t)| (a.0 + t.0, a.1 + t.1, a.2 + t.2, a.3 + t.3))
    };
    println!("\n== {model}, {part}: by kind (store on | off)");
    // Positives asked with the store on, and apart with it off (a run may ask one pass only).
    let (mut answered, mut right_store, mut positives, mut right_on) = (0, 0, 0, 0);
    let (mut positives_off, mut right_off) = (0, 0);
    let ratio = |a: usize, b: usize| if b > 0 { a as f64 / b as f64 } else { f64::NAN };
    for kind in ["twin", "variant", "paraphrase", "near_miss"] {
        let (on, off) = (sum("on", kind), sum("off", kind));
        if on.0 == 0 && off.0 == 0 {
            continue;
        }
        println!(
            "  {kind:10} asked {:3}  from the store {:3}  right from it {:3}  EX on {:.3}  EX off {:.3}",
            on.0.max(off.0),
            on.1,
            on.2,
            ratio(on.3, on.0),
            ratio(off.3, off.0)
        );
        answered += on.1;
        right_store += on.2;
        if kind != "near_miss" {
            positives += on.0;
            right_on += on.3;
            positives_off += off.0;
            right_off += off.3;
        }
    }
    println!(
        "  precision {:.3} ({right_store}/{answered})  recall {:.3} ({right_store}/{positives})  EX on {:.3} ({right_on}/{positives})  EX off {:.3} ({right_off}/{positives_off})",
        if answered > 0 { right_store as f64 / answered as f64 } else { 1.0 },
        ratio(right_store, positives),
        ratio(right_on, positives),
        ratio(right_off, positives_off),
    );
}
