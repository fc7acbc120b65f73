//! Several candidates, chosen by their results (`ask.candidates`): once a query has run, more
//! are drawn from the same request, each sampled at [`CANDIDATE_TEMPERATURE`] with a seed of
//! its own, and each checked, corrected and run under the guard as the first was. Candidates
//! are grouped by their results: two agree when one returns the other's rows, as
//! `ask.evaluate`'s judge compares a prediction with the gold result (rows as a multiset,
//! columns by their values, extra columns allowed). The answer is the first query of the group
//! that wins: a group with rows before an empty one (an empty result is the commonest sign of a
//! query that ran and is wrong), then the larger group, then the earlier.
//!
//! Drawing stops as soon as no group can be overtaken (two agreeing results out of three). A
//! candidate that fails, writes no SQL, or a call that fails, votes for nothing: the question
//! keeps the answer it had. Only an interrupted call ends the question.

use std::time::Instant;

use serde_json::json;

use super::call::call;
use super::execute::{guarded_execute, with_step, Verdict};
use super::host::Host;
use super::outcome::AskError;
use super::stage;
use crate::compare::{compare_results, RowOrder};
use crate::llm::{ChatRequest, LlmError};
use crate::rows::ResultSet;
use crate::trace::{ms_since, StageTrace, Trace};

/// The temperature candidates after the first are sampled at.
pub const CANDIDATE_TEMPERATURE: f64 = 0.7;

/// How a reply's statement is read, as the first attempt's was: its SQL (knowledge written
/// in) and the guard's verdict; `None`: no SQL in the reply.
pub(super) type ReadStatement<'a> = dyn FnMut(&mut dyn Host, &mut Trace, &str) -> Option<(String, Verdict)> + 'a;

/// One candidate that ran: its statement as executed and its rows.
struct Ran {
    sql: String,
    rows: ResultSet,
}

/// Whether two results agree: one returns the other's rows.
fn agree(a: &ResultSet, b: &ResultSet) -> bool {
    compare_results(a, b, RowOrder::Unordered).is_ok() || compare_results(b, a, RowOrder::Unordered).is_ok()
}

/// The groups of agreeing candidates (indexes into `ran`, in order), each led by its first.
fn groups(ran: &[Ran]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, r) in ran.iter().enumerate() {
        match out.iter_mut().find(|g| agree(&ran[g[0]].rows, &r.rows)) {
            Some(g) => g.push(i),
            None => out.push(vec![i]),
        }
    }
    out
}

/// The winning group's index: rows before none, then more votes, then the earlier group.
fn winner(ran: &[Ran], groups: &[Vec<usize>]) -> usize {
    let key = |g: &Vec<usize>| (!ran[g[0]].rows.rows.is_empty(), g.len());
    let mut best = 0;
    for (i, g) in groups.iter().enumerate().skip(1) {
        if key(g) > key(&groups[best]) {
            best = i;
        }
    }
    best
}

/// Whether the vote is decided with `drawn` of `total` candidates drawn: the leading group
/// with rows cannot be overtaken by the candidates still to draw.
fn decided(ran: &[Ran], drawn: usize, total: usize) -> bool {
    let gs = groups(ran);
    let lead = winner(ran, &gs);
    let left = total - drawn;
    let runner_up = gs.iter().enumerate().filter(|(i, _)| *i != lead).map(|(_, g)| g.len()).max().unwrap_or(0);
    !ran[gs[lead][0]].rows.rows.is_empty() && gs[lead].len() > runner_up + left
}

