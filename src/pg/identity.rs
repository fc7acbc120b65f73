//! Running as another role: the value and schema memories are read and written as the
//! extension's owner after the caller's privileges were checked.

use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use std::ffi::CStr;

use super::spi::per_transaction;
use crate::pg::errors::raise;

/// Run `f` as the owner of ask.value_memory (the extension's owner), then switch back, also
/// when `f` raises an error (PostgreSQL restores the user id at (sub)transaction abort).
pub(crate) fn as_memory_owner<R>(f: impl FnOnce() -> R) -> R {
    as_memory_owner_with(&[], f)
}

/// [`as_memory_owner`] with `settings` (name, value) in effect for `f` only, whatever the
/// caller's session has: they are put back with the identity.
pub(crate) fn as_memory_owner_with<R>(settings: &[(&CStr, &CStr)], f: impl FnOnce() -> R) -> R {
    let owner = per_transaction(|facts| facts.owner).unwrap_or_else(|| {
        let owner = Spi::get_one::<pg_sys::Oid>(
            "SELECT c.relowner FROM pg_catalog.pg_class c
             WHERE c.oid OPERATOR(pg_catalog.=) 'ask.value_memory'::pg_catalog.regclass::pg_catalog.oid",
        )
        .ok()
        .flatten()
        .unwrap_or_else(|| raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, "ask.value_memory is missing", "Reinstall the extension."));
        per_transaction(|facts| facts.owner = Some(owner));
        owner
    });
    as_user_with(owner, settings, f)
}

/// Set `name` to `value` until the current GUC nest level closes.
///
/// # Safety
/// Call inside a GUC nest level the caller closes.
unsafe fn set_for_nest(name: &CStr, value: &CStr) {
    pg_sys::set_config_option(
        name.as_ptr(),
        value.as_ptr(),
        pg_sys::GucContext::PGC_USERSET,
        pg_sys::GucSource::PGC_S_SESSION,
        pg_sys::GucAction::GUC_ACTION_SAVE,
        true,
        0,
        false,
    );
}

/// Run `f` as `owner`, then switch back (at error, transaction abort restores the user).
///
/// As PostgreSQL's own maintenance commands do when they run as a table's owner, the switch is
/// a security-restricted operation with `search_path` pinned to `pg_catalog, pg_temp` for its
/// duration: the caller's search path cannot put a function or operator of its own in front
/// of the ones the queries mean, which would then run with the owner's rights.
pub(crate) fn as_user<R>(owner: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    as_user_with(owner, &[], f)
}

fn as_user_with<R>(owner: pg_sys::Oid, settings: &[(&CStr, &CStr)], f: impl FnOnce() -> R) -> R {
    let mut saved_user = pg_sys::Oid::INVALID;
    let mut saved_ctx = 0;
    // SAFETY: the same switch PostgreSQL's own RI triggers and maintenance commands make; the
    // previous identity and settings are put back below, and at error by (sub)transaction
    // abort, which also unwinds the GUC nest level.
    let nest = unsafe {
        pg_sys::GetUserIdAndSecContext(&mut saved_user, &mut saved_ctx);
        pg_sys::SetUserIdAndSecContext(
            owner,
            saved_ctx | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32 | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
        );
        let nest = pg_sys::NewGUCNestLevel();
        set_for_nest(c"search_path", c"pg_catalog, pg_temp");
        for (name, value) in settings {
            set_for_nest(name, value);
        }
        nest
    };
    let out = f();
    // SAFETY: closes the GUC nest level opened above and puts back the user and security
    // context saved there, from the backend's own thread.
    unsafe {
        pg_sys::AtEOXact_GUC(false, nest);
        pg_sys::SetUserIdAndSecContext(saved_user, saved_ctx);
    }
    out
}

/// Whether the calling role may change an object pg_ask recorded as belonging to `recorded`
/// (a workload, a benchmark run, a suite), by OID: a superuser, or the role itself (as session
/// user or as current user after SET ROLE). A role created with a dropped role's name is another
/// OID. Call it as the caller, before any switch.
pub(crate) fn owned_by_caller(recorded: pg_sys::Oid) -> bool {
    // SAFETY: catalog lookup and the backend's own user ids, from its thread.
    unsafe { pg_sys::superuser() || recorded == pg_sys::GetSessionUserId() || recorded == pg_sys::GetUserId() }
}

/// The role pg_ask records as a row's (a shadowed table's, a workload's, a run's, a column's
/// indexer): the current user, read as the caller, before any switch to the extension's owner.
pub(crate) fn caller() -> pg_sys::Oid {
    // SAFETY: reads the backend's current user id, from its thread.
    unsafe { pg_sys::GetUserId() }
}

/// The columns that name a row's role (suites, replays, workloads, runs, shadowed tables, the
/// value memory's columns) keep it by OID (`regrole`) since 0.2.0; 0.1.0's tables, which the
/// library writes until `ALTER EXTENSION pg_ask UPDATE`, kept the name. SQL for the role whose
/// OID is parameter `$n`, in such a column's type.
pub(crate) fn role_sql(n: usize) -> String {
    if crate::pg::version::sql_at_least("0.2.0") {
        format!("${n}::pg_catalog.regrole")
    } else {
        format!("pg_catalog.pg_get_userbyid(${n})")
    }
}

/// SQL for the current role in such a column's type, to compare with it (as the caller).
pub(crate) fn current_role_sql() -> &'static str {
    if crate::pg::version::sql_at_least("0.2.0") {
        "pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))"
    } else {
        "current_user"
    }
}

/// SQL reading such a column as its role's OID (NULL for a name that no role has now).
pub(crate) fn role_oid_sql(column: &str) -> String {
    if crate::pg::version::sql_at_least("0.2.0") {
        format!("{column}::pg_catalog.oid")
    } else {
        format!("pg_catalog.to_regrole(pg_catalog.quote_ident({column}))::pg_catalog.oid")
    }
}

/// `sql` with every `{me}` standing for the current role, as [`current_role_sql`] writes it.
pub(crate) fn mine(sql: &str) -> String {
    sql.replace("{me}", current_role_sql())
}
