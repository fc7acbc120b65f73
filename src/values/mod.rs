//! The value memory in PostgreSQL: `ask.index_values()` and `ask.similar_values()`.
//!
//! Privileges: a column's values are only ever read or shown to a role that may SELECT that
//! column; building the memory of a table takes ownership of it; tables with row-level
//! security are skipped unless their owner opts in (`allow_rls => true`), since the memory
//! would show values of rows the policies hide. The memory tables themselves are closed to
//! PUBLIC and read as the extension's owner after those checks.

use pgrx::pg_sys;
use pgrx::prelude::*;

pub(crate) mod build;
pub(crate) mod correct;
pub(crate) mod listed;
#[cfg(any(test, feature = "pg_test"))]
mod roles_tests;
pub(crate) mod search;
#[cfg(any(test, feature = "pg_test"))]
mod tests;

use crate::pg::identity::as_memory_owner;

/// Values embedded and written per batch (interrupts are checked between batches).
pub(crate) const BATCH: usize = 512;

/// Columns with at most this many values are searched exactly (every cosine and trigram
/// similarity computed over the column's rows, found through the primary key: about 2.5 ms at
/// 500 values, 8.6 ms at 2,000); larger ones get their own partial indexes.
pub(crate) const EXACT_SCAN_MAX: i64 = 500;

/// pgvector's HNSW indexes halfvec of at most 4,000 dimensions.
pub(crate) const MAX_INDEX_DIMS: usize = 4_000;

/// Neighbours taken from each ranking (embedding, trigram) per lookup.
pub(crate) const NEIGHBOURS: i64 = 10;

/// Nearest neighbours a large column's HNSW index is asked for (at least; pgvector's default
/// `hnsw.ef_search` is 40, and an HNSW scan returns no more than that).
pub(crate) const BEAM: i64 = 40;

/// Sort-order neighbours of the phrase taken on each side, in `lower(value)` and in its reverse.
pub(crate) const SORT_NEIGHBOURS: i64 = 10;

/// A column of the value memory, as stored in ask.value_columns.
#[derive(Debug, Clone)]
pub(crate) struct MemoryColumn {
    pub id: i64,
    pub distinct: i64,
    pub provider: String,
    pub model: Option<String>,
    pub dims: Option<i32>,
    pub own_indexes: bool,
    /// The column had more values than `ask.max_values_per_column`: the memory holds some.
    pub capped: bool,
    /// The table's owner opted in to remembering its values although it has row-level security.
    pub allow_rls: bool,
}

impl MemoryColumn {
    /// The memory holds all of the column's values, and they are few enough to be listed in
    /// the prompt and put to the LLM all at once (`ask.max_listed_values`).
    pub fn all_listed(&self) -> bool {
        !self.capped && !self.own_indexes && self.distinct > 0 && self.distinct <= crate::pg::gucs::max_listed_values()
    }
}

/// Whether a literal's embedding under the current settings can be compared with a column's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EmbeddingUse {
    /// Same provider and model: embed the literal.
    Usable,
    /// The column holds no embeddings, or embeddings are off: trigrams only.
    Off,
    /// The column was embedded by another provider or model: comparing would be meaningless.
    Mismatch(String),
}

pub(crate) fn embedding_use(col: &MemoryColumn) -> EmbeddingUse {
    let Some((provider, model)) = crate::pg::gucs::current_embedder() else { return EmbeddingUse::Off };
    if col.dims.is_none() {
        return EmbeddingUse::Off;
    }
    if col.provider == provider && col.model.as_deref() == Some(model.as_str()) {
        EmbeddingUse::Usable
    } else {
        EmbeddingUse::Mismatch(format!(
            "its values were embedded by {} model {} ({} dimensions), the current setting is {provider} model {model}",
            col.provider,
            col.model.as_deref().unwrap_or("?"),
            col.dims.unwrap_or(0)
        ))
    }
}

pub(crate) const MISMATCH_HINT: &str =
    "Rebuild the column's memory with ask.index_values() under the current settings, or set ask.embedding_provider and ask.embedding_model back to the ones it was built with.";

/// Whether row-level security hides rows of `relid` from `role` now: policies are enabled on
/// the table and apply to the role (not its owner unless forced, not a superuser, not BYPASSRLS).
/// Values remembered from such a table are shown to the role only when the owner opted in
/// (`allow_rls`): the memory holds values of every row, whatever the policies say.
pub(crate) fn rls_hides(relid: pg_sys::Oid, role: pg_sys::Oid) -> bool {
    // SAFETY: a catalog lookup; with noError it returns instead of raising for a role that may
    // not bypass security (`row_security = off`).
    let result = unsafe { pg_sys::check_enable_rls(relid, role, true) };
    result as u32 == pg_sys::CheckEnableRlsResult::RLS_ENABLED
}

/// Whether the caller may be shown what the memory holds of `col`'s table, as far as
/// row-level security goes, at the time of reading.
pub(crate) fn shown_to_caller(relid: pg_sys::Oid, col: &MemoryColumn) -> bool {
    // SAFETY: reads the backend's current user id.
    col.allow_rls || !rls_hides(relid, unsafe { pg_sys::GetUserId() })
}

/// The memory of a column, if it was indexed (read as the memory's owner: check the caller's
/// privilege on the column first).
pub(crate) fn memory_column(relid: pg_sys::Oid, attnum: i16) -> Option<MemoryColumn> {
    as_memory_owner(|| {
        Spi::connect(|client| {
            let rows = client
                .select(
                    "SELECT id, distinct_values, embedding_provider, embedding_model, dims, own_indexes, capped, allow_rls
                     FROM ask.value_columns WHERE relid OPERATOR(pg_catalog.=) $1 AND attnum OPERATOR(pg_catalog.=) $2",
                    None,
                    &[relid.into(), attnum.into()],
                )
                .ok()?;
            let r = rows.into_iter().next()?;
            Some(MemoryColumn {
                id: r.get::<i64>(1).ok()??,
                distinct: r.get::<i64>(2).ok()??,
                provider: r.get::<String>(3).ok()??,
                model: r.get::<String>(4).ok()?,
                dims: r.get::<i32>(5).ok()?,
                own_indexes: r.get::<bool>(6).ok()??,
                capped: r.get::<bool>(7).ok()??,
                allow_rls: r.get::<bool>(8).ok()??,
            })
        })
    })
}
