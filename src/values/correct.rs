//! Value correction from a backend: literals of a checked statement are looked up in the value
//! memory, decided on by the core's rules, and replaced (or put to the LLM).

use std::collections::{HashMap, HashSet};

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;

use pg_ask_core::ask::HostError;
use pg_ask_core::guard::CheckedSql;
use pg_ask_core::schema::Table;
use pg_ask_core::selection::unquote;
use pg_ask_core::values::correct::{ColumnEvidence, Looked};
use pg_ask_core::values::decide::{Candidate, Evidence};
use pg_ask_core::values::literals::{
    find_literals, find_literals_in, relation_names, relation_names_in, Catalog, CatalogColumn, LiteralKind, LiteralRef,
};

use crate::pg::backend;
use crate::pg::spi::OrRaise;
use crate::values::{EmbeddingUse, MemoryColumn};
use crate::{llm::embeddings, schema, values};

/// Enum labels embedded at most for one literal (larger enums are matched by trigrams only).
const MAX_EMBEDDED_LABELS: usize = 1_000;

/// Which of `names` are text-like types, from the per-backend cache, reading the missing ones
/// in one query.
fn text_like_types(names: &[String]) -> HashMap<String, bool> {
    if !backend::with(|b| b.types_valid.replace(true)) {
        backend::with(|b| b.text_types.borrow_mut().clear());
    }
    let missing: Vec<String> = backend::with(|b| {
        let t = b.text_types.borrow();
        let mut m: Vec<String> = names.iter().filter(|n| !t.contains_key(*n)).cloned().collect();
        m.sort();
        m.dedup();
        m
    });
    if !missing.is_empty() {
        let found: Vec<(String, bool)> = crate::pg::spi::select_rows(
            "SELECT s, ask._text_base(pg_catalog.to_regtype(s)) IS NOT NULL FROM unnest($1::text[]) s",
            &[missing.clone().into()],
            |r| Ok(r.get::<String>(1)?.zip(r.get::<bool>(2)?)),
        )
        .or_raise("could not read which types are text");
        backend::with(|b| b.text_types.borrow_mut().extend(found));
    }
    backend::with(|b| {
        let t = b.text_types.borrow();
        names.iter().map(|n| (n.clone(), t.get(n).copied().unwrap_or(false))).collect()
    })
}

/// The catalog `sql`'s literals are resolved in: the readable tables that bear the name of a
/// relation it reads from, with the session's search path. Only those: a statement names a
/// few tables, and a catalog of every readable table cost a backend tens of milliseconds at
/// 10,000 tables the first time a statement had a literal.
fn literal_catalog(names: &[String]) -> Result<Catalog, String> {
    let tables = schema::tables_named(names).map_err(|e| e.message)?;
    let named: Vec<&Table> = tables.iter().collect();
    let mut cat = Catalog::new(crate::pg::spi::search_path(false));
    add_tables(&mut cat, &named);
    Ok(cat)
}

/// Add `tables` to the literal catalog, with which of their columns hold text.
fn add_tables(cat: &mut Catalog, tables: &[&Table]) {
    let type_names: Vec<String> = tables
        .iter()
        .flat_map(|t| t.columns.iter().map(|c| c.data_type.as_str()))
        .collect::<HashSet<_>>()
        .into_iter()
        .map(str::to_string)
        .collect();
    let text_like = text_like_types(&type_names);
    for t in tables {
        let cols = t
            .columns
            .iter()
            .map(|c| CatalogColumn { name: unquote(&c.name), text_like: text_like.get(&c.data_type).copied().unwrap_or(false) })
            .collect();
        cat.add_table(&unquote(&t.schema), &unquote(&t.name), cols);
    }
}

/// What the value memory and the catalog know about the column a literal is compared with.
#[derive(Default, Clone)]
struct ColumnFacts {
    /// The enum's labels, when the column is an enum (or a domain over one).
    labels: Option<Vec<String>>,
    /// The column's memory, when indexed.
    memory: Option<MemoryColumn>,
}

