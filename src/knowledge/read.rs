//! The knowledge items ask() is offered for a question: those the caller may see (the policy of
//! `ask.knowledge` decides) over the described tables, plus the database's and schemas'
//! instructions; an item whose tables changed since it was checked is checked again, as the
//! caller, and left out when it no longer holds.

use pg_ask_core::knowledge::Item;

use super::check::{holds_for_caller, stored_in_order};
use crate::pg::gucs;

/// At most this many items are read for one question.
const MAX_READ: usize = 500;
/// Time one question spends checking again items whose tables changed, at most.
const RECHECK_BUDGET: std::time::Duration = std::time::Duration::from_millis(200);

/// The items for a question over `tables` (qualified as a description writes them); none
/// with `ask.use_knowledge` off, or before `ALTER EXTENSION pg_ask UPDATE` made the table.
pub(crate) fn for_question(tables: &[String]) -> Result<Vec<Item>, String> {
    if !gucs::use_knowledge() || !crate::pg::version::sql_at_least("0.2.0") {
        return Ok(Vec::new());
    }
    let wanted = WANTED.replace("$1", &array_literal(tables));
    let mut items = Vec::new();
    // Items whose tables changed are checked again within one budget per question; past it they
    // are left out (another role's many stale items do not cost this role's question more).
    let started = std::time::Instant::now();
    for s in stored_in_order(&format!("WHERE k.problem IS NULL AND {wanted}"), TRUSTED_FIRST).into_iter().take(MAX_READ) {
        if !s.fresh && (started.elapsed() > RECHECK_BUDGET || !holds_for_caller(s.kind, &s.item)) {
            continue;
        }
        let it = s.item;
        items.push(Item {
            id: s.id,
            kind: Some(s.kind),
            name: it.name,
            table: s.table,
            schema: it.about_schema,
            column: it.column,
            value: it.value,
            body: it.body,
            description: it.description,
            synonyms: it.synonyms,
        });
    }
    Ok(items)
}

/// The order items are read in for a question: the caller's own, then superusers' and the
/// extension owner's, then those the owner of their table wrote, then the rest, each tier
/// taking the tables in turn (each table's oldest item, then each one's second, ...): many
/// items about one table a question describes, by one role or by many, cannot push the items
/// of another described table out of those read.
const TRUSTED_FIRST: &str = "k.created_by::pg_catalog.oid OPERATOR(pg_catalog.=) pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))::pg_catalog.oid DESC,
        (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) k.created_by::pg_catalog.oid)
          OR k.created_by::pg_catalog.oid OPERATOR(pg_catalog.=) (SELECT e.extowner FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'pg_ask') DESC NULLS LAST,
        k.created_by::pg_catalog.oid OPERATOR(pg_catalog.=) (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) k.about::pg_catalog.oid) DESC NULLS LAST,
        pg_catalog.row_number() OVER (PARTITION BY k.about ORDER BY k.id),
        k.id";

/// The items a question over the tables `$1` (a text[] literal) may be offered: about one of
/// them, or about no table (the database's and schemas' instructions).
const WANTED: &str = "(k.about IS NULL
        OR k.about::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT pg_catalog.to_regclass(t)::pg_catalog.oid FROM pg_catalog.unnest($1::pg_catalog.text[]) t)))";

/// `names` as a SQL text[] literal.
fn array_literal(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| pg_ask_core::sqltext::quote_literal(n)).collect();
    format!("ARRAY[{}]::pg_catalog.text[]", quoted.join(", "))
}

/// Synonyms read for one question, at most (those beginning with one of its words).
const MAX_SYNONYMS_READ: i64 = 200;

/// The tables `question` names by a table synonym the caller may see (the policy of
/// `ask.knowledge` decides), qualified: table selection reads their names beside the
/// question's words. None with `ask.use_knowledge` off or before the 0.2.0 tables exist.
pub(crate) fn synonym_tables(question: &str) -> Vec<String> {
    if !gucs::use_knowledge() || !crate::pg::version::sql_at_least("0.2.0") {
        return Vec::new();
    }
    let words = pg_ask_core::knowledge::probe_words(question);
    if words.is_empty() {
        return Vec::new();
    }
    let args: [pgrx::datum::DatumWithOid; 1] = [words.into()];
    let found = crate::pg::spi::select_kept(
        "table synonyms of a question",
        &format!(
            "SELECT k.name, pg_catalog.format('%I.%I', n.nspname, c.relname)
               FROM ask.knowledge k
               JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) k.about::pg_catalog.oid
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE k.kind OPERATOR(pg_catalog.=) 'synonym' AND k.column_name IS NULL AND k.problem IS NULL
                AND k.first_word OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])
              ORDER BY {TRUSTED_FIRST}
              LIMIT {MAX_SYNONYMS_READ}"
        ),
        &[pgrx::pg_sys::PgOid::BuiltIn(pgrx::pg_sys::PgBuiltInOids::TEXTARRAYOID)],
        &args,
        |r| Ok(Some((r.get::<String>(1)?.unwrap_or_default(), r.get::<String>(2)?.unwrap_or_default()))),
    );
    match found {
        Ok(pairs) => pg_ask_core::knowledge::named_tables(question, &pairs),
        Err(e) => {
            pgrx::debug1!("pg_ask: table synonyms not read: {e}");
            Vec::new()
        }
    }
}

/// The relations `names` (a statement's relation names, each as its folded parts) stand for
/// under the caller's search path, as `format('%I.%I')` writes them (an item's table is
/// written so); names of no relation are left out. A failed read resolves none (no item is
/// then written in).
pub(crate) fn resolve(names: &[Vec<String>]) -> Vec<String> {
    use pg_ask_core::sqltext::quote_ident;
    // A name of more parts (another database's) names nothing here, and to_regclass would
    // raise an error for it.
    let written: Vec<String> = names
        .iter()
        .filter(|parts| (1..=2).contains(&parts.len()))
        .map(|parts| parts.iter().map(|p| quote_ident(p)).collect::<Vec<_>>().join("."))
        .collect();
    if written.is_empty() {
        return Vec::new();
    }
    let args: [pgrx::datum::DatumWithOid; 1] = [written.into()];
    crate::pg::spi::select_kept(
        "relations a statement names",
        "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
           FROM pg_catalog.unnest($1::pg_catalog.text[]) x
           JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(x)
           JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace",
        &[pgrx::pg_sys::PgOid::BuiltIn(pgrx::pg_sys::PgBuiltInOids::TEXTARRAYOID)],
        &args,
        |r| r.get::<String>(1),
    )
    .unwrap_or_default()
}
