//! Checking a knowledge item: who may write it, and whether it holds — its statement passes
//! pg_ask's guard and runs (as its author when it is written, as the caller when its tables
//! changed since), its column and value exist.

use pgrx::pg_sys::errcodes::PgSqlErrorCode::*;
use pgrx::prelude::*;

use pg_ask_core::ask::ExecFailure;
use pg_ask_core::knowledge::{check_statement, Kind};

use super::NewItem;
use crate::guard::{self, Limits};
use crate::pg::errors::{sqlstate_code, Raised};
use crate::pg::gucs;
use crate::pg::spi::{qualified_relname, OrRaise};

/// Whether the caller may write `it`: on the database, its owner; on a schema, the schema's;
/// on a table, the table's (or a role it is a member of); a superuser always.
pub(super) fn may_write(it: &NewItem) -> Result<(), Raised> {
    let (allowed, what) = match (&it.about, &it.about_schema) {
        (Some(rel), _) => {
            let row = Spi::get_two_with_args::<bool, String>(
                "SELECT (SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE') FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1),
                        (SELECT pg_catalog.format('table %s', c.oid::pg_catalog.regclass) FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1)",
                &[(*rel).into()],
            )
            .or_raise("could not read the table's owner");
            match row {
                (Some(allowed), Some(what)) => (allowed, what),
                _ => return Err(Raised::new(ERRCODE_UNDEFINED_TABLE, format!("relation with OID {rel:?} does not exist"))),
            }
        }
        (None, Some(schema)) => {
            let allowed = Spi::get_one_with_args::<bool>(
                "SELECT (SELECT pg_catalog.pg_has_role(n.nspowner, 'USAGE') FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) $1)",
                &[schema.as_str().into()],
            )
            .or_raise("could not read the schema's owner");
            match allowed {
                Some(a) => (a, format!("schema {}", pg_ask_core::sqltext::quote_ident(schema))),
                None => return Err(Raised::new(ERRCODE_INVALID_SCHEMA_NAME, format!("schema \"{schema}\" does not exist"))),
            }
        }
        (None, None) => {
            let allowed = Spi::get_one::<bool>(
                "SELECT pg_catalog.pg_has_role(d.datdba, 'USAGE') FROM pg_catalog.pg_database d
                 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()",
            )
            .or_raise("could not read the database's owner");
            (allowed == Some(true), "this database".to_string())
        }
    };
    if allowed {
        Ok(())
    } else {
        Err(Raised::new(
            ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("only the owner of {what} or a superuser may teach pg_ask about it; {} may not", crate::pg::spi::current_user()),
        )
        .hint("Ask the owner to add the item, or add it about a table you own."))
    }
}

