//! The value memory in PostgreSQL: `ask.index_values()` and `ask.similar_values()`.
//!
//! Privileges: a column's values are only ever read or shown to a role that may SELECT that
//! column; building the memory of a table takes ownership of it; tables with row-level
//! security are skipped unless their owner opts in (`allow_rls => true`), since the memory
//! would show values of rows the policies hide. The memory tables themselves are closed to
//! PUBLIC and read as the extension's owner after those checks.

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use crate::catalog::{self, relname, select_rows};
use crate::embeddings;
use crate::errors::raise;

/// Values embedded and written per batch (interrupts are checked between batches).
const BATCH: usize = 512;
/// Columns with at most this many values are searched exactly (every cosine and trigram
/// similarity computed over the column's rows, found through the primary key: about 2.5 ms at
/// 500 values, 8.6 ms at 2,000); larger ones get their own partial indexes.
pub(crate) const EXACT_SCAN_MAX: i64 = 500;
/// pgvector's HNSW indexes halfvec of at most 4,000 dimensions.
const MAX_INDEX_DIMS: usize = 4_000;
/// Neighbours taken from each ranking (embedding, trigram) per lookup.
pub(crate) const NEIGHBOURS: i64 = 10;
/// Nearest neighbours a large column's HNSW index is asked for (at least; pgvector's default
/// `hnsw.ef_search` is 40, and an HNSW scan returns no more than that).
const BEAM: i64 = 40;
/// Sort-order neighbours of the phrase taken on each side, in `lower(value)` and in its reverse.
const SORT_NEIGHBOURS: i64 = 10;

/// Run `f` as the owner of ask.value_memory (the extension's owner), then switch back, also
/// when `f` raises an error (PostgreSQL restores the user id at (sub)transaction abort).
pub(crate) fn as_memory_owner<R>(f: impl FnOnce() -> R) -> R {
    let owner = per_transaction(|facts| facts.owner).unwrap_or_else(|| {
        let owner = Spi::get_one::<pg_sys::Oid>("SELECT relowner FROM pg_catalog.pg_class WHERE oid = 'ask.value_memory'::regclass")
            .ok()
            .flatten()
            .unwrap_or_else(|| raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, "ask.value_memory is missing", "Reinstall the extension."));
        per_transaction(|facts| facts.owner = Some(owner));
        owner
    });
    as_user(owner, f)
}

/// Catalog facts every lookup needs, read once per transaction.
#[derive(Default)]
struct Facts {
    /// The transaction's local id (MyProc->lxid) the facts were read in.
    lxid: u32,
    /// The owner of ask.value_memory.
    owner: Option<pg_sys::Oid>,
    /// The quoted schema of each extension asked about (vector, pg_trgm).
    schemas: Vec<(&'static str, String)>,
}

thread_local! {
    static FACTS: std::cell::RefCell<Facts> = std::cell::RefCell::new(Facts::default());
}

/// `f` over this transaction's facts (forgotten when a new transaction asks).
fn per_transaction<R>(f: impl FnOnce(&mut Facts) -> R) -> R {
    // SAFETY: MyProc is the backend's own PGPROC, set for the backend's whole life.
    let lxid = unsafe { (*pg_sys::MyProc).lxid };
    FACTS.with(|c| {
        let mut facts = c.borrow_mut();
        if facts.lxid != lxid {
            *facts = Facts { lxid, ..Facts::default() };
        }
        f(&mut facts)
    })
}

/// Run `f` as `owner`, then switch back (at error, transaction abort restores the user).
fn as_user<R>(owner: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    let mut saved_user = pg_sys::Oid::INVALID;
    let mut saved_ctx = 0;
    // SAFETY: the same switch PostgreSQL's own RI triggers make; the previous identity is put
    // back below, and at error by transaction abort.
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut saved_user, &mut saved_ctx);
        pg_sys::SetUserIdAndSecContext(owner, saved_ctx | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32);
    }
    let out = f();
    unsafe { pg_sys::SetUserIdAndSecContext(saved_user, saved_ctx) };
    out
}

