//! The values of columns that hold few of them, listed in the SQL prompt
//! (`ask.max_listed_values`): the model sees that `sex` holds 'F' and 'M' and writes 'F' for
//! "female", which no embedding or trigram of 'female' would find.

use pg_ask_core::schema::{render_styled, Listed, Table};

use crate::pg::gucs;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::{select_kept, OrRaise};
use pgrx::pg_sys::{PgBuiltInOids, PgOid};

/// The tables as prompt text (in `ask.schema_style`), with the remembered values of their
/// columns that hold at most `ask.max_listed_values` listed after the column.
pub(crate) fn render(tables: &[Table]) -> String {
    render_styled(tables, &listed(tables), gucs::schema_style())
}

/// The values to list for `tables`: of columns whose memory holds all of the column's values
/// (not capped) and at most `ask.max_listed_values`, most frequent first. Only the columns the
/// tables describe are listed, and those are the columns the caller may read; tables with
/// row-level security only where their owner opted in (`allow_rls`), as in the value memory.
/// One query, as the memory's owner, over the memory's column list.
pub(crate) fn listed(tables: &[Table]) -> Listed {
    let max = gucs::max_listed_values();
    if max == 0 || tables.is_empty() {
        return Listed::new();
    }
    let names: Vec<String> = tables.iter().map(Table::qualified).collect();
    let rows: Vec<(String, String, Vec<String>)> = as_memory_owner(|| {
        select_kept(
            "listed values",
            "SELECT q.t, pg_catalog.quote_ident(a.attname),
                    ARRAY(SELECT m.value FROM ask.value_memory m WHERE m.column_id = vc.id ORDER BY m.frequency DESC, m.value)
             FROM ask.value_columns vc
             JOIN pg_catalog.pg_class c ON c.oid = vc.relid
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             JOIN pg_catalog.pg_attribute a ON a.attrelid = vc.relid AND a.attnum = vc.attnum AND NOT a.attisdropped
             CROSS JOIN LATERAL (SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname)) AS q(t)
             WHERE vc.distinct_values BETWEEN 1 AND $2 AND NOT vc.capped AND NOT vc.own_indexes
               AND (NOT c.relrowsecurity OR vc.allow_rls) AND q.t OPERATOR(pg_catalog.=) ANY($1)",
            &[PgOid::BuiltIn(PgBuiltInOids::TEXTARRAYOID), PgOid::BuiltIn(PgBuiltInOids::INT8OID)],
            &[names.into(), max.into()],
            |r| {
                let (Some(table), Some(column), Some(values)) = (r.get::<String>(1)?, r.get::<String>(2)?, r.get::<Vec<String>>(3)?) else {
                    return Ok(None);
                };
                Ok(Some((table, column, values)))
            },
        )
    })
    .or_raise("could not read the value memory's listed values");
    let mut out = Listed::new();
    for (table, column, values) in rows {
        let described = tables.iter().any(|t| t.qualified() == table && t.columns.iter().any(|c| c.name == column));
        if described && !values.is_empty() {
            out.insert((table, column), values);
        }
    }
    out
}