/// Check `it` as the current role: the relations its statement reads (its table first). With
/// `author`, every relation it reads must be the caller's too (an item is written by the owner
/// of what it references).
pub(super) fn as_author(kind: Kind, it: &NewItem, author: bool) -> Result<Vec<pg_sys::Oid>, Raised> {
    let Some(about) = it.about else {
        if let Some(schema) = &it.about_schema {
            let exists = Spi::get_one_with_args::<bool>(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) $1)",
                &[schema.as_str().into()],
            );
            if exists != Ok(Some(true)) {
                return Err(Raised::new(ERRCODE_INVALID_SCHEMA_NAME, format!("schema \"{schema}\" does not exist")));
            }
        }
        return Ok(Vec::new());
    };
    let table = qualified_relname(about);
    let exists = Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1
                          AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog.\"char\"[])
                          AND c.relpersistence OPERATOR(pg_catalog.<>) 't')",
        &[about.into()],
    );
    if exists != Ok(Some(true)) {
        return Err(Raised::new(
            ERRCODE_UNDEFINED_TABLE,
            format!("{table} is not a table, view or materialized view that exists (and is not temporary)"),
        ));
    }
    let mut tables = vec![about];
    match kind {
        Kind::Instruction => {}
        Kind::Synonym => {
            if let Some(column) = &it.column {
                let found = Spi::get_one_with_args::<bool>(
                    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $1
                                      AND a.attname OPERATOR(pg_catalog.=) $2 AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped)",
                    &[about.into(), column.as_str().into()],
                );
                if found != Ok(Some(true)) {
                    return Err(Raised::new(ERRCODE_UNDEFINED_COLUMN, format!("column \"{column}\" of {table} does not exist")));
                }
                // The value, when the item is written (rows change; a caller's check after a
                // schema change asks only whether the column is there).
                if let Some(value) = it.value.as_ref().filter(|_| author) {
                    let sql = format!(
                        "SELECT 1 FROM {table} WHERE {}::text = {} LIMIT 1",
                        pg_ask_core::sqltext::quote_ident(column),
                        pg_ask_core::sqltext::quote_literal(value)
                    );
                    let (rows, _) = guarded(&sql, "synonym", it, true)?;
                    if rows.rows.is_empty() {
                        return Err(Raised::new(
                            ERRCODE_INVALID_PARAMETER_VALUE,
                            format!(
                                "no row of {table} that {} may read has {column} = {}",
                                crate::pg::spi::current_user(),
                                pg_ask_core::sqltext::quote_literal(value)
                            ),
                        )
                        .hint("A synonym of a value stands for a value the column holds."));
                    }
                }
            }
        }
        Kind::Metric | Kind::Filter | Kind::Dimension => {
            let sql = check_statement(kind, &table, &it.body, u32::from(author)).expect("a named expression has a statement");
            let (_, read) = guarded(&sql, kind.as_str(), it, author)?;
            for rel in read {
                if !tables.contains(&rel) {
                    tables.push(rel);
                }
            }
        }
    }
    if author {
        let foreign: Vec<String> = crate::pg::spi::select_rows(
            "SELECT t::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.unnest($1::pg_catalog.oid[]) t
             WHERE NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) t), 'USAGE')",
            &[tables.clone().into()],
            |r| r.get::<String>(1),
        )
        .or_raise("could not read the owners of the relations an item reads");
        if !foreign.is_empty() {
            return Err(Raised::new(
                ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("the {} reads {}, which {} does not own", kind.as_str(), foreign.join(", "), crate::pg::spi::current_user()),
            )
            .hint("An item may read only relations its author owns; let their owner write it."));
        }
    }
    Ok(tables)
}

/// Run an item's check statement under pg_ask's guard, as the current role: by its `author`
/// under `ask.statement_timeout`; for a caller, within a second (it only plans).
fn guarded(sql: &str, what: &str, it: &NewItem, author: bool) -> Result<(pg_ask_core::rows::ResultSet, Vec<pg_sys::Oid>), Raised> {
    let name = it.name.as_deref().unwrap_or("");
    let checked = pg_ask_core::guard::check_read_only(sql).map_err(|refusal| {
        Raised::new(
            ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
            format!("the {what} \"{name}\" does not pass pg_ask's guard: {refusal}"),
        )
        .hint("A metric, filter or dimension is read as generated SQL is: no volatile functions, no writes.")
    })?;
    let timeout_ms = match (author, gucs::statement_timeout_ms()) {
        (true, t) => t,
        (false, 0) => 1_000,
        (false, t) => t.min(1_000),
    };
    let limits = Limits { row_limit: 1, timeout_ms };
    // Names resolve as they do for every role: with the search path pg_catalog alone, so that
    // an item's relations are those its schema-qualified names say (a role's own search path
    // cannot make `pg_authid` or `secrets` its own table while the item is checked).
    crate::pg::spi::in_schema(Some("pg_catalog"), || guard::execute_reading(&checked.sql, &limits)).map_err(|f| match f {
        ExecFailure::Refused { reason } => Raised::new(
            ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
            format!("the {what} \"{name}\" does not pass pg_ask's guard: {reason}"),
        ),
        ExecFailure::Error { sqlstate, message, detail, hint } => {
            let r =
                Raised::new(sqlstate_code(sqlstate).unwrap_or(ERRCODE_DATA_EXCEPTION), format!("the {what} \"{name}\" fails: {message}"));
            let r = match detail {
                Some(d) => r.detail(d),
                None => r,
            };
            r.hint(hint.unwrap_or_else(|| "An item's expression must run over its table before it is stored.".into()))
        }
    })
}

