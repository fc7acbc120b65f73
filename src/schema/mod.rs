//! Reading the description of the tables the calling role may read, cached per backend.
//!
//! The cache is keyed by the current user and dropped whenever PostgreSQL announces a change
//! that could alter the description: relation, column, constraint, schema or role-membership
//! catalog changes (syscache invalidations, which reach every backend), and comments (an event
//! trigger turns COMMENT ON TABLE/COLUMN/VIEW into a relcache invalidation of the commented
//! relation, and COMMENT ON SCHEMA into one of `pg_namespace`, since a schema's comment is part
//! of the schema's description in the selection memory).

use pg_ask_core::schema::{self, Table};
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::JsonB;
use std::cell::{Cell, RefCell};

#[cfg(any(test, feature = "pg_test"))]
mod tests;

const DESCRIBE_TABLES: &str = include_str!("../../sql/describe_tables.sql");

thread_local! {
    static CACHE: RefCell<Option<(pg_sys::Oid, Vec<Table>)>> = const { RefCell::new(None) };
    static VALID: Cell<bool> = const { Cell::new(false) };
    /// Counts the reads of the catalog: a change means the description may have changed.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
}

/// The number of times this backend read the catalog description; caches built from
/// [`readable_tables`] compare it to know when to rebuild.
pub fn generation() -> u64 {
    GENERATION.with(|g| g.get())
}

#[pg_guard]
unsafe extern "C-unwind" fn on_syscache_change(_arg: pg_sys::Datum, _cache: std::ffi::c_int, _hash: u32) {
    VALID.with(|v| v.set(false));
}

#[pg_guard]
unsafe extern "C-unwind" fn on_relcache_change(_arg: pg_sys::Datum, _relid: pg_sys::Oid) {
    VALID.with(|v| v.set(false));
}

/// Register the invalidation callbacks; once per backend, from `_PG_init`.
pub fn init() {
    use pg_sys::SysCacheIdentifier::*;
    // SAFETY: registering plain functions with PostgreSQL's invalidation machinery at load
    // time, as extensions do; they only flip a backend-local flag.
    unsafe {
        for cache in [RELOID, ATTNUM, CONSTROID, NAMESPACEOID, AUTHMEMMEMROLE] {
            pg_sys::CacheRegisterSyscacheCallback(cache as _, Some(on_syscache_change), pg_sys::Datum::from(0));
        }
        pg_sys::CacheRegisterRelcacheCallback(Some(on_relcache_change), pg_sys::Datum::from(0));
    }
}

/// Tables (and views) the current role may SELECT, with only the columns it may SELECT.
pub fn readable_tables() -> Result<Vec<Table>, String> {
    // SAFETY: reads the backend's current user id.
    let user = unsafe { pg_sys::GetUserId() };
    let hit = VALID.with(|v| v.get()) && CACHE.with(|c| c.borrow().as_ref().is_some_and(|(u, _)| *u == user));
    if hit {
        return Ok(CACHE.with(|c| c.borrow().as_ref().map(|(_, t)| t.clone()).unwrap_or_default()));
    }
    // Mark valid before reading: an invalidation that arrives while the query runs clears it
    // again, so the next call reads afresh.
    VALID.with(|v| v.set(true));
    GENERATION.with(|g| g.set(g.get() + 1));
    let tables = match Spi::get_one::<JsonB>(DESCRIBE_TABLES) {
        Ok(Some(JsonB(v))) => schema::from_json(v),
        Ok(None) => Ok(Vec::new()),
        Err(e) => Err(e.to_string()),
    };
    match &tables {
        Ok(t) => CACHE.with(|c| *c.borrow_mut() = Some((user, t.clone()))),
        Err(_) => VALID.with(|v| v.set(false)),
    }
    tables
}

/// The schemas on the caller's `search_path` that exist (pg_catalog among them, which holds
/// no described table), quoted as the table descriptions quote them. Read from the path
/// PostgreSQL has already resolved for this backend: no query per `ask()`.
pub fn search_path_schemas() -> Vec<String> {
    let mut oids = [pg_sys::InvalidOid; 64];
    // SAFETY: fills at most 64 entries of the backend's resolved search path (namespace.c
    // keeps it current); the names come from the syscache, palloc'd in the current context.
    let n = unsafe { pg_sys::fetch_search_path_array(oids.as_mut_ptr(), oids.len() as i32) };
    oids[..(n.max(0) as usize).min(oids.len())]
        .iter()
        .filter_map(|&oid| unsafe {
            let name = pg_sys::get_namespace_name(oid);
            (!name.is_null()).then(|| std::ffi::CStr::from_ptr(pg_sys::quote_identifier(name)).to_string_lossy().into_owned())
        })
        .collect()
}

/// Announce a change of a relation's description (used by the COMMENT event trigger).
#[pg_extern(name = "_invalidate_relation", volatile, strict, parallel_unsafe)]
fn invalidate_relation(rel: pg_sys::Oid) {
    // SAFETY: queues a relcache invalidation for `rel`, sent to every backend at commit.
    unsafe { pg_sys::CacheInvalidateRelcacheByRelid(rel) };
}

pgrx::extension_sql!(
    r#"
CREATE FUNCTION _comment_changed() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT classid, objid FROM pg_catalog.pg_event_trigger_ddl_commands()
             WHERE classid IN ('pg_catalog.pg_class'::regclass, 'pg_catalog.pg_namespace'::regclass) LOOP
        PERFORM ask._invalidate_relation(CASE WHEN r.classid = 'pg_catalog.pg_class'::regclass THEN r.objid
                                              ELSE 'pg_catalog.pg_namespace'::regclass::oid END);
    END LOOP;
END $$;
CREATE EVENT TRIGGER ask_comment_changed ON ddl_command_end WHEN TAG IN ('COMMENT')
    EXECUTE FUNCTION _comment_changed();
"#,
    name = "comment_invalidation",
    requires = [invalidate_relation]
);
