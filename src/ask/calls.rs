//! The call log `ask.questions`: each `ask()`, `ask.sql()`, `ask.rows()` and `ask.explain()`
//! call gets an id before its first LLM call (the ledger writes it beside every call) and a
//! row when it ends, with the SQL that answered it, so that `ask.feedback()` can refer to it.

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::prelude::*;

use pg_ask_core::trace::Trace;

use crate::pg::backend;
use crate::pg::identity::as_memory_owner;

/// A call in progress; its id is forgotten when it is dropped (also when an error unwinds).
pub(crate) struct Call {
    pub id: Option<i64>,
}

impl Drop for Call {
    fn drop(&mut self) {
        backend::with(|b| b.call.set(None));
    }
}

/// Start a call: draw its id. None in a read-only transaction (nothing can be written), and
/// while the extension's SQL objects are older than the library (an upgrade in progress).
pub(crate) fn begin() -> Call {
    // SAFETY: reads a backend-local flag.
    let writable = !unsafe { pg_sys::XactReadOnly } && crate::pg::version::sql_at_least("0.2.0");
    let id = writable
        .then(|| {
            as_memory_owner(|| Spi::get_one::<i64>("SELECT pg_catalog.nextval(pg_catalog.pg_get_serial_sequence('ask.questions', 'id'))"))
                .ok()
                .flatten()
        })
        .flatten();
    backend::with(|b| b.call.set(id));
    Call { id }
}

impl Call {
    /// Write the call's row: the question, the SQL that answered it and where the answer came
    /// from (`trace.source`; `failed` for a run that ended in an error).
    pub(crate) fn record(&self, question: &str, trace: &Trace, sql: Option<&str>) {
        let Some(id) = self.id else { return };
        let source = match trace.source {
            _ if trace.error.is_some() => "failed",
            Some(source) => source.logged(),
            None => pg_ask_core::trace::Source::Llm.logged(),
        };
        // SAFETY: reads the backend's current user id.
        let role = unsafe { pg_sys::GetUserId() };
        let args: [DatumWithOid; 6] =
            [id.into(), role.into(), question.into(), sql.filter(|s| !s.is_empty()).into(), source.into(), trace.verified_id.into()];
        as_memory_owner(|| {
            Spi::run_with_args(
                "INSERT INTO ask.questions (id, role, question, sql, source, verified_id)
                 VALUES ($1, $2::pg_catalog.regrole, $3, $4, $5, $6)",
                &args,
            )
        })
        .unwrap_or_else(|e| warning!("pg_ask: could not write to ask.questions: {e}"));
    }
}
