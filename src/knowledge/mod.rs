//! The knowledge layer's SQL surface: `ask.add_instruction()`, `ask.add_metric()`,
//! `ask.add_filter()`, `ask.add_dimension()` and `ask.add_synonym()` (SQL wrappers of
//! `ask._add_knowledge()`), `ask.remove_knowledge()` and `ask.check_knowledge()`. An item is
//! written by the owner of what it is about (or a superuser), checked as its author first — its
//! expression is one expression, and the statement over its table passes pg_ask's guard and
//! runs as the author — and stored as the extension's owner. What ask() makes of the items is
//! in the core (`pg_ask_core::knowledge`); reading them for a question is [`read`]; export and
//! import, [`io`].

mod check;
pub(crate) mod io;
pub(crate) mod read;
#[cfg(any(test, feature = "pg_test"))]
mod tests;

use pgrx::pg_sys::errcodes::PgSqlErrorCode::*;
use pgrx::prelude::*;

use pg_ask_core::knowledge::{identifier_of, Kind};

use crate::pg::errors::Raised;
use crate::pg::identity::as_memory_owner;

/// Characters an item's text, name, description and each synonym may hold at most.
const MAX_BODY: usize = 4_000;
const MAX_NAME: usize = 200;
const MAX_DESCRIPTION: usize = 1_000;
const MAX_SYNONYMS: usize = 20;
/// Items one role may have written at most.
pub(crate) const MAX_ITEMS_PER_ROLE: i64 = 10_000;

/// An item as its author gives it.
#[derive(Debug, Clone, Default)]
pub(crate) struct NewItem {
    pub kind: Option<Kind>,
    pub name: Option<String>,
    pub about: Option<pg_sys::Oid>,
    pub about_schema: Option<String>,
    pub column: Option<String>,
    pub value: Option<String>,
    pub body: String,
    pub description: Option<String>,
    pub synonyms: Vec<String>,
}

fn invalid(message: impl Into<String>) -> Raised {
    Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, message)
}

/// The item's fields as its kind wants them, trimmed; the error to raise otherwise.
fn shaped(mut it: NewItem) -> Result<(Kind, NewItem), Raised> {
    let kind = it.kind.ok_or_else(|| invalid("a knowledge item needs a kind"))?;
    let trim = |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    it.name = trim(it.name);
    it.about_schema = trim(it.about_schema);
    it.column = trim(it.column);
    it.description = trim(it.description);
    it.body = it.body.trim().to_string();
    it.synonyms = it.synonyms.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    it.synonyms.dedup();
    let long = |what: &str, s: &str, max: usize| {
        if s.chars().count() > max {
            Err(invalid(format!("the {what} of a knowledge item is longer than {max} characters")))
        } else {
            Ok(())
        }
    };
    long("text", &it.body, MAX_BODY)?;
    long("name", it.name.as_deref().unwrap_or(""), MAX_NAME)?;
    long("description", it.description.as_deref().unwrap_or(""), MAX_DESCRIPTION)?;
    long("value", it.value.as_deref().unwrap_or(""), MAX_BODY)?;
    if it.synonyms.len() > MAX_SYNONYMS {
        return Err(invalid(format!("a knowledge item has at most {MAX_SYNONYMS} synonyms")));
    }
    for s in &it.synonyms {
        long("synonym", s, MAX_NAME)?;
    }
    if it.about.is_some() && it.about_schema.is_some() {
        return Err(invalid("a knowledge item is about a table or a schema, not both"));
    }
    match kind {
        Kind::Instruction => {
            if it.body.is_empty() {
                return Err(invalid("an instruction's text is empty"));
            }
            it.name = None;
        }
        Kind::Synonym => {
            if it.name.is_none() {
                return Err(invalid("a synonym's word is empty"));
            }
            if it.about.is_none() {
                return Err(invalid("a synonym names the table it stands for (or whose column or value it stands for)"));
            }
            if it.value.is_some() && it.column.is_none() {
                return Err(invalid("a synonym of a value names the value's column"));
            }
            it.body = String::new();
        }
        Kind::Metric | Kind::Filter | Kind::Dimension => {
            let ident = it.name.as_deref().map(identifier_of).unwrap_or_default();
            if ident.is_empty() {
                return Err(invalid(format!("a {}'s name must hold a letter or a digit", kind.as_str())));
            }
            if pg_ask_core::knowledge::is_sql_word(&ident) {
                return Err(invalid(format!("a {} may not be named \"{ident}\", a word PostgreSQL reserves", kind.as_str()))
                    .hint("A name the model writes in SQL must not be read as SQL: choose another word."));
            }
            if it.about.is_none() {
                return Err(invalid(format!("a {} names the table it is computed over", kind.as_str())));
            }
            pg_ask_core::knowledge::check_expression(&it.body).map_err(|why| {
                Raised::new(
                    ERRCODE_SYNTAX_ERROR,
                    format!("the {} \"{}\" is not one SQL expression: {why}", kind.as_str(), it.name.as_deref().unwrap_or("")),
                )
                .hint("Write the expression alone, as it would stand in a select list or a WHERE clause: sum(amount_cents) / 100.0")
            })?;
        }
    }
    if kind != Kind::Synonym {
        it.column = None;
        it.value = None;
    }
    Ok((kind, it))
}

