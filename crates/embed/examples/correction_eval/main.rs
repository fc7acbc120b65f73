//! Literal-correction accuracy, split into the cases its thresholds were tuned on and cases
//! it never saw: `cargo run --release -p pg_ask_embed --example correction_eval [DEFOG_DIR]`.
//!
//! **Tuning part:** every text column of the eleven defog databases
//! (`../shared/datasets/defog/NAME.sql`, read at run time, never copied) and the databases of
//! `bench/fixtures/values_unseen.json` marked `tuning`. **Reporting part:** the fixture's
//! databases marked `reporting`, written for this split and never used to set a threshold.
//! **Held-out part:** `bench/fixtures/values_held_out.json`, written after the rules were set
//! and only ever reported; **held-out-2:** `bench/fixtures/values_held_out2.json`, written later
//! the same way.
//!
//! Each stored value is perturbed the ways an LLM miswrites values (case, typos,
//! spacing/punctuation, plural/singular, initialisms, word prefixes, partial names, and
//! demonyms/aliases of values that have them); the fixture adds `knowledge` variants (a code,
//! an official, short or older name: 'female' for 'F', 'Holland' for 'Netherlands', 'Bombay'
//! for 'Mumbai'). Legitimate absent values (each value held out of its column in turn, named
//! siblings such as 'Japan' among countries, the fixture's `absent` values) must be left alone.
//! Three methods are compared:
//!
//! * plain trigram: the pg_trgm-similarity top-1, applied when ≥ 0.3 (pg_trgm's default
//!   `similarity_threshold`);
//! * plain embedding: the cosine top-1, applied when ≥ 0.7;
//! * pg_ask: [`pg_ask_core::values::decide`] on the union of the embedding top-10 and trigram
//!   top-10, as the glue builds it from pgvector and pg_trgm; for a column of at most
//!   `ask.max_listed_values` values, on all of them (`Evidence::all_values`), as the glue does.
//!
//! Reported per part: fixed top-1 without the LLM (perturbed cases), gold within the top-10
//! candidates, legitimate values not replaced (and, for pg_ask, kept outright without asking
//! the LLM); and, with `ask.max_listed_values` 0 and 20, what goes to the LLM: how often the
//! stored value is among the values it is shown (what an LLM that knows the code can fix).
//! The demonym/alias pairs (`cases.rs`) and the fixture's variants are test data only; the product
//! has no such table. Trigram similarity is re-implemented here the way pg_trgm computes it,
//! for the offline benchmark only (the product calls pg_trgm).

mod cases;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use cases::{build_cases, load_columns, load_fixture, Case, PARTS};
use pg_ask_core::values::decide::{decide, Candidate, Comparison, Decision, Evidence};

const TOP_K: usize = 10;
const PLAIN_TRIGRAM_MIN: f64 = 0.3;
const PLAIN_EMBED_MIN: f64 = 0.7;

