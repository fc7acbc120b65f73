//! The schema selection memory in PostgreSQL: `ask.index_schema()`, `ask.select_tables()`,
//! `ask.select_schemas()`, and the selection `ask()` describes to the LLM.
//!
//! Descriptions come from the core ([`pg_ask_core::selection`]); this module stores them with
//! their embeddings (pgvector) and gets the cosines back.
//!
//! * **Privileges.** Candidates are the tables the caller may SELECT now, with only the
//!   columns it may SELECT ([`crate::schema::readable_tables`]), and values only from the value
//!   memory of those columns. The memory tables are closed to PUBLIC and read as the
//!   extension's owner; a stored embedding is used only for a candidate whose stored
//!   description is exactly the caller's description of it.
//! * **Freshness** (lazy check): the caller's descriptions are compared to the stored ones:
//!   all of them the first time, then, while the memory's version stays the one a backend saw
//!   (or moved on by its own writes only), only those of the tables and schemas its catalog
//!   described anew ([`FreshMemo`], kept with the backend's state). With embeddings, the finding keeps the fresh tables'
//!   stored embeddings, read once by key, and each question is compared with them here. A
//!   dropped object has no candidate; a renamed or altered one (COMMENT on a table, column or
//!   schema included) has another description, so its stale embedding is
//!   never used: the tables and schemas of indexed schemas whose description changed are
//!   embedded again and stored, and rows of dropped relations and schemas are deleted then.
//!   In a read-only transaction (or on a hot standby) nothing can be stored: the changed
//!   objects are ranked by the lexical score alone, with a NOTICE, rather than embedded
//!   again on every call.
//! * **Provider and model**: each row records the provider and model that embedded it; a
//!   stored embedding is compared with the question only when both come from the current
//!   `ask.embedding_provider` and model. Rows from another one are ranked lexically, with a
//!   NOTICE naming both and the fix (`ask.index_schema()` under the current settings). They
//!   are not re-embedded lazily: sessions with different settings would otherwise take turns
//!   rewriting the whole memory.
//! * **Embeddings off** (`ask.embedding_provider = off`): descriptions are stored without
//!   embeddings and the lexical score alone ranks.

use crate::llm::embeddings;
use crate::pg::backend::{self, FreshMemo, Freshness};
use crate::pg::errors::Raised;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::{ext_schema, vector_text};
use pg_ask_core::ask::Selection;
use pg_ask_core::config::AskConfig;
use pg_ask_core::selection::fuse::{unit, unit_dot};
use pg_ask_core::selection::{Catalog, Cosines, DocTerms};
use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

mod catalog;
pub(crate) mod functions;
pub(crate) mod indexed;
mod nearest;
mod pick;
mod state;
mod terms;

use crate::pg::spi::OrRaise;
pub use catalog::selection_catalog;
use pg_ask_core::ask::Question;
use pick::pick;
use state::{forget_dropped, memory_state, memory_version, MemoryState};
#[cfg(any(test, feature = "pg_test"))]
mod indexed_tests;
#[cfg(any(test, feature = "pg_test"))]
mod isolation_tests;
#[cfg(any(test, feature = "pg_test"))]
mod tests;

/// Which of the two memory tables.
#[derive(Clone, Copy)]
enum Kind {
    Tables,
    Schemas,
}

impl Kind {
    fn table(self) -> &'static str {
        match self {
            Kind::Tables => "ask.schema_memory_tables",
            Kind::Schemas => "ask.schema_memory_schemas",
        }
    }
    /// The expression that turns a stored quoted name into the object's oid.
    fn oid_of(self) -> &'static str {
        match self {
            Kind::Tables => "to_regclass(u.n)::oid",
            Kind::Schemas => "to_regnamespace(u.n)::oid",
        }
    }
    fn key(self) -> &'static str {
        match self {
            Kind::Tables => "relid",
            Kind::Schemas => "nspid",
        }
    }
}

/// What the memory holds for one (name, description) of the caller's catalog.
#[derive(Clone, Copy, Default)]
struct Stored {
    /// The memory holds exactly that description under that name.
    fresh: bool,
    /// It holds an embedding of it made by another provider or model than the current one.
    other_embedder: bool,
    /// It holds an embedding of it made by the current provider and model.
    embedded: bool,
    /// The cosine of its embedding with the question's (same provider and model).
    cosine: Option<f64>,
    /// The row's key (relid or nspid), when fresh.
    key: Option<pg_sys::Oid>,
}

