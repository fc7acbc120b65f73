//! The SQL functions of the schema selection memory: `ask.index_schema()`,
//! `ask.select_tables()`, `ask.select_schemas()`.

use super::{forget_dropped, memory_state, memory_version, rank_with, selection_catalog, store, Kind};
use crate::pg::errors::raise;
use pg_ask_core::ask::Question;
use pg_ask_core::selection::{Catalog, Cosines, Fusion, SelectOptions};
use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use std::collections::HashSet;
use std::rc::Rc;

/// Build (or rebuild) the schema selection memory for the given schemas (NULL: every schema
/// with a table the caller may read). Returns the number of tables described.
#[pg_extern(name = "_index_schema", volatile, parallel_unsafe)]
pub(crate) fn index_schema(schemas: Option<Vec<String>>) -> i64 {
    // SAFETY: reads a backend-global flag.
    if unsafe { pg_sys::XactReadOnly } {
        raise(PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION, "cannot build the schema selection memory in a read-only transaction", "");
    }
    let catalog = selection_catalog();
    let wanted: Option<HashSet<String>> = schemas.map(|names| {
        names
            .iter()
            .map(|n| Spi::get_one_with_args::<String>("SELECT quote_ident($1)", &[n.as_str().into()]).ok().flatten().unwrap_or_default())
            .collect()
    });
    if let Some(w) = &wanted {
        for name in w {
            if !catalog.schemas().iter().any(|s| &s.profile.name == name) {
                notice!("pg_ask: schema {name} has no table the current role may read; nothing is described for it");
            }
        }
    }
    let keep = |schema: &str| wanted.as_ref().is_none_or(|w| w.contains(schema));
    let tables: Vec<(String, String)> = catalog
        .table_descriptions()
        .filter(|(n, _)| catalog.table(n).is_some_and(|t| keep(&t.schema)))
        .map(|(n, d)| (n, d.to_string()))
        .collect();
    let schemas: Vec<(String, String)> =
        catalog.schema_descriptions().filter(|(n, _)| keep(n)).map(|(n, d)| (n.to_string(), d.to_string())).collect();
    let embedder = crate::pg::gucs::current_embedder();
    if embedder.is_none() {
        notice!("pg_ask: ask.embedding_provider is off: descriptions are stored without embeddings, and selection is lexical only");
    }
    // The version row first, as a refresh by ask() takes it: writers of the memory then lock
    // in the same order (no deadlock with a concurrent refresh).
    if crate::pg::version::sql_at_least("0.2.0") {
        memory_version(true);
    }
    forget_dropped();
    store(Kind::Tables, &tables, embedder.as_ref(), Some(&|n: &str| catalog.stored_terms(n)));
    store(Kind::Schemas, &schemas, embedder.as_ref(), None);
    if let Some(e) = embedder.as_ref() {
        super::nearest::index_embeddings(e);
    }
    // Fresh statistics for the plans of the questions that read the lexical index.
    if crate::pg::version::sql_at_least("0.2.0") {
        crate::pg::identity::as_memory_owner(|| {
            Spi::run("ANALYZE ask.schema_memory_tables, ask.schema_memory_terms, ask.schema_memory_vocabulary")
        })
        .unwrap_or_else(|e| crate::pg::errors::internal("could not analyze the schema selection memory", e).raise());
    }
    tables.len() as i64
}

/// What `ask.select_tables()` and `ask.select_schemas()` rank a question in.
struct Ranked {
    catalog: Rc<Catalog>,
    tables: Cosines,
    schemas: Cosines,
    /// The candidates the stored lexical index gave, not the caller's whole catalog: then
    /// what has no evidence at all (no cosine, no matching word) is not listed.
    from_index: bool,
}

/// The catalog to rank `question` in, with its cosines: with `ask.selection_index` on and a
/// complete lexical index, the candidates `ask()` would describe for `wanted` tables (the best
/// by words and the nearest by embedding the caller may read, the touched relations, their join
/// neighbours), so that a new connection does not read its whole catalog; otherwise the
/// caller's whole readable catalog, with the memory's lazy refresh.
fn ranked(question: &str, wanted: usize) -> Ranked {
    let embedder = crate::pg::gucs::current_embedder();
    let state = memory_state(embedder.as_ref());
    let asked = Question::new(question);
    if state.exists && crate::pg::gucs::selection_index() && crate::pg::version::sql_at_least("0.2.0") {
        let usable = state.usable;
        if let Some(found) = super::indexed::find(&asked, wanted, &state, embedder.as_ref()) {
            super::not_refreshed_notice(found.not_refreshed);
            if let Some((provider, model)) = embedder.filter(|_| !usable) {
                super::other_embedder_notice(format!("pg_ask: the schema selection memory holds no embedding made by the current {provider} model {model}; tables are ranked by their words only"));
            }
            return Ranked { catalog: found.catalog, tables: found.tables, schemas: found.schemas, from_index: true };
        }
    }
    let r = rank_with(&asked, state, embedder);
    if !r.memory {
        notice!("pg_ask: no schema selection memory: the ranking is lexical only; ask.index_schema() builds it");
    }
    Ranked { catalog: r.catalog, tables: r.tables, schemas: r.schemas, from_index: false }
}

/// `ask.select_tables()`: the `k` readable tables that best match `question`, with their fused
/// scores. No LLM call.
#[pg_extern(name = "_select_tables", volatile, parallel_unsafe)]
pub(crate) fn select_tables(question: &str, k: i32) -> TableIterator<'static, (name!(rel, String), name!(score, f64))> {
    if k < 0 {
        raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, format!("k must not be negative, not {k}"), "");
    }
    if k == 0 {
        return TableIterator::new(Vec::new());
    }
    let with_names = super::with_synonym_tables(question);
    let question = with_names.as_deref().unwrap_or(question);
    let r = ranked(question, k as usize);
    // The k retrieved tables only: join tables are for prompts, not for this ranking.
    let options = SelectOptions { k: k as usize, max_join_tables: 0, ..Default::default() };
    let picks = r
        .catalog
        .select_tables(question, &r.tables, &options)
        .unwrap_or_else(|e| raise(PgSqlErrorCode::ERRCODE_DATA_EXCEPTION, e.to_string(), ""));
    let listed = picks.into_iter().filter(|p| !r.from_index || p.score > 0.0);
    TableIterator::new(listed.map(|p| (p.table, p.score)).collect::<Vec<_>>())
}

/// `ask.select_schemas()`: the `k` schemas (each a "database") that best match `question`.
#[pg_extern(name = "_select_schemas", volatile, parallel_unsafe)]
pub(crate) fn select_schemas(question: &str, k: i32) -> TableIterator<'static, (name!(schema, String), name!(score, f64))> {
    if k < 0 {
        raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, format!("k must not be negative, not {k}"), "");
    }
    if k == 0 {
        return TableIterator::new(Vec::new());
    }
    // As many tables as ask() describes at most, or k when more.
    let r = ranked(question, (k as usize).max(crate::pg::gucs::max_tables()));
    let picks = r
        .catalog
        .select_schemas(question, &r.schemas, k as usize, Fusion::default())
        .unwrap_or_else(|e| raise(PgSqlErrorCode::ERRCODE_DATA_EXCEPTION, e.to_string(), ""));
    let listed = picks.into_iter().filter(|p| !r.from_index || p.score > 0.0);
    TableIterator::new(listed.map(|p| (pg_ask_core::selection::unquote(&p.schema), p.score)).collect::<Vec<_>>())
}