/// The schema an extension lives in, quoted, for schema-qualified operators.
pub(crate) fn ext_schema(ext: &'static str) -> String {
    if let Some(known) = per_transaction(|facts| facts.schemas.iter().find(|(e, _)| *e == ext).map(|(_, s)| s.clone())) {
        return known;
    }
    let schema = Spi::get_one_with_args::<String>(
        "SELECT quote_ident(n.nspname) FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = $1",
        &[ext.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| raise(PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT, format!("extension {ext} is not installed"), "CREATE EXTENSION pg_ask CASCADE installs it."));
    per_transaction(|facts| facts.schemas.push((ext, schema.clone())));
    schema
}

/// A vector in pgvector's text form, `[x,y,...]`.
pub(crate) fn vector_text(v: &[f32]) -> String {
    format!("[{}]", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// A text-like column of `rel` that the caller may read: (attnum, quoted name).
fn readable_text_column(rel: pg_sys::Oid, column: &str) -> (i16, String) {
    let row = Spi::get_three_with_args::<i16, String, bool>(
        "SELECT a.attnum, quote_ident(a.attname),
                pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT')
         FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = $1 AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped
           AND ask._text_base(a.atttypid) IS NOT NULL",
        &[rel.into(), column.into()],
    );
    match row {
        Ok((Some(attnum), Some(name), Some(true))) => (attnum, name),
        Ok((Some(_), Some(_), _)) => raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("permission denied for column {column}"), ""),
        _ => raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            format!("column \"{column}\" of {} is not a text-like column", relname(rel)),
            "The value memory holds text, varchar, char, citext and enum columns, and domains over them.",
        ),
    }
}

/// Build (or rebuild) the value memory of a table's text-like columns, or of the listed ones.
/// Returns the number of distinct values remembered.
#[pg_extern(name = "_index_values", volatile, parallel_unsafe)]
fn index_values(
    rel: pg_sys::Oid,
    columns: Option<Vec<String>>,
    allow_rls: bool,
) -> i64 {
    let (owner_ok, has_rls) = Spi::get_two_with_args::<bool, bool>(
        "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE'), c.relrowsecurity FROM pg_catalog.pg_class c WHERE c.oid = $1",
        &[rel.into()],
    )
    .unwrap_or((None, None));
    if owner_ok != Some(true) {
        raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("must be owner of table {} to index its values", relname(rel)), "");
    }
    if has_rls == Some(true) && !allow_rls {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("{} has row-level security: its values are not indexed", relname(rel)),
            "The memory would show values of rows that policies hide. If every role that may SELECT the column may see all its values, pass allow_rls => true.",
        );
    }
    let names: Vec<String> = match columns {
        Some(c) => c,
        None => select_rows(
            "SELECT a.attname::text FROM pg_catalog.pg_attribute a
             WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
               AND ask._text_base(a.atttypid) IS NOT NULL ORDER BY a.attnum",
            &[rel.into()],
            |r| r.get::<String>(1).ok().flatten(),
        ),
    };
    let mut total = 0i64;
    for name in names {
        total += remember_column(rel, &name, allow_rls, false).remembered;
    }
    total
}

/// What one column's (re)indexing did.
struct Remembered {
    remembered: i64,
    added: i64,
    removed: i64,
}

/// The embeddings in force: (provider, model), or None when `ask.embedding_provider = off`.
/// The local model is named by its directory.
pub(crate) fn current_embedder() -> Option<(String, String)> {
    use crate::gucs::EmbeddingProvider as P;
    match crate::gucs::embedding_provider() {
        P::Off => None,
        P::Local => Some((
            "local".into(),
            embeddings::model_dir().file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        )),
        P::OpenAi => Some(("openai".into(), crate::gucs::embedding_model())),
        P::Ollama => Some(("ollama".into(), crate::gucs::embedding_model())),
    }
}

