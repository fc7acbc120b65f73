//! SPI helpers shared by every feature: reading rows, relation names and ownership, the
//! schemas of the extensions pg_ask uses, facts read once per transaction (kept in
//! [`crate::pg::backend`]).

use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use crate::pg::backend::{self, Facts};
use crate::pg::errors::raise;

/// A row of a query's result, as SPI hands it to the `row` function of [`select_rows`].
pub(crate) type Row<'a> = pgrx::spi::SpiHeapTupleData<'a>;

/// What a query's rows are read as: `Ok(None)` skips a row on purpose (a NULL its caller has
/// no use for); a value that cannot be read as the type asked for is an error.
pub(crate) type RowResult<T> = Result<Option<T>, pgrx::spi::SpiError>;

/// The rows of a query through SPI, each turned into a value by `row`. A query SPI refuses,
/// or a value of another type than the one asked for, is an error: a caller raises it with
/// its SQLSTATE ([`crate::pg::errors::internal`] for pg_ask's own tables) or falls back in a
/// way it says (a NOTICE, a trace entry), never as "no rows". (An error PostgreSQL raises while
/// running the query aborts the statement as it always does.)
pub(crate) fn select_rows<T>(
    sql: &str,
    args: &[pgrx::datum::DatumWithOid],
    mut row: impl FnMut(Row<'_>) -> RowResult<T>,
) -> Result<Vec<T>, pgrx::spi::SpiError> {
    let _no_jit = no_jit();
    Spi::connect(|client| {
        let mut out = Vec::new();
        for r in client.select(sql, None, args)? {
            out.extend(row(r)?);
        }
        Ok(out)
    })
}

/// [`select_rows`] for a query run on every question: its plan is prepared once per backend
/// and kept (`SPI_keepplan`), so a question pays for its execution only. PostgreSQL's plan
/// cache re-plans it when an object it uses or the search path changes. `sql` comes from a
/// fixed set of texts (values go in `args`, never into the text), and `name` says which one,
/// for the reader.
pub(crate) fn select_kept<T>(
    name: &'static str,
    sql: &str,
    types: &[pg_sys::PgOid],
    args: &[pgrx::datum::DatumWithOid],
    row: impl FnMut(Row<'_>) -> RowResult<T>,
) -> Result<Vec<T>, pgrx::spi::SpiError> {
    kept(name, sql, types, false, args, row)
}

/// [`select_kept`] run with its generic plan from the first execution. PostgreSQL's plan
/// cache plans a statement with parameters anew at each of its first five executions (a
/// custom plan for the values given) before it settles on the generic one; for the catalog
/// and memory reads of a question (`= ANY` of an array, through an index whatever its
/// values) the plans are the same, and planning one of them costs more than running it (about
/// 1 ms for the description of the candidate tables, at each of a new backend's first five
/// questions). Not for a read whose best plan depends on its values (a `LIMIT` given as a
/// parameter, a nearest-neighbour order).
pub(crate) fn select_generic<T>(
    name: &'static str,
    sql: &str,
    types: &[pg_sys::PgOid],
    args: &[pgrx::datum::DatumWithOid],
    row: impl FnMut(Row<'_>) -> RowResult<T>,
) -> Result<Vec<T>, pgrx::spi::SpiError> {
    let _generic = generic_plans();
    select_kept(name, sql, types, args, row)
}

/// A PostgreSQL backend-global variable set while the guard lives, put back as it was when it
/// drops (on an error too: the error unwinds through it). Set in the variable PostgreSQL reads,
/// not through the GUC machinery: nothing outside the statement sees it.
struct SetWhile<T: Copy>(*mut T, T);

impl<T: Copy> SetWhile<T> {
    /// # Safety
    /// `var` is a backend-global variable of PostgreSQL's, which only this backend's one
    /// thread reads and writes.
    unsafe fn new(var: *mut T, value: T) -> Self {
        // SAFETY: as the caller promises.
        unsafe {
            let was = *var;
            *var = value;
            Self(var, was)
        }
    }
}

impl<T: Copy> Drop for SetWhile<T> {
    fn drop(&mut self) {
        // SAFETY: as in `new`; the guard puts back what it found.
        unsafe { *self.0 = self.1 }
    }
}

/// JIT compilation off while the guard lives. pg_ask's own reads of the catalogs and of its
/// tables are small, but the planner's estimates of their recursive parts can be large (a walk
/// of view dependencies estimated at half a million rows, a cost of eight million), and past
/// `jit_above_cost` PostgreSQL compiles the plan's expressions with LLVM first: measured at
/// 580 ms for one guard read that runs in 1 to 9 ms without it. A kept plan re-planned at
/// execution is re-planned with it off too.
fn no_jit() -> SetWhile<bool> {
    // SAFETY: `jit_enabled` is a backend-global bool the planner reads.
    unsafe { SetWhile::new(&raw mut pg_sys::jit_enabled, false) }
}

/// `plan_cache_mode` set to `force_generic_plan` while the guard lives, read by the plan cache
/// at each execution.
fn generic_plans() -> SetWhile<std::ffi::c_int> {
    // SAFETY: `plan_cache_mode` is a backend-global int the plan cache reads.
    unsafe { SetWhile::new(&raw mut pg_sys::plan_cache_mode, pg_sys::PlanCacheMode::PLAN_CACHE_MODE_FORCE_GENERIC_PLAN as std::ffi::c_int) }
}

/// A writing statement with a kept plan (see [`select_kept`]), and the rows it returns
/// (`RETURNING`, `SELECT ... FOR UPDATE`), in a snapshot that sees the transaction's writes.
pub(crate) fn write_kept<T>(
    name: &'static str,
    sql: &str,
    types: &[pg_sys::PgOid],
    args: &[pgrx::datum::DatumWithOid],
    row: impl FnMut(Row<'_>) -> RowResult<T>,
) -> Result<Vec<T>, pgrx::spi::SpiError> {
    kept(name, sql, types, true, args, row)
}

fn kept<T>(
    name: &'static str,
    sql: &str,
    types: &[pg_sys::PgOid],
    writes: bool,
    args: &[pgrx::datum::DatumWithOid],
    mut row: impl FnMut(Row<'_>) -> RowResult<T>,
) -> Result<Vec<T>, pgrx::spi::SpiError> {
    let _no_jit = no_jit();
    Spi::connect_mut(|client| {
        let _ = name;
        if !backend::with(|b| b.plans.borrow().contains_key(sql)) {
            let plan = if writes { client.prepare_mut(sql, types)? } else { client.prepare(sql, types)? };
            backend::with(|b| b.plans.borrow_mut().insert(sql.to_string(), plan.keep()));
        }
        backend::with(|b| {
            let plans = b.plans.borrow();
            let plan = plans.get(sql).expect("kept above");
            let rows = if writes { client.update(plan, None, args)? } else { client.select(plan, None, args)? };
            let mut out = Vec::new();
            for r in rows {
                out.extend(row(r)?);
            }
            Ok(out)
        })
    })
}

/// A relation's name as `regclass` prints it (qualified when not on the search_path).
pub(crate) fn relname(rel: pg_sys::Oid) -> String {
    Spi::get_one_with_args::<String>("SELECT $1::pg_catalog.regclass::pg_catalog.text", &[rel.into()])
        .ok()
        .flatten()
        .unwrap_or_else(|| format!("{rel:?}"))
}

/// `rel` schema-qualified and quoted, for SQL text that must not depend on the search path
/// (such as statements run as the extension's owner, whose search path is pinned).
pub(crate) fn qualified_relname(rel: pg_sys::Oid) -> String {
    Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) FROM pg_catalog.pg_class c
           JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[rel.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| format!("{rel:?}"))
}

/// The current role's name.
pub(crate) fn current_user() -> String {
    Spi::get_one::<String>("SELECT pg_catalog.current_user()::pg_catalog.text").ok().flatten().unwrap_or_default()
}

/// Whether the current role owns `rel` (or is a member of its owner).
pub(crate) fn owns(rel: pg_sys::Oid) -> bool {
    Spi::get_one_with_args::<bool>(
        "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE') FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[rel.into()],
    )
    .ok()
    .flatten()
    .unwrap_or(false)
}

/// `f` over this transaction's facts (forgotten when a new transaction asks).
pub(crate) fn per_transaction<R>(f: impl FnOnce(&mut Facts) -> R) -> R {
    let lxid = local_transaction_id();
    backend::with(|b| {
        let mut facts = b.facts.borrow_mut();
        if facts.lxid != lxid {
            *facts = Facts { lxid, ..Facts::default() };
        }
        f(&mut facts)
    })
}

/// This backend's local transaction id (PostgreSQL 17 moved it into the virtual transaction
/// id).
fn local_transaction_id() -> pg_sys::LocalTransactionId {
    // SAFETY: MyProc is the backend's own PGPROC, set for the backend's whole life.
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    let lxid = unsafe { (*pg_sys::MyProc).lxid };
    #[cfg(feature = "pg17")]
    // SAFETY: as above.
    let lxid = unsafe { (*pg_sys::MyProc).vxid.lxid };
    lxid
}

/// The schema an extension lives in, quoted, for schema-qualified operators.
pub(crate) fn ext_schema(ext: &'static str) -> String {
    if let Some(known) = per_transaction(|facts| facts.schemas.iter().find(|(e, _)| *e == ext).map(|(_, s)| s.clone())) {
        return known;
    }
    let schema = Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
           JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace WHERE e.extname OPERATOR(pg_catalog.=) $1",
        &[ext.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| {
        raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("extension {ext} is not installed"),
            "CREATE EXTENSION pg_ask CASCADE installs it.",
        )
    });
    per_transaction(|facts| facts.schemas.push((ext, schema.clone())));
    schema
}

/// The schemas of the session's search path, by name (unquoted), in order, read from the
/// backend's resolved path without a query; with `implicit`, also those searched without being
/// named (`pg_catalog`, the temporary schema), as name resolution sees them. The one reader of
/// the search path: callers quote the names as their use needs.
pub(crate) fn search_path(implicit: bool) -> Vec<String> {
    let mut out = Vec::new();
    // SAFETY: fetch_search_path returns a freshly palloc'd list of namespace oids;
    // get_namespace_name a palloc'd C string or NULL for a namespace dropped meanwhile.
    unsafe {
        let list = pg_sys::fetch_search_path(implicit);
        if list.is_null() {
            return out;
        }
        for i in 0..(*list).length as usize {
            let oid = (*(*list).elements.add(i)).oid_value;
            let name = pg_sys::get_namespace_name(oid);
            if !name.is_null() {
                out.push(std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned());
            }
        }
        pg_sys::list_free(list);
    }
    out
}

/// A vector in pgvector's text form, `[x,y,...]`.
pub(crate) fn vector_text(v: &[f32]) -> String {
    format!("[{}]", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// Runs `f` with `search_path` set to `schema` (when there is one), and puts the
/// caller's back afterwards (an error aborts the transaction, which undoes the local setting).
pub(crate) fn in_schema<R>(schema: Option<&str>, f: impl FnOnce() -> R) -> R {
    let Some(s) = schema else { return f() };
    let saved = Spi::get_one::<String>("SELECT pg_catalog.current_setting('search_path')").ok().flatten().unwrap_or_default();
    let set = |value: &str| {
        Spi::run_with_args("SELECT pg_catalog.set_config('search_path', $1, true)", &[value.into()]).unwrap_or_else(|e| {
            raise(
                PgSqlErrorCode::ERRCODE_INVALID_SCHEMA_NAME,
                e.to_string(),
                "Check the schema name (an evaluation suite's, or a verified query's).",
            )
        })
    };
    set(&pg_ask_core::sqltext::quote_ident(s));
    let out = f();
    set(&saved);
    out
}

/// A failed read or write of pg_ask's own tables, raised with its SQLSTATE (XX000) and a hint
/// ([`crate::pg::errors::internal`]) naming what could not be read.
pub(crate) trait OrRaise<T> {
    fn or_raise(self, what: &str) -> T;
}

impl<T> OrRaise<T> for Result<T, pgrx::spi::SpiError> {
    fn or_raise(self, what: &str) -> T {
        self.unwrap_or_else(|e| crate::pg::errors::internal(what, e).raise())
    }
}
