//! Searching the value memory: candidate pools for a literal, `ask.similar_values()`, the
//! evidence value correction decides from.

use super::build::readable_text_column;
use super::{embedding_use, memory_column, EmbeddingUse, MemoryColumn, BEAM, MISMATCH_HINT, NEIGHBOURS, SORT_NEIGHBOURS};
use crate::llm::embeddings;
use crate::pg::errors::raise;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::{ext_schema, vector_text};
use crate::pg::spi::{relname, select_rows, OrRaise};
use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

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
/// neighbours, and pg_trgm scores them. With `all` (a small column), every value is returned,
/// scored. Run as the memory's owner.
pub(crate) fn search(col: &MemoryColumn, phrase: &str, embedding: Option<&[f32]>, k: i64, reach: Reach, all: bool) -> Vec<Found> {
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
         FROM m WHERE {} OR m.value IN (SELECT value FROM e) OR m.value IN (SELECT value FROM t)",
        all && !col.own_indexes
    );
    let args: [DatumWithOid; 3] = [emb_text.into(), phrase.into(), k.into()];
    as_memory_owner(|| {
        select_rows(&sql, &args, |r| {
            let (Some(value), Some(frequency)) = (r.get::<String>(1)?, r.get::<i64>(2)?) else { return Ok(None) };
            Ok(Some(Found {
                value,
                frequency,
                cosine: r.get::<f64>(3)?,
                trigram: r.get::<f64>(4)?.unwrap_or(0.0),
                by_embedding: r.get::<bool>(5)?.unwrap_or(false),
                by_trigram: r.get::<bool>(6)?.unwrap_or(false),
            }))
        })
    })
    .or_raise("could not read the value memory")
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
    as_memory_owner(|| Spi::get_two_with_args::<bool, String>(&sql, &args).map(|(e, ci)| (e.unwrap_or(false), ci)).unwrap_or((false, None)))
}

/// A readable, indexed column of `rel`, or an error that says why not: the caller may not
/// read the column, or row-level security now hides rows of the table from it and the owner did
/// not opt in (the memory was built before the policies, or by a role they do not apply to).
pub(crate) fn indexed_column(rel: pg_sys::Oid, col: &str) -> Option<MemoryColumn> {
    let (attnum, _) = readable_text_column(rel, col);
    let column = memory_column(rel, attnum)?;
    if !super::shown_to_caller(rel, &column) {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("the remembered values of {}.{col} are not shown: row-level security hides rows of the table from this role", relname(rel)),
            "The memory holds values of every row. The table's owner can opt in with ask.index_values(table, allow_rls => true) if every role that may read the column may see all its values.",
        );
    }
    Some(column)
}

/// The embedding of `phrase` for searching `col`, None for trigrams only; an error when the
/// column was embedded by another model.
pub(crate) fn phrase_embedding(col: &MemoryColumn, phrase: &str) -> Option<Vec<f32>> {
    match embedding_use(col) {
        EmbeddingUse::Off => None,
        EmbeddingUse::Mismatch(why) => raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("the value memory of this column cannot be searched by embedding: {why}"),
            MISMATCH_HINT,
        ),
        EmbeddingUse::Usable => {
            let v = embeddings::embed_one(phrase);
            if Some(v.len() as i32) != col.dims {
                raise(
                    PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!("the phrase's embedding has {} dimensions, the column's values {}", v.len(), col.dims.unwrap_or(0)),
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
pub(crate) fn similar_values(
    rel: pg_sys::Oid,
    col: &str,
    phrase: &str,
    k: i32,
) -> TableIterator<'static, (name!(value, String), name!(score, f64), name!(method, String))> {
    let Some(column) = indexed_column(rel, col) else { return TableIterator::new(Vec::new()) };
    let k = k.clamp(1, 1000) as i64;
    let embedding = phrase_embedding(&column, phrase);
    let mut rows: Vec<(String, f64, String)> = Vec::new();
    for f in search(&column, phrase, embedding.as_deref(), k, Reach::Thorough, false) {
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
pub(crate) fn value_lookup(rel: pg_sys::Oid, col: &str, literal: &str, embedding: Option<Vec<f32>>) -> pgrx::JsonB {
    let Some(column) = indexed_column(rel, col) else {
        raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("column {col} of {} is not in the value memory", relname(rel)),
            "Index it with ask.index_values().",
        )
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
    let all_values = col.all_listed();
    let candidates = if exact || case_insensitive.is_some() {
        Vec::new()
    } else {
        search(col, literal, embedding().as_deref(), NEIGHBOURS, Reach::Fast, all_values)
            .into_iter()
            .map(|f| Candidate { value: f.value, frequency: f.frequency.max(0) as u64, cosine: f.cosine, trigram: Some(f.trigram) })
            .collect()
    };
    Evidence {
        literal: literal.to_string(),
        exact,
        case_insensitive,
        candidates,
        distinct_values: col.distinct.max(0) as u64,
        closed_set: false,
        all_values,
    }
}
