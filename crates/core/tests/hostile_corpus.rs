//! The hostile-reply corpus (`tests/fixtures/hostile_replies.json`) against the parse-level layer:
//! [`extract_sql`] followed by [`check_read_only`].
//!
//! * every hostile reply of layer `parse` is refused, for the reason code it names;
//! * every hostile reply of layer `db` or `exec` passes this layer (otherwise it belongs to
//!   `parse`); the database tests check that the volatile-function check (`db`) or read-only
//!   execution itself (`exec`: functions whose declared volatility is a lie) refuses it;
//! * every safe reply passes, so the guard is not over-eager.
//!
//! Each test checks all entries and then reports every failing one by name.

use std::collections::HashSet;
use std::path::PathBuf;

use pg_ask_core::extract::extract_sql;
use pg_ask_core::guard::{check_read_only, CheckedSql, Refusal};
use serde::Deserialize;

#[derive(Deserialize)]
struct Corpus {
    hostile: Vec<HostileReply>,
    safe: Vec<SafeReply>,
}

#[derive(Deserialize)]
struct HostileReply {
    name: String,
    reply: String,
    layer: Layer,
    /// The reason code the parse layer must give, when the entry names one.
    #[serde(default)]
    expect: Option<String>,
}

#[derive(Deserialize)]
struct SafeReply {
    name: String,
    reply: String,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Layer {
    Parse,
    Db,
    Exec,
}

fn corpus() -> Corpus {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile_replies.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is malformed: {e}", path.display()))
}

/// The parse-level verdict on a whole reply; `None` when no SQL was extracted.
fn verdict(reply: &str) -> Option<Result<CheckedSql, Refusal>> {
    extract_sql(reply).map(|sql| check_read_only(&sql))
}

/// Panics with one line per failure, if there are any.
fn report(what: &str, failures: Vec<String>, total: usize) {
    for line in &failures {
        eprintln!("{line}");
    }
    assert!(failures.is_empty(), "{} of {total} {what} failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn corpus_is_large_and_well_formed() {
    let corpus = corpus();
    let parse = corpus.hostile.iter().filter(|h| h.layer == Layer::Parse).count();
    let db = corpus.hostile.len() - parse;
    println!("hostile: {parse} parse + {db} db; safe: {}", corpus.safe.len());
    assert!(corpus.hostile.len() >= 150, "only {} hostile replies", corpus.hostile.len());
    assert!(corpus.safe.len() >= 15, "only {} safe replies", corpus.safe.len());
    assert!(db > 0, "no reply exercises the database layer");

    let mut names = HashSet::new();
    for name in corpus.hostile.iter().map(|h| &h.name).chain(corpus.safe.iter().map(|s| &s.name)) {
        assert!(names.insert(name), "duplicate entry name {name:?}");
    }
    for h in &corpus.hostile {
        assert!(h.layer == Layer::Parse || h.expect.is_none(), "{}: a db-layer entry cannot expect a parse-level reason", h.name);
    }
}

#[test]
fn parse_layer_hostile_replies_are_refused() {
    let corpus = corpus();
    let entries: Vec<_> = corpus.hostile.iter().filter(|h| h.layer == Layer::Parse).collect();
    let failures = entries
        .iter()
        .filter_map(|h| match verdict(&h.reply) {
            None => Some(format!("{}: no SQL was extracted from {:?}", h.name, h.reply)),
            Some(Ok(checked)) => Some(format!("{}: ACCEPTED {:?}", h.name, checked.sql)),
            Some(Err(refusal)) => match &h.expect {
                Some(code) if code != refusal.reason_code() => {
                    Some(format!("{}: refused as {} ({refusal}), expected {code}", h.name, refusal.reason_code()))
                }
                _ => None,
            },
        })
        .collect();
    report("parse-layer hostile replies", failures, entries.len());
}

#[test]
fn db_and_exec_layer_hostile_replies_pass_the_parse_layer() {
    let corpus = corpus();
    let entries: Vec<_> = corpus.hostile.iter().filter(|h| h.layer != Layer::Parse).collect();
    let failures = entries
        .iter()
        .filter_map(|h| match verdict(&h.reply) {
            None => Some(format!("{}: no SQL was extracted from {:?}", h.name, h.reply)),
            Some(Ok(_)) => None,
            Some(Err(refusal)) => Some(format!("{}: refused at parse level ({refusal}); label it layer \"parse\"", h.name)),
        })
        .collect();
    report("db- and exec-layer hostile replies", failures, entries.len());
}

#[test]
fn safe_replies_pass() {
    let corpus = corpus();
    let failures = corpus
        .safe
        .iter()
        .filter_map(|s| match verdict(&s.reply) {
            None => Some(format!("{}: no SQL was extracted from {:?}", s.name, s.reply)),
            Some(Ok(_)) => None,
            Some(Err(refusal)) => Some(format!("{}: REFUSED as {} ({refusal})", s.name, refusal.reason_code())),
        })
        .collect();
    report("safe replies", failures, corpus.safe.len());
}