impl Freshness {
    fn of(stored: &HashMap<String, Stored>, items: Vec<(String, String)>, is_indexed: &dyn Fn(&str) -> bool) -> Freshness {
        let embedded = stored.iter().filter(|(_, s)| s.fresh && s.embedded).filter_map(|(n, s)| Some((n.clone(), s.key?))).collect();
        let other_embedder = stored.iter().filter(|(_, s)| s.fresh && s.other_embedder).map(|(n, _)| n.clone()).collect();
        let stale = items.into_iter().filter(|(n, _)| !stored.get(n).is_some_and(|s| s.fresh) && is_indexed(n)).collect();
        Freshness { embedded, stale, other_embedder, vectors: HashMap::new() }
    }

    /// This freshness, found for an earlier catalog, for the current one: `changed` are the
    /// current (name, description) pairs the earlier catalog did not describe so, `stored` what
    /// the memory holds for them; names that no longer `exist` are forgotten.
    fn brought_up(
        mut self,
        changed: Vec<(String, String)>,
        stored: &HashMap<String, Stored>,
        exists: &dyn Fn(&str) -> bool,
        is_indexed: &dyn Fn(&str) -> bool,
    ) -> Freshness {
        let names: HashSet<&str> = changed.iter().map(|(n, _)| n.as_str()).collect();
        let keep = |n: &str| exists(n) && !names.contains(n);
        self.embedded.retain(|n, _| keep(n));
        self.vectors.retain(|n, _| keep(n));
        self.other_embedder.retain(|n| keep(n));
        self.stale.retain(|(n, _)| keep(n));
        let new = Freshness::of(stored, changed, is_indexed);
        self.embedded.extend(new.embedded);
        self.other_embedder.extend(new.other_embedder);
        self.stale.extend(new.stale);
        self
    }

    /// Names were stored under the current embedder, with these keys and embeddings (none
    /// with embeddings off). The caller keeps as stale what was not stored.
    fn stored(&mut self, keys: &HashMap<String, pg_sys::Oid>, vectors: HashMap<&str, &[f32]>) {
        for (n, k) in keys {
            self.other_embedder.remove(n);
            self.vectors.remove(n);
            match vectors.get(n.as_str()) {
                Some(v) => {
                    self.embedded.insert(n.clone(), *k);
                    self.vectors.insert(n.clone(), unit(v));
                }
                None => {
                    self.embedded.remove(n);
                }
            }
        }
    }
}

impl Freshness {
    /// The question's cosines with the stored embeddings of the fresh names (current
    /// embedder), computed here: the embeddings are read from the memory, by key, the first
    /// time they are needed, and kept with this finding, scaled to length 1 (1.5 kB per table
    /// of 384 dimensions). No description is sent, and no vector is read twice.
    fn cosines(&mut self, kind: Kind, question: &[f32]) -> Cosines {
        let missing: Vec<(String, pg_sys::Oid)> =
            self.embedded.iter().filter(|(n, _)| !self.vectors.contains_key(*n)).map(|(n, k)| (n.clone(), *k)).collect();
        if !missing.is_empty() {
            let names: HashMap<u32, &str> = missing.iter().map(|(n, k)| (k.to_u32(), n.as_str())).collect();
            let keys: Vec<pg_sys::Oid> = missing.iter().map(|(_, k)| *k).collect();
            let sql = format!(
                "SELECT {key}, embedding::real[] FROM {table} WHERE {key} = ANY($1::oid[])",
                key = kind.key(),
                table = kind.table()
            );
            let args: [DatumWithOid; 1] = [keys.into()];
            let read = as_memory_owner(|| {
                crate::pg::spi::select_kept(
                    "stored embeddings",
                    &sql,
                    &[pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDARRAYOID)],
                    &args,
                    |r| {
                        let (Some(key), Some(v)) = (r.get::<pg_sys::Oid>(1)?, r.get::<Vec<f32>>(2)?) else { return Ok(None) };
                        Ok(names.get(&key.to_u32()).map(|n| (n.to_string(), v)))
                    },
                )
            })
            .or_raise("could not read the schema selection memory's embeddings");
            for (n, v) in read {
                self.vectors.insert(n, unit(&v));
            }
        }
        let q = unit(question);
        self.embedded.keys().filter_map(|n| Some((n.clone(), unit_dot(&q, self.vectors.get(n)?)))).collect()
    }
}