/// A column of the value memory, as stored in ask.value_columns.
#[derive(Debug, Clone)]
pub(crate) struct MemoryColumn {
    pub id: i64,
    pub distinct: i64,
    pub provider: String,
    pub model: Option<String>,
    pub dims: Option<i32>,
    pub own_indexes: bool,
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
    let Some((provider, model)) = current_embedder() else { return EmbeddingUse::Off };
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

/// Drop a column's own indexes, if it has any.
fn drop_own_indexes(column_id: i64) {
    Spi::run(&format!(
        "DROP INDEX IF EXISTS ask.value_memory_c{column_id}_hnsw, ask.value_memory_c{column_id}_trgm, ask.value_memory_c{column_id}_rev"
    ))
    .unwrap();
}

/// Give a large column its own partial indexes: HNSW over its embeddings (as halfvec of its
/// dimension), pg_trgm GIN over its values, and a btree over its reversed lower-cased values
/// (sort neighbours from the end; the shared `value_memory_lower` serves them from the start).
/// Run as the memory's owner.
fn create_own_indexes(column_id: i64, dims: Option<i32>) {
    let vector = ext_schema("vector");
    let trgm = ext_schema("pg_trgm");
    Spi::run(&format!(
        "CREATE INDEX IF NOT EXISTS value_memory_c{column_id}_trgm ON ask.value_memory
         USING gin (value {trgm}.gin_trgm_ops) WHERE column_id = {column_id}"
    ))
    .unwrap();
    Spi::run(&format!(
        "CREATE INDEX IF NOT EXISTS value_memory_c{column_id}_rev ON ask.value_memory
         (reverse(lower(value)) COLLATE \"C\") WHERE column_id = {column_id}"
    ))
    .unwrap();
    if let Some(d) = dims {
        Spi::run(&format!(
            "CREATE INDEX IF NOT EXISTS value_memory_c{column_id}_hnsw ON ask.value_memory
             USING hnsw ((embedding::{vector}.halfvec({d})) {vector}.halfvec_cosine_ops) WHERE column_id = {column_id}"
        ))
        .unwrap();
    }
}

/// Embed one batch, checking that every vector has the column's dimension (set by the first
/// batch) and that the dimension can be indexed.
fn embed_batch(texts: &[&str], dims: &mut Option<usize>) -> Vec<Vec<f32>> {
    let vectors = embeddings::embed_texts(texts);
    if vectors.len() != texts.len() {
        raise(
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("the embedding provider returned {} vectors for {} texts", vectors.len(), texts.len()),
            "",
        );
    }
    for v in &vectors {
        let d = *dims.get_or_insert(v.len());
        if v.len() != d || d == 0 {
            raise(
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                format!("the embedding provider returned vectors of {} and {d} dimensions", v.len()),
                "Every value of a column must be embedded by the same model.",
            );
        }
        if d > MAX_INDEX_DIMS {
            raise(
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!("embeddings of {d} dimensions cannot be indexed (at most {MAX_INDEX_DIMS})"),
                "pgvector's HNSW index takes at most 4000 dimensions (as halfvec): choose a smaller ask.embedding_model (many OpenAI models accept fewer dimensions), use ask.embedding_provider = 'local', or 'off' for trigram matching only.",
            );
        }
    }
    vectors
}

/// Read a column's distinct values and bring its memory up to date: rebuilt from scratch, or
/// (`incremental`) only new values embedded and vanished ones dropped, frequencies updated.
/// An incremental update under other embedding settings than the column's rebuilds it.
fn remember_column(rel: pg_sys::Oid, name: &str, allow_rls: bool, incremental: bool) -> Remembered {
    let vector = ext_schema("vector");
    let (attnum, quoted) = readable_text_column(rel, name);
    let cap = crate::gucs::max_values_per_column();
    let distinct_sql = format!(
        "SELECT v, count(*)::bigint FROM (SELECT {quoted}::text AS v FROM {} WHERE {quoted} IS NOT NULL) s
         GROUP BY v ORDER BY count(*) DESC, v LIMIT {}",
        relname(rel),
        cap + 1
    );
    let mut values: Vec<(String, i64)> =
        select_rows(&distinct_sql, &[], |r| Some((r.get::<String>(1).ok()??, r.get::<i64>(2).ok()??)));
    let capped = values.len() as i64 > cap;
    values.truncate(cap as usize);
    let n = values.len();
    let embedder = current_embedder();
    let (provider, model) = match &embedder {
        Some((p, m)) => (p.clone(), Some(m.clone())),
        None => ("off".to_string(), None),
    };
    // The column's memory before this update: id, embedder and dimension.
    let before = as_memory_owner(|| {
        Spi::get_three_with_args::<i64, String, String>(
            "SELECT id, embedding_provider, coalesce(embedding_model, '') FROM ask.value_columns WHERE relid = $1 AND attnum = $2",
            &[rel.into(), attnum.into()],
        )
        .ok()
    });
    let same_embedder = matches!(&before, Some((Some(_), Some(p), Some(m))) if *p == provider && *m == model.clone().unwrap_or_default());
    if incremental && before.is_some() && !same_embedder {
        notice!(
            "pg_ask: {}.{} was embedded under other embedding settings than the current ones; rebuilding its memory",
            relname(rel),
            name
        );
    }
    let incremental = incremental && same_embedder;
    if !incremental {
        if let Some((Some(old_id), _, _)) = before {
            as_memory_owner(|| drop_own_indexes(old_id));
        }
    }
    let column_id = as_memory_owner(|| {
        Spi::get_one_with_args::<i64>(
            "INSERT INTO ask.value_columns (relid, attnum, distinct_values, capped, allow_rls, embedding_provider, embedding_model)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (relid, attnum) DO UPDATE SET distinct_values = EXCLUDED.distinct_values,
                capped = EXCLUDED.capped, allow_rls = EXCLUDED.allow_rls,
                embedding_provider = EXCLUDED.embedding_provider, embedding_model = EXCLUDED.embedding_model,
                indexed_at = now(), indexed_by = session_user
             RETURNING id",
            &[rel.into(), attnum.into(), (n as i64).into(), capped.into(), allow_rls.into(), provider.as_str().into(), model.clone().into()],
        )
        .ok()
        .flatten()
        .expect("value_columns row")
    });
    let mut removed = 0i64;
    let to_embed: Vec<(String, i64)> = if incremental {
        let current: std::collections::HashSet<&str> = values.iter().map(|(v, _)| v.as_str()).collect();
        let stored: Vec<String> = as_memory_owner(|| {
            select_rows("SELECT value FROM ask.value_memory WHERE column_id = $1", &[column_id.into()], |r| r.get::<String>(1).ok().flatten())
        });
        let vanished: Vec<String> = stored.iter().filter(|v| !current.contains(v.as_str())).cloned().collect();
        removed = vanished.len() as i64;
        let stored: std::collections::HashSet<String> = stored.into_iter().collect();
        let vals: Vec<String> = values.iter().map(|(v, _)| v.clone()).collect();
        let freqs: Vec<i64> = values.iter().map(|(_, f)| *f).collect();
        as_memory_owner(|| {
            Spi::run_with_args(
                "DELETE FROM ask.value_memory WHERE column_id = $1 AND value = ANY($2)",
                &[column_id.into(), vanished.into()],
            )
            .unwrap();
            Spi::run_with_args(
                "UPDATE ask.value_memory m SET frequency = u.f FROM unnest($2::text[], $3::bigint[]) AS u(v, f)
                 WHERE m.column_id = $1 AND m.value = u.v AND m.frequency <> u.f",
                &[column_id.into(), vals.into(), freqs.into()],
            )
            .unwrap();
        });
        values.into_iter().filter(|(v, _)| !stored.contains(v)).collect()
    } else {
        as_memory_owner(|| Spi::run_with_args("DELETE FROM ask.value_memory WHERE column_id = $1", &[column_id.into()]).unwrap());
        values
    };
    let mut dims: Option<usize> = as_memory_owner(|| {
        Spi::get_one_with_args::<i32>("SELECT dims FROM ask.value_columns WHERE id = $1", &[column_id.into()]).ok().flatten()
    })
    .filter(|_| incremental && embedder.is_some())
    .map(|d| d as usize);
    let added = to_embed.len();
    for (i, chunk) in to_embed.chunks(BATCH).enumerate() {
        pgrx::check_for_interrupts!();
        let vals: Vec<String> = chunk.iter().map(|(v, _)| v.clone()).collect();
        let freqs: Vec<i64> = chunk.iter().map(|(_, f)| *f).collect();
        let embs: Vec<Option<String>> = if embedder.is_some() {
            let texts: Vec<&str> = chunk.iter().map(|(v, _)| v.as_str()).collect();
            embed_batch(&texts, &mut dims).iter().map(|e| Some(vector_text(e))).collect()
        } else {
            vec![None; chunk.len()]
        };
        let args: [DatumWithOid; 4] = [column_id.into(), vals.into(), freqs.into(), embs.into()];
        as_memory_owner(|| {
            Spi::run_with_args(
                &format!(
                    "INSERT INTO ask.value_memory (column_id, value, frequency, embedding)
                     SELECT $1, u.v, u.f, u.e::{vector}.vector FROM unnest($2::text[], $3::bigint[], $4::text[]) AS u(v, f, e)"
                ),
                &args,
            )
            .unwrap()
        });
        if added > BATCH * 4 && (i + 1) % 4 == 0 {
            notice!("pg_ask: {}.{}: {} of {} values embedded", relname(rel), name, ((i + 1) * BATCH).min(added), added);
        }
    }
    let dims = dims.map(|d| d as i32);
    let own = n as i64 > EXACT_SCAN_MAX;
    as_memory_owner(|| {
        Spi::run_with_args(
            "UPDATE ask.value_columns SET dims = $2, own_indexes = $3 WHERE id = $1",
            &[column_id.into(), dims.into(), own.into()],
        )
        .unwrap();
        if own {
            if added > BATCH * 4 {
                notice!("pg_ask: {}.{}: building the nearest-neighbour and trigram indexes of {n} values", relname(rel), name);
            }
            create_own_indexes(column_id, dims);
            // Fresh statistics after a large write, so that the planner takes the column's own
            // indexes right away (autovacuum's ANALYZE may come much later).
            if added as i64 > EXACT_SCAN_MAX {
                Spi::run("ANALYZE ask.value_memory").unwrap();
            }
        } else {
            drop_own_indexes(column_id);
        }
    });
    if capped {
        notice!(
            "pg_ask: {}.{} has more than {cap} distinct values; the {cap} most frequent are remembered",
            relname(rel),
            name
        );
    }
    Remembered { remembered: n as i64, added: added as i64, removed }
}

/// Bring the value memory up to date with the tables' current values: new values are embedded
/// and added, vanished ones dropped, frequencies updated; memory of dropped tables and columns
/// is removed. `rel` NULL: every indexed table the caller owns. Returns values added + removed.
#[pg_extern(name = "_refresh_values", volatile, parallel_unsafe)]
fn refresh_values(rel: Option<pg_sys::Oid>) -> i64 {
    // Memory of dropped tables or columns goes first (nothing can be served from it anyway).
    let gone: Vec<i64> = as_memory_owner(|| {
        let ids: Vec<i64> = Spi::connect_mut(|client| {
            client
                .update(
                    "DELETE FROM ask.value_columns vc WHERE NOT EXISTS (
                         SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = vc.relid AND a.attnum = vc.attnum AND NOT a.attisdropped)
                     RETURNING id",
                    None,
                    &[],
                )
                .map(|rows| rows.filter_map(|r| r.get::<i64>(1).ok().flatten()).collect())
                .unwrap_or_default()
        });
        for id in &ids {
            drop_own_indexes(*id);
        }
        ids
    });
    let purged = gone.len();
    if purged > 0 {
        notice!("pg_ask: forgot the values of {purged} dropped column(s)");
    }
    let columns: Vec<(pg_sys::Oid, String, bool)> = as_memory_owner(|| {
        select_rows(
            "SELECT vc.relid, a.attname::text, vc.allow_rls FROM ask.value_columns vc
             JOIN pg_catalog.pg_attribute a ON a.attrelid = vc.relid AND a.attnum = vc.attnum
             WHERE $1::oid IS NULL OR vc.relid = $1 ORDER BY vc.relid, vc.attnum",
            &[rel.into()],
            |r| Some((r.get::<pg_sys::Oid>(1).ok()??, r.get::<String>(2).ok()??, r.get::<bool>(3).ok()??)),
        )
    });
    let mut changed = 0;
    for (relid, name, allow_rls) in columns {
        if !catalog::owns(relid) {
            if rel.is_some() {
                raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("must be owner of table {} to refresh its values", relname(relid)), "");
            }
            continue;
        }
        let r = remember_column(relid, &name, allow_rls, true);
        changed += r.added + r.removed;
    }
    changed
}

