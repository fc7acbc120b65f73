//! `ask()`'s selection from the memory's stored lexical index (`ask.selection_index`, on by
//! default): a question reads the index rows that share a word with it and describes only the
//! best candidates, with the caller's privileges, instead of the caller's whole catalog
//! ([`pg_ask_core::selection::retrieve`] says what is read and why).
//!
//! * **Privileges.** Candidates come from the index, which holds the names and comments of
//!   the indexed tables (what pg_catalog shows every role); each is then described live
//!   ([`crate::schema::describe_exactly`]), which keeps only the tables and columns the caller
//!   may SELECT. Values come from the value memory of those columns only, as in the whole
//!   catalog's selection. The nearest by embedding are looked up among the tables the caller
//!   may read, in the read itself ([`super::nearest`]).
//! * **Freshness.** Every candidate is described live, and its stored embedding is compared
//!   with the question only while its stored description is the live one. Relations DDL
//!   touched in an indexed schema since they were described (`ask.schema_memory_dirty`, kept
//!   by an event trigger with each relation's words, at most 100 per owner) are candidates of
//!   a question that shares a word with them, read through the notes' index of words: never
//!   because they were touched, so that one role's DDL adds nothing to other roles' questions
//!   but the candidates their own words find. In a read-write transaction they and the stale
//!   candidates are described in the memory again.
//! * **Schemas.** The candidates' schemas are ranked by their live comments and the candidates'
//!   words, and by their stored embeddings as they are: a schema's stored description is not
//!   compared or refreshed here (it is made from all of the describer's tables of the schema,
//!   which a question does not read); `ask.index_schema()` and the whole catalog's selection
//!   store it again. It holds names and comments only, which pg_catalog shows every role.
//! * **Statistics.** The candidates are scored with the whole index's document count,
//!   document frequencies and mean field lengths, so a table scores as it would in the whole
//!   catalog.
//!
//! Without a lexical index (a memory stored before it existed: `ask.index_schema()` builds
//! one), the whole catalog is read as before.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use pg_ask_core::ask::Question;
use pg_ask_core::schema::Table;
use pg_ask_core::selection::lexical::FIELDS;
use pg_ask_core::selection::retrieve::{candidates, fetch_terms, probe_terms, rank_stored, COMMON_MIN, COMMON_SHARE};
use pg_ask_core::selection::{unquote, Catalog, ColumnValues, Cosines, DocTerms, GlobalStats, TableProfile};
use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::PgOid::BuiltIn;

use pg_sys::BuiltinOid::{INT8OID, OIDARRAYOID, TEXTARRAYOID, TEXTOID};

use super::state::MemoryState;
use super::{catalog, store, Kind};
use crate::pg::backend::{self, StoredIndex};
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::{ext_schema, vector_text, OrRaise};

/// At least this many of the best tables by the stored index are described per question (and
/// twice `ask.max_tables` when that is more): recall as `ask()` selects is the same with 20
/// and 30 on defog with 10,000 generated tables beside it (`selection_recall --scale`).
const CANDIDATES: usize = 20;
/// At most this many rounds of candidates are described when too few of them are readable.
const ROUNDS: usize = 3;
/// At most this many tables whose foreign keys reference a candidate are described with it.
const MAX_REFERRERS: i64 = 50;

