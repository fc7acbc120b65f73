//! `ask()` as a user meets it, answer stage included: each question asked through
//! `ask.explain()` (the whole pipeline, its trace back) from a new connection. Seconds per
//! question as the client waits for them, the answer stage's model calls and seconds, the
//! share of prompt tokens the server read from its cache, and the shape each answer came in.

use std::collections::BTreeMap;
use std::time::Instant;

use postgres::Client;
use serde_json::Value;

use crate::bare::median;

/// One question asked through `ask.explain()`.
#[derive(Debug, Clone)]
pub struct AskedOnce {
    pub question: String,
    /// Seconds the client waited.
    pub seconds: f64,
    /// Model calls of the answer stage, and their seconds.
    pub answer_calls: usize,
    pub answer_seconds: f64,
    /// Prompt tokens of the answer calls, and of them those read from the server's cache.
    pub answer_prompt_tokens: u64,
    pub answer_cached_tokens: u64,
    pub prompt_tokens: u64,
    pub cached_prompt_tokens: u64,
    pub cache_reported: bool,
    /// The answer's shape ([`shape`]), or `error`.
    pub shape: &'static str,
    pub answer: String,
}

/// The shape of an answer's text: `table` (rows as psql prints them), `list` (lines starting
/// with `- `), `labelled` (one line `name: value[, name: value]`), `sentence` (anything else),
/// `none` (no answer).
pub fn shape(answer: &str) -> &'static str {
    let t = answer.trim_end();
    let last = t.lines().last().unwrap_or("").trim();
    if t.is_empty() {
        "none"
    } else if last.starts_with('(') && (last.ends_with(" row)") || last.ends_with(" rows)")) {
        "table"
    } else if t.lines().all(|l| l.starts_with("- ")) {
        "list"
    } else if !t.contains('\n') && t.split(", ").all(|part| part.split_once(": ").is_some_and(|(k, _)| !k.contains(". "))) {
        "labelled"
    } else {
        "sentence"
    }
}

/// Ask each of `questions` from a new connection to `db` as `postgres`, after `settings` (the
/// statements that point pg_ask at the model server).
pub fn ask_each(db: &str, settings: &str, questions: &[String]) -> Vec<AskedOnce> {
    questions
        .iter()
        .map(|q| {
            let mut c: Client = pg_ask_it::connect_to("postgres", db);
            c.batch_execute(settings).unwrap();
            let t = Instant::now();
            let got = c.query_one("SELECT ask.explain($1)::text", &[q]);
            let seconds = t.elapsed().as_secs_f64();
            let mut once = AskedOnce {
                question: q.clone(),
                seconds,
                answer_calls: 0,
                answer_seconds: 0.0,
                answer_prompt_tokens: 0,
                answer_cached_tokens: 0,
                prompt_tokens: 0,
                cached_prompt_tokens: 0,
                cache_reported: false,
                shape: "error",
                answer: String::new(),
            };
            let Ok(row) = got else { return once };
            let trace: Value = serde_json::from_str(&row.get::<_, String>(0)).unwrap_or_default();
            for st in trace["stages"].as_array().into_iter().flatten() {
                if st["output"]["reply"].is_null() {
                    continue;
                }
                once.prompt_tokens += st["prompt_tokens"].as_u64().unwrap_or(0);
                if let Some(n) = st["output"]["cached_prompt_tokens"].as_u64() {
                    once.cached_prompt_tokens += n;
                    once.cache_reported = true;
                }
                if st["stage"] == "answer" {
                    once.answer_calls += 1;
                    once.answer_seconds += st["ms"].as_f64().unwrap_or(0.0) / 1000.0;
                    once.answer_prompt_tokens += st["prompt_tokens"].as_u64().unwrap_or(0);
                    once.answer_cached_tokens += st["output"]["cached_prompt_tokens"].as_u64().unwrap_or(0);
                }
            }
            once.answer = trace["answer"].as_str().unwrap_or_default().to_string();
            once.shape = if trace["error"].is_null() { shape(&once.answer) } else { "error" };
            once
        })
        .collect()
}

/// The lines a benchmark prints for `asked`.
pub fn report(asked: &[AskedOnce], each: bool) {
    let n = asked.len();
    let calls: usize = asked.iter().map(|a| a.answer_calls).sum();
    let prompt: u64 = asked.iter().map(|a| a.prompt_tokens).sum();
    let cached: u64 = asked.iter().map(|a| a.cached_prompt_tokens).sum();
    let mut shapes: BTreeMap<&str, usize> = BTreeMap::new();
    for a in asked {
        *shapes.entry(a.shape).or_default() += 1;
    }
    println!("\n== ask() from a new connection, answer included: {n} questions through ask.explain()");
    println!("seconds per question, median      {:.2}", median(asked.iter().map(|a| a.seconds).collect()));
    println!("seconds per question, mean        {:.2}", asked.iter().map(|a| a.seconds).sum::<f64>() / n.max(1) as f64);
    println!(
        "answer stage                      {calls} model calls for {n} questions; {:.2} s per question (mean), {:.2} s per call",
        asked.iter().map(|a| a.answer_seconds).sum::<f64>() / n.max(1) as f64,
        asked.iter().map(|a| a.answer_seconds).sum::<f64>() / calls.max(1) as f64
    );
    if asked.iter().any(|a| a.cache_reported) {
        println!("cached prompt tokens              {:.3} ({cached} of {prompt})", cached as f64 / prompt.max(1) as f64);
        let (ap, ac): (u64, u64) = (asked.iter().map(|a| a.answer_prompt_tokens).sum(), asked.iter().map(|a| a.answer_cached_tokens).sum());
        println!("  of the answer calls             {:.3} ({ac} of {ap})", ac as f64 / ap.max(1) as f64);
    } else {
        println!("cached prompt tokens              not reported by the server ({prompt} prompt tokens)");
    }
    println!("answer shapes                     {shapes:?}");
    if each {
        for a in asked {
            println!(
                "  {:>6.2} s  {} answer call(s)  {:<9} {}  => {}",
                a.seconds,
                a.answer_calls,
                a.shape,
                a.question,
                a.answer.replace('\n', " | ").chars().take(100).collect::<String>()
            );
        }
    }
}