/// The trigger's refresh: as the table's owner, who opted in with `ask.keep_values_current()`,
/// whoever wrote to the table.
#[pg_extern(name = "_refresh_values_as_owner", volatile, strict, parallel_unsafe)]
fn refresh_values_as_owner(rel: pg_sys::Oid) -> i64 {
    let owner = Spi::get_one_with_args::<pg_sys::Oid>("SELECT relowner FROM pg_catalog.pg_class WHERE oid = $1", &[rel.into()])
        .ok()
        .flatten()
        .unwrap_or_else(|| raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, format!("no table with oid {rel:?}"), ""));
    as_user(owner, || refresh_values(Some(rel)))
}

/// The memory of a column, if it was indexed (read as the memory's owner: check the caller's
/// privilege on the column first).
pub(crate) fn memory_column(relid: pg_sys::Oid, attnum: i16) -> Option<MemoryColumn> {
    as_memory_owner(|| {
        Spi::connect(|client| {
            let rows = client
                .select(
                    "SELECT id, distinct_values, embedding_provider, embedding_model, dims, own_indexes
                     FROM ask.value_columns WHERE relid = $1 AND attnum = $2",
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
            })
        })
    })
}

/// A value the memory found for a phrase, with both scores and the rankings that found it.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub value: String,
    pub frequency: i64,
    pub cosine: Option<f64>,
    pub trigram: f64,
    pub by_embedding: bool,
    pub by_trigram: bool,
}

