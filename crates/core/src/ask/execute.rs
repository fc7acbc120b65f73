//! One statement's way to its rows: the parse-level guard, value correction and the host's
//! execution, each recorded in the trace.

use std::time::Instant;

use serde_json::{json, Value};

use super::call::call;
use super::host::{Correction, ExecFailure, Host, HostError};
use super::stage;
use crate::guard::check_read_only;
use crate::rows::ResultSet;
use crate::trace::{ms_since, StageTrace, Trace};

/// Parse-level guard, then the host's execution; both recorded in the trace.
/// On success, the statement as executed (trimmed of surrounding comments) and its rows.
pub(super) fn guarded_execute(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    step: Option<usize>,
    sql: &str,
    max_prompt_tokens: usize,
) -> Result<(String, ResultSet), ExecFailure> {
    let t = Instant::now();
    let mut st = StageTrace::new(stage::GUARD, with_step(json!({"sql": sql}), step));
    st.attempt = Some(attempt);
    let checked = check_read_only(sql);
    st.ms = ms_since(t);
    let checked = match checked {
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

    // Value correction; a corrected statement passes the guard again.
    let checked = if let Some(c) = correct(host, trace, attempt, step, &checked.sql, max_prompt_tokens) {
        match check_read_only(&c) {
            Ok(again) => again,
            Err(refusal) => return Err(ExecFailure::Refused { reason: refusal.to_string() }),
        }
    } else {
        checked
    };

    let t = Instant::now();
    let mut st = StageTrace::new(stage::EXECUTE, with_step(json!({"sql": checked.sql}), step));
    st.attempt = Some(attempt);
    let result = host.execute(&checked.sql);
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
    result.map(|rs| (checked.sql, rs))
}

/// A stage's input with the plan step it belongs to, when there is one.
pub(super) fn with_step(mut input: Value, step: Option<usize>) -> Value {
    if let Some(n) = step {
        input["step"] = json!(n);
    }
    input
}

/// Value correction, recording it; `Some(sql)` when a literal changed. A failing lookup is
/// recorded and the statement runs as written.
fn correct(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    step: Option<usize>,
    sql: &str,
    max_prompt_tokens: usize,
) -> Option<String> {
    let t = Instant::now();
    let result = correct_statement(host, trace, Some(attempt), sql, true, max_prompt_tokens);
    let mut st = StageTrace::new(stage::CORRECT, with_step(json!({"sql": sql}), step));
    st.attempt = Some(attempt);
    st.ms = ms_since(t);
    let out = match result {
        Ok(c) if c.trace.is_null() && !c.changed => return None,
        Ok(c) => {
            st.output = json!({"sql": c.sql, "changed": c.changed, "literals": c.trace});
            c.changed.then_some(c.sql)
        }
        Err(e) => {
            st.error = Some(e.to_string());
            None
        }
    };
    trace.push(st);
    out
}

/// Correct the literals of `sql`: the host looks up each literal's column, the rules decide,
/// and with `use_llm` the literals they leave open go to the LLM in one call (recorded in
/// `trace`; a failed call or a reply that does not fit leaves the rules' replacements).
pub fn correct_statement(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: Option<u32>,
    sql: &str,
    use_llm: bool,
    max_prompt_tokens: usize,
) -> Result<Correction, HostError> {
    let looked = host.literal_evidence(sql)?;
    if looked.is_empty() {
        return Ok(Correction { sql: sql.to_string(), changed: false, trace: Value::Null });
    }
    let mut decided = crate::values::correct::decide_all(sql, &looked).map_err(HostError::internal)?;
    trace.notices.append(&mut decided.notices);
    if let Some(req) = use_llm.then(|| decided.request()).flatten() {
        match call(host, trace, stage::CORRECT, attempt, &req, max_prompt_tokens) {
            Ok(reply) => decided.with_reply(sql, &reply),
            Err(e) => decided.with_failure(e),
        }
    }
    let changed = decided.sql != sql;
    Ok(Correction { sql: decided.sql, changed, trace: Value::Array(decided.traces) })
}
