//! Reading the description of the tables the calling role may read, cached per backend.
//!
//! The cache is part of the backend's state ([`crate::pg::backend`]), keyed by the current user
//! and kept current from what PostgreSQL announces:
//!
//! * a change of one relation (its columns, keys, privileges, a rename, a new or dropped
//!   relation: relcache invalidations, which carry the relation's oid and reach every
//!   backend) marks that relation stale, and the next read describes again only the stale
//!   relations and those whose foreign keys reference them;
//! * a change of a schema or of role membership, or an invalidation of every relation, marks
//!   the whole description stale: it is read again;
//! * comments: an event trigger turns COMMENT ON TABLE/COLUMN/VIEW into a relcache
//!   invalidation of the commented relation, and COMMENT ON SCHEMA into one of `pg_namespace`,
//!   since a schema's comment is part of the schema's description in the selection memory.
//!
//! A question with nothing stale reads no catalog at all.

use pg_ask_core::ask::HostError;
use pg_ask_core::schema::Table;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::JsonB;
use std::collections::BTreeSet;
use std::rc::Rc;

use crate::pg::backend::{self, Described};

#[cfg(any(test, feature = "pg_test"))]
mod tests;

const DESCRIBE_TABLES: &str = include_str!("../../sql/describe_tables.sql");

/// The tables, as (schema, name), that may differ between the description of `generation`
/// and the current one (dropped, changed or new), when the current one was read from that one
/// by reading some relations again; `None` when it was read whole or from another generation.
pub fn changed_since(generation: u64) -> Option<Vec<(String, String)>> {
    backend::with(|b| {
        b.last_change.borrow().as_ref().filter(|(from, _)| *from == generation && from + 1 == b.generation.get()).map(|(_, t)| t.clone())
    })
}

/// The number of times this backend read the catalog description; caches built from
/// [`readable_tables`] compare it to know when to rebuild.
pub fn generation() -> u64 {
    backend::with(|b| b.generation.get())
}

/// The filter of a read of the relations that changed: a semi-join the planner runs through
/// pg_class's oid index, not a scan of every relation.
const ONLY_THESE: &str = "AND c.oid OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest($1::pg_catalog.oid[]) UNION \
     SELECT f.conrelid FROM pg_catalog.pg_constraint f \
      WHERE f.contype OPERATOR(pg_catalog.=) 'f' AND f.confrelid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[]))";

/// [`DESCRIBE_TABLES`] for the relations given as `$1`.
static ONLY_THESE_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| DESCRIBE_TABLES.replace("-- @only-these", ONLY_THESE));

/// Reads the description of the relations `oids` (and of those referencing them), or of every
/// readable relation when `None`: (oid, schema, name, table) in the order shown.
fn describe(oids: Option<Vec<pg_sys::Oid>>) -> Result<Vec<(pg_sys::Oid, String, String, Table)>, String> {
    let read = match oids {
        None => Spi::get_one::<JsonB>(DESCRIBE_TABLES),
        // Read after every catalog change, for the relations it touched: the plan is kept.
        Some(oids) => crate::pg::spi::select_kept(
            "describe these tables",
            &ONLY_THESE_SQL,
            &[pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDARRAYOID)],
            &[oids.into()],
            |r| r.get::<JsonB>(1),
        )
        .map(|mut rows| rows.pop()),
    };
    let json = match read {
        Ok(Some(JsonB(v))) => v,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(e.to_string()),
    };
    let serde_json::Value::Array(items) = json else { return Err("unexpected catalog description: not an array".into()) };
    items
        .into_iter()
        .map(|item| {
            let oid = item["oid"].as_u64().and_then(|o| u32::try_from(o).ok()).ok_or("unexpected catalog description: no oid")?;
            let (Some(nsp), Some(rel)) = (item["sort"][0].as_str(), item["sort"][1].as_str()) else {
                return Err("unexpected catalog description: no sort key".to_string());
            };
            let (nsp, rel) = (nsp.to_owned(), rel.to_owned());
            let table: Table = serde_json::from_value(item).map_err(|e| format!("unexpected catalog description: {e}"))?;
            Ok((pg_sys::Oid::from(oid), nsp, rel, table))
        })
        .collect()
}