/// How thoroughly a large column is searched for trigram neighbours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Reach {
    /// Candidates from index probes that cost well under a millisecond at any size: the
    /// embedding beam and the sort-order neighbours of the phrase, forwards and backwards. The
    /// trigram search through the GIN index is added only when the phrase has no usable
    /// embedding (measured on three-word names, that search costs about 5 ms at 2,000 values,
    /// 70–200 ms at a million: its posting lists grow with the column).
    Fast,
    /// Also every value pg_trgm's `%` finds through the column's GIN index: complete, but on a
    /// column of a million values it costs tens to hundreds of milliseconds.
    Thorough,
}

/// The `k` nearest values by embedding (when `embedding` is given) and the `k` most similar by
/// trigrams (pg_trgm's `%`), each with both scores. A small column is scanned exactly: every
/// value is scored. A large one is scored over a pool of candidates from its own indexes (see
/// [`Reach`]); pg_trgm's GIN index cannot find the trigram neighbours of a phrase among a
/// million values within milliseconds (its posting lists hold tens of thousands of entries per
/// common trigram), so the fast pool takes instead the values next to the phrase in the order
/// of `lower(value)` and of its reverse (a typo after the first letters, or before the last
/// ones, keeps the phrase among its value's sort neighbours) and the embedding's nearest
/// neighbours, and pg_trgm scores them. Run as the memory's owner.
pub(crate) fn search(col: &MemoryColumn, phrase: &str, embedding: Option<&[f32]>, k: i64, reach: Reach) -> Vec<Found> {
    let vector = ext_schema("vector");
    let trgm = ext_schema("pg_trgm");
    let id = col.id;
    let emb_text = embedding.map(vector_text);
    let scored = if col.own_indexes {
        // Each probe returns the rows it reads (no join back by value, whose plan the
        // planner may get wrong on a freshly written column).
        let row = "value, frequency, embedding";
        // The phrase's neighbours on each side in the two sort orders (value_memory_lower and
        // the column's _rev index).
        let mut pool = Vec::new();
        for (key, phrase) in [("lower(value)", "lower($2)"), ("reverse(lower(value))", "reverse(lower($2))")] {
            for (side, order) in [(">=", "ASC"), ("<", "DESC")] {
                pool.push(format!(
                    "(SELECT {row} FROM ask.value_memory WHERE column_id = {id} AND {key} COLLATE \"C\" {side} {phrase}
                      ORDER BY {key} COLLATE \"C\" {order} LIMIT {SORT_NEIGHBOURS})"
                ));
            }
        }
        if let (Some(d), true) = (col.dims, embedding.is_some()) {
            pool.push(format!(
                "(SELECT {row} FROM ask.value_memory WHERE column_id = {id}
                  ORDER BY embedding::{vector}.halfvec({d}) OPERATOR({vector}.<=>) $1::{vector}.vector::{vector}.halfvec({d})
                  LIMIT greatest($3, {BEAM}))"
            ));
        }
        if reach == Reach::Thorough || embedding.is_none() {
            pool.push(format!(
                "(SELECT {row} FROM ask.value_memory WHERE column_id = {id} AND value OPERATOR({trgm}.%) $2
                  ORDER BY value OPERATOR({trgm}.<->) $2, value LIMIT $3)"
            ));
        }
        format!("(SELECT DISTINCT ON (value) * FROM ({}) u) v", pool.join(" UNION ALL "))
    } else {
        format!("ask.value_memory v WHERE v.column_id = {id}")
    };
    let sql = format!(
        "WITH m AS MATERIALIZED (
             SELECT v.value, v.frequency, 1 - (v.embedding OPERATOR({vector}.<=>) $1::{vector}.vector) AS cos,
                    {trgm}.similarity(v.value, $2)::float8 AS tri
             FROM {scored}),
          e AS (SELECT value FROM m WHERE cos IS NOT NULL ORDER BY cos DESC, value LIMIT $3),
          -- pg_trgm's `%`, without computing the similarity twice
          t AS (SELECT value FROM m WHERE tri >= (SELECT coalesce(current_setting('pg_trgm.similarity_threshold', true)::float8, 0.3))
                ORDER BY tri DESC, value LIMIT $3)
         SELECT m.value, m.frequency, m.cos, m.tri, m.value IN (SELECT value FROM e), m.value IN (SELECT value FROM t)
         FROM m WHERE m.value IN (SELECT value FROM e) OR m.value IN (SELECT value FROM t)"
    );
    let args: [DatumWithOid; 3] = [emb_text.into(), phrase.into(), k.into()];
    as_memory_owner(|| {
        select_rows(&sql, &args, |r| {
            Some(Found {
                value: r.get::<String>(1).ok()??,
                frequency: r.get::<i64>(2).ok()??,
                cosine: r.get::<f64>(3).ok()?,
                trigram: r.get::<f64>(4).ok()?.unwrap_or(0.0),
                by_embedding: r.get::<bool>(5).ok()?.unwrap_or(false),
                by_trigram: r.get::<bool>(6).ok()?.unwrap_or(false),
            })
        })
    })
}

