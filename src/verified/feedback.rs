//! `ask.feedback()`: the user says whether an earlier `ask()` call (its call id, from
//! `ask.explain()`'s trace, the ledger or `ask.questions`) was answered right. A right answer,
//! or a wrong one with the corrected SQL, becomes a verified query.

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use super::admin::{store, Source};
use crate::pg::errors::Raised;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::OrRaise;

/// Mark the `ask()` call `call_id` of the current role right (`correct => true`: its question
/// and SQL become a verified query) or wrong (`correct => false`; with `sql`, the corrected
/// query becomes the verified one for the question, after it passed the guard and ran as
/// the caller). Returns the verified query's id, or NULL when nothing was verified (a wrong
/// answer without a correction).
#[pg_extern(name = "feedback", volatile, parallel_unsafe)]
fn feedback(call_id: i64, correct: bool, sql: default!(Option<&str>, "NULL")) -> Option<i64> {
    use PgSqlErrorCode::*;
    // One read of the call, as the caller (row-level security: its own calls only).
    let row: Option<(String, Option<String>, String, Option<i64>)> = crate::pg::spi::select_rows(
        "SELECT question, sql, source, verified_id FROM ask.questions
         WHERE id OPERATOR(pg_catalog.=) $1 AND role OPERATOR(pg_catalog.=) pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))",
        &[call_id.into()],
        |r| {
            let (Some(question), sql, Some(source), verified) =
                (r.get::<String>(1)?, r.get::<String>(2)?, r.get::<String>(3)?, r.get::<i64>(4)?)
            else {
                return Ok(None);
            };
            Ok(Some((question, sql, source, verified)))
        },
    )
    .or_raise("could not read the call from ask.questions")
    .pop();
    let Some((question, answered_sql, source, verified_id)) = row else {
        Raised::new(ERRCODE_UNDEFINED_OBJECT, format!("there is no ask() call {call_id} of the current role"))
            .hint("ask.explain() shows a call's call_id; ask.questions lists your calls.")
            .raise()
    };
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
            Some(store(&question, &answered, None, Source::Feedback).unwrap_or_else(|r| r.raise()))
        }
        (false, Some(corrected)) => Some(store(&question, corrected, None, Source::Feedback).unwrap_or_else(|r| r.raise())),
        (false, None) => None,
    };
    if !correct && source == "verified" {
        if let Some(vid) = verified_id {
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
