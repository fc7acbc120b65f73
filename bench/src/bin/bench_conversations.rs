//! Benchmark: follow-up questions in conversations (`scripts/bench.sh conversations [MODEL...]`).
//!
//! `bench/fixtures/follow_ups.json` holds conversations of 3 to 5 questions over the sample
//! database and defog's car_dealership (each in `public` of a database of its own, its short
//! text columns indexed; the sample with the knowledge it ships, `sample/knowledge.json`, as
//! `scripts/run.sh` imports it), each turn with its gold SQL and whether it is a follow-up. Each
//! conversation is started with `ask.conversation_start()` and its turns asked in order through
//! `ask.sql(q, conversation => id)`; a turn is right when its SQL's result is the gold SQL's as
//! `ask.evaluate` judges it (`pg_ask_core::compare`: extra columns allowed, numbers by value).
//! Until 2026-11-29 the rows had to be equal exactly (a turn that also returned a rating was
//! wrong).
//!
//! With `stand-in` as the model, the stand-in LLM plays an oracle for the rewrite and the
//! generation: the rewrite of turn N of conversation C answers a marker question only that turn
//! has, and generation answers the gold SQL for a first question, a standalone question, or a
//! marker. A follow-up read as standalone (or the reverse) therefore meets no rule and fails:
//! this measures the reading and what pg_ask does with it, not a model. With a real model
//! (`PG_ASK_LLM_URL`, `PG_ASK_LLM_MODEL`), the model rewrites and writes the SQL.
//!
//! Reported per turn position (1st, 2nd, ...): EX; and the share of follow-ups read as
//! standalone by mistake, and of standalone questions read as follow-ups; the same per part of
//! the fixture (the conversations first written, and a held-out part whose follow-ups carry
//! none of the words that often open one).

use std::collections::BTreeMap;

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_bench::{index_short_text, judged_same, repo, result_of};
use pg_ask_it::{connect_as_is, connect_to};
use postgres::Client;
use serde_json::Value;

fn database(db: &str, sql_file: &std::path::Path) -> Client {
    let mut admin = connect_as_is();
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    let mut c = connect_to("postgres", db);
    c.batch_execute(&std::fs::read_to_string(sql_file).unwrap()).expect("load the database");
    c.batch_execute("CREATE EXTENSION pg_ask CASCADE; ANALYZE").unwrap();
    index_short_text(&mut c, "public");
    c
}

/// The standalone question the oracle writes for a follow-up: the turn before's, which pg_ask
/// must see taken into the rewrite to read it as a follow-up, and a mark only this turn has.
fn marker(before: &str, set: &str, conv: usize, turn: usize) -> String {
    format!("{before} (question {turn} of conversation {set}-{conv})")
}

/// The stand-in's oracle script for every conversation of the fixture. Every later turn is
/// read by the model: a follow-up's rewrite is its marker, a new question's is the question
/// unchanged. A follow-up's prompts also hold the turn before (its question, as the query to
/// edit), so the rules go latest turn first, and a rewrite's rule names the turn before too
/// (two conversations may share a follow-up's words).
fn oracle(fixture: &Value) -> Script {
    let mut rules = Vec::new();
    for set in ["sample", "car_dealership"] {
        for (ci, conv) in fixture[set].as_array().unwrap().iter().enumerate() {
            let mut before = String::new();
            for (ti, t) in conv["turns"].as_array().unwrap().iter().enumerate() {
                let (q, sql) = (t["q"].as_str().unwrap(), t["sql"].as_str().unwrap());
                let fenced = format!("```sql\n{sql}\n```");
                let standalone = if t["follow_up"].as_bool().unwrap() { marker(&before, set, ci, ti + 1) } else { q.to_string() };
                if ti > 0 {
                    let read = [format!("<latest_question>{q}</latest_question>"), format!("Question: {before}\n")];
                    rules.push((ti, Rule::new(&[&read[0], &read[1]], Reply::text(&standalone))));
                }
                rules.push((ti, Rule::new(&["<schema>", &format!("<question>{standalone}</question>")], Reply::text(&fenced))));
                before = standalone;
            }
        }
    }
    rules.sort_by_key(|(turn, _)| std::cmp::Reverse(*turn));
    rules.into_iter().fold(Script::default(), |s, (_, r)| s.rule(r))
}