/// The index as of the memory's `version`, read once per version; `None` when the memory
/// has no complete lexical index.
fn stored_index(version: i64) -> Option<Rc<StoredIndex>> {
    if let Some(s) = backend::with(|b| b.stored_index.borrow().clone()).filter(|s| s.version == version && version >= 0) {
        return (s.documents > 0).then_some(s);
    }
    let row = as_memory_owner(|| {
        crate::pg::spi::select_kept(
            "the lexical index's statistics",
            "SELECT pg_catalog.count(*) FILTER (WHERE field_lengths IS NOT NULL), pg_catalog.count(*) FILTER (WHERE field_lengths IS NULL),
                    ARRAY[pg_catalog.avg(field_lengths[1]), pg_catalog.avg(field_lengths[2]), pg_catalog.avg(field_lengths[3]),
                          pg_catalog.avg(field_lengths[4])]::pg_catalog.float8[],
                    ARRAY(SELECT v.term FROM ask.schema_memory_vocabulary v WHERE v.name_df OPERATOR(pg_catalog.>) 0 ORDER BY v.term),
                    ARRAY(SELECT v.name_df FROM ask.schema_memory_vocabulary v WHERE v.name_df OPERATOR(pg_catalog.>) 0 ORDER BY v.term)
             FROM ask.schema_memory_tables",
            &[],
            &[],
            |r| {
                Ok(Some((
                    r.get::<i64>(1)?.unwrap_or(0),
                    r.get::<i64>(2)?.unwrap_or(0),
                    r.get::<Vec<Option<f64>>>(3)?.unwrap_or_default(),
                    r.get::<Vec<String>>(4)?.unwrap_or_default(),
                    r.get::<Vec<i32>>(5)?.unwrap_or_default(),
                )))
            },
        )
    })
    .or_raise("could not read the schema selection memory's lexical index")
    .pop();
    let (documents, missing, avg, terms, name_df) = row?;
    let mut avg_len = [None; FIELDS];
    for (slot, v) in avg_len.iter_mut().zip(avg) {
        *slot = v;
    }
    let index = Rc::new(StoredIndex {
        version,
        documents: if missing > 0 { 0 } else { documents as usize },
        avg_len,
        names: terms.into_iter().zip(name_df.into_iter().map(|n| n.max(0) as u32)).collect(),
    });
    backend::with(|b| b.stored_index.replace(Some(index.clone())));
    (index.documents > 0).then_some(index)
}

/// The document frequencies of `terms` in the index.
fn document_frequencies(terms: &[String]) -> HashMap<String, u32> {
    let args: [DatumWithOid; 1] = [terms.to_vec().into()];
    as_memory_owner(|| {
        crate::pg::spi::select_generic(
            "the question's words in the lexical index",
            "SELECT v.term, v.df FROM ask.schema_memory_vocabulary v WHERE v.term OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])",
            &[BuiltIn(TEXTARRAYOID)],
            &args,
            |r| Ok(r.get::<String>(1)?.zip(r.get::<i32>(2)?.map(|n| n.max(0) as u32))),
        )
    })
    .or_raise("could not read the schema selection memory's lexical index")
    .into_iter()
    .collect()
}

/// A word of a table with its occurrences per field.
type Posting = (String, [u32; FIELDS]);

/// The stored postings of `terms`, by table: each table's words among them and its lengths.
fn postings(terms: &[String]) -> Vec<(pg_sys::Oid, DocTerms)> {
    let args: [DatumWithOid; 1] = [terms.to_vec().into()];
    let rows = as_memory_owner(|| {
        crate::pg::spi::select_generic(
            "the postings of the question's words",
            // Each table's lengths by its key: a few hundred index lookups, never a scan of
            // the whole memory (a join the planner may hash).
            "SELECT t.relid, t.term, t.tf,
                    (SELECT m.field_lengths FROM ask.schema_memory_tables m WHERE m.relid OPERATOR(pg_catalog.=) t.relid)
               FROM ask.schema_memory_terms t
              WHERE t.term OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])",
            &[BuiltIn(TEXTARRAYOID)],
            &args,
            |r| {
                let (Some(relid), Some(term), Some(tf), Some(len)) =
                    (r.get::<pg_sys::Oid>(1)?, r.get::<String>(2)?, r.get::<Vec<i32>>(3)?, r.get::<Vec<i32>>(4)?)
                else {
                    return Ok(None);
                };
                Ok(Some((relid, term, fields(&tf), fields(&len))))
            },
        )
    })
    .or_raise("could not read the schema selection memory's lexical index");
    let mut by_table: BTreeMap<u32, (pg_sys::Oid, Vec<Posting>, [u32; FIELDS])> = BTreeMap::new();
    for (relid, term, tf, len) in rows {
        by_table.entry(relid.to_u32()).or_insert_with(|| (relid, Vec::new(), len)).1.push((term, tf));
    }
    by_table.into_values().map(|(relid, terms, len)| (relid, DocTerms::from_stored(terms, len))).collect()
}

/// A stored per-field array as the core's fixed-size one (missing fields count 0).
fn fields(v: &[i32]) -> [u32; FIELDS] {
    let mut out = [0; FIELDS];
    for (slot, x) in out.iter_mut().zip(v) {
        *slot = (*x).max(0) as u32;
    }
    out
}