/// Refuses, as PostgreSQL refuses a write there, to change knowledge in a read-only transaction.
pub(crate) fn writable(what: &str) -> Result<(), Raised> {
    // SAFETY: reads the backend's own transaction state, from its thread.
    if unsafe { pgrx::pg_sys::XactReadOnly } {
        return Err(Raised::new(ERRCODE_READ_ONLY_SQL_TRANSACTION, format!("cannot {what} in a read-only transaction")));
    }
    Ok(())
}

/// Check `it` as its author and store it (replacing the item of the same kind, subject and
/// name); its id.
pub(crate) fn add(it: NewItem) -> Result<i64, Raised> {
    writable("add knowledge")?;
    let (kind, it) = shaped(it)?;
    check::may_write(&it)?;
    let tables = check::as_author(kind, &it, true)?;
    // Each role's items are bounded: one role's many items cost every role's questions. They
    // are counted as the extension's owner, past the table's policy: items about a table the
    // author may no longer read count all the same.
    // SAFETY: the role this call runs as.
    let author = unsafe { pgrx::pg_sys::GetUserId() };
    // One count at a time per author (a lock until the transaction ends), so that parallel
    // sessions of one role cannot each pass the cap by one.
    Spi::run_with_args(
        "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('pg_ask knowledge cap'),
             ($1::pg_catalog.oid::pg_catalog.int8 OPERATOR(pg_catalog.-) 2147483648)::pg_catalog.int4)",
        &[author.into()],
    )
    .map_err(|e| Raised::new(ERRCODE_INTERNAL_ERROR, format!("could not take the knowledge cap's lock: {e}")))?;
    let mine = crate::pg::identity::as_memory_owner(|| {
        Spi::get_one_with_args::<i64>(
            "SELECT count(*) FROM ask.knowledge k WHERE k.created_by::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
            &[author.into()],
        )
    })
    .ok()
    .flatten()
    .unwrap_or(0);
    if mine >= MAX_ITEMS_PER_ROLE {
        return Err(Raised::new(
            ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!("a role writes at most {MAX_ITEMS_PER_ROLE} knowledge items"),
        )
        .hint("Remove items you no longer need (ask.remove_knowledge)."));
    }
    let args = [
        kind.as_str().into(),
        it.name.as_deref().into(),
        it.about.into(),
        it.about_schema.as_deref().into(),
        it.column.as_deref().into(),
        it.value.as_deref().into(),
        it.body.as_str().into(),
        it.description.as_deref().into(),
        it.synonyms.clone().into(),
        tables.into(),
        crate::pg::identity::caller().into(),
    ];
    as_memory_owner(|| {
        Spi::get_one_with_args::<i64>(
            "WITH found AS (
                 SELECT id FROM ask.knowledge
                 WHERE kind = $1 AND coalesce(about::oid, 0::oid) = coalesce($3, 0::oid)
                   AND coalesce(about_schema::oid, 0::oid) = coalesce(pg_catalog.to_regnamespace(pg_catalog.quote_ident($4))::oid, 0::oid)
                   AND lower(coalesce(name, body)) = lower(coalesce($2, $7))
                   AND coalesce(column_name, '') = coalesce($5, '') AND coalesce(value, '') = coalesce($6, '')),
             changed AS (
                 UPDATE ask.knowledge k SET name = $2, body = $7, description = $8, synonyms = $9, tables = $10::oid[]::regclass[],
                        created_by = $11::regrole,
                        checked_at = pg_catalog.clock_timestamp(), checked_shape = ask._knowledge_shape($10::oid[]::regclass[]), problem = NULL
                 FROM found WHERE k.id = found.id RETURNING k.id),
             added AS (
                 INSERT INTO ask.knowledge (kind, name, about, about_schema, column_name, value, body, description, synonyms, tables,
                                            created_by, checked_at, checked_shape)
                 SELECT $1, $2, $3::regclass, pg_catalog.to_regnamespace(pg_catalog.quote_ident($4)), $5, $6, $7, $8, $9,
                        $10::oid[]::regclass[], $11::regrole, pg_catalog.clock_timestamp(), ask._knowledge_shape($10::oid[]::regclass[])
                 WHERE NOT EXISTS (SELECT 1 FROM found) RETURNING id)
             SELECT id FROM changed UNION ALL SELECT id FROM added",
            &args,
        )
    })
    .map_err(|e| crate::pg::errors::internal("a statement on ask.knowledge failed", e))?
    .ok_or_else(|| crate::pg::errors::internal("a statement on ask.knowledge failed", "no row came back"))
}