/// The one check made for every statement with literals: for each literal's column, whether
/// the caller may read it, whether it is an enum (with its labels), and its memory, if any.
fn column_facts(literals: &[LiteralRef]) -> Vec<ColumnFacts> {
    let rels: Vec<String> = literals.iter().map(|l| l.table.to_string()).collect();
    let cols: Vec<String> = literals.iter().map(|l| l.column.clone()).collect();
    // SAFETY: reads the backend's current user id.
    let caller = unsafe { pg_sys::GetUserId() };
    let args: [DatumWithOid; 3] = [rels.into(), cols.into(), caller.into()];
    let mut out = vec![ColumnFacts::default(); literals.len()];
    let rows: Vec<(usize, ColumnFacts)> = values::as_memory_owner(|| {
        crate::pg::spi::select_rows(
            "SELECT u.i::int,
                    CASE WHEN bt.typtype = 'e' THEN ARRAY(SELECT e.enumlabel::text FROM pg_catalog.pg_enum e
                                                          WHERE e.enumtypid = bt.oid ORDER BY e.enumsortorder) END,
                    vc.id, vc.distinct_values, vc.embedding_provider, vc.embedding_model, vc.dims, vc.own_indexes,
                    vc.capped, vc.allow_rls, a.attrelid
             FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(rel, col, i)
             JOIN pg_catalog.pg_attribute a ON a.attrelid = pg_catalog.to_regclass(u.rel) AND a.attname = u.col
                                           AND a.attnum > 0 AND NOT a.attisdropped
             LEFT JOIN pg_catalog.pg_type bt ON bt.oid = ask._text_base(a.atttypid)
             LEFT JOIN ask.value_columns vc ON vc.relid = a.attrelid AND vc.attnum = a.attnum
             WHERE pg_catalog.has_column_privilege($3, a.attrelid, a.attnum, 'SELECT')",
            &args,
            |r| {
                let (Some(i), Some(relid)) = (r.get::<i32>(1)?, r.get::<pg_sys::Oid>(11)?) else { return Ok(None) };
                let memory = match r.get::<i64>(3)? {
                    Some(id) => Some(MemoryColumn {
                        id,
                        distinct: r.get::<i64>(4)?.unwrap_or(0),
                        provider: r.get::<String>(5)?.unwrap_or_default(),
                        model: r.get::<String>(6)?,
                        dims: r.get::<i32>(7)?,
                        own_indexes: r.get::<bool>(8)?.unwrap_or(false),
                        capped: r.get::<bool>(9)?.unwrap_or(false),
                        allow_rls: r.get::<bool>(10)?.unwrap_or(false),
                    }),
                    None => None,
                };
                // Values of a table whose policies now hide rows from the caller are not
                // used, unless its owner opted in.
                let memory = memory.filter(|m| m.allow_rls || !values::rls_hides(relid, caller));
                Ok(Some((i as usize - 1, ColumnFacts { labels: r.get::<Vec<String>>(2)?, memory })))
            },
        )
    })
    .or_raise("could not read the facts of the literals' columns");
    for (i, f) in rows {
        out[i] = f;
    }
    out
}

/// Evidence for a literal compared with an enum column: its labels are every value it can
/// hold (a closed set), read from pg_enum, so no memory is needed.
fn enum_evidence(labels: &[String], literal: &str) -> Evidence {
    let exact = labels.iter().any(|l| l == literal);
    let lower = literal.to_lowercase();
    let case_insensitive = if exact { None } else { labels.iter().find(|l| l.to_lowercase() == lower).cloned() };
    let mut candidates = Vec::new();
    if !exact && case_insensitive.is_none() && !labels.is_empty() {
        let trgm = crate::pg::spi::ext_schema("pg_trgm");
        let trigrams: Vec<f64> = crate::pg::spi::select_rows(
            &format!("SELECT {trgm}.similarity(l, $2)::float8 FROM unnest($1::text[]) WITH ORDINALITY AS u(l, i) ORDER BY i"),
            &[labels.to_vec().into(), literal.into()],
            |r| Ok(Some(r.get::<f64>(1)?.unwrap_or(0.0))),
        )
        .or_raise("could not compare the enum's labels");
        let cosines: Option<Vec<f64>> = (crate::pg::gucs::current_embedder().is_some() && labels.len() <= MAX_EMBEDDED_LABELS).then(|| {
            let mut texts: Vec<&str> = vec![literal];
            texts.extend(labels.iter().map(String::as_str));
            let v = embeddings::embed_texts(&texts);
            v[1..].iter().map(|l| pg_ask_core::selection::fuse::cosine(l, &v[0])).collect()
        });
        candidates = labels
            .iter()
            .enumerate()
            .map(|(i, l)| Candidate {
                value: l.clone(),
                frequency: 0,
                cosine: cosines.as_ref().map(|c| c[i]),
                trigram: trigrams.get(i).copied(),
            })
            .collect();
        // The decision ranks by embedding and trigram; keep the best of each, as the memory would.
        candidates = best_of_each(candidates, values::NEIGHBOURS as usize);
    }
    Evidence {
        literal: literal.to_string(),
        exact,
        case_insensitive,
        candidates,
        distinct_values: labels.len() as u64,
        closed_set: true,
        all_values: false,
    }
}