/// What the memory holds for each (name, description) of the caller's catalog, with cosines
/// against `question` (embedded by `embedder`, the current provider and model).
fn stored_cosines(
    kind: Kind,
    items: &[(String, String)],
    question: Option<&[f32]>,
    embedder: Option<&(String, String)>,
) -> HashMap<String, Stored> {
    let vector = ext_schema("vector");
    let names: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
    let descriptions: Vec<String> = items.iter().map(|(_, d)| d.clone()).collect();
    let q: Option<String> = question.map(vector_text);
    let sql = format!(
        "SELECT u.n, m.name IS NOT NULL, m.embedding IS NOT NULL AND NOT same.e,
                CASE WHEN $3::text IS NULL OR m.embedding IS NULL OR NOT same.e THEN NULL
                     ELSE 1 - (m.embedding OPERATOR({vector}.<=>) (SELECT $3::text::{vector}.vector)) END,
                m.{key}, $4::text IS NOT NULL AND m.embedding IS NOT NULL AND same.e
         FROM unnest($1::text[], $2::text[]) AS u(n, d)
         LEFT JOIN {} m ON m.name = u.n AND m.description = u.d
         CROSS JOIN LATERAL (SELECT $4::text IS NULL
                                    OR (m.embedding_provider = $4::text AND m.embedding_model IS NOT DISTINCT FROM $5::text)) AS same(e)",
        kind.table(),
        key = kind.key(),
    );
    let args: [DatumWithOid; 5] =
        [names.into(), descriptions.into(), q.into(), embedder.map(|(p, _)| p.clone()).into(), embedder.map(|(_, m)| m.clone()).into()];
    as_memory_owner(|| {
        crate::pg::spi::select_kept(
            "stored cosines",
            &sql,
            &[
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTARRAYOID),
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTARRAYOID),
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTOID),
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTOID),
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTOID),
            ],
            &args,
            |r| {
                let (Some(name), Some(fresh)) = (r.get::<String>(1)?, r.get::<bool>(2)?) else { return Ok(None) };
                Ok(Some((
                    name,
                    Stored {
                        fresh,
                        other_embedder: r.get::<bool>(3)?.unwrap_or(false),
                        cosine: r.get::<f64>(4)?,
                        key: r.get::<pg_sys::Oid>(5)?,
                        embedded: r.get::<bool>(6)?.unwrap_or(false),
                    },
                )))
            },
        )
    })
    .or_raise("could not read the schema selection memory")
    .into_iter()
    .collect()
}

/// A table's words for the lexical index, by its qualified name.
type TermsOf<'a> = &'a dyn Fn(&str) -> Option<DocTerms>;

/// Store descriptions (and embeddings by `embedder`, the current provider and model, when
/// on) of `items`, and for tables the words `terms` gives in the lexical index; returns the
/// embeddings made and the keys of the rows written, by name. Not in a read-only transaction.
fn store(
    kind: Kind,
    items: &[(String, String)],
    embedder: Option<&(String, String)>,
    terms: Option<TermsOf<'_>>,
) -> (Vec<Option<Vec<f32>>>, HashMap<String, pg_sys::Oid>) {
    if items.is_empty() {
        return (Vec::new(), HashMap::new());
    }
    let vectors: Vec<Option<Vec<f32>>> = if embedder.is_some() {
        let texts: Vec<&str> = items.iter().map(|(_, d)| d.as_str()).collect();
        embeddings::embed_texts(&texts).into_iter().map(Some).collect()
    } else {
        vec![None; items.len()]
    };
    let vector = ext_schema("vector");
    let names: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
    let descriptions: Vec<String> = items.iter().map(|(_, d)| d.clone()).collect();
    let embs: Vec<Option<String>> = vectors.iter().map(|v| v.as_deref().map(vector_text)).collect();
    let sql = format!(
        "INSERT INTO {table} ({key}, name, description, embedding, embedding_provider, embedding_model)
         SELECT {oid}, u.n, u.d, u.e::{vector}.vector, $4, $5
         FROM unnest($1::text[], $2::text[], $3::text[]) AS u(n, d, e) WHERE {oid} IS NOT NULL
         ON CONFLICT ({key}) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description,
            embedding = EXCLUDED.embedding, embedding_provider = EXCLUDED.embedding_provider,
            embedding_model = EXCLUDED.embedding_model, indexed_at = now()
         RETURNING name, {key}",
        table = kind.table(),
        key = kind.key(),
        oid = kind.oid_of(),
    );
    let (provider, model) = embedder.cloned().map_or(("off".to_string(), None), |(p, m)| (p, Some(m)));
    let args: [DatumWithOid; 5] = [names.into(), descriptions.into(), embs.into(), provider.into(), model.into()];
    let keys = as_memory_owner(|| {
        crate::pg::spi::write_kept(
            "store descriptions",
            &sql,
            &[
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTARRAYOID),
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTARRAYOID),
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTARRAYOID),
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTOID),
                pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::TEXTOID),
            ],
            &args,
            |r| Ok(r.get::<String>(1)?.zip(r.get::<pg_sys::Oid>(2)?)),
        )
    })
    .or_raise("could not store the schema selection memory");
    let keys: HashMap<String, pg_sys::Oid> = keys.into_iter().collect();
    if let Some(terms) = terms.filter(|_| crate::pg::version::sql_at_least("0.2.0")) {
        terms::store_terms(&keys, terms);
    }
    (vectors, keys)
}

