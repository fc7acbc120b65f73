//! What real models wrote: every SQL-writing reply of SmolLM2-135M-Instruct (sample suite and
//! defog) and Gemma 3 270M (sample suite), as `scripts/bench.sh real` collected them
//! (`PG_ASK_REAL_CORPUS`), one file per model in `fixtures/real_replies/`. Each reply goes
//! through the SQL extractor and the guard; none may panic, SmolLM2's shares read as SQL and
//! passing the guard may not fall, and Gemma's echoes of the prompt may not read as SQL again.
//!
//! `cargo test -p pg_ask_core --test real_replies -- --nocapture` prints the shares.

use std::collections::BTreeMap;

use pg_ask_core::extract::extract_sql;
use pg_ask_core::guard::check_read_only;
use serde_json::Value;

/// The corpus files, each a JSON object per line: model, suite, stage, question, reply.
fn corpus() -> Vec<(String, Value)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real_replies");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        for (n, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 1));
            out.push((name.clone(), v));
        }
    }
    out
}

#[derive(Default, Debug)]
struct Counts {
    replies: usize,
    sql_read: usize,
    sql_passes_guard: usize,
}

#[test]
fn every_real_reply_goes_through_its_stages_parser() {
    let corpus = corpus();
    assert!(corpus.len() >= 100, "the corpus has {} replies", corpus.len());
    let mut by_model: BTreeMap<String, Counts> = BTreeMap::new();
    for (model, v) in &corpus {
        let reply = v["reply"].as_str().expect("a reply");
        let c = by_model.entry(model.clone()).or_default();
        assert!(matches!(v["stage"].as_str(), Some("generate" | "repair")), "the corpus holds SQL-writing replies: {v}");
        c.replies += 1;
        if let Some(sql) = extract_sql(reply) {
            c.sql_read += 1;
            assert!(!sql.trim().is_empty() && !sql.trim_end().ends_with(';'), "{sql:?}");
            c.sql_passes_guard += usize::from(check_read_only(&sql).is_ok());
        }
    }
    for (model, c) in &by_model {
        let share = |a: usize, b: usize| a as f64 / b.max(1) as f64;
        println!(
            "{model}: SQL read from {:.3} of {} generate/repair replies ({:.3} pass the guard)",
            share(c.sql_read, c.replies),
            c.replies,
            share(c.sql_passes_guard, c.replies)
        );
    }
    // Floors: what the parsers read today (BENCHMARKS.md has the figures before and after).
    let smol = by_model.get("smollm2").expect("SmolLM2's replies");
    assert!(smol.sql_read as f64 / smol.replies as f64 >= FLOOR_SMOLLM2, "{smol:?}");
    assert!(smol.sql_passes_guard as f64 / smol.replies as f64 >= FLOOR_SMOLLM2_GUARD, "{smol:?}");
    // Gemma echoes the prompt; its instructions and descriptions must not read as SQL again.
    let gemma = by_model.get("gemma3").expect("Gemma's replies");
    assert!(gemma.sql_read as f64 / gemma.replies as f64 <= CEILING_GEMMA3, "{gemma:?}");
}

/// The share of SmolLM2's SQL-writing replies read as SQL, and passing the guard, today.
const FLOOR_SMOLLM2: f64 = 0.51;
const FLOOR_SMOLLM2_GUARD: f64 = 0.38;
/// The share of Gemma 3 270M's echoing replies read as SQL today (1.0 before echoes of the
/// instructions were dropped).
const CEILING_GEMMA3: f64 = 0.07;
