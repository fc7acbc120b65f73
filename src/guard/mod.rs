//! Guarded execution of LLM-written SQL, after the core's parse-level allowlist:
//!
//! 1. PostgreSQL parses and analyses the statement: exactly one statement, calling only the
//!    functions on the allow-list ([`functions`]), a plain SELECT with no data-modifying CTE, no
//!    row locks, no volatile function anywhere (views included).
//! 2. It runs through SPI in read-only mode, with `transaction_read_only` on, as the calling
//!    role (never SECURITY DEFINER), under `ask.statement_timeout`, fetching at most
//!    `ask.row_limit` rows.
//! 3. All of it happens inside a subtransaction that is always rolled back: whatever slipped
//!    through could not leave an effect, and an error leaves the caller's transaction usable.
//!
//! A step of `ask.do()` ([`execute_step`]) runs the same way, with PostgreSQL's own check for
//! volatile functions, in a subtransaction that is kept on success.

pub(crate) mod allowed;
#[cfg(any(test, feature = "pg_test"))]
mod attack_tests;
pub(crate) mod functions;
#[cfg(any(test, feature = "pg_test"))]
mod hidden_types_tests;
mod others;
pub(crate) mod planned;
pub(crate) mod reach;
mod statement;
#[cfg(any(test, feature = "pg_test"))]
mod step_attack_tests;
#[cfg(any(test, feature = "pg_test"))]
mod tests;
pub(crate) mod trusted;
#[cfg(any(test, feature = "pg_test"))]
mod trusted_tests;
#[cfg(any(test, feature = "pg_test"))]
mod view_tests;
pub(crate) mod written;

pub(crate) use statement::statement_refusal;
use statement::write_step_refusal;

use std::ffi::{CStr, CString};

use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::pg_sys::panic::CaughtError;
use serde_json::Value;

use pg_ask_core::ask::ExecFailure;
use pg_ask_core::chain::StepResult;
use pg_ask_core::rows::ResultSet;

use crate::pg::errors::sqlstate_of;
use crate::pg::subxact::{self, OnSuccess};

/// utils/timeout.h: the statement-timeout slot (the same number in PostgreSQL 15, 16 and 17).
const STATEMENT_TIMEOUT_ID: std::ffi::c_int = 3;

extern "C-unwind" {
    fn enable_timeout_after(id: std::ffi::c_int, delay_ms: std::ffi::c_int);
    fn enable_timeout_at(id: std::ffi::c_int, fin_time: pg_sys::TimestampTz);
    fn disable_timeout(id: std::ffi::c_int, keep_indicator: bool);
    fn get_timeout_active(id: std::ffi::c_int) -> bool;
    fn get_timeout_finish_time(id: std::ffi::c_int) -> pg_sys::TimestampTz;
}

pub struct Limits {
    pub row_limit: u32,
    /// 0: no limit beyond the caller's own statement_timeout.
    pub timeout_ms: i32,
}

/// Run `sql` under the rules above.
pub fn execute(sql: &str, limits: &Limits) -> Result<ResultSet, ExecFailure> {
    execute_reading(sql, limits).map(|(rows, _)| rows)
}

/// [`execute`], also telling which relations the statement read: those it names and the
/// views and tables under them, at every level, as the guard's own analysis found them.
pub fn execute_reading(sql: &str, limits: &Limits) -> Result<(ResultSet, Vec<pg_sys::Oid>), ExecFailure> {
    let Ok(csql) = CString::new(sql) else {
        return Err(ExecFailure::Refused { reason: "the statement contains a NUL character".into() });
    };
    // Always roll back: a read-only query has nothing to keep.
    // SAFETY: analysis and execution of one statement inside the subtransaction `run` opens.
    run(limits, OnSuccess::RollBack, || unsafe { run_in_subtransaction(&csql, limits) })
}

