//! Text descriptions of tables and schemas for the schema selection memory.
//!
//! Each table the calling role may read gets one description, and each schema, treated as one
//! "database", gets one built from its tables. The same facts serve two readers:
//!
//! * [`describe_table`] and [`describe_schema`] write plain text for the embedding model. A
//!   sentence embedder such as all-MiniLM-L6-v2 reads only its first 256 word pieces, so the
//!   text puts the names first (schema, table, comment, column names) and the details after.
//! * [`table_document`] and [`schema_document`] keep the same words apart by field (names,
//!   columns, comments, values) for the [`lexical`](super::lexical) score, which weights a
//!   match on a table name above a match in a comment.
//!
//! Comments and values are data written by users: they are flattened to one line and cut.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::lexical::{Document, Field};
use super::{one_line, unquote};
use crate::schema::Table;

/// How many frequent values of a column a description shows.
pub const MAX_VALUES_PER_COLUMN: usize = 3;
/// How many characters of one value a description shows.
pub const MAX_VALUE_CHARS: usize = 40;
/// How many characters of a table's or schema's comment a description shows.
pub const MAX_COMMENT_CHARS: usize = 200;
/// How many characters of a column's comment a description shows.
pub const MAX_COLUMN_COMMENT_CHARS: usize = 120;

/// A few frequent values of one column, most frequent first, as the value memory has them.
/// Only columns the calling role may SELECT may have values here.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ColumnValues {
    /// The column's name, as in [`crate::schema::Column::name`].
    pub column: String,
    pub values: Vec<String>,
}

/// One table as the selection memory knows it: its catalog description and, where the value
/// memory has them, a few frequent values of its text columns.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default)]
pub struct TableProfile {
    pub table: Table,
    pub values: Vec<ColumnValues>,
}

impl TableProfile {
    /// A profile without values.
    pub fn new(table: Table) -> TableProfile {
        TableProfile { table, values: Vec::new() }
    }

    /// The frequent values of `column`, at most [`MAX_VALUES_PER_COLUMN`].
    pub fn values_of(&self, column: &str) -> &[String] {
        self.values.iter().find(|v| v.column == column).map_or(&[][..], |v| &v.values[..v.values.len().min(MAX_VALUES_PER_COLUMN)])
    }
}

/// A schema, treated as one "database": its name (quoted as `quote_ident` would) and comment.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default)]
pub struct SchemaProfile {
    pub name: String,
    pub comment: Option<String>,
}

fn comment_text(c: &Option<String>, max: usize) -> Option<String> {
    c.as_deref().map(str::trim).filter(|c| !c.is_empty()).map(|c| one_line(c, max))
}

/// The description of one table, for the embedding model:
///
/// ```text
/// Table sales.orders: Customer orders.
/// Columns: id, customer_id, status, placed_at.
/// id integer, primary key. customer_id integer, references sales.customers(id): who ordered.
/// status text, e.g. 'shipped', 'open'. placed_at timestamp.
/// ```
pub fn describe_table(profile: &TableProfile) -> String {
    let t = &profile.table;
    let mut out = format!("Table {}.{}", unquote(&t.schema), unquote(&t.name));
    if !t.kind.is_empty() && t.kind != "table" {
        let _ = write!(out, " ({})", t.kind);
    }
    match comment_text(&t.comment, MAX_COMMENT_CHARS) {
        Some(c) => {
            let _ = writeln!(out, ": {c}");
        }
        None => out.push('\n'),
    }
    let names: Vec<String> = t.columns.iter().map(|c| unquote(&c.name)).collect();
    let _ = writeln!(out, "Columns: {}.", names.join(", "));
    let mut details = Vec::with_capacity(t.columns.len());
    for col in &t.columns {
        let mut d = format!("{} {}", unquote(&col.name), col.data_type);
        if t.primary_key.len() == 1 && t.primary_key[0] == col.name {
            d.push_str(", primary key");
        }
        for fk in t.foreign_keys.iter().filter(|fk| fk.columns.len() == 1 && fk.columns[0] == col.name) {
            let _ = write!(d, ", references {}({})", unquoted_name(&fk.references), unquoted_list(&fk.ref_columns));
        }
        if let Some(c) = comment_text(&col.comment, MAX_COLUMN_COMMENT_CHARS) {
            let _ = write!(d, ": {c}");
        }
        let values = profile.values_of(&col.name);
        if !values.is_empty() {
            let quoted: Vec<String> = values.iter().map(|v| format!("'{}'", one_line(v, MAX_VALUE_CHARS))).collect();
            let _ = write!(d, ", e.g. {}", quoted.join(", "));
        }
        details.push(d);
    }
    if !details.is_empty() {
        let _ = writeln!(out, "{}.", details.join(". "));
    }
    if t.primary_key.len() > 1 {
        let _ = writeln!(out, "Primary key ({}).", unquoted_list(&t.primary_key));
    }
    for fk in t.foreign_keys.iter().filter(|fk| fk.columns.len() > 1) {
        let _ = writeln!(
            out,
            "Foreign key ({}) references {}({}).",
            unquoted_list(&fk.columns),
            unquoted_name(&fk.references),
            unquoted_list(&fk.ref_columns)
        );
    }
    out
}