/// `first` (the query that ran, its statement and rows) and up to `total - 1` candidates
/// more, sampled from `req` (`total` at least 2: with one, the caller keeps `first`); the
/// winner's statement and rows. `statement` reads a reply's SQL as the first attempt's was
/// read (knowledge written in) and gives the guard's verdict.
#[allow(clippy::too_many_arguments)]
pub(super) fn choose(
    host: &mut dyn Host,
    trace: &mut Trace,
    req: &ChatRequest,
    total: u32,
    max_prompt_tokens: usize,
    attempt: u32,
    step: Option<usize>,
    first: (String, ResultSet),
    statement: &mut ReadStatement<'_>,
) -> Result<(String, ResultSet), AskError> {
    let total = total as usize;
    let mut ran = vec![Ran { sql: first.0, rows: first.1 }];
    let mut drawn = 1;
    let mut notes = vec![json!({"candidate": 1, "rows": ran[0].rows.rows.len()})];
    while drawn < total && !decided(&ran, drawn, total) {
        drawn += 1;
        let sampled = req.clone().sampled(CANDIDATE_TEMPERATURE, drawn as u64);
        let reply = match call(host, trace, stage::CANDIDATE, Some(attempt), &sampled, max_prompt_tokens) {
            Ok(reply) => reply,
            Err(e @ AskError::Llm { source: LlmError::Interrupted, .. }) => return Err(e),
            Err(e) => {
                notes.push(json!({"candidate": drawn, "error": e.to_string()}));
                break;
            }
        };
        let Some((sql, verdict)) = statement(host, trace, &reply) else {
            notes.push(json!({"candidate": drawn, "error": "no SQL"}));
            continue;
        };
        match guarded_execute(host, trace, attempt, step, &sql, verdict, max_prompt_tokens) {
            Ok((checked, rows)) => {
                notes.push(json!({"candidate": drawn, "rows": rows.rows.len()}));
                ran.push(Ran { sql: checked.sql, rows });
            }
            Err(failure) => notes.push(json!({"candidate": drawn, "error": failure.for_llm()})),
        }
    }
    // The vote's own time: the grouping (each candidate's call and run are stages of their own).
    let t = Instant::now();
    let gs = groups(&ran);
    let won = winner(&ran, &gs);
    let mut st = StageTrace::new(stage::VOTE, with_step(json!({"candidates": total}), step));
    st.attempt = Some(attempt);
    st.output = json!({
        "drawn": drawn,
        "ran": ran.len(),
        "groups": gs.iter().map(|g| g.iter().map(|&i| i + 1).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "chosen": gs[won][0] + 1,
        "candidates": notes,
    });
    st.ms = ms_since(t);
    trace.push(st);
    let r = ran.swap_remove(gs[won][0]);
    Ok((r.sql, r.rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn result(rows: &[&[Value]]) -> ResultSet {
        let width = rows.first().map_or(1, |r| r.len());
        ResultSet {
            columns: (0..width).map(|i| format!("c{i}")).collect(),
            rows: rows.iter().map(|r| r.to_vec()).collect(),
            truncated: false,
            size_cut: false,
        }
    }

    fn ran(results: Vec<ResultSet>) -> Vec<Ran> {
        results.into_iter().enumerate().map(|(i, rows)| Ran { sql: format!("q{i}"), rows }).collect()
    }

    #[test]
    fn results_that_hold_each_others_rows_agree() {
        let seven = result(&[&[json!(7)]]);
        let seven_named = result(&[&[json!("x"), json!(7)]]);
        let eight = result(&[&[json!(8)]]);
        assert!(agree(&seven, &seven_named), "an extra column");
        assert!(agree(&seven_named, &seven));
        assert!(!agree(&seven, &eight));
        let ab = result(&[&[json!("a")], &[json!("b")]]);
        let ba = result(&[&[json!("b")], &[json!("a")]]);
        assert!(agree(&ab, &ba), "rows as a multiset");
    }

    #[test]
    fn the_larger_group_wins_and_rows_beat_none() {
        let r = ran(vec![result(&[&[json!(1)]]), result(&[&[json!(2)]]), result(&[&[json!(2)]])]);
        let gs = groups(&r);
        assert_eq!(gs, vec![vec![0], vec![1, 2]]);
        assert_eq!(gs[winner(&r, &gs)][0], 1, "two against one");

        let r = ran(vec![result(&[]), result(&[]), result(&[&[json!(3)]])]);
        let gs = groups(&r);
        assert_eq!(gs[winner(&r, &gs)][0], 2, "the one with rows over two empty ones");

        let r = ran(vec![result(&[&[json!(1)]]), result(&[&[json!(2)]])]);
        let gs = groups(&r);
        assert_eq!(gs[winner(&r, &gs)][0], 0, "a tie keeps the first");
    }

    #[test]
    fn drawing_stops_when_no_group_can_be_overtaken() {
        let one = || result(&[&[json!(1)]]);
        assert!(!decided(&ran(vec![one()]), 1, 3), "one of three");
        assert!(decided(&ran(vec![one(), one()]), 2, 3), "two agreeing of three");
        assert!(!decided(&ran(vec![one(), result(&[&[json!(2)]])]), 2, 3), "a tie with one to draw");
        assert!(!decided(&ran(vec![result(&[]), result(&[])]), 2, 3), "agreeing on nothing decides nothing");
    }
}