/// Runs `statement` (which executes one LLM-written statement) in a subtransaction, under
/// `ask.statement_timeout`. An error the statement caused comes back as a failure the LLM can
/// repair from, its subtransaction rolled back; an error that is not the statement's fault is
/// raised (a cancel, the caller's own timeout, a shutdown, a Rust panic), and our timeout is
/// raised as such, with a hint. On success the subtransaction is released or rolled back as
/// `on_success` says.
pub(crate) fn run<T>(
    limits: &Limits,
    on_success: OnSuccess,
    statement: impl FnOnce() -> Result<T, ExecFailure> + std::panic::UnwindSafe,
) -> Result<T, ExecFailure> {
    let locks_before = advisory_locks();
    // SAFETY: the timer calls are plain calls into PostgreSQL's timeout module from the
    // backend's thread; `restore` puts the caller's own statement timeout back.
    let timer = unsafe { StatementTimer::arm(limits.timeout_ms) };
    let outcome = subxact::run(on_success, statement);
    // SAFETY: as for `arm`: reads of the timeout module's state from the backend's thread.
    let ours_fired = unsafe { timer.fired() };
    // SAFETY: as for `arm`; puts back what `arm` replaced.
    unsafe { timer.restore() };
    let left = release_new_advisory_locks(&locks_before);
    match outcome {
        Ok(_) if left > 0 => {
            Err(ExecFailure::Refused { reason: format!("the statement left {left} session-level advisory lock(s), which pg_ask released") })
        }
        Ok(result) => result,
        Err(caught) => Err(failure_from(caught, ours_fired, limits)),
    }
}

/// An advisory lock this backend holds: (classid, objid, objsubid, shared).
type AdvisoryLock = (i64, i64, i32, bool);

/// The advisory locks this backend holds now.
fn advisory_locks() -> Vec<AdvisoryLock> {
    crate::pg::spi::select_generic("guard_advisory_locks", include_str!("../../sql/guard_advisory_locks.sql"), &[], &[], |r| {
        Ok(Some((
            r.get::<i64>(1)?.unwrap_or(0),
            r.get::<i64>(2)?.unwrap_or(0),
            r.get::<i32>(3)?.unwrap_or(0),
            r.get::<bool>(4)?.unwrap_or(false),
        )))
    })
    .unwrap_or_default()
}

/// Releases the session-level advisory locks taken since `before` (code a statement reached
/// took them; they would outlive the rolled-back subtransaction and tell other sessions what
/// it read), and says how many there were. Transaction-level ones end with the transaction.
fn release_new_advisory_locks(before: &[AdvisoryLock]) -> usize {
    use pgrx::prelude::*;
    let mut released = 0;
    for (classid, objid, objsubid, shared) in advisory_locks() {
        if before.contains(&(classid, objid, objsubid, shared)) {
            continue;
        }
        let unlock = if shared { "pg_catalog.pg_advisory_unlock_shared" } else { "pg_catalog.pg_advisory_unlock" };
        // objsubid 1: one bigint key (high and low halves); 2: two int keys.
        let sql = if objsubid == 1 {
            format!("SELECT {unlock}((({classid}::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32) OPERATOR(pg_catalog.|) {objid}::pg_catalog.int8))")
        } else {
            format!("SELECT {unlock}({classid}::pg_catalog.int8::pg_catalog.int4, {objid}::pg_catalog.int8::pg_catalog.int4)")
        };
        if let Ok(Some(true)) = Spi::get_one::<bool>(&sql) {
            released += 1;
        }
    }
    released
}

/// Turn a caught error into a failure the LLM can repair from, or re-raise it when it is not
/// the statement's fault (a cancel, the caller's own timeout, a Rust panic).
fn failure_from(caught: CaughtError, ours_fired: bool, limits: &Limits) -> ExecFailure {
    let report = match &caught {
        CaughtError::PostgresError(r) | CaughtError::ErrorReport(r) => r,
        CaughtError::RustPanic { .. } => caught.rethrow(),
    };
    let code = report.sql_error_code();
    if code as isize == PgSqlErrorCode::ERRCODE_QUERY_CANCELED as isize {
        if ours_fired {
            crate::pg::errors::Raised::new(
                PgSqlErrorCode::ERRCODE_QUERY_CANCELED,
                format!("the generated SQL ran longer than ask.statement_timeout ({} ms)", limits.timeout_ms),
            )
            .hint("Raise ask.statement_timeout, or ask a narrower question.")
            .raise();
        }
        caught.rethrow();
    }
    if matches!(
        code,
        PgSqlErrorCode::ERRCODE_ADMIN_SHUTDOWN
            | PgSqlErrorCode::ERRCODE_CRASH_SHUTDOWN
            | PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY
            | PgSqlErrorCode::ERRCODE_DATA_CORRUPTED
            | PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED
    ) {
        caught.rethrow();
    }
    ExecFailure::Error {
        sqlstate: sqlstate_of(code),
        message: report.message().to_string(),
        detail: report.detail().map(str::to_string),
        hint: report.hint().map(str::to_string),
    }
}

