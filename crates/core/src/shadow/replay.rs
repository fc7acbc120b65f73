//! Replaying a live table's captured changes: the schema as the LLM reads it, and what kind
//! of answer a query expects.

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::delta::{join_english, quote_ident, Encoding, TableName};
use super::prompting::QueryKind;

/// One column of a shadowed table, as the catalog describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: String,
    /// `format_type()` of the column: `integer`, `character varying(40)`, ...
    pub type_name: String,
    pub not_null: bool,
}

/// The table as the LLM sees it: a `CREATE TABLE` statement, or the same in one English
/// sentence for the NL encoding.
pub fn table_text(table: &TableName, columns: &[ColumnDef], key: &[String], encoding: Encoding) -> String {
    match encoding {
        Encoding::Sql => {
            let mut parts: Vec<String> = columns
                .iter()
                .map(|c| {
                    let null = if c.not_null { " NOT NULL" } else { "" };
                    format!("{} {}{null}", quote_ident(&c.name), c.type_name)
                })
                .collect();
            if !key.is_empty() {
                let key: Vec<String> = key.iter().map(|k| quote_ident(k)).collect();
                parts.push(format!("PRIMARY KEY ({})", key.join(", ")));
            }
            format!("CREATE TABLE {} ({});", table.to_sql(), parts.join(", "))
        }
        Encoding::Nl => {
            let cols: Vec<String> = columns
                .iter()
                .map(|c| {
                    let null = if c.not_null { ", never empty" } else { "" };
                    format!("{} ({}{null})", c.name, c.type_name)
                })
                .collect();
            let mut s = format!("create a table named {} with the columns {}", table.to_prose(), join_english(&cols, "and"));
            match key.len() {
                0 => s.push('.'),
                1 => s.push_str(&format!("; its primary key is {}.", key[0])),
                _ => s.push_str(&format!("; its primary key is ({}).", key.join(", "))),
            }
            s
        }
    }
}

/// What kind of answer `sql` expects: a query gives rows, an INSERT/UPDATE/DELETE Succeed or
/// Fail. `None` for anything else (DDL, several statements, text that does not parse).
pub fn query_kind(sql: &str) -> Option<QueryKind> {
    let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    match statements.as_slice() {
        [Statement::Query(_)] => Some(QueryKind::Select),
        [Statement::Insert(_) | Statement::Update { .. } | Statement::Delete(_)] => Some(QueryKind::Modify),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<ColumnDef> {
        vec![
            ColumnDef { name: "id".into(), type_name: "integer".into(), not_null: true },
            ColumnDef { name: "Name".into(), type_name: "text".into(), not_null: false },
        ]
    }

    #[test]
    fn sql_and_nl_table_texts() {
        let t = TableName::new(Some("shop"), "fruits");
        assert_eq!(
            table_text(&t, &cols(), &["id".into()], Encoding::Sql),
            "CREATE TABLE shop.fruits (id integer NOT NULL, \"Name\" text, PRIMARY KEY (id));"
        );
        assert_eq!(
            table_text(&t, &cols(), &["id".into()], Encoding::Nl),
            "create a table named shop.fruits with the columns id (integer, never empty) and Name (text); its primary key is id."
        );
        assert_eq!(table_text(&TableName::new(None, "t"), &cols()[1..], &[], Encoding::Sql), "CREATE TABLE t (\"Name\" text);");
    }

    #[test]
    fn kinds_of_queries() {
        assert_eq!(query_kind("SELECT 1"), Some(QueryKind::Select));
        assert_eq!(query_kind("WITH x AS (SELECT 1) SELECT * FROM x ORDER BY 1"), Some(QueryKind::Select));
        assert_eq!(query_kind("INSERT INTO t VALUES (1)"), Some(QueryKind::Modify));
        assert_eq!(query_kind("UPDATE t SET a = 1 WHERE b = 2"), Some(QueryKind::Modify));
        assert_eq!(query_kind("DELETE FROM t"), Some(QueryKind::Modify));
        assert_eq!(query_kind("DROP TABLE t"), None);
        assert_eq!(query_kind("SELECT 1; SELECT 2"), None);
        assert_eq!(query_kind("SELEC"), None);
    }
}
