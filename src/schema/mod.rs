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
use pg_ask_core::schema::{Column, ForeignKey, Table};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::collections::BTreeSet;
use std::rc::Rc;

use crate::pg::backend::{self, Described};

#[cfg(any(test, feature = "pg_test"))]
mod tests;

const DESCRIBE_TABLES: &str = include_str!("../../sql/describe_tables.sql");

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

/// The filter of a read of exactly the relations given as `$1` (no others).
const EXACTLY_THESE: &str = "AND c.oid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[])";

/// [`DESCRIBE_TABLES`] for exactly the relations given as `$1`.
static EXACTLY_THESE_SQL: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| DESCRIBE_TABLES.replace("-- @only-these", EXACTLY_THESE));

/// The filter that leaves out a Citus node's shards: Citus hides them from catalog queries
/// only while `citus.show_shards_for_app_name_prefixes` (any session's to set) says so.
const NOT_SHARDS: &str = "AND NOT pg_catalog.relation_is_a_known_shard(c.oid::pg_catalog.regclass)";

/// [`DESCRIBE_TABLES`] and [`ONLY_THESE_SQL`] where Citus is installed.
static DESCRIBE_TABLES_CITUS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| DESCRIBE_TABLES.replace("-- @not-shards", NOT_SHARDS));
static ONLY_THESE_SQL_CITUS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| ONLY_THESE_SQL.replace("-- @not-shards", NOT_SHARDS));
static EXACTLY_THESE_SQL_CITUS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| EXACTLY_THESE_SQL.replace("-- @not-shards", NOT_SHARDS));

/// One relation of [`DESCRIBE_TABLES`]'s result: (oid, schema, name, table), the schema and
/// name unquoted (the order shown).
fn described(r: crate::pg::spi::Row<'_>) -> crate::pg::spi::RowResult<Result<(pg_sys::Oid, String, String, Table), String>> {
    let (Some(oid), Some(nsp), Some(rel), Some(schema), Some(name), Some(kind)) =
        (r.get::<i64>(1)?, r.get::<String>(2)?, r.get::<String>(3)?, r.get::<String>(4)?, r.get::<String>(5)?, r.get::<String>(6)?)
    else {
        return Ok(Some(Err("unexpected catalog description: a relation without oid, name or kind".into())));
    };
    let Ok(oid) = u32::try_from(oid) else { return Ok(Some(Err(format!("unexpected catalog description: oid {oid}")))) };
    let names = r.get::<Vec<String>>(8)?.unwrap_or_default();
    let types = r.get::<Vec<String>>(9)?.unwrap_or_default();
    let not_null = r.get::<Vec<bool>>(10)?.unwrap_or_default();
    let comments = r.get::<Vec<Option<String>>>(11)?.unwrap_or_default();
    if types.len() != names.len() || not_null.len() != names.len() || comments.len() != names.len() {
        return Ok(Some(Err(format!("unexpected catalog description: the columns of {schema}.{name} differ in number"))));
    }
    let columns = names
        .into_iter()
        .zip(types)
        .zip(not_null)
        .zip(comments)
        .map(|(((name, data_type), not_null), comment)| Column { name, data_type, not_null, comment })
        .collect();
    let mut foreign_keys = Vec::new();
    for key in r.get::<Vec<String>>(13)?.unwrap_or_default() {
        match serde_json::from_str::<(Vec<String>, String, Vec<String>)>(&key) {
            Ok((columns, references, ref_columns)) => foreign_keys.push(ForeignKey { columns, references, ref_columns }),
            Err(e) => return Ok(Some(Err(format!("unexpected catalog description: a foreign key of {schema}.{name}: {e}")))),
        }
    }
    let table = Table {
        schema,
        name,
        kind,
        comment: r.get::<String>(7)?,
        columns,
        primary_key: r.get::<Vec<String>>(12)?.unwrap_or_default(),
        foreign_keys,
    };
    Ok(Some(Ok((pg_sys::Oid::from(oid), nsp, rel, table))))
}

/// Reads the description of the relations `oids` (and of those referencing them), or of every
/// readable relation when `None`: (oid, schema, name, table) in the order shown. Both plans
/// are kept: the whole read is what a new backend's first question makes.
fn describe(oids: Option<Vec<pg_sys::Oid>>) -> Result<Vec<(pg_sys::Oid, String, String, Table)>, String> {
    let citus = crate::pg::citus::installed();
    let read = match oids {
        None => crate::pg::spi::select_kept(
            "describe the readable tables",
            if citus { &DESCRIBE_TABLES_CITUS } else { DESCRIBE_TABLES },
            &[],
            &[],
            described,
        ),
        Some(oids) => crate::pg::spi::select_kept(
            "describe these tables",
            if citus { &ONLY_THESE_SQL_CITUS } else { &ONLY_THESE_SQL },
            &[pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDARRAYOID)],
            &[oids.into()],
            described,
        ),
    };
    read.map_err(|e| e.to_string())?.into_iter().collect()
}