/// The catalog and the question's cosines with every readable table and schema whose
/// description is in the memory, after the lazy refresh.
pub struct Ranking {
    pub catalog: Rc<Catalog>,
    /// Whether a schema selection memory was built in this database.
    pub memory: bool,
    pub tables: Cosines,
    pub schemas: Cosines,
    /// The time embedding the question took, when it was embedded (milliseconds).
    pub embed_ms: Option<f64>,
    /// The time reading the caller's catalog took: nothing when this backend's catalog is
    /// current, the whole description and index in a new backend or after a change of user
    /// (milliseconds).
    pub catalog_ms: f64,
    /// Of `catalog_ms`, the time reading the description of the readable tables took.
    pub describe_ms: f64,
    /// The time the memory's rows took to compare and refresh (milliseconds).
    pub memory_ms: f64,
    /// Tables and schemas described again because their description changed.
    pub refreshed: usize,
    /// Tables and schemas whose description changed but could not be stored again (read-only
    /// transaction): ranked lexically.
    pub not_refreshed: usize,
    /// Tables and schemas whose stored embedding comes from another provider or model than
    /// the current one: ranked lexically.
    pub other_embedder: usize,
}

/// Say that `n` changed tables and schemas are ranked by their words only (read-only).
fn not_refreshed_notice(n: usize) {
    if n > 0 {
        Raised::new(
            PgSqlErrorCode::ERRCODE_WARNING,
            format!("pg_ask: {n} tables and schemas changed since the schema selection memory described them; in a read-only transaction it cannot be refreshed, so they are ranked by their words only"),
        )
        .hint("Any ask.select_tables() or ask() in a read-write transaction on the primary refreshes the memory, as does ask.index_schema().")
        .notice();
    }
}

/// Say `message`: stored embeddings of another provider or model than the current one are not
/// compared, and how to make them count again.
fn other_embedder_notice(message: String) {
    Raised::new(PgSqlErrorCode::ERRCODE_WARNING, message)
        .hint("Rebuild the memory with ask.index_schema() under the current settings, or set ask.embedding_provider and ask.embedding_model back to the ones it was built with.")
        .notice();
}

