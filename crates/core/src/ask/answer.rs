//! The answer stage: the rows of the final SQL said as they are when they say the answer by
//! themselves (nothing found, one value, one row, a few short rows: no model call, one shape
//! for answers of one kind); otherwise written up by the model as an answer, checked against
//! them, or the rows themselves when no written answer fits or holds.

use std::time::Instant;

use serde_json::{json, Value};

use super::call::call;
use super::host::Host;
use super::outcome::{AskError, Goal};
use super::stage;
use crate::config::AskConfig;
use crate::constrain::schemas::Shape;
use crate::grounded;
use crate::prompt::{self, AnswerDecision};
use crate::rows::ResultSet;
use crate::trace::{ms_since, StageTrace, Trace};

/// The answer stage over one statement's rows, for [`Goal::Answer`].
pub(super) fn answer(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    sql: &str,
    result: &ResultSet,
    cfg: &AskConfig,
    goal: Goal,
) -> Result<Option<AnswerDecision>, AskError> {
    if goal != Goal::Answer {
        return Ok(None);
    }
    if let Some(said) = grounded::said_by_rows(result) {
        return Ok(Some(said_by_rows(trace, result, said)));
    }
    let Some((req, shown)) = prompt::answer_request_within(question, sql, result, cfg.answer_rows as usize, cfg.max_prompt_tokens) else {
        return Ok(Some(rows_unwritten(trace, "not one row of the result fits in ask.max_prompt_tokens", cfg.max_prompt_tokens)));
    };
    if shown.cells_cut > 0 || shown.rows < result.rows.len().min(cfg.answer_rows as usize) {
        let mut st = StageTrace::new(stage::ANSWER, json!({"bounded": cfg.max_prompt_tokens}));
        st.output = json!({"rows_shown": shown.rows, "cells_cut": shown.cells_cut});
        trace.push(st);
    }
    let reply = match call(host, trace, stage::ANSWER, None, &req, cfg.max_prompt_tokens) {
        Ok(reply) => reply,
        Err(e) => return Ok(Some(rows_unwritten(trace, too_large_for_the_server(&e).ok_or(e)?, cfg.max_prompt_tokens))),
    };
    let decision = prompt::parse_answer(&trace.read_shaped(Shape::Answer, &reply));
    Ok(Some(grounded_or_rows(trace, question, sql, std::slice::from_ref(result), decision)))
}

/// The answer for [`Goal::Answer`] to rows that no model is to read (a verified query's): what
/// they say by themselves, in the shape the answer stage gives it, or else the rows.
pub(super) fn without_model(trace: &mut Trace, result: &ResultSet, goal: Goal) -> Option<AnswerDecision> {
    if goal != Goal::Answer {
        return None;
    }
    Some(match grounded::said_by_rows(result) {
        Some(said) => said_by_rows(trace, result, said),
        None => AnswerDecision::Rows,
    })
}

/// The answer the rows say by themselves ([`grounded::said_by_rows`]), without a model call;
/// recorded as the `answer` stage with what it was said from.
fn said_by_rows(trace: &mut Trace, result: &ResultSet, said: grounded::FromRows) -> AnswerDecision {
    let mut st = StageTrace::new(stage::ANSWER, json!({"rows": result.rows.len(), "columns": result.columns.len()}));
    st.output = json!({"answer_from": said.as_str(), "llm": false});
    trace.push(st);
    match said {
        grounded::FromRows::Value(s) | grounded::FromRows::List(s) => AnswerDecision::Text(s),
        grounded::FromRows::Rows => AnswerDecision::Rows,
    }
}

/// Why an answer call failed when the server refused its prompt as larger than its context: a
/// question whose SQL ran then answers with its rows.
pub(super) fn too_large_for_the_server(e: &AskError) -> Option<&'static str> {
    matches!(e, AskError::Llm { source, .. } if source.is_context_overflow())
        .then_some("the LLM server said the answer prompt exceeds its context")
}

/// The rows as the answer, without a written one, because `why`: recorded in the trace, and
/// said in a NOTICE.
pub(super) fn rows_unwritten(trace: &mut Trace, why: &str, max: usize) -> AnswerDecision {
    let mut st = StageTrace::new(stage::ANSWER, json!({"bounded": max}));
    st.output = json!({"answer_from": "rows", "skipped": why});
    trace.push(st);
    trace.notices.push(format!("pg_ask: the rows are the answer, without a written one: {why} ({max} tokens)"));
    AnswerDecision::Rows
}

/// A written answer checked against the rows it was written from ([`grounded::check_over`]);
/// one that states what they do not say is replaced by an answer written from the last rows
/// without the model ([`grounded::from_rows`]). Recorded as the `ground` stage.
pub(super) fn grounded_or_rows(
    trace: &mut Trace,
    question: &str,
    sql: &str,
    results: &[ResultSet],
    decision: AnswerDecision,
) -> AnswerDecision {
    let text = match decision {
        AnswerDecision::Text(text) => text,
        // A single number (a count, a sum, an average) is said, not shown as a table of one
        // cell.
        AnswerDecision::Rows => {
            let [one] = results else { return AnswerDecision::Rows };
            if !grounded::single_value(one).is_some_and(Value::is_number) {
                return AnswerDecision::Rows;
            }
            let grounded::FromRows::Value(v) = grounded::from_rows(one) else { return AnswerDecision::Rows };
            let mut st = StageTrace::new(stage::GROUND, json!({"answer": "ROWS"}));
            st.output = json!({"grounded": true, "answer_from": "value"});
            trace.push(st);
            return AnswerDecision::Text(v);
        }
    };
    let t = Instant::now();
    let checked = grounded::check_over(&text, question, sql, results);
    let mut st = StageTrace::new(stage::GROUND, json!({"answer": text}));
    let decided = match checked {
        Ok(()) => {
            st.output = json!({"grounded": true, "answer_from": "model"});
            AnswerDecision::Text(text)
        }
        Err(why) => {
            let from = grounded::from_rows(results.last().expect("an answer has rows"));
            st.output = json!({"grounded": false, "why": why, "answer_from": from.as_str()});
            match from {
                grounded::FromRows::Value(s) | grounded::FromRows::List(s) => AnswerDecision::Text(s),
                grounded::FromRows::Rows => AnswerDecision::Rows,
            }
        }
    };
    st.ms = ms_since(t);
    trace.push(st);
    decided
}