/// Whether a value occurs in the column as written (for a LIKE pattern: matches one), and the
/// stored spelling of a value equal to `value` ignoring case. One query, as the memory's owner.
pub(crate) fn probe(col: &MemoryColumn, value: &str, like_pattern: Option<&str>) -> (bool, Option<String>) {
    let id = col.id;
    let exact = if like_pattern.is_some() { "value LIKE $2" } else { "value = $1" };
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM ask.value_memory WHERE column_id = {id} AND {exact}),
                (SELECT value FROM ask.value_memory WHERE column_id = {id} AND lower(value) COLLATE \"C\" = lower($1)
                 ORDER BY frequency DESC, value LIMIT 1)"
    );
    let args: [DatumWithOid; 2] = [value.into(), like_pattern.unwrap_or("").into()];
    as_memory_owner(|| {
        Spi::get_two_with_args::<bool, String>(&sql, &args).map(|(e, ci)| (e.unwrap_or(false), ci)).unwrap_or((false, None))
    })
}

/// A readable, indexed column of `rel`, or an error that says why not.
fn indexed_column(rel: pg_sys::Oid, col: &str) -> Option<MemoryColumn> {
    let (attnum, _) = readable_text_column(rel, col);
    memory_column(rel, attnum)
}

/// The embedding of `phrase` for searching `col`, None for trigrams only; an error when the
/// column was embedded by another model.
fn phrase_embedding(col: &MemoryColumn, phrase: &str) -> Option<Vec<f32>> {
    match embedding_use(col) {
        EmbeddingUse::Off => None,
        EmbeddingUse::Mismatch(why) => raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("the value memory of this column cannot be searched by embedding: {why}"),
            MISMATCH_HINT,
        ),
        EmbeddingUse::Usable => {
            let v = embeddings::embed_texts(&[phrase]).pop().unwrap_or_default();
            if Some(v.len() as i32) != col.dims {
                raise(
                    PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!(
                        "the phrase's embedding has {} dimensions, the column's values {}",
                        v.len(),
                        col.dims.unwrap_or(0)
                    ),
                    MISMATCH_HINT,
                );
            }
            Some(v)
        }
    }
}

