//! Quoting for SQL text that pg_ask writes: identifiers and literals, one way everywhere.

use serde_json::Value;

/// An identifier as PostgreSQL's `quote_ident` renders it: bare when it is lower case letters,
/// digits, `_` and `$` (not first) and not a keyword that would need quoting; otherwise in
/// double quotes with embedded double quotes doubled.
pub fn quote_ident(ident: &str) -> String {
    let mut chars = ident.chars();
    let plain = match chars.next() {
        Some(c) if c.is_ascii_lowercase() || c == '_' => {
            chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        }
        _ => false,
    };
    if plain && !is_quoted_keyword(ident) {
        ident.to_string()
    } else {
        format!("\"{}\"", ident.replace('"', "\"\""))
    }
}

/// PostgreSQL's keywords that `quote_ident` quotes: reserved ones, those reserved but allowed
/// as function or type names, and column-name keywords (PostgreSQL 15 and 16, Appendix C; quoting one too many is harmless).
const QUOTED_KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "json",
    "json_array",
    "json_arrayagg",
    "json_object",
    "json_objectagg",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// Whether `ident` (lower case) is a keyword PostgreSQL reserves: quoted as an identifier, and
/// read as SQL where a name was meant.
pub fn is_quoted_keyword(ident: &str) -> bool {
    QUOTED_KEYWORDS.binary_search(&ident).is_ok()
}

/// A string as a SQL literal that reads the same whatever `standard_conforming_strings` says:
/// `'O''Brien'`, and `E'a\\b'` when the text holds a backslash.
pub fn quote_literal(s: &str) -> String {
    if s.contains('\\') {
        format!("E'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

/// A JSON value as a SQL literal: `NULL`, `TRUE`/`FALSE`, a number as written, text quoted
/// with [`quote_literal`], arrays and objects as their JSON text quoted.
pub fn sql_literal(value: &Value) -> String {
    match value {
        Value::Null => "NULL".to_string(),
        Value::Bool(true) => "TRUE".to_string(),
        Value::Bool(false) => "FALSE".to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote_literal(s),
        Value::Array(_) | Value::Object(_) => quote_literal(&value.to_string()),
    }
}

/// How many times SQL text was parsed on this thread: the pipeline's tests hold it to one
/// parse per candidate statement.
#[cfg(test)]
pub(crate) mod parses {
    use std::cell::Cell;

    thread_local!(static COUNT: Cell<usize> = const { Cell::new(0) });

    pub(crate) fn add() {
        COUNT.with(|c| c.set(c.get() + 1));
    }

    pub(crate) fn count() -> usize {
        COUNT.with(Cell::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keyword_list_is_sorted_for_binary_search() {
        let mut sorted = QUOTED_KEYWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, QUOTED_KEYWORDS);
    }

    #[test]
    fn identifiers() {
        assert_eq!(quote_ident("cities"), "cities");
        assert_eq!(quote_ident("Users"), "\"Users\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn literals() {
        assert_eq!(quote_literal("O'Brien"), "'O''Brien'");
        assert_eq!(quote_literal("a\\b'c"), "E'a\\\\b''c'");
        assert_eq!(sql_literal(&json!(null)), "NULL");
        assert_eq!(sql_literal(&json!(1.5)), "1.5");
        assert_eq!(sql_literal(&json!({"a": 1})), "'{\"a\":1}'");
    }
}
