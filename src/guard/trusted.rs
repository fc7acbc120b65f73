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
//! scope's statement fails.
//!
//! A call prepared before the scope began (a range type's `subtype_diff`, kept by PostgreSQL's
//! type cache) does not pass through the hook: [`super::reach`] refuses the statements that
//! reach such functions before they are planned.
//!
//! Built-in functions start without asking that hook. While a read is analysed, planned and
//! run, and while a write is analysed ([`strictly`]), PostgreSQL's object-access hook is asked
//! instead each time it prepares a call for execution (`OAT_FUNCTION_EXECUTE`, built-ins
//! included): a volatile function or one that runs SQL given as text is refused there. That
//! covers the code PostgreSQL runs before any check of the statement can: a domain's CHECK
//! evaluated while parse analysis reads an array or composite literal (`'{7}'` compared with a
//! column of another role's domain array), or through a type's input function called with a
//! type chosen at run time.
//!
//! Session-level effects follow: no untrusted code runs, and the built-in functions that leave
//! an effect past a rollback (advisory locks, `set_config`, `pg_notify`, a sequence) are
//! volatile, which the guard refuses in the statement and the object-access hook wherever else
//! they would start.

use std::cell::Cell;

use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;

/// The scope's state: whether it is active, and the role that entered it (whose own functions
/// may start, unless it is a superuser).
#[derive(Clone, Copy, Default)]
struct Scope {
    active: bool,
    role: u32,
}

thread_local! {
    static SCOPE: Cell<Scope> = const { Cell::new(Scope { active: false, role: 0 }) };
    /// Inside a scope, whether the object-access hook refuses volatile functions too.
    static STRICT: Cell<bool> = const { Cell::new(false) };
    /// Inside a strict scope, whether a write is being run: then volatile functions that are
    /// not built in start when the function manager's hook trusts them (the writer's own
    /// trigger), and of the volatile built-ins only those with no effect beyond the rows written.
    static WRITING: Cell<bool> = const { Cell::new(false) };
    /// Inside a scope, whether a statement is being parsed and analysed: then only immutable
    /// functions may start (what runs then is a type's code, a domain's CHECK).
    static ANALYSING: Cell<bool> = const { Cell::new(false) };
    static ALLOWED: std::cell::RefCell<Vec<(String, String)>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The scope's decisions so far, by function: the hook is asked at every call (a type's
    /// output function, once per row), the catalogs once per function and scope.
    static DECIDED: std::cell::RefCell<std::collections::HashMap<u32, Option<String>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

static mut PREV_NEEDS: pg_sys::needs_fmgr_hook_type = None;
static mut PREV_FMGR: pg_sys::fmgr_hook_type = None;
static mut PREV_OBJECT_ACCESS: pg_sys::object_access_hook_type = None;

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
        PREV_OBJECT_ACCESS = pg_sys::object_access_hook;
        pg_sys::object_access_hook = Some(object_access_hook);
    }
}

/// Run `f` (inside a scope) with no volatile function allowed to start, built-ins included:
/// a read from its parse analysis to its last row, a write while it is analysed.
pub(crate) fn strictly<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&STRICT, f)
}

/// Run `f` (inside a scope: one write of `ask.do()` run) strictly, as a write: no volatile
/// built-in starts but those of [`super::allowed::harmless_in_writes`] (a random number, a
/// clock, PostgreSQL's own trigger functions), whatever object brings it in — a trigger's WHEN
/// clause, a rule's action, a cascade's CHECK —, nor `nextval` (the calls the check approved,
/// and a query's calls of the writer's own sequences, run without it: [`super::planned`]); every other
/// function is the function manager hook's to trust or refuse.
pub(crate) fn writing<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&STRICT, || with_flag(&WRITING, f))
}

/// Run `f` with the thread's `flag` set, and put it back as it was however `f` ends (a
/// PostgreSQL error unwinds through here too).
fn with_flag<R>(flag: &'static std::thread::LocalKey<Cell<bool>>, f: impl FnOnce() -> R) -> R {
    struct Restore(&'static std::thread::LocalKey<Cell<bool>>, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.with(|s| s.set(self.1));
        }
    }
    let _restore = Restore(flag, flag.with(|s| s.replace(true)));
    f()
}