/// Inside the subtransaction: read-only from the start (parse analysis can already run code a
/// type brings in), then, with only trusted code allowed to start, analyse, check, execute,
/// copy the rows out.
unsafe fn run_in_subtransaction(sql: &CStr, limits: &Limits) -> Result<(ResultSet, Vec<pg_sys::Oid>), ExecFailure> {
    pg_sys::set_config_option(
        c"transaction_read_only".as_ptr(),
        c"on".as_ptr(),
        pg_sys::GucContext::PGC_USERSET,
        pg_sys::GucSource::PGC_S_SESSION,
        pg_sys::GucAction::GUC_ACTION_LOCAL,
        true,
        0,
        false,
    );
    trusted::only(|| {
        trusted::strictly(|| {
            let checked = analyse(sql).map_err(|reason| ExecFailure::Refused { reason })?;
            let relations = checked.reached.relations.clone();
            match planned::expecting(sql, checked, || spi_execute(sql, true, limits.row_limit)) {
                Ok(out) if out.rc == pg_sys::SPI_OK_SELECT as i32 => Ok((out.rows, relations)),
                Ok(out) => Err(ExecFailure::Refused { reason: format!("not a query (SPI result code {})", out.rc) }),
                Err(reason) => Err(ExecFailure::Refused { reason }),
            }
        })
    })
}

/// What one statement run through SPI gave.
pub(crate) struct SpiOutcome {
    /// SPI's result code (`SPI_OK_SELECT`, `SPI_OK_INSERT`, ...).
    pub rc: i32,
    /// Rows processed (returned or affected).
    pub processed: u64,
    /// At most `limit` rows of the result, copied out of SPI's memory.
    pub rows: ResultSet,
}

/// Run one statement in its own SPI session, fetching at most `limit` rows (one more is asked
/// for, to tell a cut result). PostgreSQL errors propagate to the caller's error handling.
pub(crate) unsafe fn spi_execute(sql: &CStr, read_only: bool, limit: u32) -> Result<SpiOutcome, String> {
    if pg_sys::SPI_connect() < 0 {
        return Err("SPI_connect failed".into());
    }
    let rc = pg_sys::SPI_execute(sql.as_ptr(), read_only, limit.saturating_add(1) as std::ffi::c_long);
    let processed = pg_sys::SPI_processed;
    let rows = copy_rows(limit);
    pg_sys::SPI_finish();
    if rc < 0 {
        return Err(format!("SPI_execute failed ({rc})"));
    }
    Ok(SpiOutcome { rc, processed, rows })
}

/// Parse analysis of the statement: what it reaches (the relations it reads first), or why it
/// is refused.
unsafe fn analyse(sql: &CStr) -> Result<planned::Checked, String> {
    let raw = pg_sys::pg_parse_query(sql.as_ptr());
    let n = list_len(raw);
    if n != 1 {
        return Err(format!("expected exactly one statement, found {n}"));
    }
    let raw_stmt = list_nth(raw, 0) as *mut pg_sys::RawStmt;
    let analysed =
        trusted::analysing(|| pg_sys::parse_analyze_fixedparams(raw_stmt, sql.as_ptr(), std::ptr::null(), 0, std::ptr::null_mut()));
    if let Some(reason) = functions::first_refused(analysed) {
        return Err(reason);
    }
    // The relations as written (views among them), before the rewriter replaces views.
    let mut reached = reach::Reached::default();
    reach::collect(analysed, &mut reached);
    let queries = pg_sys::pg_rewrite_query(analysed);
    if list_len(queries) != 1 {
        return Err("the statement rewrites to more than one query".into());
    }
    let q = list_nth(queries, 0) as *mut pg_sys::Query;
    // Again after the rewriter: the views the query reads and the row-level security policies
    // of its tables run their functions as the caller too.
    if let Some(reason) = functions::first_refused(q) {
        return Err(format!("{reason} (through a view or a row-level security policy)"));
    }
    // And what the tables under them bring into planning and execution, their children and
    // partitions included (the planner reads them; one added later is refused when planned).
    reach::collect(q, &mut reached);
    reached.close_over_children();
    if let Some(reason) = reach::refusal(&reached, None) {
        return Err(reason);
    }
    let q = &*q;
    if q.commandType != pg_sys::CmdType::CMD_SELECT || !q.utilityStmt.is_null() {
        return Err("only SELECT queries may run".into());
    }
    if q.hasModifyingCTE {
        return Err("the query contains a data-modifying WITH clause".into());
    }
    if !q.rowMarks.is_null() {
        return Err("the query locks rows (FOR UPDATE/SHARE)".into());
    }
    if pg_sys::contain_volatile_functions(q as *const pg_sys::Query as *mut pg_sys::Node) {
        return Err("the query calls a volatile function (one that can change the database or give a different result each call)".into());
    }
    Ok(planned::Checked { reached, ..Default::default() })
}