/// What the value memory finds for a phrase in one column: embedding neighbours and trigram
/// matches, best first, each with its score and the method that found it.
#[pg_extern(name = "_similar_values", volatile, parallel_unsafe)]
fn similar_values(
    rel: pg_sys::Oid,
    col: &str,
    phrase: &str,
    k: i32,
) -> TableIterator<'static, (name!(value, String), name!(score, f64), name!(method, String))> {
    let Some(column) = indexed_column(rel, col) else { return TableIterator::new(Vec::new()) };
    let k = k.clamp(1, 1000) as i64;
    let embedding = phrase_embedding(&column, phrase);
    let mut rows: Vec<(String, f64, String)> = Vec::new();
    for f in search(&column, phrase, embedding.as_deref(), k, Reach::Thorough) {
        if let (true, Some(c)) = (f.by_embedding, f.cosine) {
            rows.push((f.value.clone(), c, "embedding".into()));
        }
        if f.by_trigram {
            rows.push((f.value, f.trigram, "trigram".into()));
        }
    }
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)).then_with(|| a.2.cmp(&b.2)));
    TableIterator::new(rows)
}

/// The correction decision for one literal compared with an indexed column, the literal's
/// embedding given (`NULL`: embedded here): the path `ask()` takes, for inspection and
/// benchmarks. Returns the decision trace, with the lookup's own milliseconds.
#[pg_extern(name = "_value_lookup", volatile, parallel_unsafe)]
fn value_lookup(rel: pg_sys::Oid, col: &str, literal: &str, embedding: Option<Vec<f32>>) -> pgrx::JsonB {
    let Some(column) = indexed_column(rel, col) else {
        raise(PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT, format!("column {col} of {} is not in the value memory", relname(rel)), "Index it with ask.index_values().")
    };
    let embedding = match embedding {
        Some(v) if Some(v.len() as i32) == column.dims && embedding_use(&column) == EmbeddingUse::Usable => Some(v),
        Some(v) => raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("the given embedding ({} dimensions) does not match the column's ({:?})", v.len(), column.dims),
            MISMATCH_HINT,
        ),
        None => phrase_embedding(&column, literal),
    };
    let t = std::time::Instant::now();
    let ev = literal_evidence(&column, literal, None, || embedding);
    let trace = pg_ask_core::values::decide::decide(&ev, pg_ask_core::values::decide::Comparison::CaseSensitive);
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let mut v = serde_json::to_value(&trace).unwrap_or_default();
    v["lookup_ms"] = serde_json::json!(ms);
    pgrx::JsonB(v)
}