/// Run `f` with only trusted code allowed to start (see the module's documentation). Scopes
/// nest: an inner one changes nothing.
pub(crate) fn only<R>(f: impl FnOnce() -> R) -> R {
    let outer = SCOPE.with(Cell::get);
    if outer.active {
        return f();
    }
    ALLOWED.with(|a| *a.borrow_mut() = super::allowed::allowed_entries());
    DECIDED.with(|d| d.borrow_mut().clear());
    // SAFETY: reads the backend's current user id.
    let role = u32::from(unsafe { pg_sys::GetUserId() });
    SCOPE.with(|s| s.set(Scope { active: true, role }));
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
/// not the scope's statement, and start no function that is not an internal built-in. They read
/// the catalogs as committed now ([`in_latest_snapshot`]), as PostgreSQL's parser, rewriter and
/// planner read them for the statement checked.
pub(crate) fn paused<R>(f: impl FnOnce() -> R) -> R {
    /// Puts the scope back however `f` ends: returning, or unwinding with an error that code
    /// still inside the scope may catch and go on from.
    struct Restore(Scope);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPE.with(|s| s.set(self.0));
        }
    }
    let was = SCOPE.with(Cell::get);
    let _restore = Restore(was);
    SCOPE.with(|s| s.set(Scope { active: false, ..was }));
    in_latest_snapshot(f)
}

/// Run `f` with the latest snapshot active. The statement that calls pg_ask took its snapshot
/// when it began (a REPEATABLE READ transaction, at its first statement), before the LLM wrote
/// anything and before any lock the check waited on was granted; PostgreSQL's parser, rewriter
/// and planner read the catalogs as committed now. A check reading them through the older
/// snapshot would see a view's old definition, no policy added since, no partition attached
/// since, while the statement runs with the new ones. SPI runs a read-only query in the active
/// snapshot, and pgrx runs a read read-only while the current (sub)transaction has no
/// transaction id; once it has one (the step wrote, a function gave it one), SPI would run the
/// reads read-write in a snapshot of its own, the transaction's in REPEATABLE READ. Those reads
/// then run in a subtransaction of their own, which has none.
fn in_latest_snapshot<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: reads the current subtransaction's state.
    let has_xid = unsafe { pg_sys::GetCurrentTransactionIdIfAny() } != pg_sys::InvalidTransactionId;
    if !has_xid {
        return pushed_latest(f);
    }
    let read = std::panic::AssertUnwindSafe(move || pushed_latest(f));
    match crate::pg::subxact::run(crate::pg::subxact::OnSuccess::Release, read) {
        Ok(out) => out,
        Err(caught) => caught.rethrow(),
    }
}

/// `f` with the latest snapshot pushed as the active one.
fn pushed_latest<R>(f: impl FnOnce() -> R) -> R {
    /// Pops the snapshot pushed below however `f` ends; when an error left SPI's own above it,
    /// the subtransaction's abort pops both.
    struct Pop(pg_sys::Snapshot);
    impl Drop for Pop {
        fn drop(&mut self) {
            // SAFETY: the active snapshot stack of this backend's transaction, read and popped
            // on its own thread; only the snapshot pushed here is popped.
            unsafe {
                if pg_sys::ActiveSnapshotSet() && pg_sys::GetActiveSnapshot() == self.0 {
                    pg_sys::PopActiveSnapshot();
                }
            }
        }
    }
    // SAFETY: inside a transaction (the guard's subtransaction); PushActiveSnapshot copies the
    // static snapshot GetLatestSnapshot fills.
    let pushed = unsafe {
        pg_sys::PushActiveSnapshot(pg_sys::GetLatestSnapshot());
        pg_sys::GetActiveSnapshot()
    };
    let _pop = Pop(pushed);
    f()
}

/// Why `func_id` may not start inside a scope, if it may not.
///
/// # Safety
/// Catalog lookups: inside a transaction, on the backend's thread.
pub(crate) unsafe fn refusal(func_id: pg_sys::Oid) -> Option<String> {
    if !active() {
        return decide(func_id);
    }
    if let Some(known) = DECIDED.with(|d| d.borrow().get(&u32::from(func_id)).cloned()) {
        return known;
    }
    let decided = decide(func_id);
    DECIDED.with(|d| d.borrow_mut().insert(u32::from(func_id), decided.clone()));
    decided
}

/// [`refusal`], read from the list and the catalogs.
unsafe fn decide(func_id: pg_sys::Oid) -> Option<String> {
    let by_list = if active() {
        ALLOWED.with(|a| super::allowed::refusal(func_id, &a.borrow()))?
    } else {
        super::allowed::refusal(func_id, &super::allowed::allowed_entries())?
    };
    if trusted_anyway(func_id) {
        return None;
    }
    Some(by_list)
}

