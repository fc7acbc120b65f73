//! One statement's way to its rows: the parse-level guard, value correction and the host's
//! execution, each recorded in the trace.

use std::time::Instant;

use serde_json::{json, Value};

use super::call::call;
use super::host::{Correction, ExecFailure, Host, HostError};
use super::stage;
use crate::guard::{check_read_only, CheckedSql, Refusal};
use crate::rows::ResultSet;
use crate::trace::{ms_since, StageTrace, Trace};

/// The parse-level guard's verdict on a statement: its one parse, and how long it took.
pub(super) struct Verdict {
    checked: Result<CheckedSql, Refusal>,
    ms: f64,
}

impl Verdict {
    pub(super) fn of(sql: &str) -> Verdict {
        let t = Instant::now();
        let checked = check_read_only(sql);
        Verdict { checked, ms: ms_since(t) }
    }

    /// Whether the guard let the statement through.
    pub(super) fn allowed(&self) -> bool {
        self.checked.is_ok()
    }

    /// The statement as the guard let it through, with its tree when the tree's locations
    /// point into that text.
    pub(super) fn located(&self) -> Option<(&str, &sqlparser::ast::Statement)> {
        let c = self.checked.as_ref().ok()?;
        Some((c.sql.as_str(), c.located()?))
    }

    /// The relations the statement names, as name parts (none when the guard refused it).
    pub(super) fn reads(&self) -> Vec<Vec<String>> {
        self.checked.as_ref().map(crate::values::literals::relation_parts_in).unwrap_or_default()
    }
}

/// What running a statement came to: the statement as checked and its rows, or the failure.
pub(super) type Ran = Result<(CheckedSql, ResultSet), ExecFailure>;

/// The parse-level guard's verdict on `sql`, then value correction and the host's execution;
/// all recorded in the trace. On success, the statement as executed (trimmed of surrounding
/// comments, with the tree the guard parsed) and its rows.
pub(super) fn guarded_execute(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    step: Option<usize>,
    sql: &str,
    verdict: Verdict,
    max_prompt_tokens: usize,
) -> Ran {
    let mut st = StageTrace::new(stage::GUARD, with_step(json!({"sql": sql}), step));
    st.attempt = Some(attempt);
    st.ms = verdict.ms;
    let checked = match verdict.checked {
        Ok(c) => {
            st.output = json!({"allowed": true, "tables": c.tables});
            trace.push(st);
            c
        }
        Err(refusal) => {
            st.output = json!({"allowed": false, "reason": refusal.reason_code()});
            st.error = Some(refusal.to_string());
            trace.push(st);
            return Err(ExecFailure::Refused { reason: refusal.to_string() });
        }
    };

    // Value correction; a corrected statement has passed the guard's checks again (on the
    // tree parsed above, with the new values).
    let checked = correct(host, trace, attempt, step, &checked, max_prompt_tokens).unwrap_or(checked);

    let t = Instant::now();
    let mut st = StageTrace::new(stage::EXECUTE, with_step(json!({"sql": checked.sql}), step));
    st.attempt = Some(attempt);
    let result = host.execute(&checked);
    st.ms = ms_since(t);
    match &result {
        Ok(rs) => st.output = json!({"rows": rs.rows.len(), "columns": rs.columns, "truncated": rs.truncated}),
        Err(f) => {
            st.output = match f {
                ExecFailure::Refused { .. } => json!({"refused": true}),
                ExecFailure::Error { sqlstate, .. } => json!({"sqlstate": sqlstate}),
            };
            st.error = Some(f.for_llm());
        }
    }
    trace.push(st);
    result.map(|rs| (checked, rs))
}

/// A query that failed, written again with one name changed (`from` to `to`) by a rule of
/// `stage` with no LLM call, run as the caller under the guard; the stage records the change.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_renamed(
    host: &mut dyn Host,
    trace: &mut Trace,
    stage: &'static str,
    attempt: u32,
    step: Option<usize>,
    (sql, fixed): (&str, &str),
    (from, to): (String, String),
    max_prompt_tokens: usize,
) -> Ran {
    let mut st = StageTrace::new(stage, with_step(json!({"sql": sql}), step));
    st.attempt = Some(attempt);
    st.output = json!({"from": from, "to": to});
    trace.push(st);
    guarded_execute(host, trace, attempt, step, fixed, Verdict::of(fixed), max_prompt_tokens)
}

/// A stage's input with the plan step it belongs to, when there is one.
pub(super) fn with_step(mut input: Value, step: Option<usize>) -> Value {
    if let Some(n) = step {
        input["step"] = json!(n);
    }
    input
}

/// Value correction, recording it; `Some(statement)` when a literal changed. A failing
/// lookup (or a correction the guard refuses) is recorded and the statement runs as written.
fn correct(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    step: Option<usize>,
    checked: &CheckedSql,
    max_prompt_tokens: usize,
) -> Option<CheckedSql> {
    let t = Instant::now();
    let result = correct_statement(host, trace, Some(attempt), checked, true, max_prompt_tokens);
    let mut st = StageTrace::new(stage::CORRECT, with_step(json!({"sql": checked.sql}), step));
    st.attempt = Some(attempt);
    st.ms = ms_since(t);
    let out = match result {
        Ok(c) if c.trace.is_null() && !c.changed => return None,
        Ok(c) => {
            st.output = json!({"sql": c.statement.sql, "changed": c.changed, "literals": c.trace});
            c.changed.then_some(c.statement)
        }
        Err(e) => {
            st.error = Some(e.to_string());
            None
        }
    };
    trace.push(st);
    out
}

/// Correct the literals of a checked statement: the host looks up each literal's column, the
/// rules decide, and with `use_llm` the literals they leave open go to the LLM, a call each
/// (recorded in `trace`; a failed call or a reply that does not fit leaves the rules'
/// replacements); the value the model writes is looked up by the host in the literal's
/// column and written in only when the column holds it. The corrected statement carries the
/// checked one's tree, its new values re-checked by the guard.
pub fn correct_statement(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: Option<u32>,
    checked: &CheckedSql,
    use_llm: bool,
    max_prompt_tokens: usize,
) -> Result<Correction, HostError> {
    let looked = host.literal_evidence(checked)?;
    if looked.is_empty() {
        return Ok(Correction { statement: checked.clone(), changed: false, trace: Value::Null });
    }
    let mut decided = crate::values::correct::decide_all(checked, &looked).map_err(HostError::internal)?;
    trace.notices.append(&mut decided.notices);
    let requests = if use_llm { decided.requests() } else { Vec::new() };
    if !requests.is_empty() {
        let mut replies = Vec::with_capacity(requests.len());
        for req in &requests {
            match call(host, trace, stage::CORRECT, attempt, req, max_prompt_tokens) {
                Ok(reply) => replies.push(Some(reply)),
                Err(e) => {
                    // The endpoint failing once is not asked again for this statement.
                    decided.with_failure(e);
                    break;
                }
            }
        }
        let proposed = decided.read_replies(&replies, &mut |lit, text| host.stored_value(lit, text).ok().flatten());
        decided.apply(checked, &proposed);
    }
    let changed = decided.statement.sql != checked.sql;
    Ok(Correction { statement: decided.statement, changed, trace: Value::Array(decided.traces) })
}
