//! `ask.query(sql)`: a statement the caller wrote, run the way pg_ask runs the SQL an LLM
//! writes: the guard's parse-level check, then the read-only execution with the caller's
//! privileges, the function allow-list, the row limit and the result size limit. For clients
//! (an agent's tool) that must offer SQL without offering a raw connection.

use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;

use pg_ask_core::ask::{ExecFailure, Executor};
use pg_ask_core::guard::check_read_only;
use pg_ask_core::rows::ResultSet;

use crate::ask::host::BackendHost;
use crate::pg::errors::{sqlstate_code, Raised};

/// The rows of `sql`, one jsonb object per row, when pg_ask's guard lets it run: one read-only
/// query, with no function outside the allow-list, as the current role.
#[pg_extern(name = "query", volatile, parallel_unsafe)]
fn query(sql: &str) -> SetOfIterator<'static, JsonB> {
    let rs = run_checked(sql, "ask.query()");
    SetOfIterator::new(rs.to_objects().into_iter().map(JsonB))
}

/// The result of `sql` run as `ask.query()` runs it, or the error raised as it raises it;
/// `function` names the caller in the hint.
pub(crate) fn run_checked(sql: &str, function: &str) -> ResultSet {
    let hint = format!("{function} runs one read-only query without volatile functions, as the current role.");
    let checked = check_read_only(sql).unwrap_or_else(|refusal| {
        Raised::new(
            PgSqlErrorCode::ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
            format!("pg_ask's guard refused the statement: {refusal}"),
        )
        .hint(hint.clone())
        .raise()
    });
    let mut host = BackendHost::for_lookups();
    match host.execute(&checked) {
        Ok(rs) => {
            if rs.truncated {
                notice!("pg_ask: the result was cut at ask.row_limit ({} rows)", crate::pg::gucs::row_limit());
            }
            rs
        }
        Err(ExecFailure::Refused { reason }) => Raised::new(
            PgSqlErrorCode::ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
            format!("pg_ask's guard refused the statement: {reason}"),
        )
        .hint(hint)
        .raise(),
        Err(ExecFailure::Error { sqlstate, message, detail, hint }) => {
            let mut r = Raised::new(sqlstate_code(sqlstate).unwrap_or(PgSqlErrorCode::ERRCODE_DATA_EXCEPTION), message);
            if let Some(d) = detail {
                r = r.detail(d);
            }
            if let Some(h) = hint {
                r = r.hint(h);
            }
            r.raise()
        }
    }
}
