//! Several candidates voted on by their results (`ask.candidates`): the largest group of
//! agreeing results answers, drawing stops when it cannot be overtaken, every candidate after
//! the first is sampled with its own seed, and a candidate that fails or a call that fails
//! votes for nothing.

use super::*;

fn voting(n: u32) -> AskConfig {
    AskConfig { candidates: n, ..cfg() }
}

/// An executor answering by the SQL: `... = 1` one count of 1, `... = 2` a count of 2,
/// `bad` an error, anything else no rows.
fn by_sql() -> Exec {
    Box::new(|sql: &str| {
        if sql.contains("bad") {
            Err(ExecFailure::Error { sqlstate: "42703".into(), message: "column \"bad\" does not exist".into(), detail: None, hint: None })
        } else if sql.contains("= 1") {
            Ok(count(1))
        } else if sql.contains("= 2") {
            Ok(count(2))
        } else {
            Ok(ResultSet { columns: vec!["count".into()], rows: vec![], truncated: false, size_cut: false })
        }
    })
}

const ONE: &str = "SELECT count(*) FROM public.restaurants WHERE id = 1";
const TWO: &str = "SELECT count(*) FROM public.restaurants WHERE id = 2";
const TWO_AGAIN: &str = "SELECT count(*) AS n FROM public.restaurants WHERE id = 2";
const NONE: &str = "SELECT count(*) FROM public.restaurants GROUP BY id HAVING false";

#[test]
fn the_largest_group_of_agreeing_results_answers() {
    let mut h = Scripted::new(&[ONE, TWO, TWO_AGAIN]);
    h.exec = by_sql();
    let out = run(&mut h, "q", &voting(3), Goal::Sql).unwrap();
    assert_eq!(out.sql, TWO, "two of three agree on 2: the first of them answers");
    let seeds: Vec<Option<u64>> = h.seen.iter().map(|(_, r)| r.sampling.map(|s| s.seed)).collect();
    assert_eq!(seeds, [None, Some(2), Some(3)], "the first is the plain request; each candidate its own seed");
    assert!(h.seen[1..].iter().all(|(stage, r)| *stage == stage::CANDIDATE && r.sampling.unwrap().temperature > 0.0));
    let vote = out.trace.stages.iter().find(|s| s.stage == stage::VOTE).expect("a vote stage");
    assert_eq!(vote.output["groups"], json!([[1], [2, 3]]));
    assert_eq!(vote.output["chosen"], json!(2));
}

#[test]
fn drawing_stops_when_the_first_ones_agree() {
    let mut h = Scripted::new(&[ONE, ONE, TWO]);
    h.exec = by_sql();
    let out = run(&mut h, "q", &voting(3), Goal::Sql).unwrap();
    assert_eq!(out.sql, ONE);
    assert_eq!(h.seen.len(), 2, "two agreeing of three: the third is not drawn");
}

#[test]
fn rows_beat_no_rows_and_failures_vote_for_nothing() {
    // The first query returns nothing; one candidate fails, one writes no SQL, one returns a row.
    let mut h = Scripted::new(&[NONE, "SELECT bad FROM public.restaurants", "I cannot tell.", TWO, NONE]);
    h.exec = by_sql();
    let out = run(&mut h, "q", &voting(5), Goal::Sql).unwrap();
    assert_eq!(out.sql, TWO, "a result with rows over an empty one that came first");
}

#[test]
fn a_failed_call_keeps_the_answer_and_one_candidate_draws_nothing() {
    let mut h = Scripted::new(&[ONE]);
    h.replies.push_back(Err(LlmError::Timeout { url: "http://llm".into(), ms: 10 }));
    h.exec = by_sql();
    let out = run(&mut h, "q", &voting(3), Goal::Sql).unwrap();
    assert_eq!(out.sql, ONE, "the vote ends with what it has");

    let mut h = Scripted::new(&[ONE]);
    h.exec = by_sql();
    let out = run(&mut h, "q", &voting(1), Goal::Sql).unwrap();
    assert_eq!((out.sql.as_str(), h.seen.len()), (ONE, 1));
    assert!(out.trace.stages.iter().all(|s| s.stage != stage::VOTE), "no vote with one candidate");
}

#[test]
fn an_interrupted_candidate_ends_the_question() {
    let mut h = Scripted::new(&[ONE]);
    h.replies.push_back(Err(LlmError::Interrupted));
    h.exec = by_sql();
    let err = run(&mut h, "q", &voting(3), Goal::Sql).unwrap_err();
    assert!(matches!(err.0, AskError::Llm { source: LlmError::Interrupted, .. }), "{:?}", err.0);
}
