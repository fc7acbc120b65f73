//! The schema selection memory's state as a selection reads it: whether one was built, for
//! which schemas, whether it holds the current embedder's embeddings, and its version; and the
//! cleaning of rows whose relation or schema was dropped.

use std::collections::HashSet;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;

use crate::pg::identity::as_memory_owner;
use crate::pg::spi::OrRaise;

/// The memory's version, read as a writing statement (whose snapshot sees this transaction's
/// own writes); with `lock`, its row locked until the transaction ends, as the memory's own
/// writes lock it through their trigger: what this backend then writes is all that moves it
/// on, so it knows what the memory holds after its writes.
pub(super) fn memory_version(lock: bool) -> Option<i64> {
    let sql =
        if lock { "SELECT version FROM ask.schema_memory_version FOR UPDATE" } else { "SELECT version FROM ask.schema_memory_version" };
    as_memory_owner(|| crate::pg::spi::write_kept("the memory's version", sql, &[], &[], |r| r.get::<i64>(1)))
        .or_raise("could not read the schema selection memory's version")
        .pop()
}

/// Lock the memory's version row as [`memory_version`] with `lock` does, unless another
/// transaction holds it: then `false`, at once.
pub(super) fn try_lock_version() -> bool {
    as_memory_owner(|| {
        crate::pg::spi::write_kept(
            "the memory's version, if free",
            "SELECT version FROM ask.schema_memory_version FOR UPDATE SKIP LOCKED",
            &[],
            &[],
            |r| r.get::<i64>(1),
        )
    })
    .or_raise("could not read the schema selection memory's version")
    .pop()
    .is_some()
}

/// Delete the rows of relations and schemas that no longer exist. Not in a read-only
/// transaction.
pub(super) fn forget_dropped() -> usize {
    const DROPPED: [(&str, &str); 2] = [
        (
            "forget dropped tables",
            "DELETE FROM ask.schema_memory_tables m WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = m.relid)
             RETURNING relid",
        ),
        (
            "forget dropped schemas",
            "DELETE FROM ask.schema_memory_schemas m WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace n WHERE n.oid = m.nspid)
             RETURNING nspid",
        ),
    ];
    as_memory_owner(|| {
        let mut forgotten = 0;
        for (what, sql) in DROPPED {
            forgotten += crate::pg::spi::write_kept(what, sql, &[], &[], |_| Ok(Some(())))?.len();
        }
        if crate::pg::version::sql_at_least("0.2.0") {
            crate::pg::spi::write_kept(
                "forget dropped changed relations",
                "DELETE FROM ask.schema_memory_dirty d
                  WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) d.relid) RETURNING relid",
                &[],
                &[],
                |_| Ok(Some(())),
            )?;
        }
        Ok::<_, pgrx::spi::SpiError>(forgotten)
    })
    .or_raise("could not clean the schema selection memory")
}

/// What the memory holds, read once per selection.
pub(super) struct MemoryState {
    /// A memory was built (by anyone) in this database.
    pub(super) exists: bool,
    /// The quoted names of the schemas it was built for (under their current names).
    pub(super) indexed: HashSet<String>,
    /// It holds an embedding made by the current provider and model.
    pub(super) usable: bool,
    /// Its version (ask.schema_memory_version), moved on by every write to it.
    pub(super) version: i64,
}

/// The memory's state, for `embedder` (the current provider and model).
pub(super) fn memory_state(embedder: Option<&(String, String)>) -> MemoryState {
    let args: [DatumWithOid; 2] = [embedder.map(|(p, _)| p.clone()).into(), embedder.map(|(_, m)| m.clone()).into()];
    // The version exists since 0.2.0's SQL objects; before ALTER EXTENSION UPDATE, none (-1):
    // nothing found fresh is kept.
    let which = if crate::pg::version::sql_at_least("0.2.0") { &MEMORY_STATE_SQL } else { &MEMORY_STATE_SQL_0_1 };
    let row = as_memory_owner(|| {
        crate::pg::spi::select_kept(
            "schema memory state",
            which,
            &[pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTOID), pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTOID)],
            &args,
            |r| {
                Ok(Some(MemoryState {
                    exists: r.get::<bool>(1)?.unwrap_or(false),
                    indexed: r.get::<Vec<String>>(2)?.unwrap_or_default().into_iter().collect(),
                    usable: r.get::<bool>(3)?.unwrap_or(false),
                    version: r.get::<i64>(4)?.unwrap_or(-1),
                }))
            },
        )
    })
    .or_raise("could not read the schema selection memory's state")
    .pop();
    // One row, always: a query of aggregates and sub-selects without FROM.
    row.unwrap_or_else(|| crate::pg::errors::internal("could not read the schema selection memory's state", "no row").raise())
}

/// What [`memory_state`] reads, with the memory's version (0.2.0) or without it (0.1.0).
const MEMORY_STATE: &str = "SELECT EXISTS (SELECT 1 FROM ask.schema_memory_schemas),
                    ARRAY(SELECT pg_catalog.quote_ident(n.nspname) FROM ask.schema_memory_schemas s
                          JOIN pg_catalog.pg_namespace n ON n.oid = s.nspid),
                    $1::text IS NOT NULL AND EXISTS (
                        SELECT 1 FROM ask.schema_memory_tables
                        WHERE embedding IS NOT NULL AND embedding_provider = $1::text AND embedding_model IS NOT DISTINCT FROM $2::text
                        UNION ALL
                        SELECT 1 FROM ask.schema_memory_schemas
                        WHERE embedding IS NOT NULL AND embedding_provider = $1::text AND embedding_model IS NOT DISTINCT FROM $2::text),
                    {version}";

static MEMORY_STATE_SQL: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| MEMORY_STATE.replace("{version}", "(SELECT version FROM ask.schema_memory_version)"));
static MEMORY_STATE_SQL_0_1: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| MEMORY_STATE.replace("{version}", "-1::bigint"));