fn main() {
    let model = std::env::var("PG_ASK_LLM_MODEL").unwrap_or_else(|_| "stand-in".into());
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(repo().join("bench/fixtures/follow_ups.json")).unwrap()).unwrap();
    let standin = (model == "stand-in").then(|| StandIn::start(oracle(&fixture)).expect("start the stand-in"));
    let url = match &standin {
        Some(s) => format!("{}/v1", s.url()),
        None => std::env::var("PG_ASK_LLM_URL").expect("PG_ASK_LLM_URL"),
    };
    // position -> (asked, right); (follow-ups, read standalone); (standalone, read as follow-up)
    let mut by_turn: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let (mut follow_ups, mut missed, mut standalone, mut misread) = (0, 0, 0, 0);
    // part -> [turns, right, follow-ups, read standalone, new questions, read as follow-ups]
    let mut parts: BTreeMap<String, [usize; 6]> = BTreeMap::new();
    let mut seconds = Vec::new();
    for (set, file) in
        [("sample", repo().join("sample/sample.sql")), ("car_dealership", repo().join("../shared/datasets/defog/car_dealership.sql"))]
    {
        let db = format!("pg_ask_conv_{set}");
        let mut c = database(&db, &file);
        c.batch_execute(&format!(
            "ALTER DATABASE {db} SET ask.provider = 'openai'; ALTER DATABASE {db} SET ask.base_url = '{url}';
             ALTER DATABASE {db} SET ask.model = '{model}'; ALTER DATABASE {db} SET ask.max_attempts = 2;
             ALTER DATABASE {db} SET ask.request_timeout = '300s'"
        ))
        .unwrap();
        if set == "sample" {
            // The knowledge the sample ships, as scripts/run.sh imports it: a user asks over
            // the sample as it is set up ("open" restaurants, the guide's rating and the
            // guests' score told apart).
            let doc = std::fs::read_to_string(repo().join("sample/knowledge.json")).unwrap();
            let items: i32 = c.query_one("SELECT ask.import_knowledge($1::text::jsonb)", &[&doc]).unwrap().get(0);
            println!("{db}: the sample's knowledge imported ({items} items)");
        }
        let mut c = connect_to("postgres", &db);
        for (ci, conv) in fixture[set].as_array().unwrap().iter().enumerate() {
            let id: i64 = c.query_one("SELECT ask.conversation_start($1)", &[&format!("{set}-{ci}")]).unwrap().get(0);
            let part = parts.entry(conv["part"].as_str().unwrap_or("first written").to_string()).or_default();
            for (ti, t) in conv["turns"].as_array().unwrap().iter().enumerate() {
                let (q, gold, fu) = (t["q"].as_str().unwrap(), t["sql"].as_str().unwrap(), t["follow_up"].as_bool().unwrap());
                let want = result_of(&mut c, "public", gold).unwrap_or_else(|| panic!("gold SQL fails: {gold}"));
                let started = std::time::Instant::now();
                let got: Result<String, _> = c.query_one("SELECT ask.sql($1, conversation => $2)", &[&q, &id]).map(|r| r.get(0));
                seconds.push(started.elapsed().as_secs_f64());
                let reading: Option<String> = c
                    .query_opt("SELECT reading FROM ask.conversation_turns WHERE conversation_id = $1 AND question = $2 ORDER BY turn DESC LIMIT 1", &[&id, &q])
                    .unwrap()
                    .map(|r| r.get(0));
                let right = match &got {
                    // As ask.evaluate judges (extra columns allowed, numbers by value).
                    Ok(sql) => result_of(&mut c, "public", sql).is_some_and(|got| judged_same(&want, &got)),
                    Err(_) => false,
                };
                let e = by_turn.entry(ti + 1).or_default();
                e.0 += 1;
                e.1 += usize::from(right);
                part[0] += 1;
                part[1] += usize::from(right);
                if ti > 0 {
                    let (was, mistaken) = if fu { ("standalone", 3) } else { ("rewritten", 5) };
                    let wrong = usize::from(reading.as_deref() == Some(was));
                    part[mistaken - 1] += 1;
                    part[mistaken] += wrong;
                    if fu {
                        follow_ups += 1;
                        missed += wrong;
                    } else {
                        standalone += 1;
                        misread += wrong;
                    }
                }
                if !right {
                    let what = match &got {
                        Ok(sql) => sql.clone(),
                        Err(e) => format!("error: {}", e.as_db_error().map(|d| d.message().to_string()).unwrap_or_else(|| e.to_string())),
                    };
                    println!("  wrong ({set} {ci} turn {}, read {}): {q:?} -> {what}", ti + 1, reading.as_deref().unwrap_or("-"));
                }
            }
        }
    }
    println!("\n== {model}: follow-up suite, EX per turn");
    let (mut all, mut right) = (0, 0);
    for (turn, (n, r)) in &by_turn {
        println!("  turn {turn}: {r}/{n} = {:.3}", *r as f64 / *n as f64);
        all += n;
        right += r;
    }
    println!("  all turns: {right}/{all} = {:.3}", right as f64 / all as f64);
    println!("  follow-ups read as standalone by mistake: {missed}/{follow_ups}; standalone questions read as follow-ups: {misread}/{standalone}");
    for (name, [n, r, f, fm, sa, sm]) in &parts {
        println!(
            "  part {name}: {r}/{n} = {:.3}; follow-ups read as standalone {fm}/{f}; new questions read as follow-ups {sm}/{sa}",
            *r as f64 / *n as f64
        );
    }
    seconds.sort_by(f64::total_cmp);
    println!("  seconds per turn: median {:.2}, max {:.2}", seconds[seconds.len() / 2], seconds.last().copied().unwrap_or(0.0));
    drop(standin);
}
