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
use pg_ask_core::selection::find::{self, IndexStats, SelectionStore};
use pg_ask_core::selection::lexical::FIELDS;
use pg_ask_core::selection::{Catalog, ColumnValues, Cosines, DocTerms, SchemaProfile};
use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::PgOid::BuiltIn;

use pg_sys::BuiltinOid::{INT8OID, OIDARRAYOID, TEXTARRAYOID, TEXTOID};

use super::state::MemoryState;
use super::{catalog, store, Kind};
use crate::pg::backend;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::{ext_schema, vector_text, OrRaise};

/// The index as of the memory's `version`, read once per version; `None` when the memory
/// has no complete lexical index.
fn stored_index(version: i64) -> Option<Rc<IndexStats>> {
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
    let index = Rc::new(IndexStats {
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

/// The stored postings of `terms`, by table: each table's words among them and its lengths;
/// with `limit`, only the `limit` tables that hold them most often in their names (the
/// ranking in the database: the postings of words most tables hold are not copied out).
fn postings(terms: &[String], limit: Option<usize>) -> Vec<(pg_sys::Oid, DocTerms)> {
    // Each table's lengths by its key: a few hundred index lookups, never a scan of the whole
    // memory (a join the planner may hash).
    const ALL: &str = "SELECT t.relid, t.term, t.tf,
                              (SELECT m.field_lengths FROM ask.schema_memory_tables m WHERE m.relid OPERATOR(pg_catalog.=) t.relid)
                         FROM ask.schema_memory_terms t
                        WHERE t.term OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])";
    // The best tables ranked where the postings are, then only their postings read by key.
    const BEST: &str = "SELECT t.relid, t.term, t.tf,
                               (SELECT m.field_lengths FROM ask.schema_memory_tables m WHERE m.relid OPERATOR(pg_catalog.=) t.relid)
                          FROM (SELECT b.relid FROM ask.schema_memory_terms b
                                 WHERE b.term OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])
                                 GROUP BY b.relid
                                 ORDER BY pg_catalog.sum(coalesce(b.tf[1], 0) OPERATOR(pg_catalog.+) coalesce(b.tf[2], 0)
                                                         OPERATOR(pg_catalog.+) coalesce(b.tf[3], 0)) DESC, b.relid
                                 LIMIT $2) best
                          JOIN ask.schema_memory_terms t ON t.relid OPERATOR(pg_catalog.=) best.relid
                                                        AND t.term OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])";
    let mut args: Vec<DatumWithOid> = vec![terms.to_vec().into()];
    args.extend(limit.map(|l| DatumWithOid::from(l as i64)));
    let rows = as_memory_owner(|| {
        crate::pg::spi::select_generic(
            "the postings of the question's words",
            if limit.is_some() { BEST } else { ALL },
            &[BuiltIn(TEXTARRAYOID), BuiltIn(INT8OID)][..args.len()],
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
/// of `terms` with the question, most shared words first (at most `limit`): read through the
/// notes' index of words, so that relations other roles touched cost a question nothing
/// unless it asks for their words.
fn touched_notes(terms: &[String], limit: usize) -> Vec<pg_sys::Oid> {
    if terms.is_empty() || limit == 0 {
        return Vec::new();
    }
    let args: [DatumWithOid; 2] = [terms.to_vec().into(), (limit as i64).into()];
    as_memory_owner(|| {
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
    .or_raise("could not read the schema selection memory's changed relations")
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
/// and (at most `max_referrers`) those with foreign keys to two of the candidates `anchors`
/// (junction tables) that are not `known` already, found through `pg_depend`'s index on the
/// referenced object (`pg_constraint` has none on the referenced table).
fn neighbours(tables: &[(u32, Table)], anchors: &[pg_sys::Oid], known: &[pg_sys::Oid], max_referrers: usize) -> Vec<pg_sys::Oid> {
    let referenced: Vec<String> = tables.iter().flat_map(|(_, t)| t.foreign_keys.iter().map(|fk| fk.references.clone())).collect();
    let args: [DatumWithOid; 4] = [referenced.into(), anchors.to_vec().into(), (max_referrers as i64).into(), known.to_vec().into()];
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

/// The relations `oids` describe live, with the caller's privileges.
fn describe(oids: Vec<pg_sys::Oid>) -> Vec<(pg_sys::Oid, Table)> {
    crate::schema::describe_exactly_kept(oids).unwrap_or_else(|e| crate::pg::errors::from_host(&e).raise())
}

/// The selection's reads, with the caller's privileges (the memory's as its owner).
struct Store<'e> {
    embedder: Option<&'e (String, String)>,
    user: pg_sys::Oid,
}

/// Keys as the core sorts them: oids' numbers.
fn oids(keys: &[u32]) -> Vec<pg_sys::Oid> {
    keys.iter().map(|k| pg_sys::Oid::from(*k)).collect()
}

fn keys(oids: Vec<pg_sys::Oid>) -> Vec<u32> {
    oids.into_iter().map(|o| o.to_u32()).collect()
}

fn keyed<T>(rows: Vec<(pg_sys::Oid, T)>) -> Vec<(u32, T)> {
    rows.into_iter().map(|(o, t)| (o.to_u32(), t)).collect()
}

impl SelectionStore for Store<'_> {
    type Key = u32;
    fn document_frequencies(&mut self, terms: &[String]) -> HashMap<String, u32> {
        document_frequencies(terms)
    }
    fn postings(&mut self, terms: &[String], limit: Option<usize>) -> Vec<(u32, DocTerms)> {
        keyed(postings(terms, limit))
    }
    fn touched(&mut self, terms: &[String], limit: usize) -> Vec<u32> {
        keys(touched_notes(terms, limit))
    }
    fn readable_first(&mut self, keys_: &[u32], limit: usize) -> Vec<u32> {
        keys(readable_first(&oids(keys_), limit))
    }
    fn describe(&mut self, keys_: Vec<u32>) -> Vec<(u32, Table)> {
        if keys_.is_empty() {
            return Vec::new();
        }
        keyed(describe(oids(&keys_)))
    }
    fn neighbours(&mut self, tables: &[(u32, Table)], anchors: &[u32], known: &[u32], max_referrers: usize) -> Vec<u32> {
        keys(neighbours(tables, &oids(anchors), &oids(known), max_referrers))
    }
    fn nearest(&mut self, question: &[f32], limit: usize) -> Vec<u32> {
        match self.embedder {
            Some(e) => keys(super::nearest::nearest(question, e, self.user, limit)),
            None => Vec::new(),
        }
    }
    fn values(&mut self, tables: &[(u32, Table)]) -> HashMap<String, Vec<ColumnValues>> {
        catalog::frequent_values(Some(&tables.iter().map(|(k, _)| pg_sys::Oid::from(*k)).collect::<Vec<_>>()))
    }
    fn schema_profiles(&mut self) -> Vec<SchemaProfile> {
        catalog::schema_profiles()
    }
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
    let index = stored_index(state.version)?;
    // The question's embedding, when the memory holds embeddings of the current embedder:
    // begun now, on the local model's threads, while this backend reads the index and
    // describes the candidates found by words; waited for when the nearest are looked up.
    let wants_embedding = embedder.is_some() && state.usable;
    let mut begun = (wants_embedding && asked.embedded().is_none()).then(|| crate::llm::embeddings::begin_one(question));
    let mut embed_ms = None;
    let embedding = || {
        wants_embedding.then(|| {
            let mut took = None;
            let q = asked.embedding(|t| {
                let (v, ms) = begun.take().unwrap_or_else(|| crate::llm::embeddings::begin_one(t)).wait();
                took = Some(ms);
                v
            });
            // (Already embedded before the stage, for the verified queries: nothing to wait for.)
            embed_ms = took.or(Some(0.0));
            q
        })
    };
    // SAFETY: reads the backend's current user id.
    let user = unsafe { pg_sys::GetUserId() };
    let found = find::find(&mut Store { embedder, user }, &index, question, max_tables, embedding);
    let q = found.question;
    let live: Vec<(pg_sys::Oid, Table)> = found.described.into_iter().map(|(k, t)| (pg_sys::Oid::from(k), t)).collect();
    let touched = oids(&found.touched);
    let started = std::time::Instant::now();
    let catalog = Rc::new(found.catalog);

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
    let (counts, times) = (found.counts, found.times);
    let memory_ms = times.values_ms + started.elapsed().as_secs_f64() * 1000.0;
    let not_refreshed = if read_only { stale.len() } else { 0 };
    let detail = serde_json::json!({
        "index": true,
        "index_tables": index.documents,
        "words_probed": counts.words_probed,
        "words_read": counts.words_read,
        "postings_tables": counts.postings_tables,
        "lexical_ms": times.lexical_ms,
        "changed_relations": touched.len(),
        "candidates_described": live.len(),
        "join_tables_described": counts.join_tables_described,
        "describe_ms": times.describe_ms,
        "catalog_ms": times.lexical_ms + times.describe_ms,
        "memory_ms": memory_ms,
        "embedding": q.is_some(),
        "embedding_ms": embed_ms,
        "embedding_wait_ms": times.embedding_wait_ms,
        "refreshed": refreshed,
        "not_refreshed": not_refreshed,
        "other_embedder": 0,
    });
    Some(Found { catalog, tables, schemas, detail, not_refreshed })
}