/// Of `oids`, in their order, the first `limit` the caller may read a column of (in a schema
/// it may use): before anything is described, so that tables the caller cannot read, however
/// well their names match, take no candidate's place.
fn readable_first(oids: &[pg_sys::Oid], limit: usize) -> Vec<pg_sys::Oid> {
    if oids.is_empty() || limit == 0 {
        return Vec::new();
    }
    let args: [DatumWithOid; 2] = [oids.to_vec().into(), (limit as i64).into()];
    crate::pg::spi::select_generic(
        "the candidates the caller may read",
        "SELECT u.o FROM pg_catalog.unnest($1::pg_catalog.oid[]) WITH ORDINALITY AS u(o, i)
           JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) u.o
          WHERE pg_catalog.has_schema_privilege(c.relnamespace, 'USAGE')
            AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
          ORDER BY u.i LIMIT $2",
        &[BuiltIn(OIDARRAYOID), BuiltIn(INT8OID)],
        &args,
        |r| r.get::<pg_sys::Oid>(1),
    )
    .or_raise("could not check the caller's privileges on the candidates")
}

/// Whole-table readers among `oids`: only they describe a table as every other whole-table
/// reader does, so only they write its description to the memory (roles with column grants
/// would otherwise take turns rewriting it).
fn read_whole(oids: &[pg_sys::Oid]) -> HashSet<u32> {
    if oids.is_empty() {
        return HashSet::new();
    }
    let args: [DatumWithOid; 1] = [oids.to_vec().into()];
    crate::pg::spi::select_generic(
        "the candidates the caller may read whole",
        "SELECT o FROM pg_catalog.unnest($1::pg_catalog.oid[]) AS o WHERE pg_catalog.has_table_privilege(o, 'SELECT')",
        &[BuiltIn(OIDARRAYOID)],
        &args,
        |r| r.get::<pg_sys::Oid>(1),
    )
    .or_raise("could not check the caller's privileges on the candidates")
    .into_iter()
    .map(|o| o.to_u32())
    .collect()
}

/// Relations DDL touched in an indexed schema since the memory described them that share one
/// of `terms` with the question, most shared words first, those the caller may read (at most
/// `limit`): read through the notes' index of words, so that relations other roles touched
/// cost a question nothing unless it asks for their words.
fn touched_for(terms: &[String], limit: usize) -> Vec<pg_sys::Oid> {
    if terms.is_empty() || limit == 0 {
        return Vec::new();
    }
    let args: [DatumWithOid; 2] = [terms.to_vec().into(), ((8 * limit) as i64).into()];
    let noted = as_memory_owner(|| {
        crate::pg::spi::select_generic(
            "relations changed since they were indexed that share a word with the question",
            "SELECT d.relid FROM ask.schema_memory_dirty d
              WHERE d.words OPERATOR(pg_catalog.&&) $1::pg_catalog.text[]
              ORDER BY (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(d.words) AS w
                         WHERE w OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])) DESC, d.relid
              LIMIT $2",
            &[BuiltIn(TEXTARRAYOID), BuiltIn(INT8OID)],
            &args,
            |r| r.get::<pg_sys::Oid>(1),
        )
    })
    .or_raise("could not read the schema selection memory's changed relations");
    readable_first(&noted, limit)
}

/// The probed terms a question looks the touched relations up by: those not common in the
/// index (as [`fetch_terms`] reads postings), and those the index does not hold at all (words
/// of relations created since); all of them when every one is common.
fn touched_terms(probe: &[String], df: &HashMap<String, u32>, documents: usize) -> Vec<String> {
    let common = ((documents as f64 * COMMON_SHARE) as u32).max(COMMON_MIN);
    let rare: Vec<String> = probe.iter().filter(|t| df.get(*t).copied().unwrap_or(0) <= common).cloned().collect();
    if rare.is_empty() {
        probe.to_vec()
    } else {
        rare
    }
}

