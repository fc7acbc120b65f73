//! Only trusted code runs while SQL that a model, a verifier or a caller wrote is analysed,
//! planned and run.
//!
//! The function allow-list ([`super::functions`]) checks the calls a statement makes itself.
//! Planning and execution reach further, into code the statement's objects bring in: an index
//! expression constant-folded by the planner, a range type's `subtype_diff` called by a
//! selectivity estimator, a domain's CHECK reached through a cast, an operator's estimator, a
//! composite type whose column is such a domain, read from a literal during parse analysis.
//! That code is another role's, and it would run as the caller.
//!
//! [`only`] runs a closure in a scope where PostgreSQL's function manager asks this module
//! before it calls any function that is not one of its internal built-ins (the
//! `needs_fmgr_hook`/`fmgr_hook` pair that sepgsql uses): a function may start only when it is
//! built in (made by initdb), listed in `ask.allowed_functions`, or one a superuser wired into
//! PostgreSQL itself — a type's input/output functions (only a superuser can create a base
//! type), an operator class's support function or operator, an access method's handler, a
//! planner support function. Anything else is refused before it runs, with its name, and the
//! scope's statement fails. A statement run from inside the scope by code other than a
//! function allowed that way (a nested query or utility command) is refused too, so code whose
//! call was prepared before the scope began cannot read the caller's tables either.
//!
//! Session-level effects follow: no untrusted code runs, and the built-in functions that leave
//! an effect past a rollback (advisory locks, `set_config` with `is_local` false is undone by
//! the rollback anyway) are volatile, which the guard refuses in the statement.

use std::cell::Cell;
use std::ffi::c_int;

use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;

/// The scope's state: whether it is active, whether the scope's own statement has started, and
/// how many allowed non-internal functions (SQL-language built-ins, listed functions) are
/// running, whose own statements may run.
#[derive(Clone, Copy, Default)]
struct Scope {
    active: bool,
    own_started: bool,
    allowed_depth: u32,
}

thread_local! {
    static SCOPE: Cell<Scope> = const { Cell::new(Scope { active: false, own_started: false, allowed_depth: 0 }) };
    static ALLOWED: std::cell::RefCell<Vec<(String, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

static mut PREV_NEEDS: pg_sys::needs_fmgr_hook_type = None;
static mut PREV_FMGR: pg_sys::fmgr_hook_type = None;
static mut PREV_EXECUTOR_START: pg_sys::ExecutorStart_hook_type = None;
static mut PREV_UTILITY: pg_sys::ProcessUtility_hook_type = None;

/// Installs the hooks; called once from `_PG_init`. Outside a scope they only pass on to the
/// hooks installed before them.
pub(crate) fn init() {
    // SAFETY: _PG_init runs once per process on the backend's thread; the previous hooks are
    // kept and called in turn.
    unsafe {
        PREV_NEEDS = pg_sys::needs_fmgr_hook;
        pg_sys::needs_fmgr_hook = Some(needs_hook);
        PREV_FMGR = pg_sys::fmgr_hook;
        pg_sys::fmgr_hook = Some(fmgr_hook);
        PREV_EXECUTOR_START = pg_sys::ExecutorStart_hook;
        pg_sys::ExecutorStart_hook = Some(executor_start);
        PREV_UTILITY = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
    }
}

/// Run `f` with only trusted code allowed to start (see the module's documentation). Scopes
/// nest: an inner one changes nothing.
pub(crate) fn only<R>(f: impl FnOnce() -> R) -> R {
    let outer = SCOPE.with(Cell::get);
    if outer.active {
        return f();
    }
    ALLOWED.with(|a| *a.borrow_mut() = super::functions::allowed_entries());
    SCOPE.with(|s| s.set(Scope { active: true, own_started: false, allowed_depth: 0 }));
    // Reset on the way out, whether `f` returns or a PostgreSQL error unwinds through here.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            SCOPE.with(|s| s.set(Scope::default()));
        }
    }
    let _reset = Reset;
    f()
}

/// Whether a scope is active now.
pub(crate) fn active() -> bool {
    SCOPE.with(Cell::get).active
}