/// One step in a subtransaction that is kept on success, under `ask.statement_timeout`;
/// an error rolls the step back and comes back as a failure, which ends the chain with an
/// error (so the caller's statement, and with it every earlier step, is rolled back too).
pub(crate) fn execute_step(sql: &str, limits: &Limits) -> Result<StepResult, ExecFailure> {
    let Ok(csql) = std::ffi::CString::new(sql) else {
        return Err(ExecFailure::Refused { reason: "the statement contains a NUL character".into() });
    };
    let limit = limits.row_limit;
    let out = run(limits, OnSuccess::Release, move || {
        // SAFETY: one statement analysed, then run in its own SPI session; the rows are copied
        // out before it ends.
        trusted::only(|| unsafe {
            let before = written::row_exclusive();
            let mut checked = planned::Checked { writer: Some(pg_sys::GetUserId()), ..Default::default() };
            if let Some(reason) = write_step_refusal(&csql, &mut checked) {
                return Err(ExecFailure::Refused { reason });
            }
            #[cfg(any(test, feature = "pg_test"))]
            written::between_check_and_run();
            // Run strictly too: what the checks before could not see (a trigger's WHEN clause,
            // a rule's action, a cascade's CHECK) starts no volatile built-in with an effect;
            // and run only as checked (see `planned`).
            let out = trusted::writing(|| planned::expecting(&csql, checked, || spi_execute(&csql, false, limit)))
                .map_err(|message| ExecFailure::Error { sqlstate: "XX000".into(), message, detail: None, hint: None })?;
            // What the step wrote, checked again now that it holds it: an error, so that the
            // step's subtransaction is rolled back with the triggers it queued.
            if let Some(reason) = written::refusal(&before) {
                pgrx::ereport!(
                    pgrx::PgLogLevel::ERROR,
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    format!("the step was rolled back: {reason}"),
                    "A relation the step wrote changed between pg_ask's check and the run (a partition or child table another role altered meanwhile)."
                );
            }
            Ok(out)
        })
    })?;
    Ok(StepResult { rows_affected: out.processed, columns: out.rows.columns, rows: out.rows.rows })
}

pub(super) unsafe fn list_len(l: *mut pg_sys::List) -> i32 {
    if l.is_null() {
        0
    } else {
        (*l).length
    }
}

pub(super) unsafe fn list_nth(l: *mut pg_sys::List, n: i32) -> *mut std::ffi::c_void {
    (*(*l).elements.add(n as usize)).ptr_value
}

