//! The tables whose stored embeddings are nearest to a question, through a vector index.
//!
//! The memory's `embedding` column holds vectors of any dimension (one embedder's, then
//! another's), so it cannot be indexed as it is. `ask.index_schema()` gives each dimension the
//! current embedder's rows have an HNSW index of their own on the embedding cast to that
//! dimension (as `halfvec`, a partial index on `vector_dims(embedding)`), as the value memory
//! does per column; a question's nearest-neighbour read names the same expression and
//! predicate, so PostgreSQL reads that index instead of the distance of every stored
//! embedding (10 ms at 10,000 tables). Without the index (a memory built before it existed,
//! or more dimensions than HNSW takes) the same read scans, as before.
//!
//! A vector index is shared by every role's questions and grows every write of the memory:
//! only a superuser's `ask.index_schema()` adds one, for the dimension of the embedder in force
//! (its own session's or the server's); another role's embedder of another dimension, which
//! any role can point at a server of its own, gets none, and its reads compare without one.
//!
//! Only tables the caller may read whole (SELECT on the table), in a schema it may use, are
//! returned: the stored embeddings were made from whole descriptions (frequent values of every
//! column included), so a reader of some columns would learn from which tables come back what
//! was written in columns it may not read, and which unreadable tables lie nearer a question
//! than a readable one must not decide whether the readable one is listed. A reader of some
//! columns finds such a table by its words (the lexical index holds names and comments only). The filter is in the read, and pgvector's iterative scan in
//! distance order (pinned for the read with its limits, whatever the caller's session sets:
//! [`scan_settings`]) goes on past the tables filtered out.

use std::ffi::CStr;
use std::sync::OnceLock;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::PgOid::BuiltIn;

use pg_sys::BuiltinOid::{OIDOID, TEXTOID};

use crate::pg::identity::{as_memory_owner, as_memory_owner_with};
use crate::pg::spi::{ext_schema, vector_text, OrRaise};

/// The most dimensions pgvector's HNSW indexes `halfvec` with.
const MAX_INDEXED_DIMS: usize = 4000;

/// pgvector's settings for the nearest read, whatever the caller's session sets: an iterative
/// scan in distance order that goes on past the tables filtered out (up to 20,000 looked at,
/// in a memory budget of its own), so that the tables the caller may not read never take the
/// places of those it may. With a pgvector older than 0.8 (no iterative scan) the vector index
/// is not used for this read: every stored embedding of the dimension is compared (exact).
fn scan_settings() -> &'static [(&'static CStr, &'static CStr)] {
    const ITERATIVE: [(&CStr, &CStr); 5] = [
        (c"hnsw.iterative_scan", c"strict_order"),
        (c"hnsw.ef_search", c"40"),
        (c"hnsw.max_scan_tuples", c"20000"),
        (c"hnsw.scan_mem_multiplier", c"1"),
        (c"work_mem", c"16MB"),
    ];
    const EXACT: [(&CStr, &CStr); 2] = [(c"enable_indexscan", c"off"), (c"enable_bitmapscan", c"off")];
    static HAS_ITERATIVE: OnceLock<bool> = OnceLock::new();
    let has = *HAS_ITERATIVE.get_or_init(|| {
        // pgvector defines its settings when its library is loaded: by a call of one of its
        // functions.
        let vector = ext_schema("vector");
        let _ = as_memory_owner(|| pgrx::Spi::get_one::<i32>(&format!("SELECT {vector}.vector_dims('[1]'::{vector}.vector)")));
        // SAFETY: looks a setting up by name, from the backend's own thread.
        !unsafe { pg_sys::GetConfigOption(c"hnsw.iterative_scan".as_ptr(), true, false) }.is_null()
    });
    if has {
        &ITERATIVE
    } else {
        &EXACT
    }
}