/// `ask.max_listed_values`' default: a column with at most this many values is listed and put
/// to the LLM whole.
const LISTED_MAX: usize = 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let defog = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/defog")), PathBuf::from);
    let fixtures = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/fixtures"));
    let model = pg_ask_embed::tool_model_dir();
    let mut columns = load_columns(&defog)?;
    for fixture in ["values_unseen.json", "values_held_out.json", "values_held_out2.json"] {
        columns.extend(load_fixture(&fixtures.join(fixture))?);
    }
    let cases = build_cases(&columns);

    let embedder = pg_ask_embed::Embedder::load(&model)?;
    let mut texts: BTreeSet<&str> = columns.iter().flat_map(|c| c.values.iter().map(String::as_str)).collect();
    texts.extend(cases.iter().map(|c| c.literal.as_str()));
    let texts: Vec<&str> = texts.into_iter().collect();
    let t = std::time::Instant::now();
    let vectors = embedder.embed(&texts)?;
    eprintln!("embedded {} texts in {:.1} s", texts.len(), t.elapsed().as_secs_f64());
    let emb: HashMap<&str, &[f32]> = texts.iter().copied().zip(vectors.iter().map(Vec::as_slice)).collect();

    let mut stats: BTreeMap<(&str, &str), Stats> = BTreeMap::new();
    // (part, listed max) → what goes to the LLM.
    let mut routed: BTreeMap<(&str, usize), Routed> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in &cases {
        let col = &columns[case.column];
        let values: Vec<&str> = col.values.iter().map(String::as_str).filter(|v| Some(*v) != case.held_out.as_deref()).collect();
        let q = emb[case.literal.as_str()];
        let scored: Vec<(&str, f64, f64)> = values.iter().map(|v| (*v, cosine(q, emb[v]), trigram_similarity(&case.literal, v))).collect();
        let top = |key: fn(&(&str, f64, f64)) -> f64| {
            let mut s = scored.clone();
            s.sort_by(|a, b| key(b).total_cmp(&key(a)));
            s.truncate(TOP_K);
            s
        };
        let by_cos = top(|s| s.1);
        let by_trgm = top(|s| s.2);
        let mut union: Vec<(&str, f64, f64)> = by_cos.clone();
        union.extend(by_trgm.iter().filter(|t| !by_cos.iter().any(|c| c.0 == t.0)));

        let exact = values.contains(&case.literal.as_str());
        let ci = values.iter().find(|v| v.to_lowercase() == case.literal.to_lowercase()).map(|v| v.to_string());
        let candidates = |from: &[(&str, f64, f64)]| -> Vec<Candidate> {
            from.iter().map(|(v, c, t)| Candidate { value: v.to_string(), frequency: 1, cosine: Some(*c), trigram: Some(*t) }).collect()
        };
        let evidence_at = |listed_max: usize| {
            let all_values = !values.is_empty() && values.len() <= listed_max;
            Evidence {
                literal: case.literal.clone(),
                exact,
                case_insensitive: ci.clone(),
                candidates: if all_values { candidates(&scored) } else { candidates(&union) },
                distinct_values: values.len() as u64,
                closed_set: false,
                all_values,
            }
        };
        for listed_max in [0, LISTED_MAX] {
            let trace = decide(&evidence_at(listed_max), Comparison::CaseSensitive);
            routed.entry((col.part, listed_max)).or_default().add(case, &trace.decision);
        }
        let evidence = evidence_at(LISTED_MAX);
        let trace = decide(&evidence, Comparison::CaseSensitive);
        let ours = match &trace.decision {
            Decision::Replace { value, .. } => Outcome::Replace(value.clone()),
            Decision::Keep { .. } => Outcome::Keep,
            Decision::AskLlm { .. } => Outcome::Ask,
        };
        let plain = |best: &(&str, f64, f64), score: f64, min: f64| {
            if exact {
                Outcome::Keep
            } else if score >= min {
                Outcome::Replace(best.0.to_owned())
            } else {
                Outcome::Keep
            }
        };
        let trgm_out = by_trgm.first().map_or(Outcome::Keep, |b| plain(b, b.2, PLAIN_TRIGRAM_MIN));
        let cos_out = by_cos.first().map_or(Outcome::Keep, |b| plain(b, b.1, PLAIN_EMBED_MIN));
        let in10 = |list: Vec<&str>| case.gold.as_deref().is_some_and(|g| list.iter().take(TOP_K).any(|v| *v == g));

        for cat in [case.category, "ALL"] {
            let st = stats.entry((col.part, cat)).or_default();
            st.add(
                case,
                &trgm_out,
                &cos_out,
                &ours,
                in10(by_trgm.iter().map(|s| s.0).collect()),
                in10(by_cos.iter().map(|s| s.0).collect()),
                in10(trace.ranked.iter().map(|r| r.value.as_str()).collect()) || exact_or_ci_gold(case, &evidence),
            );
        }
        let wrong = match (&case.gold, &ours) {
            (Some(g), Outcome::Replace(v)) => v != g,
            (Some(_), _) => true,
            (None, Outcome::Replace(_)) => true,
            (None, _) => false,
        };
        if wrong {
            let top3: Vec<String> = trace
                .ranked
                .iter()
                .take(3)
                .map(|r| format!("{}:{:.2}/{:.2}/{:?}", r.value, r.cosine.unwrap_or(0.0), r.trigram.unwrap_or(0.0), r.lexical))
                .collect();
            failures.push(format!(
                "[{}] {} {:?} -> {:?} (gold {:?}) rule {:?} | {}",
                case.category,
                col.name,
                case.literal,
                ours,
                case.gold,
                trace.rule,
                top3.join(", ")
            ));
        }
    }

    for part in PARTS {
        let n_cols = columns.iter().filter(|c| c.part == part).count();
        let n_cases = cases.iter().filter(|c| columns[c.column].part == part).count();
        println!("\n== {part} part: {n_cols} text columns, {n_cases} cases (ask.max_listed_values = {LISTED_MAX})");
        println!(
            "{:<16} {:>5} | {:>21} | {:>21} | {:>21} | {:>8}",
            "category", "n", "fixed top-1 trg/emb/ours", "gold top-10 trg/emb/ours", "legit kept trg/emb/ours", "ours: kept w/o LLM"
        );
        for ((p, cat), s) in stats.iter().filter(|((p, _), _)| *p == part) {
            let _ = p;
            println!(
                "{:<16} {:>5} | {:>21} | {:>21} | {:>21} | {:>8}",
                cat,
                s.n,
                s.triple(s.fixed, s.fixable),
                s.triple(s.top10, s.fixable),
                s.triple(s.kept, s.legit),
                ratio(s.kept_outright, s.legit),
            );
        }
    }
    println!("\n== what goes to the LLM (pg_ask's rule), by part and ask.max_listed_values");
    println!(
        "{:<10} {:>6} | {:>8} {:>8} {:>8} {:>8} {:>8} | {:>8} {:>8} {:>8}",
        "part", "listed", "wrong", "fixed", "asked", "+gold", "upper", "legit", "asked", "replaced"
    );
    for ((part, listed), r) in &routed {
        let f = |n: usize, d: usize| if d == 0 { "-".to_string() } else { format!("{:.3}", n as f64 / d as f64) };
        println!(
            "{:<10} {:>6} | {:>8} {:>8} {:>8} {:>8} {:>8} | {:>8} {:>8} {:>8}",
            part,
            listed,
            r.wrong,
            f(r.fixed, r.wrong),
            f(r.asked, r.wrong),
            f(r.asked_with_gold, r.wrong),
            f(r.fixed + r.asked_with_gold, r.wrong),
            r.legit,
            f(r.legit_asked, r.legit),
            f(r.legit_replaced, r.legit),
        );
        for (cat, (n, fixed, gold)) in &r.by_category {
            if *cat == "knowledge" {
                println!(
                    "{:<10} {:>6} |   knowledge: {n} cases, fixed {}, asked with the stored value shown {}",
                    "",
                    "",
                    f(*fixed, *n),
                    f(*gold, *n)
                );
            }
        }
    }
    if std::env::var_os("VERBOSE").is_some() {
        for f in &failures {
            println!("{f}");
        }
    }
    Ok(())
}