/// Copy SPI's result into plain values (at most `limit` rows; one more means truncated).
unsafe fn copy_rows(limit: u32) -> ResultSet {
    let tt = pg_sys::SPI_tuptable;
    let processed = pg_sys::SPI_processed as usize;
    if tt.is_null() {
        return ResultSet::default();
    }
    // No cell or column name leaves with the key in it, whoever the caller is and whatever the
    // query read (a view over pg_settings, a table someone stored it in): the rows go to the
    // caller and to the LLM's answer stage.
    let key = crate::pg::gucs::api_key();
    let tupdesc = (*tt).tupdesc;
    let natts = (*tupdesc).natts;
    let mut columns = Vec::with_capacity(natts as usize);
    let mut types = Vec::with_capacity(natts as usize);
    for i in 1..=natts {
        let name = pg_sys::SPI_fname(tupdesc, i);
        columns.push(if name.is_null() {
            format!("?column{i}?")
        } else {
            scrubbed(&key, CStr::from_ptr(name).to_string_lossy()).into_owned()
        });
        types.push(pg_sys::SPI_gettypeid(tupdesc, i));
    }
    let keep = processed.min(limit as usize);
    // ask.max_result_size: rows past it are not read, and a cell larger than what is left of
    // it is cut, so that a query's result cannot fill the backend's memory on its way to the
    // caller and the LLM.
    let max_bytes = crate::pg::gucs::max_result_bytes();
    let mut read = 0usize;
    let mut size_cut = false;
    let mut rows = Vec::with_capacity(keep.min(1024));
    for r in 0..keep {
        if read >= max_bytes {
            size_cut = true;
            break;
        }
        let tuple = *(*tt).vals.add(r);
        let mut row = Vec::with_capacity(natts as usize);
        for i in 1..=natts {
            let text = pg_sys::SPI_getvalue(tuple, tupdesc, i);
            row.push(if text.is_null() {
                Value::Null
            } else {
                let bytes = CStr::from_ptr(text).to_bytes();
                let room = max_bytes.saturating_sub(read).max(64);
                let (bytes, cut) = if bytes.len() > room { (&bytes[..room], Some(bytes.len())) } else { (bytes, None) };
                read += bytes.len();
                let s = scrubbed(&key, String::from_utf8_lossy(bytes));
                match cut {
                    Some(total) => {
                        size_cut = true;
                        Value::String(format!("{}…[cut: {total} bytes]", s.trim_end_matches('\u{FFFD}')))
                    }
                    None => json_value(types[(i - 1) as usize], &s),
                }
            });
            if !text.is_null() {
                // The cell's text form, in SPI's memory until SPI_finish: freed now, so that
                // the cells of a large result do not pile up there.
                pg_sys::pfree(text.cast());
            }
        }
        rows.push(row);
    }
    ResultSet { columns, rows, truncated: processed > limit as usize, size_cut }
}

fn scrubbed<'a>(key: &pg_ask_core::secret::Secret, text: std::borrow::Cow<'a, str>) -> std::borrow::Cow<'a, str> {
    if key.occurs_in(&text) {
        key.scrub(&text).into()
    } else {
        text
    }
}

/// A cell's JSON value from its type and text form: numbers and booleans as JSON numbers and
/// booleans, json/jsonb as JSON, everything else as its PostgreSQL text.
fn json_value(typ: pg_sys::Oid, text: &str) -> Value {
    match typ {
        pg_sys::BOOLOID => Value::Bool(text == "t"),
        pg_sys::INT2OID | pg_sys::INT4OID | pg_sys::INT8OID | pg_sys::OIDOID => {
            text.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(text.into()))
        }
        pg_sys::FLOAT4OID | pg_sys::FLOAT8OID | pg_sys::NUMERICOID => {
            if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else {
                match text.parse::<f64>() {
                    Ok(f) if f.is_finite() => Value::from(f),
                    _ => Value::String(text.into()),
                }
            }
        }
        pg_sys::JSONOID | pg_sys::JSONBOID => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())),
        _ => Value::String(text.into()),
    }
}

/// Arms PostgreSQL's statement timer for the generated statement, and gives the caller's own
/// statement timeout back afterwards.
struct StatementTimer {
    armed_ms: i32,
    started: pg_sys::TimestampTz,
    outer: Option<pg_sys::TimestampTz>,
}

impl StatementTimer {
    unsafe fn arm(timeout_ms: i32) -> StatementTimer {
        let now = pg_sys::GetCurrentTimestamp();
        let outer = get_timeout_active(STATEMENT_TIMEOUT_ID).then(|| get_timeout_finish_time(STATEMENT_TIMEOUT_ID));
        let mut armed_ms = 0;
        if timeout_ms > 0 {
            // Only when ours ends first: the caller's earlier deadline stays in force.
            let ours_end = now + timeout_ms as i64 * 1000;
            if outer.is_none_or(|o| ours_end < o) {
                enable_timeout_after(STATEMENT_TIMEOUT_ID, timeout_ms);
                armed_ms = timeout_ms;
            }
        }
        StatementTimer { armed_ms, started: now, outer }
    }

    /// Whether our own deadline (not the caller's) has passed.
    unsafe fn fired(&self) -> bool {
        self.armed_ms > 0 && pg_sys::GetCurrentTimestamp() >= self.started + self.armed_ms as i64 * 1000
    }

    unsafe fn restore(self) {
        if self.armed_ms == 0 {
            return;
        }
        match self.outer {
            Some(fin) => enable_timeout_at(STATEMENT_TIMEOUT_ID, fin),
            None => disable_timeout(STATEMENT_TIMEOUT_ID, false),
        }
    }
}
