//! One statement's way to its rows: the parse-level guard, value correction and the host's
//! execution, each recorded in the trace.

use std::time::Instant;

use serde_json::{json, Value};

use super::host::{ExecFailure, Host};
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
    let checked = if let Some(c) = correct(host, trace, attempt, step, &checked.sql) {
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

/// Run the host's value correction, recording it; `Some(sql)` when a literal changed. A
/// failing correction is recorded and the statement runs as written.
fn correct(host: &mut dyn Host, trace: &mut Trace, attempt: u32, step: Option<usize>, sql: &str) -> Option<String> {
    let t = Instant::now();
    let result = host.correct_values(sql);
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
