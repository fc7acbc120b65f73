//! The function allow-list itself: which functions generated SQL may call (PostgreSQL's
//! built-ins but those that run SQL given as text, and the functions a superuser lists in
//! `ask.allowed_functions`), read by the statement walk (`super::functions`) and by the
//! function manager's hook (`super::trusted`).

use std::ffi::CStr;

use pgrx::pg_sys;

/// Built-in functions that run SQL passed to them as text, which would escape every check made
/// on the statement itself.
const RUNS_SQL_TEXT: &[&str] = &[
    "query_to_xml",
    "query_to_xmlschema",
    "query_to_xml_and_xmlschema",
    "cursor_to_xml",
    "cursor_to_xmlschema",
    "ts_stat",
    "ts_rewrite",
    "table_to_xml",
    "table_to_xmlschema",
    "table_to_xml_and_xmlschema",
    "schema_to_xml",
    "schema_to_xmlschema",
    "schema_to_xml_and_xmlschema",
    "database_to_xml",
    "database_to_xmlschema",
    "database_to_xml_and_xmlschema",
];

/// Stable built-ins whose call other sessions can observe while it runs: they open a relation
/// named by their argument (its lock shows in `pg_locks`) or assign the transaction an id
/// (`pg_stat_activity.backend_xid`). Code another role wrote (a view's body, a policy, a
/// domain's CHECK) that calls one with a value it read could signal that value out, so none of
/// them starts while pg_ask plans and runs SQL it did not write.
const SEEN_BY_OTHER_SESSIONS: &[&str] = &[
    "pg_get_viewdef",
    "pg_get_ruledef",
    "pg_get_triggerdef",
    "pg_get_indexdef",
    "pg_get_constraintdef",
    "pg_get_expr",
    "pg_get_partkeydef",
    "pg_get_partition_constraintdef",
    "pg_get_statisticsobjdef",
    "pg_get_statisticsobjdef_columns",
    "pg_get_statisticsobjdef_expressions",
    "pg_get_serial_sequence",
    "pg_get_replica_identity_index",
    "txid_current",
    "pg_current_xact_id",
    "pg_relation_is_updatable",
    "pg_column_is_updatable",
    "pg_get_object_address",
];

/// Why a built-in may not start in a strict scope although it is stable: see
/// [`SEEN_BY_OTHER_SESSIONS`].
///
/// # Safety
/// Catalog lookups: inside a transaction, on the backend's thread.
pub(crate) unsafe fn seen_by_other_sessions(func_id: pg_sys::Oid) -> Option<String> {
    if u32::from(func_id) >= pg_sys::FirstNormalObjectId {
        return None;
    }
    let name = text(pg_sys::get_func_name(func_id));
    SEEN_BY_OTHER_SESSIONS
        .contains(&name.as_str())
        .then(|| format!("{name}() would run, a built-in whose call other sessions can see (a lock it takes, a transaction id)"))
}

/// Volatile built-ins a write of `ask.do()` may run whatever brings them in: random numbers and
/// clocks (defaults such as `gen_random_uuid()`): none changes anything but the rows written.
/// Not `nextval`, whose advance other roles see whatever becomes of the write: only the calls
/// the write's check approved run ([`super::planned`]).
const HARMLESS_IN_WRITES: &[&str] = &["gen_random_uuid", "random", "random_normal", "clock_timestamp", "timeofday", "statement_timestamp"];

/// Whether the built-in `func_id` may run in a write although it is volatile: one of
/// [`HARMLESS_IN_WRITES`], or one of PostgreSQL's own trigger functions (foreign keys' checks
/// and actions, a deferred unique check, `tsvector_update_trigger`).
///
/// # Safety
/// Catalog lookups: inside a transaction, on the backend's thread.
pub(crate) unsafe fn harmless_in_writes(func_id: pg_sys::Oid) -> bool {
    if u32::from(func_id) >= pg_sys::FirstNormalObjectId {
        return false;
    }
    pg_sys::get_func_rettype(func_id) == pg_sys::TRIGGEROID || HARMLESS_IN_WRITES.contains(&text(pg_sys::get_func_name(func_id)).as_str())
}

/// `ask.allowed_functions` entries as (schema, name), folded as PostgreSQL folds unquoted names.
fn parse_allowed(entries: &[String]) -> Vec<(String, String)> {
    let fold = |part: &str| {
        let part = part.trim();
        match part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => part.to_lowercase(),
        }
    };
    entries
        .iter()
        .filter_map(|e| {
            let (schema, name) = e.split_once('.')?;
            Some((fold(schema), fold(name)))
        })
        .collect()
}

/// `ask.allowed_functions` as (schema, name) pairs, read now.
pub(crate) fn allowed_entries() -> Vec<(String, String)> {
    parse_allowed(&crate::pg::gucs::allowed_functions())
}

unsafe fn text(p: *mut std::ffi::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// `Some(reason)` when `func_id` may not be called by generated SQL.
pub(crate) unsafe fn refusal(func_id: pg_sys::Oid, allowed: &[(String, String)]) -> Option<String> {
    let name = text(pg_sys::get_func_name(func_id));
    let schema = text(pg_sys::get_namespace_name(pg_sys::get_func_namespace(func_id)));
    // A listed name stands for a superuser's function or an extension's, not for an overload
    // another role with CREATE on the schema added under the same name.
    if allowed.iter().any(|(s, n)| *s == schema && *n == name) && listed_may_be(func_id) {
        return None;
    }
    let builtin = u32::from(func_id) < pg_sys::FirstNormalObjectId;
    if builtin && !RUNS_SQL_TEXT.contains(&name.as_str()) {
        return None;
    }
    let qualified = format!("{}.{}", pg_ask_core::sqltext::quote_ident(&schema), pg_ask_core::sqltext::quote_ident(&name));
    Some(if builtin {
        format!("the query calls {qualified}, which runs SQL given as text")
    } else {
        format!("the query calls {qualified}, which is not a built-in function nor listed in ask.allowed_functions")
    })
}

/// Whether a function whose name is listed in `ask.allowed_functions` is one the list may
/// stand for: owned by a superuser, or a member of an extension.
unsafe fn listed_may_be(func_id: pg_sys::Oid) -> bool {
    let tuple = pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::PROCOID as _, pg_sys::Datum::from(func_id));
    if tuple.is_null() {
        return false;
    }
    let owner = (*(pg_sys::GETSTRUCT(tuple) as *mut pg_sys::FormData_pg_proc)).proowner;
    pg_sys::ReleaseSysCache(tuple);
    pg_sys::superuser_arg(owner) || pg_sys::getExtensionOfObject(pg_sys::ProcedureRelationId, func_id) != pg_sys::InvalidOid
}

#[cfg(test)]
mod tests {
    #[test]
    fn allowed_entries_fold_like_postgres() {
        let got = super::parse_allowed(&["public.Similarity".into(), " \"My Schema\".\"F\" ".into(), "nodot".into()]);
        assert_eq!(got, vec![("public".into(), "similarity".into()), ("My Schema".into(), "F".into())]);
    }
}
