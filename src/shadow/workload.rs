//! InConDB workloads in the database: `ask.load_workload()`, and the per-backend cache of
//! parsed workloads.

use crate::pg::errors::raise;
use crate::pg::identity::{as_memory_owner, owned_by_caller, role_oid_sql, role_sql};
use pg_ask_core::shadow::workload::Workload;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(crate) fn internal(what: &str, e: impl std::fmt::Display) -> ! {
    crate::pg::errors::internal(what, e).raise()
}

/// Loading workloads and running benchmarks creates scratch schemas: the caller needs CREATE
/// on the database, as for any schema.
pub(crate) fn require_create_on_database(what: &str) {
    let ok = Spi::get_one::<bool>("SELECT pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE')").ok().flatten();
    if ok != Some(true) {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to {what}"),
            "Benchmarks create scratch schemas: the role needs CREATE on the database (GRANT CREATE ON DATABASE ...).",
        );
    }
}

pub(crate) fn parse_workload(name: &str, spec: &Value, nl: Option<&Value>) -> Workload {
    Workload::from_json(name, spec, nl).unwrap_or_else(|e| {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("workload {name:?} cannot be loaded: {e}"),
            "A workload is InConDB's JSON object (create_tables, insert, delete, update, select by category); its NL twin may be given as nl, or both as {\"sql\": ..., \"nl\": ...}.",
        )
    })
}

/// Load (or replace) a workload in InConDB's JSON format. `spec` is the `*_sql.json` object,
/// or `{"sql": ..., "nl": ...}`; `nl` the aligned `*_nl.json` object for the NL encoding.
/// Statements in MySQL's dialect are translated; what cannot be translated is skipped with a
/// NOTICE. Returns a summary.
#[pg_extern(volatile, parallel_unsafe)]
pub(crate) fn load_workload(name: &str, spec: JsonB, nl: default!(Option<JsonB>, "NULL")) -> JsonB {
    require_create_on_database("load a workload");
    if name.trim().is_empty() {
        raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, "the workload needs a name", "");
    }
    let (sql, nl) = match (&spec.0, nl) {
        (Value::Object(o), None) if o.contains_key("sql") && !o.contains_key("create_tables") => {
            (o["sql"].clone(), o.get("nl").cloned().filter(|v| !v.is_null()))
        }
        (_, nl) => (spec.0.clone(), nl.map(|j| j.0)),
    };
    let w = parse_workload(name, &sql, nl.as_ref());
    let (translated, skipped) = w.translation_counts();
    for (i, c) in w.skipped().enumerate() {
        if i < 20 {
            let why = match &c.translation {
                pg_ask_core::shadow::workload::Translation::Skipped { reason, .. } => reason.clone(),
                _ => String::new(),
            };
            notice!("pg_ask: workload {name}: skipped {:?} #{}: {why}", c.kind, c.index);
        }
    }
    if skipped > 20 {
        notice!("pg_ask: workload {name}: {} more statements skipped", skipped - 20);
    }
    if !w.unknown_keys.is_empty() {
        notice!("pg_ask: workload {name}: ignored keys {}", w.unknown_keys.join(", "));
    }
    let tables = w.create_tables.iter().filter(|c| c.sql().is_some()).count();
    let selects: BTreeMap<String, usize> = w.selects.iter().map(|(k, v)| (k.as_str().to_string(), v.len())).collect();
    let summary = json!({
        "name": name,
        "tables": tables,
        "inserts": w.inserts.len(),
        "deletes": w.deletes.len(),
        "updates": w.updates.len(),
        "selects": selects,
        "translated": translated,
        "skipped": skipped,
        "nl": nl.is_some(),
    });
    // A workload belongs to the role that loaded it: only that role (or a superuser) replaces it.
    let read =
        format!("SELECT {}, loaded_by::pg_catalog.text FROM ask.workloads WHERE name OPERATOR(pg_catalog.=) $1", role_oid_sql("loaded_by"));
    let owner = as_memory_owner(|| Spi::get_two_with_args::<pgrx::pg_sys::Oid, String>(&read, &[name.into()]));
    match owner {
        Ok((owner, Some(by))) if !owned_by_caller(owner.unwrap_or(pgrx::pg_sys::Oid::INVALID)) => raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("workload {name:?} belongs to role {by}"),
            "Load yours under another name; a workload is replaced only by the role that loaded it, or a superuser.",
        ),
        Ok(_) | Err(pgrx::spi::Error::InvalidPosition) => {}
        Err(e) => internal("could not read the workload", e),
    }
    // SAFETY: a catalog lookup for the current user, and the backend's session user id.
    let (superuser, session) = unsafe { (pgrx::pg_sys::superuser(), pgrx::pg_sys::GetSessionUserId()) };
    let caller = crate::pg::identity::caller();
    let store = format!(
        "INSERT INTO ask.workloads (name, spec, nl, statements, translated, skipped, loaded_by) VALUES ($1, $2, $3, $4, $5, $6, {caller})
         ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, nl = EXCLUDED.nl, statements = EXCLUDED.statements,
             translated = EXCLUDED.translated, skipped = EXCLUDED.skipped, loaded_at = now(), loaded_by = EXCLUDED.loaded_by
         WHERE $7 OR workloads.loaded_by OPERATOR(pg_catalog.=) {caller} OR workloads.loaded_by OPERATOR(pg_catalog.=) {session}",
        caller = role_sql(8),
        session = role_sql(9)
    );
    as_memory_owner(|| {
        Spi::run_with_args(
            &store,
            &[
                name.into(),
                JsonB(sql).into(),
                nl.map(JsonB).into(),
                ((translated + skipped) as i32).into(),
                (translated as i32).into(),
                (skipped as i32).into(),
                superuser.into(),
                caller.into(),
                session.into(),
            ],
        )
        .unwrap_or_else(|e| internal("could not store the workload", e))
    });
    notice!("pg_ask: workload {name}: {translated} statements translated, {skipped} skipped");
    JsonB(summary)
}

pub(crate) fn workload(name: &str) -> std::rc::Rc<Workload> {
    let row = as_memory_owner(|| {
        Spi::get_three_with_args::<JsonB, JsonB, String>(
            "SELECT spec, nl, loaded_at::text FROM ask.workloads WHERE name = $1",
            &[name.into()],
        )
    });
    let (spec, nl, loaded_at) = match row {
        Ok((Some(spec), nl, Some(at))) => (spec, nl, at),
        _ => raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("workload {name:?} does not exist"),
            "Load it first with ask.load_workload(name, spec).",
        ),
    };
    crate::pg::backend::with(|b| {
        let mut cache = b.workloads.borrow_mut();
        if let Some((at, w)) = cache.get(name) {
            if *at == loaded_at {
                return w.clone();
            }
        }
        let w = std::rc::Rc::new(parse_workload(name, &spec.0, nl.as_ref().map(|j| &j.0)));
        cache.insert(name.to_string(), (loaded_at, w.clone()));
        w
    })
}
