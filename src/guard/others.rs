//! The functions in another role's code that a read runs with the caller's privileges: the
//! query of another role's view (at every level of the views read) and the row-level security
//! policies of another role's table call their functions as the caller, in the caller's
//! session. Such code may call only what its owner may execute (`pg_read_file` in a view of a
//! role without the right would read the server's files with a reader's), and no built-in
//! whose result follows whoever calls it: other sessions' queries (`pg_stat_get_activity`,
//! `pg_stat_get_backend_activity`), this session's prepared statements, cursors, settings and
//! schemas. The views it reads that another role owns (a superuser's system views, a third
//! role's, the caller's) and their tables' policies run in the caller's session as part of
//! it: they may call only what the code's owner may execute, and nothing that follows the
//! caller either — who the caller is (`current_user`, `pg_has_role`, `has_table_privilege`,
//! `current_setting`) included: `pg_prepared_statements`, `pg_cursors`,
//! `information_schema.user_mapping_options` and a third role's `WHERE owner = current_user`
//! view show the caller's own, which the code's owner would not see reading them itself.
//! Built-ins leave no dependency in the catalog, so the stored trees are read and walked
//! (`sql/guard_others_code.sql`). The relations such code reads are held to its owner's
//! privileges by `sql/guard_invoker_views.sql`.

use std::ffi::c_void;

use pgrx::pg_sys;

/// Built-ins every role may execute whose rows or value follow the session that calls them:
/// the queries, locks and clients of other sessions, this session's prepared statements,
/// cursors, settings, search path (what it makes visible, what a name resolves to), temporary
/// schema and transaction counts. Names ending in `_`, and `to_reg`, stand for every built-in
/// they begin.
const FOLLOW_THE_CALLER: &[&str] = &[
    "pg_stat_get_activity",
    "pg_stat_get_progress_info",
    "pg_stat_get_backend_",
    "pg_stat_get_xact_",
    "pg_stat_get_wal_receiver",
    "pg_stat_get_subscription",
    "pg_stat_get_snapshot_timestamp",
    "pg_backend_pid",
    "pg_blocking_pids",
    "pg_safe_snapshot_blocking_pids",
    "pg_prepared_statement",
    "pg_cursor",
    "pg_show_all_settings",
    "pg_listening_channels",
    "pg_notification_queue_usage",
    "pg_trigger_depth",
    "pg_my_temp_schema",
    "current_schemas",
    "pg_current_snapshot",
    "txid_current_snapshot",
    "pg_current_xact_id_if_assigned",
    "txid_current_if_assigned",
    "inet_client_addr",
    "inet_client_port",
    "inet_server_addr",
    "inet_server_port",
    // The search path and this session's temporary schema, by what they make visible.
    "pg_table_is_visible",
    "pg_type_is_visible",
    "pg_function_is_visible",
    "pg_operator_is_visible",
    "pg_opclass_is_visible",
    "pg_opfamily_is_visible",
    "pg_collation_is_visible",
    "pg_conversion_is_visible",
    "pg_statistics_obj_is_visible",
    "pg_ts_parser_is_visible",
    "pg_ts_dict_is_visible",
    "pg_ts_template_is_visible",
    "pg_ts_config_is_visible",
    "to_reg",
    "pg_is_other_temp_schema",
];

/// Built-ins whose result is who the caller is, or what the caller may do or has set: another
/// role's own code may use them (its rows, by reader), the code beneath it of other owners may
/// not (their rows by reader are the caller's, not the code owner's).
const WHO_THE_CALLER_IS: &[&str] = &[
    "current_user",
    "session_user",
    "system_user",
    "current_schema",
    "current_setting",
    "getpgusername",
    "pg_has_role",
    "row_security_active",
    "has_",
];

/// Whether the built-in named `name` follows the session that calls it ([`FOLLOW_THE_CALLER`]),
/// and when `beneath`, who calls it too ([`WHO_THE_CALLER_IS`], `has_*_privilege`).
fn follows_the_caller(name: &str, beneath: bool) -> bool {
    let listed = |list: &[&str]| list.iter().any(|f| if f.ends_with('_') || *f == "to_reg" { name.starts_with(f) } else { name == *f });
    listed(FOLLOW_THE_CALLER) || (beneath && listed(WHO_THE_CALLER_IS) && (!name.starts_with("has_") || name.ends_with("_privilege")))
}