/// The description of one schema ("database"), built from its tables, for the embedding model:
///
/// ```text
/// Schema sales: Orders and customers.
/// Tables: orders, customers.
/// orders (id, customer_id, status): Customer orders. customers (id, name).
/// ```
pub fn describe_schema(schema: &SchemaProfile, tables: &[&TableProfile]) -> String {
    let mut out = format!("Schema {}", unquote(&schema.name));
    match comment_text(&schema.comment, MAX_COMMENT_CHARS) {
        Some(c) => {
            let _ = writeln!(out, ": {c}");
        }
        None => out.push('\n'),
    }
    let names: Vec<String> = tables.iter().map(|p| unquote(&p.table.name)).collect();
    let _ = writeln!(out, "Tables: {}.", names.join(", "));
    let parts: Vec<String> = tables
        .iter()
        .map(|p| {
            let t = &p.table;
            let cols: Vec<String> = t.columns.iter().map(|c| unquote(&c.name)).collect();
            let mut s = format!("{} ({})", unquote(&t.name), cols.join(", "));
            if let Some(c) = comment_text(&t.comment, MAX_COLUMN_COMMENT_CHARS) {
                let _ = write!(s, ": {c}");
            }
            s
        })
        .collect();
    if !parts.is_empty() {
        let _ = writeln!(out, "{}.", parts.join(". "));
    }
    out
}

/// The plain baseline description of a schema the issue measures against: `schema: table
/// (columns); …`, nothing else.
pub fn baseline_schema_text(schema: &str, tables: &[&TableProfile]) -> String {
    let parts: Vec<String> = tables
        .iter()
        .map(|p| {
            let cols: Vec<String> = p.table.columns.iter().map(|c| unquote(&c.name)).collect();
            format!("{} ({})", unquote(&p.table.name), cols.join(", "))
        })
        .collect();
    format!("{}: {}", unquote(schema), parts.join("; "))
}

/// The plain baseline description of a table: `schema: table (columns)`.
pub fn baseline_table_text(profile: &TableProfile) -> String {
    baseline_schema_text(&profile.table.schema, &[profile])
}

fn unquoted_name(qualified: &str) -> String {
    super::split_qualified(qualified).join(".")
}

fn unquoted_list(names: &[String]) -> String {
    names.iter().map(|n| unquote(n)).collect::<Vec<_>>().join(", ")
}

/// The words of one table, by field, for lexical scoring: the schema's name, the table's name,
/// column names, comments (the table's and its columns'), and frequent values.
pub fn table_document(profile: &TableProfile) -> Document {
    let t = &profile.table;
    let mut doc = Document::default();
    doc.push(Field::Schema, unquote(&t.schema));
    doc.push(Field::Table, unquote(&t.name));
    if let Some(c) = comment_text(&t.comment, MAX_COMMENT_CHARS) {
        doc.push(Field::Comment, c);
    }
    for col in &t.columns {
        doc.push(Field::Column, unquote(&col.name));
        if let Some(c) = comment_text(&col.comment, MAX_COLUMN_COMMENT_CHARS) {
            doc.push(Field::Comment, c);
        }
        for v in profile.values_of(&col.name) {
            doc.push(Field::Value, one_line(v, MAX_VALUE_CHARS));
        }
    }
    doc
}

/// The words of one schema, by field: its name and comment, its tables' names, and their
/// columns, comments and values.
pub fn schema_document(schema: &SchemaProfile, tables: &[&TableProfile]) -> Document {
    let mut doc = Document::default();
    doc.push(Field::Schema, unquote(&schema.name));
    if let Some(c) = comment_text(&schema.comment, MAX_COMMENT_CHARS) {
        doc.push(Field::Comment, c);
    }
    for p in tables {
        let mut table = table_document(p);
        table.parts.retain(|(f, _)| *f != Field::Schema);
        doc.parts.extend(table.parts);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Column, ForeignKey};

    fn orders() -> TableProfile {
        TableProfile {
            table: Table {
                schema: "sales".into(),
                name: "\"Orders\"".into(),
                kind: "table".into(),
                comment: Some("Customer\norders".into()),
                columns: vec![
                    Column { name: "id".into(), data_type: "integer".into(), not_null: true, comment: None },
                    Column { name: "customer_id".into(), data_type: "integer".into(), not_null: true, comment: Some("who ordered".into()) },
                    Column { name: "status".into(), data_type: "text".into(), not_null: false, comment: None },
                ],
                primary_key: vec!["id".into()],
                foreign_keys: vec![ForeignKey {
                    columns: vec!["customer_id".into()],
                    references: "sales.customers".into(),
                    ref_columns: vec!["id".into()],
                }],
            },
            values: vec![ColumnValues {
                column: "status".into(),
                values: vec!["shipped".into(), "open".into(), "late".into(), "lost".into()],
            }],
        }
    }

    #[test]
    fn table_description_puts_names_first_and_details_after() {
        let text = describe_table(&orders());
        assert_eq!(
            text,
            "Table sales.Orders: Customer orders\n\
             Columns: id, customer_id, status.\n\
             id integer, primary key. customer_id integer, references sales.customers(id): who ordered. \
             status text, e.g. 'shipped', 'open', 'late'.\n"
        );
    }

    #[test]
    fn schema_description_lists_tables() {
        let o = orders();
        let text = describe_schema(&SchemaProfile { name: "sales".into(), comment: None }, &[&o]);
        assert_eq!(text, "Schema sales\nTables: Orders.\nOrders (id, customer_id, status): Customer orders.\n");
        assert_eq!(baseline_schema_text("sales", &[&o]), "sales: Orders (id, customer_id, status)");
    }

    #[test]
    fn documents_keep_fields_apart() {
        let doc = table_document(&orders());
        let of = |f: Field| doc.parts.iter().filter(|(g, _)| *g == f).map(|(_, s)| s.as_str()).collect::<Vec<_>>();
        assert_eq!(of(Field::Table), ["Orders"]);
        assert_eq!(of(Field::Column), ["id", "customer_id", "status"]);
        assert_eq!(of(Field::Comment), ["Customer orders", "who ordered"]);
        assert_eq!(of(Field::Value), ["shipped", "open", "late"]);
    }
}