/// The items the caller may change, checked again as it: each with the problem found.
pub(super) fn recheck_mine() -> Vec<(i64, String, Option<String>, Option<String>)> {
    let items = stored(
        "WHERE pg_catalog.pg_has_role(k.created_by::pg_catalog.oid, 'USAGE')
            OR coalesce((SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE') FROM pg_catalog.pg_class c
                         WHERE c.oid OPERATOR(pg_catalog.=) k.about::pg_catalog.oid), false)",
    );
    let mut out = Vec::new();
    for Stored { id, kind, item: it, .. } in items {
        pgrx::check_for_interrupts!();
        let result = crate::pg::subxact::run(crate::pg::subxact::OnSuccess::Release, || as_author(kind, &it, false).map_err(|r| r.message));
        let (tables, problem) = match result {
            Ok(Ok(tables)) => (tables, None),
            Ok(Err(message)) => (Vec::new(), Some(message)),
            Err(caught) => (Vec::new(), Some(crate::pg::subxact::caught_message(caught))),
        };
        record(id, &tables, problem.as_deref());
        out.push((id, kind.as_str().to_string(), it.name.clone(), problem));
    }
    out
}

/// Whether the item still holds for the caller (its tables changed since it was checked).
pub(super) fn holds_for_caller(kind: Kind, it: &NewItem) -> bool {
    matches!(crate::pg::subxact::run(crate::pg::subxact::OnSuccess::Release, || as_author(kind, it, false).is_ok()), Ok(true))
}

/// Record the outcome of a check of item `id`, as the extension's owner.
fn record(id: i64, tables: &[pg_sys::Oid], problem: Option<&str>) {
    let args = [id.into(), tables.to_vec().into(), problem.into()];
    crate::pg::identity::as_memory_owner(|| {
        Spi::run_with_args(
            "UPDATE ask.knowledge SET checked_at = pg_catalog.clock_timestamp(), problem = $3,
                    tables = CASE WHEN $3 IS NULL THEN $2::oid[]::regclass[] ELSE tables END,
                    checked_shape = CASE WHEN $3 IS NULL THEN ask._knowledge_shape($2::oid[]::regclass[]) ELSE checked_shape END
             WHERE id = $1",
            &args,
        )
    })
    .or_raise("could not record a knowledge item's check");
}

/// A stored item as [`stored`] reads it.
pub(super) struct Stored {
    pub id: i64,
    pub kind: Kind,
    pub item: NewItem,
    /// Its table, schema-qualified and quoted (`None`: about a schema or the database).
    pub table: Option<String>,
    /// The columns of its relations are as they were when it was last checked.
    pub fresh: bool,
}

/// The stored items that `filter` (a WHERE clause over `ask.knowledge k`) keeps and the caller
/// may see, as their authors gave them, in one read: with their table's name and whether its
/// relations changed since the item was checked (no query per item).
pub(super) fn stored(filter: &str) -> Vec<Stored> {
    stored_in_order(filter, "k.id")
}

/// [`stored`], the first 1,000 in `order`.
pub(super) fn stored_in_order(filter: &str, order: &str) -> Vec<Stored> {
    crate::pg::spi::select_rows(
        &format!(
            "SELECT k.id, k.kind, k.name, k.about::pg_catalog.oid, (SELECT n.nspname::pg_catalog.text FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) k.about_schema::pg_catalog.oid), k.column_name::pg_catalog.text,
                    k.value, k.body, k.description, k.synonyms,
                    (SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) FROM pg_catalog.pg_class c
                       JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                      WHERE c.oid OPERATOR(pg_catalog.=) k.about::pg_catalog.oid),
                    k.checked_shape IS NOT DISTINCT FROM ask._knowledge_shape(k.tables)
             FROM ask.knowledge k {filter} ORDER BY {order} LIMIT 1000"
        ),
        &[],
        |r| {
            let (Some(id), Some(kind)) = (r.get::<i64>(1)?, r.get::<String>(2)?.as_deref().and_then(Kind::parse)) else {
                return Ok(None);
            };
            let item = NewItem {
                kind: Some(kind),
                name: r.get::<String>(3)?,
                about: r.get::<pg_sys::Oid>(4)?,
                about_schema: r.get::<String>(5)?,
                column: r.get::<String>(6)?,
                value: r.get::<String>(7)?,
                body: r.get::<String>(8)?.unwrap_or_default(),
                description: r.get::<String>(9)?,
                synonyms: r.get::<Vec<String>>(10)?.unwrap_or_default(),
            };
            Ok(Some(Stored { id, kind, item, table: r.get::<String>(11)?, fresh: r.get::<bool>(12)?.unwrap_or(false) }))
        },
    )
    .or_raise("could not read ask.knowledge")
}