struct Walk {
    /// The owner of the code walked, or of the code it is beneath.
    owner: pg_sys::Oid,
    /// Code another owner's code reads ('beneath'), not that owner's own.
    beneath: bool,
    refused: Option<String>,
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn check(func_id: pg_sys::Oid, context: *mut c_void) -> bool {
    let walk = &mut *(context as *mut Walk);
    let name = std::ffi::CStr::from_ptr(pg_sys::get_func_name(func_id)).to_string_lossy().into_owned();
    if u32::from(func_id) < pg_sys::FirstNormalObjectId && follows_the_caller(&name, walk.beneath) {
        walk.refused = Some(format!("{name}(), whose result follows the session that calls it (yours)"));
        return true;
    }
    #[cfg(feature = "pg15")]
    let may = pg_sys::pg_proc_aclcheck(func_id, walk.owner, pg_sys::ACL_EXECUTE as pg_sys::AclMode);
    #[cfg(not(feature = "pg15"))]
    let may = pg_sys::object_aclcheck(pg_sys::ProcedureRelationId, func_id, walk.owner, pg_sys::ACL_EXECUTE as pg_sys::AclMode);
    if may != pg_sys::AclResult::ACLCHECK_OK {
        walk.refused = Some(format!("{name}(), which its owner may not execute (it would run with your privileges)"));
        return true;
    }
    false
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn walker(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    if (*node).type_ == pg_sys::NodeTag::T_Query {
        return pg_sys::query_tree_walker(node as *mut pg_sys::Query, Some(walker), context, 0);
    }
    // CURRENT_USER, SESSION_USER, CURRENT_ROLE, USER and CURRENT_SCHEMA are no function calls
    // before PostgreSQL 16.
    if (*node).type_ == pg_sys::NodeTag::T_SQLValueFunction && (*(context as *mut Walk)).beneath {
        use pg_sys::SQLValueFunctionOp as Op;
        let op = (*(node as *mut pg_sys::SQLValueFunction)).op;
        if matches!(
            op,
            Op::SVFOP_CURRENT_USER | Op::SVFOP_CURRENT_ROLE | Op::SVFOP_SESSION_USER | Op::SVFOP_USER | Op::SVFOP_CURRENT_SCHEMA
        ) {
            (*(context as *mut Walk)).refused = Some("the caller's name or schema (CURRENT_USER, SESSION_USER, CURRENT_SCHEMA)".into());
            return true;
        }
    }
    if pg_sys::check_functions_in_node(node, Some(check), context) {
        return true;
    }
    pg_sys::expression_tree_walker(node, Some(walker), context)
}

/// Why another role's view or policy among `relations` (and the views and policies they read)
/// may not run as `caller`: a function of its code named (see the module). A failed read
/// refuses.
pub(super) fn refusal(relations: &[pg_sys::Oid], caller: pg_sys::Oid) -> Option<String> {
    let oids = pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDARRAYOID);
    let oid = pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDOID);
    let code = super::trusted::paused(|| {
        crate::pg::spi::select_generic(
            "guard_others_code",
            include_str!("../../sql/guard_others_code.sql"),
            &[oids, oid],
            &[relations.to_vec().into(), caller.into()],
            |r| {
                Ok(Some((
                    r.get::<String>(1)?.unwrap_or_default(),
                    r.get::<String>(2)?.unwrap_or_default(),
                    r.get::<pg_sys::Oid>(3)?,
                    r.get::<String>(4)?.unwrap_or_default(),
                )))
            },
        )
    });
    let code = match code {
        Ok(code) => code,
        Err(e) => return Some(format!("the code of the views the statement reads could not be read: {e}")),
    };
    for (what, tree, owner, kind) in code {
        let (Ok(tree), Some(owner)) = (std::ffi::CString::new(tree), owner) else {
            return Some(format!("{what} could not be read"));
        };
        let mut walk = Walk { owner, beneath: kind == "beneath", refused: None };
        // SAFETY: a node tree PostgreSQL itself stored, read back into the current context;
        // catalog lookups of its functions, inside the transaction.
        unsafe {
            let node = pg_sys::stringToNode(tree.as_ptr()) as *mut pg_sys::Node;
            walker(node, &mut walk as *mut Walk as *mut c_void);
        }
        if let Some(why) = walk.refused {
            return Some(format!("{what} calls {why}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_session_followers_are_named_or_begun() {
        for name in
            ["pg_stat_get_activity", "pg_stat_get_backend_activity", "pg_stat_get_backend_pid", "pg_stat_get_xact_numscans", "pg_cursor"]
        {
            assert!(super::follows_the_caller(name, false), "{name}");
        }
        for name in [
            "pg_stat_get_numscans",
            "pg_stat_get_activityx",
            "current_schemax",
            "pg_cursorx",
            "lower",
            "current_user",
            "has_table_privilege",
        ] {
            assert!(!super::follows_the_caller(name, false), "{name}");
        }
        // Beneath another owner's code, who the caller is follows the caller too.
        for name in ["current_user", "current_setting", "pg_has_role", "has_table_privilege", "has_column_privilege", "pg_cursor"] {
            assert!(super::follows_the_caller(name, true), "{name}");
        }
        for name in ["has_fun", "lower", "pg_get_userbyid", "current_database"] {
            assert!(!super::follows_the_caller(name, true), "{name}");
        }
    }
}