/// What a setting sends to the LLM: of the wrong literals, how many the rules fix, how many
/// are asked about and among those, with the stored value among the ones shown; of the
/// legitimate ones, how many are asked about and how many replaced (wrongly).
#[derive(Default)]
struct Routed {
    wrong: usize,
    fixed: usize,
    asked: usize,
    asked_with_gold: usize,
    legit: usize,
    legit_asked: usize,
    legit_replaced: usize,
    /// category → (cases, fixed, asked with gold).
    by_category: BTreeMap<&'static str, (usize, usize, usize)>,
}

impl Routed {
    fn add(&mut self, case: &Case, d: &Decision) {
        match &case.gold {
            Some(g) => {
                self.wrong += 1;
                let fixed = matches!(d, Decision::Replace { value, .. } if value == g);
                let gold_shown = matches!(d, Decision::AskLlm { candidates } if candidates.contains(g));
                self.fixed += usize::from(fixed);
                self.asked += usize::from(matches!(d, Decision::AskLlm { .. }));
                self.asked_with_gold += usize::from(gold_shown);
                let e = self.by_category.entry(case.category).or_default();
                e.0 += 1;
                e.1 += usize::from(fixed);
                e.2 += usize::from(gold_shown);
            }
            None => {
                self.legit += 1;
                self.legit_asked += usize::from(matches!(d, Decision::AskLlm { .. }));
                self.legit_replaced += usize::from(matches!(d, Decision::Replace { .. }));
            }
        }
    }
}