/// The tables the memory embedded (current provider and model) nearest to the question that
/// `user` may read whole (SELECT on the table, in a schema it may use), at most `limit`.
pub(super) fn nearest(question: &[f32], embedder: &(String, String), user: pg_sys::Oid, limit: usize) -> Vec<pg_sys::Oid> {
    // The limit follows the tables wanted (`k` of ask.select_tables()): read up to the next
    // power of two, so that a caller's many `k`s keep a few dozen plans at most, not one each.
    let sql = nearest_sql(question.len(), limit.next_power_of_two());
    let args: [DatumWithOid; 4] = [vector_text(question).into(), embedder.0.clone().into(), embedder.1.clone().into(), user.into()];
    let settings = scan_settings();
    as_memory_owner_with(settings, || {
        crate::pg::spi::select_generic(
            "the nearest stored tables",
            &sql,
            &[BuiltIn(TEXTOID), BuiltIn(TEXTOID), BuiltIn(TEXTOID), BuiltIn(OIDOID)],
            &args,
            |r| r.get::<pg_sys::Oid>(1),
        )
    })
    .or_raise("could not read the schema selection memory's embeddings")
    .into_iter()
    .take(limit)
    .collect()
}

/// The read of the `limit` nearest tables to a question of `d` dimensions: `$1` the question's
/// vector as text, `$2` and `$3` the embedder's provider and model, `$4` the role whose
/// privileges filter them. The dimension and the limit are numbers, never the caller's text:
/// in the statement, so that the plan (an index scan) never depends on a parameter's value.
pub(super) fn nearest_sql(d: usize, limit: usize) -> String {
    let vector = ext_schema("vector");
    format!(
        "SELECT relid FROM ask.schema_memory_tables
          WHERE embedding IS NOT NULL AND {vector}.vector_dims(embedding) OPERATOR(pg_catalog.=) {d}
            AND embedding_provider OPERATOR(pg_catalog.=) $2 AND embedding_model IS NOT DISTINCT FROM $3
            AND pg_catalog.has_table_privilege($4, relid, 'SELECT')
            AND pg_catalog.has_schema_privilege($4, (SELECT c.relnamespace FROM pg_catalog.pg_class c
                                                      WHERE c.oid OPERATOR(pg_catalog.=) relid), 'USAGE')
          ORDER BY (embedding::{vector}.halfvec({d})) OPERATOR({vector}.<=>) (SELECT $1::{vector}.vector::{vector}.halfvec({d}))
          LIMIT {limit}"
    )
}

/// Give each dimension of the stored table embeddings of `embedder` its HNSW index, if it has
/// none, when the caller is a superuser. Run by `ask.index_schema()` (creating an index locks
/// the memory against writes while it is built; a question's refresh never does it). Any other
/// role's call adds none (an embedding server of its own may answer in any dimension, and each
/// index slows every role's writes and plans): its dimension is read without an index.
pub(super) fn index_embeddings(embedder: &(String, String)) {
    // SAFETY: a catalog lookup of the backend's current user id, from its thread, before any
    // switch to the memory's owner.
    if !unsafe { pg_sys::superuser() } {
        return;
    }
    let vector = ext_schema("vector");
    let args: [DatumWithOid; 2] = [embedder.0.clone().into(), embedder.1.clone().into()];
    let dims = as_memory_owner(|| {
        crate::pg::spi::select_rows(
            &format!(
                "SELECT DISTINCT {vector}.vector_dims(embedding) FROM ask.schema_memory_tables
                  WHERE embedding IS NOT NULL AND embedding_provider OPERATOR(pg_catalog.=) $1
                    AND embedding_model IS NOT DISTINCT FROM $2"
            ),
            &args,
            |r| r.get::<i32>(1),
        )
    })
    .or_raise("could not read the schema selection memory's embeddings");
    for d in dims.into_iter().filter(|&d| d > 0 && d as usize <= MAX_INDEXED_DIMS) {
        as_memory_owner(|| {
            // Looked up first: CREATE INDEX IF NOT EXISTS would tell the caller, in a NOTICE,
            // of an index it need not know about.
            let name = format!("schema_memory_tables_hnsw_{d}");
            if pgrx::Spi::get_one::<bool>(&format!("SELECT pg_catalog.to_regclass('ask.{name}') IS NOT NULL"))?.unwrap_or(false) {
                return Ok(());
            }
            pgrx::Spi::run(&format!(
                "CREATE INDEX {name} ON ask.schema_memory_tables
                 USING hnsw ((embedding::{vector}.halfvec({d})) {vector}.halfvec_cosine_ops)
                 WHERE {vector}.vector_dims(embedding) OPERATOR(pg_catalog.=) {d}"
            ))
        })
        .or_raise("could not index the schema selection memory's embeddings");
    }
}