/// What the memory holds for the candidate tables `keys`: the stored description, and the
/// cosine of its embedding with `question` when the current embedder made it.
fn stored_rows(keys: &[pg_sys::Oid], question: Option<&[f32]>, embedder: Option<&(String, String)>) -> HashMap<u32, (String, Option<f64>)> {
    let vector = ext_schema("vector");
    // The question's vector is parsed once, in a sub-select: under a generic plan a cast of
    // the parameter would be evaluated per row (about 20 µs for 384 dimensions).
    let sql = format!(
        "SELECT relid, description,
                CASE WHEN $2::text IS NULL OR embedding IS NULL OR embedding_provider OPERATOR(pg_catalog.<>) $3
                          OR embedding_model IS DISTINCT FROM $4 THEN NULL
                     ELSE 1 OPERATOR(pg_catalog.-) (embedding OPERATOR({vector}.<=>) (SELECT $2::text::{vector}.vector)) END
         FROM ask.schema_memory_tables WHERE relid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[])"
    );
    let args: [DatumWithOid; 4] = [
        keys.to_vec().into(),
        question.map(vector_text).into(),
        embedder.map(|e| e.0.clone()).into(),
        embedder.map(|e| e.1.clone()).into(),
    ];
    as_memory_owner(|| {
        crate::pg::spi::select_generic(
            "the candidates' stored descriptions",
            &sql,
            &[BuiltIn(OIDARRAYOID), BuiltIn(TEXTOID), BuiltIn(TEXTOID), BuiltIn(TEXTOID)],
            &args,
            |r| {
                let (Some(relid), Some(description)) = (r.get::<pg_sys::Oid>(1)?, r.get::<String>(2)?) else { return Ok(None) };
                Ok(Some((relid.to_u32(), (description, r.get::<f64>(3)?))))
            },
        )
    })
    .or_raise("could not read the schema selection memory")
    .into_iter()
    .collect()
}

/// The question's cosines with the stored embeddings of the schemas (current embedder), by
/// quoted name.
fn schema_cosines(question: &[f32], embedder: &(String, String)) -> Cosines {
    let vector = ext_schema("vector");
    let sql = format!(
        "SELECT pg_catalog.quote_ident(n.nspname), 1 OPERATOR(pg_catalog.-) (s.embedding OPERATOR({vector}.<=>) (SELECT $1::text::{vector}.vector))
           FROM ask.schema_memory_schemas s JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) s.nspid
          WHERE s.embedding IS NOT NULL AND s.embedding_provider OPERATOR(pg_catalog.=) $2 AND s.embedding_model IS NOT DISTINCT FROM $3"
    );
    let args: [DatumWithOid; 3] = [vector_text(question).into(), embedder.0.clone().into(), embedder.1.clone().into()];
    as_memory_owner(|| {
        crate::pg::spi::select_generic(
            "the schemas' stored cosines",
            &sql,
            &[BuiltIn(TEXTOID), BuiltIn(TEXTOID), BuiltIn(TEXTOID)],
            &args,
            |r| Ok(r.get::<String>(1)?.zip(r.get::<f64>(2)?)),
        )
    })
    .or_raise("could not read the schema selection memory's embeddings")
    .into_iter()
    .collect()
}

/// The relations the candidates' joins may need: those the foreign keys of `tables` reference,
/// and (at most [`MAX_REFERRERS`]) those with foreign keys to two of the candidates `anchors`
/// (junction tables) that are not `known` already, found through `pg_depend`'s index on the
/// referenced object (`pg_constraint` has none on the referenced table).
fn neighbours(tables: &[(pg_sys::Oid, Table)], anchors: &[pg_sys::Oid], known: &[pg_sys::Oid]) -> Vec<pg_sys::Oid> {
    let referenced: Vec<String> = tables.iter().flat_map(|(_, t)| t.foreign_keys.iter().map(|fk| fk.references.clone())).collect();
    let args: [DatumWithOid; 4] = [referenced.into(), anchors.to_vec().into(), MAX_REFERRERS.into(), known.to_vec().into()];
    crate::pg::spi::select_generic(
        "the candidates' join neighbours",
        "SELECT pg_catalog.to_regclass(n)::pg_catalog.oid FROM pg_catalog.unnest($1::pg_catalog.text[]) AS n
         UNION
         (SELECT f.conrelid FROM pg_catalog.pg_depend d
            JOIN pg_catalog.pg_constraint f ON f.oid OPERATOR(pg_catalog.=) d.objid
           WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
             AND d.refobjid OPERATOR(pg_catalog.=) ANY ($2::pg_catalog.oid[])
             AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_constraint'::pg_catalog.regclass::pg_catalog.oid
             AND f.contype OPERATOR(pg_catalog.=) 'f' AND f.confrelid OPERATOR(pg_catalog.=) d.refobjid
             AND f.conrelid OPERATOR(pg_catalog.<>) ALL ($4::pg_catalog.oid[])
           GROUP BY f.conrelid HAVING pg_catalog.count(DISTINCT f.confrelid) OPERATOR(pg_catalog.>=) 2
           LIMIT $3)",
        &[BuiltIn(TEXTARRAYOID), BuiltIn(OIDARRAYOID), BuiltIn(INT8OID), BuiltIn(OIDARRAYOID)],
        &args,
        |r| r.get::<pg_sys::Oid>(1),
    )
    .or_raise("could not read the candidates' foreign keys")
}