/// Run `f` (pg_ask's own reads of the catalogs) with the scope set aside: its statements are
/// not the scope's statement, and start no function that is not an internal built-in.
pub(crate) fn paused<R>(f: impl FnOnce() -> R) -> R {
    let was = SCOPE.with(Cell::get);
    SCOPE.with(|s| s.set(Scope { active: false, ..was }));
    let out = f();
    SCOPE.with(|s| s.set(was));
    out
}

/// Why `func_id` may not start inside a scope, if it may not.
///
/// # Safety
/// Catalog lookups: inside a transaction, on the backend's thread.
pub(crate) unsafe fn refusal(func_id: pg_sys::Oid) -> Option<String> {
    let by_list = if active() {
        ALLOWED.with(|a| super::functions::refusal(func_id, &a.borrow()))?
    } else {
        super::functions::refusal(func_id, &super::functions::allowed_entries())?
    };
    if trusted_anyway(func_id) {
        return None;
    }
    Some(by_list)
}

/// Whether `func_id` may start though it is neither built in nor listed: the calling role's
/// own function (its owner's code runs as its owner anyway), or one a superuser wired into
/// PostgreSQL — a type's I/O function, an operator class's support function or operator, an
/// access method's handler, a planner support function. Only a superuser can create a base
/// type, an operator class or family, an access method, or set a support function.
unsafe fn trusted_anyway(func_id: pg_sys::Oid) -> bool {
    use pgrx::prelude::*;
    let trusted = paused(|| Spi::get_one_with_args::<bool>(include_str!("../../sql/guard_trusted_function.sql"), &[func_id.into()]));
    matches!(trusted, Ok(Some(true)))
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn needs_hook(fn_oid: pg_sys::Oid) -> bool {
    if let Some(prev) = PREV_NEEDS {
        if prev(fn_oid) {
            return true;
        }
    }
    // Every function that is not an internal built-in goes through `fmgr_hook` while a scope
    // is active; the decision is made when it starts.
    active()
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn fmgr_hook(event: pg_sys::FmgrHookEventType::Type, flinfo: *mut pg_sys::FmgrInfo, arg: *mut pg_sys::Datum) {
    let scope = SCOPE.with(Cell::get);
    if scope.active && !flinfo.is_null() {
        match event {
            pg_sys::FmgrHookEventType::FHET_START => {
                if let Some(reason) = refusal((*flinfo).fn_oid) {
                    crate::pg::errors::Raised::new(
                        PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                        format!("{reason}; it was reached through an object the statement uses (an index, a type, a domain, an operator, a policy, a view)"),
                    )
                    .hint("pg_ask runs only built-in functions and those in ask.allowed_functions while it plans and runs SQL it did not write itself.")
                    .raise();
                }
                SCOPE.with(|s| s.set(Scope { allowed_depth: scope.allowed_depth + 1, ..scope }));
            }
            _ => SCOPE.with(|s| s.set(Scope { allowed_depth: scope.allowed_depth.saturating_sub(1), ..scope })),
        }
    }
    if let Some(prev) = PREV_FMGR {
        prev(event, flinfo, arg);
    }
}

/// A statement that starts inside a scope: the scope's own first one, or one run by an allowed
/// function; any other is refused.
unsafe fn statement_starts(what: &str) {
    let scope = SCOPE.with(Cell::get);
    if !scope.active {
        return;
    }
    if !scope.own_started {
        SCOPE.with(|s| s.set(Scope { own_started: true, ..scope }));
        return;
    }
    if scope.allowed_depth == 0 {
        crate::pg::errors::Raised::new(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("code reached through an object the statement uses ran a {what} of its own"),
        )
        .hint("pg_ask runs only built-in functions and those in ask.allowed_functions while it plans and runs SQL it did not write itself.")
        .raise();
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn executor_start(query_desc: *mut pg_sys::QueryDesc, eflags: c_int) {
    statement_starts("query");
    match PREV_EXECUTOR_START {
        Some(prev) => prev(query_desc, eflags),
        None => pg_sys::standard_ExecutorStart(query_desc, eflags),
    }
}

#[allow(clippy::too_many_arguments)]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const std::ffi::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    statement_starts("command");
    match PREV_UTILITY {
        Some(prev) => prev(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc),
        None => pg_sys::standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc),
    }
}