/// Tables (and views) the current role may SELECT, with only the columns it may SELECT.
///
/// A failed read of the catalog is an internal error (XX000) naming what could not be read.
pub fn readable_tables() -> Result<Rc<Vec<Table>>, HostError> {
    // SAFETY: reads the backend's current user id.
    let user = unsafe { pg_sys::GetUserId() };
    let same_user = backend::with(|b| b.description.borrow().as_ref().is_some_and(|d| d.user == user));
    let all = backend::with(|b| b.all_stale.get()) || !same_user;
    let stale: Vec<pg_sys::Oid> = backend::with(|b| b.stale.take()).into_iter().map(pg_sys::Oid::from).collect();
    if !all && stale.is_empty() {
        return Ok(backend::with(|b| b.description.borrow().as_ref().map(|d| d.tables.clone()).unwrap_or_default()));
    }
    // Clear before reading: an invalidation that arrives while the query runs marks again, so
    // the next call reads what it announced.
    let from = backend::with(|b| {
        b.all_stale.set(false);
        b.last_change.take();
        b.generation.replace(b.generation.get() + 1)
    });
    let read = if all { describe(None) } else { describe(Some(stale.clone())) };
    let fresh = match read {
        Ok(f) => f,
        Err(e) => {
            backend::with(|b| b.all_stale.set(true));
            return Err(HostError::internal(format!("could not read the description of the readable tables: {e}")));
        }
    };
    let described = if all {
        let (keys, tables): (Vec<_>, Vec<_>) = fresh.into_iter().map(|(o, n, r, t)| ((o, n, r), t)).unzip();
        Described { user, keys, tables: Rc::new(tables) }
    } else {
        let mut d = backend::with(|b| b.description.take()).expect("a description for this user");
        let tables = Rc::make_mut(&mut d.tables);
        // Out with the stale relations and those read again, in with what was read.
        let gone: BTreeSet<u32> = stale.iter().chain(fresh.iter().map(|f| &f.0)).map(|o| o.to_u32()).collect();
        let mut i = 0;
        let mut changed = Vec::new();
        d.keys.retain(|(oid, _, _)| {
            let keep = !gone.contains(&oid.to_u32());
            if !keep {
                let t = tables.remove(i);
                changed.push((t.schema, t.name));
            } else {
                i += 1;
            }
            keep
        });
        changed.extend(fresh.iter().map(|(_, _, _, t)| (t.schema.clone(), t.name.clone())));
        backend::with(|b| b.last_change.replace(Some((from, changed))));
        for (oid, nsp, rel, table) in fresh {
            let at = d.keys.partition_point(|(_, n, r)| (n.as_str(), r.as_str()) < (nsp.as_str(), rel.as_str()));
            d.keys.insert(at, (oid, nsp, rel));
            tables.insert(at, table);
        }
        d
    };
    let tables = described.tables.clone();
    backend::with(|b| b.description.replace(Some(described)));
    Ok(tables)
}

/// The schemas on the caller's `search_path` that exist (pg_catalog among them, which holds
/// no described table), quoted as the table descriptions quote them. Read from the path
/// PostgreSQL has already resolved for this backend: no query per `ask()`.
pub fn search_path_schemas() -> Vec<String> {
    crate::pg::spi::search_path(true)
        .into_iter()
        .map(|name| {
            let c = std::ffi::CString::new(name).expect("a schema name has no NUL");
            // SAFETY: quote_identifier reads the NUL-terminated name and returns it or a
            // palloc'd quoted copy, as PostgreSQL's quote_ident() does.
            unsafe { std::ffi::CStr::from_ptr(pg_sys::quote_identifier(c.as_ptr())).to_string_lossy().into_owned() }
        })
        .collect()
}

/// Announce a change of a relation's description (used by the COMMENT event trigger).
#[pg_extern(name = "_invalidate_relation", volatile, strict, parallel_unsafe)]
pub(crate) fn invalidate_relation(rel: pg_sys::Oid) {
    // SAFETY: queues a relcache invalidation for `rel`, sent to every backend at commit.
    unsafe { pg_sys::CacheInvalidateRelcacheByRelid(rel) };
}