/// The frequent values of the candidates' readable columns, by qualified name.
fn values_of(tables: &[(pg_sys::Oid, Table)]) -> HashMap<String, Vec<ColumnValues>> {
    let keys: Vec<pg_sys::Oid> = tables.iter().map(|(o, _)| *o).collect();
    catalog::frequent_values(Some(&keys))
}

/// The relations `oids` describe live, with the caller's privileges.
fn describe(oids: Vec<pg_sys::Oid>) -> Vec<(pg_sys::Oid, Table)> {
    crate::schema::describe_exactly_kept(oids).unwrap_or_else(|e| crate::pg::errors::from_host(&e).raise())
}

/// Of `oids`, in order, those not `seen` yet (now seen).
fn unseen(seen: &mut HashSet<u32>, oids: impl IntoIterator<Item = pg_sys::Oid>) -> Vec<pg_sys::Oid> {
    oids.into_iter().filter(|o| seen.insert(o.to_u32())).collect()
}

/// The join neighbours of the candidates `referring` ([`neighbours`]) not `seen` yet,
/// described, in oid order.
fn describe_joins(
    referring: &[(pg_sys::Oid, Table)],
    anchors: &[pg_sys::Oid],
    known: &[pg_sys::Oid],
    seen: &mut HashSet<u32>,
) -> Vec<(pg_sys::Oid, Table)> {
    let mut join = unseen(seen, neighbours(referring, anchors, known));
    join.sort_by_key(|o| o.to_u32());
    describe(join)
}

/// What the selection from the index found, for the shared picking in `selection_for`.
pub(super) struct Found {
    pub(super) catalog: Rc<Catalog>,
    pub(super) tables: Cosines,
    pub(super) schemas: Cosines,
    pub(super) detail: serde_json::Value,
    /// Changed candidates that could not be described in the memory again (read-only).
    pub(super) not_refreshed: usize,
}

