//! Descriptions of tables for the SQL-generation prompt.
//!
//! The pgrx layer reads the catalog (only relations and columns the calling role may SELECT)
//! into these structs, with identifiers already quoted as PostgreSQL's `quote_ident` would;
//! [`render`] turns them into the compact text the LLM sees.

use std::fmt::Write;

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default)]
pub struct Column {
    pub name: String,
    pub data_type: String,
    pub not_null: bool,
    pub comment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default)]
pub struct ForeignKey {
    pub columns: Vec<String>,
    /// Schema-qualified, quoted name of the referenced table.
    pub references: String,
    pub ref_columns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default)]
pub struct Table {
    pub schema: String,
    pub name: String,
    /// `table`, `view`, `materialized view`, `foreign table`, `partitioned table`.
    pub kind: String,
    pub comment: Option<String>,
    pub columns: Vec<Column>,
    pub primary_key: Vec<String>,
    pub foreign_keys: Vec<ForeignKey>,
}

impl Table {
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }
}

/// Read tables from the JSON the catalog query returns (an array of table objects).
pub fn from_json(v: serde_json::Value) -> Result<Vec<Table>, String> {
    serde_json::from_value(v).map_err(|e| format!("unexpected catalog description: {e}"))
}

/// Comments are data written by users: keep them on one line and short, so that a comment
/// cannot pose as part of the prompt's structure.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let mut s: String = flat.chars().take(max).collect();
        s.push('…');
        s
    } else {
        flat
    }
}

/// Render tables as compact DDL-like text, one line per column:
///
/// ```text
/// TABLE public.restaurants  -- Restaurants we know of
///   id integer PRIMARY KEY
///   city_id integer NOT NULL REFERENCES public.cities(id)
/// ```
pub fn render(tables: &[Table]) -> String {
    let mut out = String::new();
    for t in tables {
        let kind = if t.kind.is_empty() { "table" } else { t.kind.as_str() };
        let _ = write!(out, "{} {}", kind.to_uppercase(), t.qualified());
        if let Some(c) = t.comment.as_deref().filter(|c| !c.trim().is_empty()) {
            let _ = write!(out, "  -- {}", one_line(c, 200));
        }
        out.push('\n');
        let single_pk = (t.primary_key.len() == 1).then(|| t.primary_key[0].as_str());
        for col in &t.columns {
            let _ = write!(out, "  {} {}", col.name, col.data_type);
            if single_pk == Some(col.name.as_str()) {
                out.push_str(" PRIMARY KEY");
            } else if col.not_null {
                out.push_str(" NOT NULL");
            }
            if let Some(fk) = t.foreign_keys.iter().find(|fk| fk.columns.len() == 1 && fk.columns[0] == col.name) {
                let _ = write!(out, " REFERENCES {}({})", fk.references, fk.ref_columns.join(", "));
            }
            if let Some(c) = col.comment.as_deref().filter(|c| !c.trim().is_empty()) {
                let _ = write!(out, "  -- {}", one_line(c, 160));
            }
            out.push('\n');
        }
        if t.primary_key.len() > 1 {
            let _ = writeln!(out, "  PRIMARY KEY ({})", t.primary_key.join(", "));
        }
        for fk in t.foreign_keys.iter().filter(|fk| fk.columns.len() > 1) {
            let _ = writeln!(out, "  FOREIGN KEY ({}) REFERENCES {}({})", fk.columns.join(", "), fk.references, fk.ref_columns.join(", "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, ty: &str, not_null: bool, comment: Option<&str>) -> Column {
        Column { name: name.into(), data_type: ty.into(), not_null, comment: comment.map(Into::into) }
    }

    #[test]
    fn renders_keys_comments_and_composite_constraints() {
        let t = Table {
            schema: "public".into(),
            name: "orders".into(),
            kind: "table".into(),
            comment: Some("Customer\norders".into()),
            columns: vec![
                col("id", "integer", true, None),
                col("customer_id", "integer", true, Some("who ordered")),
                col("a", "integer", false, None),
                col("b", "integer", false, None),
            ],
            primary_key: vec!["id".into()],
            foreign_keys: vec![
                ForeignKey { columns: vec!["customer_id".into()], references: "public.customers".into(), ref_columns: vec!["id".into()] },
                ForeignKey {
                    columns: vec!["a".into(), "b".into()],
                    references: "s.\"Pairs\"".into(),
                    ref_columns: vec!["x".into(), "y".into()],
                },
            ],
        };
        let text = render(&[t]);
        assert_eq!(
            text,
            "TABLE public.orders  -- Customer orders\n\
             \x20 id integer PRIMARY KEY\n\
             \x20 customer_id integer NOT NULL REFERENCES public.customers(id)  -- who ordered\n\
             \x20 a integer\n\
             \x20 b integer\n\
             \x20 FOREIGN KEY (a, b) REFERENCES s.\"Pairs\"(x, y)\n"
        );
    }

    #[test]
    fn long_comments_are_cut() {
        let long = "word ".repeat(100);
        let t = Table { schema: "s".into(), name: "t".into(), kind: "view".into(), comment: Some(long), ..Default::default() };
        let text = render(&[t]);
        assert!(text.starts_with("VIEW s.t  -- word word"));
        assert!(text.trim_end().ends_with('…'));
        assert!(text.len() < 220);
    }
}