/// The whole readable catalog's ranking for `asked`: embed it (when embeddings are on and the
/// memory holds embeddings of the same provider and model, or changed descriptions are about
/// to be embedded), read the stored cosines, and describe again what changed in the indexed
/// schemas; `state` is the memory's, already read.
fn rank_with<'q>(asked: &'q Question, state: MemoryState, embedder: Option<(String, String)>) -> Ranking {
    let started = std::time::Instant::now();
    // The description first, timed apart from the catalog built from it.
    let tables = catalog::readable();
    let describe_ms = started.elapsed().as_secs_f64() * 1000.0;
    let catalog = catalog::selection_catalog_of(tables);
    let catalog_ms = started.elapsed().as_secs_f64() * 1000.0;
    let started = std::time::Instant::now();
    // SAFETY: reads a backend-global flag (also set on a hot standby).
    let read_only = unsafe { pg_sys::XactReadOnly };
    let MemoryState { exists: memory, indexed, usable, version } = state;
    // SAFETY: reads the backend's current user id.
    let user = unsafe { pg_sys::GetUserId() };
    let table_schema = |n: &str| catalog.table(n).map(|t| t.schema.clone()).unwrap_or_default();
    let table_indexed = |n: &str| indexed.contains(&table_schema(n));
    let schema_indexed = |n: &str| indexed.contains(n);
    // What this backend found, if the memory has not changed since: as it was when the
    // catalog has not changed either; otherwise brought up to the catalog by looking up only
    // what changed in it.
    let memo =
        backend::with(|b| b.fresh.take().filter(|m| version >= 0 && m.version == version && m.user == user && m.embedder == embedder));
    let (mut memo_tables, mut memo_schemas) = match memo {
        Some(m) if m.catalog == catalog.id() => (Some(m.tables), Some(m.schemas)),
        Some(m) => match catalog.renewal().filter(|r| r.from == m.catalog) {
            Some(renewal) => {
                let changed: Vec<(String, String)> =
                    renewal.tables.iter().filter_map(|n| Some((n.clone(), catalog.table_description(n)?.to_string()))).collect();
                let stored = stored_cosines(Kind::Tables, &changed, None, embedder.as_ref());
                let tables = m.tables.brought_up(changed, &stored, &|n| catalog.table(n).is_some(), &table_indexed);
                let descriptions: HashMap<&str, &str> = catalog.schema_descriptions().collect();
                let changed: Vec<(String, String)> =
                    renewal.schemas.iter().filter_map(|n| Some((n.clone(), descriptions.get(n.as_str())?.to_string()))).collect();
                let stored = stored_cosines(Kind::Schemas, &changed, None, embedder.as_ref());
                let schemas = m.schemas.brought_up(changed, &stored, &|n| descriptions.contains_key(n), &schema_indexed);
                (Some(tables), Some(schemas))
            }
            None => (None, None),
        },
        None => (None, None),
    };
    let mut q: Option<&'q [f32]> = None;
    let embed_ms = std::cell::Cell::new(None);
    let embed_question = |q: &mut Option<&'q [f32]>| {
        if q.is_none() && embedder.is_some() {
            let t = std::time::Instant::now();
            *q = Some(asked.embedding(embeddings::embed_one));
            embed_ms.set(Some(t.elapsed().as_secs_f64() * 1000.0));
        }
    };
    if usable {
        embed_question(&mut q);
    }
    let (mut refreshed, mut not_refreshed, mut other_embedder) = (0, 0, 0);
    // The memory's version when this backend first wrote to it (its row then locked).
    let mut locked: Option<Option<i64>> = None;
    // Per kind: the cosines, and the freshness found, with what was stored.
    let mut cosines = |kind: Kind,
                       memo: Option<Freshness>,
                       items: &dyn Fn() -> Vec<(String, String)>,
                       is_indexed: &dyn Fn(&str) -> bool|
     -> (Cosines, Freshness) {
        let (mut fresh, mut out) = match memo {
            // Only the question's cosines are read, by key, without sending a description.
            Some(mut fresh) => {
                let out = match &q {
                    Some(qv) if !fresh.embedded.is_empty() => fresh.cosines(kind, qv),
                    _ => Cosines::new(),
                };
                (fresh, out)
            }
            None => {
                let items = items();
                let stored = stored_cosines(kind, &items, q, embedder.as_ref());
                let out: Cosines = stored.iter().filter_map(|(n, s)| s.cosine.map(|c| (n.clone(), c))).collect();
                (Freshness::of(&stored, items, is_indexed), out)
            }
        };
        other_embedder += fresh.other_embedder.len();
        if fresh.stale.is_empty() {
            return (out, fresh);
        }
        if read_only {
            not_refreshed += fresh.stale.len();
            return (out, fresh);
        }
        if locked.is_none() {
            locked = Some(if version >= 0 { memory_version(true) } else { None });
        }
        let stale = std::mem::take(&mut fresh.stale);
        refreshed += stale.len();
        let terms_of = |n: &str| catalog.stored_terms(n);
        let terms: Option<TermsOf<'_>> = match kind {
            Kind::Tables => Some(&terms_of),
            Kind::Schemas => None,
        };
        let (vectors, keys) = store(kind, &stale, embedder.as_ref(), terms);
        fresh.stale = stale.iter().filter(|(n, _)| !keys.contains_key(n)).cloned().collect();
        fresh.stored(&keys, stale.iter().zip(&vectors).filter_map(|((n, _), v)| Some((n.as_str(), v.as_deref()?))).collect());
        if vectors.iter().any(Option::is_some) {
            embed_question(&mut q);
        }
        if let Some(q) = &q {
            for ((n, _), v) in stale.iter().zip(vectors) {
                if let Some(v) = v {
                    out.insert(n.clone(), pg_ask_core::selection::fuse::cosine(q, &v));
                }
            }
        }
        (out, fresh)
    };
    let table_items = || catalog.table_descriptions().map(|(n, d)| (n, d.to_string())).collect();
    let (tables, fresh_tables) = cosines(Kind::Tables, memo_tables.take(), &table_items, &table_indexed);
    let schema_items = || catalog.schema_descriptions().map(|(n, d)| (n.to_string(), d.to_string())).collect();
    let (schemas, fresh_schemas) = cosines(Kind::Schemas, memo_schemas.take(), &schema_items, &schema_indexed);
    // What was found is kept under the memory's version: the one read, or, when this backend
    // wrote, the one after its writes, if nobody else wrote before it locked the version.
    let kept_version = match locked {
        None => Some(version),
        Some(before) => {
            // A deleted row may be one a fresh name's key points to (a table dropped and made
            // again with the same description): then nothing found is kept.
            let forgotten = forget_dropped();
            before.filter(|&v| v == version && forgotten == 0).and_then(|_| memory_version(false))
        }
    };
    if let Some(version) = kept_version.filter(|&v| v >= 0) {
        backend::with(|b| {
            b.fresh.replace(Some(FreshMemo {
                version,
                user,
                embedder: embedder.clone(),
                catalog: catalog.id(),
                tables: fresh_tables,
                schemas: fresh_schemas,
            }))
        });
    }
    not_refreshed_notice(not_refreshed);
    if other_embedder > 0 {
        let (provider, model) = embedder.clone().unwrap_or_default();
        other_embedder_notice(format!("pg_ask: {other_embedder} tables and schemas of the schema selection memory were embedded by another provider or model than the current {provider} model {model}; they are ranked by their words only"));
    }
    let memory_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ranking {
        catalog,
        memory,
        tables,
        schemas,
        embed_ms: embed_ms.get(),
        catalog_ms,
        describe_ms,
        memory_ms,
        refreshed,
        not_refreshed,
        other_embedder,
    }
}