/// The candidates' catalog and cosines for `asked`, from the stored index; `None` when the
/// memory has no complete lexical index (then the whole catalog is read).
pub(super) fn find(asked: &Question, max_tables: usize, state: &MemoryState, embedder: Option<&(String, String)>) -> Option<Found> {
    let question = asked.text();
    let started = std::time::Instant::now();
    let index = stored_index(state.version)?;
    // The question's embedding, when the memory holds embeddings of the current embedder:
    // begun now, on the local model's threads, while this backend reads the index and
    // describes the candidates found by words; waited for when the nearest are looked up.
    let wants_embedding = embedder.is_some() && state.usable;
    let mut begun = (wants_embedding && asked.embedded().is_none()).then(|| crate::llm::embeddings::begin_one(question));
    let probe = probe_terms(question, &index.names);
    let df = document_frequencies(&probe);
    let stats = GlobalStats { documents: index.documents, df: df.clone(), avg_len: index.avg_len };
    let fetch = fetch_terms(&df, index.documents);
    let read = postings(&fetch);
    let ranked = rank_stored(question, &read, &stats);
    let lexical_ms = started.elapsed().as_secs_f64() * 1000.0;

    // Candidates, in order: the best by words, the touched ones that share a word with the
    // question, the nearest by embedding.
    let started = std::time::Instant::now();
    let take = CANDIDATES.max(2 * max_tables);
    let touched = touched_for(&touched_terms(&probe, &df, index.documents), take);
    let order: Vec<pg_sys::Oid> = ranked.iter().map(|(o, _)| *o).collect();
    let mut seen: HashSet<u32> = HashSet::new();
    // The best the caller may read: a few times more than taken are checked, in order.
    let checked = readable_first(&order[..order.len().min(8 * take)], 2 * take);
    let readable: HashSet<u32> = checked.iter().map(|o| o.to_u32()).collect();
    let ranked_readable: Vec<(pg_sys::Oid, f64)> = ranked.iter().filter(|(o, _)| readable.contains(&o.to_u32())).copied().collect();
    let chosen = candidates(&ranked_readable, take);
    let wanted = chosen.len().min(max_tables.max(1));
    let mut live = describe(unseen(&mut seen, chosen.iter().chain(&touched).copied()));
    // The candidates' join neighbours, and the values of all of them, while the question's
    // vector is computed; those of the nearest are added once it is there.
    let mut anchors: Vec<pg_sys::Oid> = live.iter().map(|(o, _)| *o).collect();
    let joined = describe_joins(&live, &anchors, &anchors, &mut seen);
    // (Join tables are not counted as candidates found below.)
    let join_described = joined.len();
    let mut joins = join_described;
    live.extend(joined);
    let words_ms = started.elapsed().as_secs_f64() * 1000.0;
    let values_started = std::time::Instant::now();
    let mut values = values_of(&live);
    let schema_profiles = catalog::schema_profiles();
    let mut values_ms = values_started.elapsed().as_secs_f64() * 1000.0;
    let valued = live.len();
    let waited = std::time::Instant::now();
    let (q, embed_ms): (Option<&[f32]>, Option<f64>) = if wants_embedding {
        let mut took = None;
        let q = asked.embedding(|t| {
            let (v, ms) = begun.take().unwrap_or_else(|| crate::llm::embeddings::begin_one(t)).wait();
            took = Some(ms);
            v
        });
        // (Already embedded before the stage, for the verified queries: nothing to wait for.)
        (Some(q), took.or(Some(0.0)))
    } else {
        (None, None)
    };
    let wait_ms = q.map(|_| waited.elapsed().as_secs_f64() * 1000.0);
    let started = std::time::Instant::now();
    let before = live.len();
    if let (Some(qv), Some(e)) = (q, embedder) {
        // SAFETY: reads the backend's current user id.
        let user = unsafe { pg_sys::GetUserId() };
        let nearest = unseen(&mut seen, super::nearest::nearest(qv, e, user, take));
        if !nearest.is_empty() {
            live.extend(describe(nearest));
        }
    }
    // Too few described (a readable candidate may still be left out: a partition, a member
    // of an extension): the next readable ones by words.
    let mut next = chosen.len();
    for _ in 0..ROUNDS {
        if live.len() - join_described >= wanted || next >= ranked_readable.len() {
            break;
        }
        let end = ranked_readable.len().min(next + take);
        let more = unseen(&mut seen, ranked_readable[next..end].iter().map(|(o, _)| *o));
        next = end;
        live.extend(describe(more));
    }
    if live.len() > before {
        // Junction tables between any two candidates, the first ones included.
        anchors.extend(live[before..].iter().map(|(o, _)| *o));
        let known: Vec<pg_sys::Oid> = live.iter().map(|(o, _)| *o).collect();
        let joined = describe_joins(&live[before..], &anchors, &known, &mut seen);
        joins += joined.len();
        live.extend(joined);
    }
    let describe_ms = words_ms + started.elapsed().as_secs_f64() * 1000.0;
    let started = std::time::Instant::now();
    if live.len() > valued {
        values.extend(values_of(&live[valued..]));
    }
    values_ms += started.elapsed().as_secs_f64() * 1000.0;
    // In the catalog's order (schema, then name, unquoted), as the whole catalog has them.
    let key = |t: &Table| (unquote(&t.schema), unquote(&t.name));
    live.sort_by_cached_key(|(_, t)| key(t));

    let started = std::time::Instant::now();
    let profiles: Vec<TableProfile> = live
        .iter()
        .map(|(_, t)| {
            let v = values
                .remove(&t.qualified())
                .unwrap_or_default()
                .into_iter()
                .filter(|cv| t.columns.iter().any(|c| c.name == cv.column))
                .collect();
            TableProfile { table: t.clone(), values: v }
        })
        .collect();
    let catalog = Rc::new(Catalog::new(profiles, &schema_profiles).with_table_stats(stats));
    let stored = stored_rows(&live.iter().map(|(o, _)| *o).collect::<Vec<_>>(), q, embedder);
    let mut tables = Cosines::new();
    let mut stale: Vec<(String, String)> = Vec::new();
    let mut described_again: Vec<pg_sys::Oid> = Vec::new();
    let touched_set: HashSet<u32> = touched.iter().map(|o| o.to_u32()).collect();
    for (oid, t) in &live {
        let name = t.qualified();
        let Some(description) = catalog.table_description(&name) else { continue };
        match stored.get(&oid.to_u32()) {
            Some((d, cosine)) if d == description => {
                if let Some(c) = cosine {
                    tables.insert(name, *c);
                }
                if touched_set.contains(&oid.to_u32()) {
                    described_again.push(*oid);
                }
            }
            _ if state.indexed.contains(&t.schema) => stale.push((name, description.to_string())),
            _ => {}
        }
    }
    let schemas = match (q, embedder) {
        (Some(qv), Some(e)) => schema_cosines(qv, e),
        _ => Cosines::new(),
    };
    // Described in the memory again, where it may be written.
    // SAFETY: reads a backend-global flag (also set on a hot standby).
    let read_only = unsafe { pg_sys::XactReadOnly };
    let mut refreshed = 0;
    // Only when there is something to write: a touched relation the caller may not read stays
    // noted for a role that may, without this one locking the memory at every question.
    if !stale.is_empty() {
        let oid_of: HashMap<String, pg_sys::Oid> = live.iter().map(|(o, t)| (t.qualified(), *o)).collect();
        let whole = read_whole(&stale.iter().filter_map(|(n, _)| oid_of.get(n).copied()).collect::<Vec<_>>());
        stale.retain(|(n, _)| oid_of.get(n).is_some_and(|o| whole.contains(&o.to_u32())));
    }
    // Another backend writing the memory now: this question does not wait for it (its own
    // writes can wait for the next question).
    if !read_only && (!stale.is_empty() || !described_again.is_empty()) && super::state::try_lock_version() {
        if !stale.is_empty() {
            let (vectors, keys) = store(Kind::Tables, &stale, embedder, Some(&|n: &str| catalog.stored_terms(n)));
            refreshed = keys.len();
            // With the rows of relations and schemas dropped since, as the whole catalog's
            // refresh forgets them (DROP notes nothing: this is after other DDL).
            super::forget_dropped();
            if let Some(qv) = q {
                for ((n, _), v) in stale.iter().zip(vectors) {
                    if let Some(v) = v {
                        tables.insert(n.clone(), pg_ask_core::selection::fuse::cosine(qv, &v));
                    }
                }
            }
        }
        // (The rows just stored forgot their notes as they were stored.)
        if !described_again.is_empty() {
            as_memory_owner(|| super::terms::forget_noted(&described_again))
                .or_raise("could not update the schema selection memory's changed relations");
        }
    }
    let memory_ms = values_ms + started.elapsed().as_secs_f64() * 1000.0;
    let not_refreshed = if read_only { stale.len() } else { 0 };
    let detail = serde_json::json!({
        "index": true,
        "index_tables": index.documents,
        "words_probed": probe.len(),
        "words_read": fetch.len(),
        "postings_tables": read.len(),
        "lexical_ms": lexical_ms,
        "changed_relations": touched.len(),
        "candidates_described": live.len(),
        "join_tables_described": joins,
        "describe_ms": describe_ms,
        "catalog_ms": lexical_ms + describe_ms,
        "memory_ms": memory_ms,
        "embedding": q.is_some(),
        "embedding_ms": embed_ms,
        "embedding_wait_ms": wait_ms,
        "refreshed": refreshed,
        "not_refreshed": not_refreshed,
        "other_embedder": 0,
    });
    Some(Found { catalog, tables, schemas, detail, not_refreshed })
}