fn exact_or_ci_gold(case: &Case, e: &Evidence) -> bool {
    e.case_insensitive.is_some() && case.gold.as_deref() == e.case_insensitive.as_deref()
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Keep,
    Replace(String),
    Ask,
}

#[derive(Default)]
struct Stats {
    n: usize,
    fixable: [usize; 3],
    fixed: [usize; 3],
    top10: [usize; 3],
    legit: [usize; 3],
    kept: [usize; 3],
    kept_outright: [usize; 3],
    asked_fixable: usize,
    asked_legit: usize,
}

impl Stats {
    #[allow(clippy::too_many_arguments)]
    fn add(&mut self, case: &Case, trg: &Outcome, emb: &Outcome, ours: &Outcome, t10: bool, e10: bool, o10: bool) {
        self.n += 1;
        let outs = [trg, emb, ours];
        match &case.gold {
            Some(g) => {
                for (i, o) in outs.iter().enumerate() {
                    self.fixable[i] += 1;
                    self.fixed[i] += usize::from(**o == Outcome::Replace(g.clone()));
                }
                self.top10[0] += usize::from(t10);
                self.top10[1] += usize::from(e10);
                self.top10[2] += usize::from(o10);
                self.asked_fixable += usize::from(*ours == Outcome::Ask);
            }
            None => {
                for (i, o) in outs.iter().enumerate() {
                    self.legit[i] += 1;
                    self.kept[i] += usize::from(!matches!(o, Outcome::Replace(_)));
                }
                self.kept_outright[0] += usize::from(*ours == Outcome::Keep);
                self.asked_legit += usize::from(*ours == Outcome::Ask);
            }
        }
    }

    fn triple(&self, num: [usize; 3], den: [usize; 3]) -> String {
        if den[0] == 0 {
            return "-".into();
        }
        format!("{:.2}/{:.2}/{:.2}", num[0] as f64 / den[0] as f64, num[1] as f64 / den[1] as f64, num[2] as f64 / den[2] as f64)
    }
}

fn ratio(num: [usize; 3], den: [usize; 3]) -> String {
    if den[0] == 0 {
        "-".into()
    } else {
        format!("{:.2}", num[0] as f64 / den[0] as f64)
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

/// pg_trgm's trigrams of a text: lower-cased alphanumeric words, each padded with two spaces
/// before and one after, every 3-character window, as a set.
fn trigrams(text: &str) -> BTreeSet<[char; 3]> {
    let mut set = BTreeSet::new();
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let padded: Vec<char> = "  ".chars().chain(word.to_lowercase().chars()).chain(" ".chars()).collect();
        for w in padded.windows(3) {
            set.insert([w[0], w[1], w[2]]);
        }
    }
    set
}

/// pg_trgm's `similarity(a, b)`: shared trigrams over all distinct trigrams.
fn trigram_similarity(a: &str, b: &str) -> f64 {
    let (ta, tb) = (trigrams(a), trigrams(b));
    let shared = ta.intersection(&tb).count();
    let all = ta.len() + tb.len() - shared;
    if all == 0 {
        0.0
    } else {
        shared as f64 / all as f64
    }
}