/// Store a knowledge item (the SQL functions `ask.add_instruction`, `ask.add_metric`,
/// `ask.add_filter`, `ask.add_dimension` and `ask.add_synonym` call this one).
#[allow(clippy::too_many_arguments)]
#[pg_extern(name = "_add_knowledge", volatile, parallel_unsafe)]
pub(crate) fn add_knowledge(
    kind: &str,
    name: Option<&str>,
    about: Option<pg_sys::Oid>,
    about_schema: Option<&str>,
    column_name: Option<&str>,
    value: Option<&str>,
    body: Option<&str>,
    description: Option<&str>,
    synonyms: Option<Vec<Option<String>>>,
) -> i64 {
    let item = NewItem {
        kind: Kind::parse(kind),
        name: name.map(str::to_string),
        about,
        about_schema: about_schema.map(str::to_string),
        column: column_name.map(str::to_string),
        value: value.map(str::to_string),
        body: body.unwrap_or_default().to_string(),
        description: description.map(str::to_string),
        synonyms: synonyms.unwrap_or_default().into_iter().flatten().collect(),
    };
    add(item).unwrap_or_else(|r| r.raise())
}

/// Remove a knowledge item. Its author, the owner of what it is about, the extension's owner
/// and superusers may; others get an error. Whether a row was removed.
#[pg_extern(name = "remove_knowledge", volatile, strict, parallel_unsafe)]
fn remove_knowledge(id: i64) -> bool {
    writable("remove knowledge").unwrap_or_else(|r| r.raise());
    let found = Spi::get_two_with_args::<String, bool>(
        "SELECT k.kind OPERATOR(pg_catalog.||) coalesce(' ' OPERATOR(pg_catalog.||) pg_catalog.quote_literal(k.name), ''),
                pg_catalog.pg_has_role(k.created_by::pg_catalog.oid, 'USAGE')
                OR pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                           WHERE c.oid OPERATOR(pg_catalog.=) 'ask.knowledge'::pg_catalog.regclass), 'USAGE')
                OR coalesce((SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE') FROM pg_catalog.pg_class c
                             WHERE c.oid OPERATOR(pg_catalog.=) k.about::pg_catalog.oid), false)
         FROM ask.knowledge k WHERE k.id OPERATOR(pg_catalog.=) $1",
        &[id.into()],
    );
    match found {
        Ok((Some(_), Some(true))) => {}
        Ok((Some(what), _)) => Raised::new(
            ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "knowledge item {id} ({what}) is not yours; only its author, the owner of what it is about or a superuser may remove it"
            ),
        )
        .raise(),
        _ => Raised::new(
            ERRCODE_UNDEFINED_OBJECT,
            format!("there is no knowledge item {id} that {} may see", crate::pg::spi::current_user()),
        )
        .hint("ask.knowledge lists the items over what you may read.")
        .raise(),
    }
    as_memory_owner(|| {
        Spi::get_one_with_args::<bool>(
            "WITH d AS (DELETE FROM ask.knowledge WHERE id = $1 RETURNING 1) SELECT count(*) > 0 FROM d",
            &[id.into()],
        )
    })
    .ok()
    .flatten()
    .unwrap_or(false)
}

/// Check again every knowledge item the caller may change (its own, those about what it owns;
/// a superuser's: all), as its author would: each comes back with the problem found (NULL when
/// it passed), and an item with a problem is not used until it passes.
#[pg_extern(name = "check_knowledge", volatile, parallel_unsafe)]
fn check_knowledge(
) -> TableIterator<'static, (name!(id, i64), name!(kind, String), name!(name, Option<String>), name!(problem, Option<String>))> {
    writable("check knowledge").unwrap_or_else(|r| r.raise());
    let rows = check::recheck_mine();
    TableIterator::new(rows)
}
