//! The caller's selection catalog: the readable tables' descriptions and lexical index, with
//! the frequent values of their columns and the schemas' comments; kept per backend and user,
//! and renewed, not rebuilt, for the tables a catalog change touched.

use std::collections::HashMap;
use std::rc::Rc;

use pg_ask_core::selection::{Catalog, ColumnValues, SchemaProfile, TableProfile};
use pgrx::pg_sys;

use crate::pg::backend;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::OrRaise;
use crate::schema;

/// The most frequent values the value memory holds for readable columns: qualified table name
/// → column → values. Tables with row-level security appear only where their owner opted in
/// (`allow_rls`), as in the value memory itself.
/// With `only`, the values of those relations alone.
pub(super) fn frequent_values(only: Option<&[pg_sys::Oid]>) -> HashMap<String, Vec<ColumnValues>> {
    let sql: &str = if only.is_some() { &FREQUENT_VALUES_OF } else { FREQUENT_VALUES };
    let args: Vec<pgrx::datum::DatumWithOid> = only.map(|o| vec![o.to_vec().into()]).unwrap_or_default();
    let types: &[pg_sys::PgOid] = if only.is_some() { &[pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDARRAYOID)] } else { &[] };
    let rows: Vec<(String, String, Vec<String>)> = as_memory_owner(|| {
        crate::pg::spi::select_generic("frequent values", sql, types, &args, |r| {
            let (Some(table), Some(column), Some(values)) = (r.get::<String>(1)?, r.get::<String>(2)?, r.get::<Vec<String>>(3)?) else {
                return Ok(None);
            };
            Ok(Some((table, column, values)))
        })
    })
    .or_raise("could not read the value memory's frequent values");
    let mut out: HashMap<String, Vec<ColumnValues>> = HashMap::new();
    for (table, column, values) in rows {
        if !values.is_empty() {
            out.entry(table).or_default().push(ColumnValues { column, values });
        }
    }
    out
}

/// What [`frequent_values`] reads; `-- @only` becomes a filter to some relations.
const FREQUENT_VALUES: &str = "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), quote_ident(a.attname),
                            ARRAY(SELECT m.value FROM ask.value_memory m WHERE m.column_id = vc.id
                                  ORDER BY m.frequency DESC, m.value LIMIT 3)
                     FROM ask.value_columns vc
                     JOIN pg_catalog.pg_class c ON c.oid = vc.relid
                     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                     JOIN pg_catalog.pg_attribute a ON a.attrelid = vc.relid AND a.attnum = vc.attnum AND NOT a.attisdropped
                     WHERE (NOT c.relrowsecurity OR vc.allow_rls) -- @only";

static FREQUENT_VALUES_OF: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| FREQUENT_VALUES.replace("-- @only", "AND vc.relid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[])"));

/// Comments of the schemas, by quoted name.
pub(super) fn schema_profiles() -> Vec<SchemaProfile> {
    crate::pg::spi::select_kept(
        "schema comments",
        "SELECT quote_ident(n.nspname), d.description FROM pg_catalog.pg_namespace n
         JOIN pg_catalog.pg_description d ON d.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
                                          AND d.objoid OPERATOR(pg_catalog.=) n.oid",
        &[],
        &[],
        |r| {
            let comment = r.get::<String>(2)?;
            Ok(r.get::<String>(1)?.map(|name| SchemaProfile { name, comment }))
        },
    )
    .or_raise("could not read the schemas' comments")
}

/// The caller's catalog for selection: its readable tables, their columns it may read, and
/// the frequent values of those columns. Rebuilt when the catalog description is read afresh
/// (after DDL, COMMENT, GRANT or a change of user).
pub fn selection_catalog() -> Rc<Catalog> {
    selection_catalog_of(readable())
}

/// The readable tables' description, its read error raised.
pub(super) fn readable() -> Rc<Vec<pg_ask_core::schema::Table>> {
    schema::readable_tables().unwrap_or_else(|e| crate::pg::errors::from_host(&e).raise())
}

/// [`selection_catalog`] of `tables`, the description [`readable`] just read: reading is what
/// notices catalog changes and moves the generation, so it comes first.
pub(super) fn selection_catalog_of(tables: Rc<Vec<pg_ask_core::schema::Table>>) -> Rc<Catalog> {
    let generation = schema::generation();
    // SAFETY: reads the backend's current user id.
    let user = unsafe { pg_sys::GetUserId() };
    if let Some(c) = backend::with(|b| {
        b.selection_catalog.borrow().as_ref().filter(|(g, u, _)| *g == generation && *u == user).map(|(_, _, c)| c.clone())
    }) {
        return c;
    }
    let mut values = frequent_values(None);
    // Only columns the caller may read are in the table.
    let mut values_of = |name: &str, t: &pg_ask_core::schema::Table| -> Vec<ColumnValues> {
        let v = values.remove(name).unwrap_or_default();
        v.into_iter().filter(|cv| t.columns.iter().any(|c| c.name == cv.column)).collect()
    };
    // The previous catalog of the same user gives its unchanged tables and what was computed
    // for them (moved when nobody else holds it).
    let previous = backend::with(|b| b.selection_catalog.take().filter(|(_, u, _)| *u == user).map(|(_, _, c)| c));
    let schemas = schema_profiles();
    let built = Rc::new(match previous.map(Rc::try_unwrap) {
        Some(Ok(p)) => Catalog::renewed(p, &tables, values_of, &schemas),
        shared => {
            let profiles = tables.iter().map(|t| TableProfile { table: t.clone(), values: values_of(&t.qualified(), t) }).collect();
            match shared {
                Some(Err(p)) => Catalog::reusing(&p, profiles, &schemas),
                _ => Catalog::new(profiles, &schemas),
            }
        }
    });
    backend::with(|b| b.selection_catalog.replace(Some((generation, user, built.clone()))));
    built
}