/// The description of those of the relations `oids` the current role may SELECT (with only
/// the columns it may SELECT), with their oids, in the order shown; nothing is cached. What a
/// selection from the stored index reads of the catalog: its candidates, and no more.
pub fn describe_exactly(oids: Vec<pg_sys::Oid>) -> Result<Vec<(pg_sys::Oid, Table)>, HostError> {
    if oids.is_empty() {
        return Ok(Vec::new());
    }
    let sql: &str = if crate::pg::citus::installed() { &EXACTLY_THESE_SQL_CITUS } else { &EXACTLY_THESE_SQL };
    let read = crate::pg::spi::select_generic(
        "describe exactly these tables",
        sql,
        &[pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDARRAYOID)],
        &[oids.into()],
        described,
    )
    .map_err(|e| HostError::internal(format!("could not read the description of the candidate tables: {e}")))?;
    read.into_iter()
        .map(|r| {
            r.map(|(oid, _, _, t)| (oid, t))
                .map_err(|e| HostError::internal(format!("could not read the description of the candidate tables: {e}")))
        })
        .collect()
}

/// [`describe_exactly`], taking what this backend described before for the current user
/// and has heard no change of since (see `described_one_by_one` in [`crate::pg::backend`]).
pub fn describe_exactly_kept(oids: Vec<pg_sys::Oid>) -> Result<Vec<(pg_sys::Oid, Table)>, HostError> {
    // SAFETY: reads the backend's current user id.
    let user = unsafe { pg_sys::GetUserId() };
    let (mut out, missing): (Vec<(pg_sys::Oid, Table)>, Vec<pg_sys::Oid>) = backend::with(|b| {
        let mut kept = b.described_one_by_one.borrow_mut();
        if kept.as_ref().is_none_or(|(u, _)| *u != user) {
            *kept = Some((user, Default::default()));
        }
        let known = &kept.as_ref().expect("set above").1;
        let mut out = Vec::new();
        let mut missing = Vec::new();
        for o in oids {
            match known.get(&o.to_u32()) {
                Some(t) => out.push((o, t.clone())),
                None => missing.push(o),
            }
        }
        (out, missing)
    });
    let read = describe_exactly(missing)?;
    backend::with(|b| {
        if let Some((u, known)) = b.described_one_by_one.borrow_mut().as_mut() {
            if *u == user {
                known.extend(read.iter().map(|(o, t)| (o.to_u32(), t.clone())));
            }
        }
    });
    out.extend(read);
    Ok(out)
}

/// The readable tables whose (unquoted) name is one of `names`, in any schema: from this
/// backend's description when it has one for the current user (brought up to date as
/// [`readable_tables`] does), otherwise read for those names alone, so that a statement's
/// few tables do not cost a new backend the description of its whole catalog.
pub fn tables_named(names: &[String]) -> Result<Vec<Table>, HostError> {
    // SAFETY: reads the backend's current user id.
    let user = unsafe { pg_sys::GetUserId() };
    let current = backend::with(|b| !b.all_stale.get() && b.description.borrow().as_ref().is_some_and(|d| d.user == user));
    if current {
        let tables = readable_tables()?;
        return Ok(tables.iter().filter(|t| names.contains(&pg_ask_core::selection::unquote(&t.name))).cloned().collect());
    }
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let args: [pgrx::datum::DatumWithOid; 1] = [names.to_vec().into()];
    let oids = crate::pg::spi::select_kept(
        "relations by name",
        "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.name[])",
        &[pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTARRAYOID)],
        &args,
        |r| r.get::<pg_sys::Oid>(1),
    )
    .map_err(|e| HostError::internal(format!("could not read the relations a statement names: {e}")))?;
    Ok(describe_exactly(oids)?.into_iter().map(|(_, t)| t).collect())
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
    backend::with(|b| {
        b.all_stale.set(false);
        b.generation.set(b.generation.get() + 1)
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
        d.keys.retain(|(oid, _, _)| {
            let keep = !gone.contains(&oid.to_u32());
            if keep {
                i += 1;
            } else {
                tables.remove(i);
            }
            keep
        });
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