/// The `k` best candidates by cosine and the `k` best by trigram similarity.
fn best_of_each(all: Vec<Candidate>, k: usize) -> Vec<Candidate> {
    let mut keep = vec![false; all.len()];
    for key in [|c: &Candidate| c.cosine, |c: &Candidate| c.trigram] {
        let mut order: Vec<(usize, f64)> = all.iter().enumerate().filter_map(|(i, c)| key(c).map(|s| (i, s))).collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (i, _) in order.into_iter().take(k) {
            keep[i] = true;
        }
    }
    all.into_iter().zip(keep).filter_map(|(c, k)| k.then_some(c)).collect()
}

/// Evidence for a literal compared with an indexed column, and a note when its embeddings
/// could not be used.
fn memory_evidence(col: &MemoryColumn, lit: &LiteralRef) -> (Evidence, Option<String>) {
    let like = match &lit.kind {
        LiteralKind::Like { pattern, .. } => Some(pattern.pattern.clone()),
        _ => None,
    };
    let mut note = None;
    let ev = values::search::literal_evidence(col, &lit.value, like.as_deref(), || match values::embedding_use(col) {
        EmbeddingUse::Off => None,
        EmbeddingUse::Mismatch(why) => {
            note = Some(why);
            None
        }
        EmbeddingUse::Usable => {
            let v = embeddings::embed_one(&lit.value);
            if Some(v.len() as i32) == col.dims {
                Some(v)
            } else {
                note = Some(format!("the literal's embedding has {} dimensions, the column's values {:?}", v.len(), col.dims));
                None
            }
        }
    });
    (ev, note)
}

/// The string literals of `sql` compared with columns, each with what its column holds like
/// it: the enum's labels, or the value memory's candidates (a column the caller may not read,
/// or whose table's policies hide rows from it, holds none). Lookups only: the core decides.
/// The statement's tree is read, not its text parsed again.
pub(crate) fn literal_evidence(sql: &CheckedSql) -> Result<Vec<Looked>, HostError> {
    let cat = literal_catalog(&relation_names_in(sql)).map_err(HostError::internal)?;
    let literals = find_literals_in(sql, &cat).map_err(|e| HostError { sqlstate: "42601".into(), message: e.to_string() })?;
    if literals.is_empty() {
        return Ok(Vec::new());
    }
    let facts = column_facts(&literals);
    Ok(literals
        .into_iter()
        .zip(facts)
        .map(|(lit, f)| {
            let column = match (&f.labels, &f.memory) {
                (Some(_), _) if matches!(lit.kind, LiteralKind::Like { .. }) => ColumnEvidence::EnumPattern,
                (Some(labels), _) => {
                    ColumnEvidence::Found { evidence: enum_evidence(labels, &lit.value), from_enum: true, embeddings_unused: None }
                }
                (None, Some(col)) => {
                    let (evidence, embeddings_unused) = memory_evidence(col, &lit);
                    ColumnEvidence::Found { evidence, from_enum: false, embeddings_unused }
                }
                (None, None) => ColumnEvidence::NotIndexed,
            };
            Looked { literal: lit, column }
        })
        .collect())
}

/// The string literals of `sql` compared with text columns of readable tables, resolved to
/// their columns under the session's search path.
pub(crate) fn literals(sql: &str) -> Result<Vec<LiteralRef>, String> {
    let cat = literal_catalog(&relation_names(sql))?;
    find_literals(sql, &cat).map_err(|e| e.to_string())
}

/// The evidence on `text` as a value of `lit`'s column (looked up as a plain value: a LIKE
/// pattern's wildcards are put back around it when it is written in). `None` when the
/// column is not indexed (and not an enum) or the caller may not read it.
fn evidence_for(lit: &LiteralRef, text: &str) -> Option<Evidence> {
    let probe = LiteralRef { value: text.to_string(), kind: LiteralKind::Eq, ..lit.clone() };
    let facts = column_facts(std::slice::from_ref(&probe)).pop().unwrap_or_default();
    match (&facts.labels, &facts.memory) {
        (Some(labels), _) => Some(enum_evidence(labels, text)),
        (None, Some(col)) => Some(memory_evidence(col, &probe).0),
        (None, None) => None,
    }
}

/// The value stored in `lit`'s column that `text` stands for (the core's
/// [`pg_ask_core::values::reading::stored_reading`] of the evidence looked up here). `None`
/// when the column is not indexed (and not an enum) or the caller may not read it.
pub(crate) fn stored_value(lit: &LiteralRef, text: &str) -> Option<String> {
    pg_ask_core::values::reading::stored_reading(&evidence_for(lit, text)?, text)
}

/// The value of `lit`'s column that `text` is a spelling of on lexical evidence alone
/// ([`pg_ask_core::values::reading::lexical_reading`]).
pub(crate) fn lexical_reading(lit: &LiteralRef, text: &str) -> Option<String> {
    pg_ask_core::values::reading::lexical_reading(&evidence_for(lit, text)?, text)
}