/// Everything the correction decision needs about one literal, from the memory: exact and
/// case-insensitive probes, then (only when both miss) the literal's embedding and the
/// candidates.
pub(crate) fn literal_evidence(
    col: &MemoryColumn,
    literal: &str,
    like_pattern: Option<&str>,
    embedding: impl FnOnce() -> Option<Vec<f32>>,
) -> pg_ask_core::values::decide::Evidence {
    use pg_ask_core::values::decide::{Candidate, Evidence};
    let (exact, case_insensitive) = probe(col, literal, like_pattern);
    let candidates = if exact || case_insensitive.is_some() {
        Vec::new()
    } else {
        search(col, literal, embedding().as_deref(), NEIGHBOURS, Reach::Fast)
            .into_iter()
            .map(|f| Candidate {
                value: f.value,
                frequency: f.frequency.max(0) as u64,
                cosine: f.cosine,
                trigram: Some(f.trigram),
            })
            .collect()
    };
    Evidence {
        literal: literal.to_string(),
        exact,
        case_insensitive,
        candidates,
        distinct_values: col.distinct.max(0) as u64,
        closed_set: false,
    }
}

pgrx::extension_sql!(
    r#"
CREATE FUNCTION index_values(rel regclass, columns text[] DEFAULT NULL, allow_rls boolean DEFAULT false)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _index_values(rel::oid, columns, coalesce(allow_rls, false));
COMMENT ON FUNCTION index_values(regclass, text[], boolean) IS
    'Remember the distinct values of a table''s text-like columns (all, or the listed ones), with embeddings and trigrams, for value correction. Needs ownership of the table.';
CREATE FUNCTION refresh_values(rel regclass DEFAULT NULL)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _refresh_values(rel::oid);
COMMENT ON FUNCTION refresh_values(regclass) IS
    'Bring the value memory up to date: new values added, vanished ones dropped, dropped columns forgotten. NULL: every indexed table the caller owns. Returns values added + removed.';
CREATE FUNCTION _values_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ask._refresh_values_as_owner(TG_RELID);
    RETURN NULL;
END $$;
CREATE FUNCTION keep_values_current(rel regclass, enabled boolean DEFAULT true)
    RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT pg_catalog.pg_has_role((SELECT relowner FROM pg_catalog.pg_class WHERE oid = rel), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table % to keep its values current', rel USING ERRCODE = '42501';
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS ask_values_current ON %s', rel);
    IF enabled THEN
        EXECUTE format('CREATE TRIGGER ask_values_current AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s
                        FOR EACH STATEMENT EXECUTE FUNCTION ask._values_changed()', rel);
    END IF;
END $$;
COMMENT ON FUNCTION keep_values_current(regclass, boolean) IS
    'Opt in (or out) to refreshing a table''s value memory after every writing statement, as the table''s owner. Each refresh reads the indexed columns'' distinct values: meant for small, slowly changing tables.';
CREATE FUNCTION similar_values(rel regclass, col text, phrase text, k int DEFAULT 10)
    RETURNS TABLE (value text, score float8, method text) LANGUAGE sql VOLATILE PARALLEL UNSAFE
    BEGIN ATOMIC SELECT * FROM _similar_values(rel::oid, col, phrase, coalesce(k, 10)); END;
COMMENT ON FUNCTION similar_values(regclass, text, text, int) IS
    'What the value memory finds for a phrase in one column: embedding neighbours and trigram matches, with scores.';
"#,
    name = "value_functions",
    requires = [index_values, similar_values, refresh_values, refresh_values_as_owner, value_lookup]
);