/// Whether `func_id` may start though it is neither built in nor listed: a function of the
/// role that entered the scope when that role is not a superuser (the role's own code, as it
/// would run anyway; not a superuser's, which owns every extension's functions, nor the user
/// a foreign key's cascade switches to), or one a superuser wired into PostgreSQL — a type's
/// I/O function, an operator class's support function or operator, an access method's, a
/// foreign-data wrapper's or a text search template's or parser's function, a planner support
/// function. Only a superuser can create those.
unsafe fn trusted_anyway(func_id: pg_sys::Oid) -> bool {
    let role = pg_sys::Oid::from(SCOPE.with(Cell::get).role);
    let own = if role != pg_sys::InvalidOid && !pg_sys::superuser_arg(role) { role } else { pg_sys::InvalidOid };
    // A read-only read (SPI's `select`): one that may write would give the guard's
    // subtransaction a transaction id, and SPI would then run every later catalog read of the
    // guard read-write, in the transaction's snapshot (see `in_latest_snapshot`).
    let trusted = paused(|| {
        crate::pg::spi::select_rows(include_str!("../../sql/guard_trusted_function.sql"), &[func_id.into(), own.into()], |r| {
            r.get::<bool>(1)
        })
    });
    matches!(trusted.as_deref(), Ok([true, ..]))
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
    if event == pg_sys::FmgrHookEventType::FHET_START && active() && !flinfo.is_null() {
        if let Some(reason) = refusal((*flinfo).fn_oid) {
            crate::pg::errors::Raised::new(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("{reason}; it was reached through an object the statement uses (an index, a type, a domain, an operator, a policy, a view)"),
            )
            .hint("pg_ask runs only built-in functions and those in ask.allowed_functions while it plans and runs SQL it did not write itself.")
            .raise();
        }
    }
    if let Some(prev) = PREV_FMGR {
        prev(event, flinfo, arg);
    }
}

/// Run `f` (parse analysis of a statement, inside a scope) with only immutable functions
/// allowed to start: parse analysis runs a domain's CHECK on a literal before any check of the
/// statement, and a stable built-in there can still open a relation or take a transaction id
/// that other sessions see.
pub(crate) fn analysing<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&ANALYSING, f)
}

/// Why a function PostgreSQL prepares for execution may not start in a strict scope: it is
/// volatile, a built-in that runs SQL given as text, or one whose call other sessions see. (Whether it is trusted at all is the
/// function manager hook's question, asked when it starts.)
///
/// # Safety
/// Catalog lookups: inside a transaction, on the backend's thread.
unsafe fn strict_refusal(func_id: pg_sys::Oid) -> Option<String> {
    if u32::from(func_id) < pg_sys::FirstNormalObjectId {
        if let Some(reason) = super::allowed::refusal(func_id, &[]) {
            return Some(reason);
        }
    }
    let volatility = pg_sys::func_volatile(func_id) as u8;
    let analysing = ANALYSING.with(Cell::get);
    if volatility != pg_sys::PROVOLATILE_VOLATILE && !(analysing && volatility != pg_sys::PROVOLATILE_IMMUTABLE) {
        return super::allowed::seen_by_other_sessions(func_id);
    }
    if volatility == pg_sys::PROVOLATILE_VOLATILE && !analysing && WRITING.with(Cell::get) {
        let builtin = u32::from(func_id) < pg_sys::FirstNormalObjectId;
        if !builtin || super::allowed::harmless_in_writes(func_id) {
            return None;
        }
        // The write's own nextval calls, and those of the queries its own trusted code (its
        // trigger) plans of the writer's own sequences, run as an identity column's do
        // (`super::planned`); any other is code added since the check, whoever's function
        // compiles it.
        if u32::from(func_id) == pg_sys::F_NEXTVAL {
            return Some(
                "nextval() would run on a sequence the step's check did not approve (code added after the check: a domain's constraint, a trigger's condition)"
                    .into(),
            );
        }
    }
    Some({
        let name = pgrx::pg_sys::get_func_name(func_id);
        let name = if name.is_null() {
            format!("function {}", u32::from(func_id))
        } else {
            std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned()
        };
        if volatility == pg_sys::PROVOLATILE_VOLATILE {
            format!("{name}() would run, a volatile function (one that can change the database or the session)")
        } else {
            format!("{name}() would run while the statement is analysed, and only immutable functions may")
        }
    })
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn object_access_hook(
    access: pg_sys::ObjectAccessType::Type,
    class_id: pg_sys::Oid,
    object_id: pg_sys::Oid,
    sub_id: std::ffi::c_int,
    arg: *mut std::ffi::c_void,
) {
    if access == pg_sys::ObjectAccessType::OAT_FUNCTION_EXECUTE && active() && STRICT.with(Cell::get) {
        if let Some(reason) = strict_refusal(object_id) {
            crate::pg::errors::Raised::new(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("{reason}; it was reached through an object the statement uses (a type, a domain, an index, a policy)"),
            )
            .hint("pg_ask runs no volatile function while it reads with SQL it did not write itself.")
            .raise();
        }
    }
    if let Some(prev) = PREV_OBJECT_ACCESS {
        prev(access, class_id, object_id, sub_id, arg);
    }
}