/// The question with the tables it names by a synonym (`ask.knowledge`) written after it, for
/// selection to read as if it named them ("clients" finds `shop.customers`); `None` when it
/// names none.
pub(crate) fn with_synonym_tables(question: &str) -> Option<String> {
    let named = crate::knowledge::read::synonym_tables(question);
    (!named.is_empty()).then(|| format!("{question} ({})", named.join(", ")))
}

/// The tables `ask()` describes for `question`, under the call's settings `cfg` (`max_tables`,
/// the stored index, the embedder): `None` without a schema selection memory
/// (then every readable table is described). With one: the [`pg_ask_core::selection::PLAN_SCHEMAS`] best schemas,
/// the `max_tables` best tables among them plus the tables their joins need, grouped by
/// schema in schema order; schemas without a picked table, and schemas and tables with no
/// evidence at all (no cosine, no matching word), are left out.
pub fn selection_for(asked: &Question, cfg: &AskConfig) -> Result<Option<Selection>, String> {
    let with_names;
    let asked = match with_synonym_tables(asked.text()) {
        Some(text) => {
            with_names = Question::new(text);
            &with_names
        }
        None => asked,
    };
    let max_tables = cfg.max_tables;
    let embedder = cfg.embedder.clone();
    let state = memory_state(embedder.as_ref());
    if !state.exists {
        return Ok(None);
    }
    if cfg.selection_index && crate::pg::version::sql_at_least("0.2.0") {
        if let Some(found) = indexed::find(asked, max_tables, &state, embedder.as_ref()) {
            return pick(asked.text(), &found.catalog, &found.tables, &found.schemas, max_tables, found.detail);
        }
    }
    let r = rank_with(asked, state, embedder);
    let detail = json!({
        "index": false,
        "catalog_ms": r.catalog_ms,
        "describe_ms": r.describe_ms,
        "memory_ms": r.memory_ms,
        "embedding": r.embed_ms.is_some(),
        "embedding_ms": r.embed_ms,
        "refreshed": r.refreshed,
        "not_refreshed": r.not_refreshed,
        "other_embedder": r.other_embedder,
        "readable_tables": r.catalog.tables().len(),
    });
    pick(asked.text(), &r.catalog, &r.tables, &r.schemas, max_tables, detail)
}
