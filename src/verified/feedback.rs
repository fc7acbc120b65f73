//! `ask.feedback()`: the user says whether an earlier `ask()` call (its call id, from
//! `ask.explain()`'s trace, the ledger or `ask.questions`) was answered right. A right answer,
//! or a wrong one with the corrected SQL, becomes a verified query.

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use super::admin::{store, Source};
use crate::pg::errors::Raised;
use crate::pg::identity::as_memory_owner;

/// Mark the `ask()` call `call_id` of the current role right (`correct => true`: its question
/// and SQL become a verified query) or wrong (`correct => false`; with `sql`, the corrected
/// query becomes the verified one for the question, after it passed the guard and ran as
/// the caller). Returns the verified query's id, or NULL when nothing was verified (a wrong
/// answer without a correction).
#[pg_extern(name = "feedback", volatile, parallel_unsafe)]
fn feedback(call_id: i64, correct: bool, sql: default!(Option<&str>, "NULL")) -> Option<i64> {
    use PgSqlErrorCode::*;
    let row = Spi::get_three_with_args::<String, String, String>(
        "SELECT question, sql, source FROM ask.questions WHERE id = $1 AND role = current_user",
        &[call_id.into()],
    );
    let (question, answered_sql, source) = match row {
        Ok((Some(q), s, Some(src))) => (q, s, src),
        _ => Raised::new(ERRCODE_UNDEFINED_OBJECT, format!("there is no ask() call {call_id} of the current role"))
            .hint("ask.explain() shows a call's call_id; ask.questions lists your calls.")
            .raise(),
    };
    let schema = Spi::get_one_with_args::<String>("SELECT schema::text FROM ask.questions WHERE id = $1", &[call_id.into()]).ok().flatten();
    let sql = sql.map(str::trim).filter(|s| !s.is_empty());
    let verified = match (correct, sql) {
        (true, Some(_)) => Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, "a corrected query goes with correct => false")
            .hint("ask.feedback(call_id, true) verifies the call's own SQL; ask.feedback(call_id, false, 'SELECT ...') verifies a correction.")
            .raise(),
        (true, None) => {
            let Some(answered) = answered_sql.filter(|s| !s.is_empty() && !s.contains(";\n")) else {
                Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, format!("ask() call {call_id} was not answered by one SQL query ({source})"))
                    .hint("Give the query that answers it: ask.feedback(call_id, false, 'SELECT ...').")
                    .raise()
            };
            Some(store(&question, &answered, schema.as_deref(), Source::Feedback).unwrap_or_else(|r| r.raise()))
        }
        (false, Some(corrected)) => Some(store(&question, corrected, schema.as_deref(), Source::Feedback).unwrap_or_else(|r| r.raise())),
        (false, None) => None,
    };
    if !correct && source == "verified" {
        if let Ok(Some(vid)) = Spi::get_one_with_args::<i64>("SELECT verified_id FROM ask.questions WHERE id = $1", &[call_id.into()]) {
            Raised::new(ERRCODE_SUCCESSFUL_COMPLETION, format!("pg_ask: ask() call {call_id} was answered from verified query {vid}"))
                .hint(format!("If that query is wrong for its own question too, SELECT ask.remove_verified({vid})."))
                .notice();
        }
    }
    let args: [DatumWithOid; 3] = [call_id.into(), correct.into(), sql.into()];
    as_memory_owner(|| {
        Spi::run_with_args(
            "UPDATE ask.questions SET feedback = $2, feedback_sql = $3, feedback_at = pg_catalog.clock_timestamp() WHERE id = $1",
            &args,
        )
    })
    .unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask's tables failed", e).raise());
    verified
}
