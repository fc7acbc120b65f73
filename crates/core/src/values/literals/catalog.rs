//! The catalog literals resolve against: the tables and views a query may refer to, their
//! columns, and the search path.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::sqltext::quote_ident;

/// A table, schema-qualified.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct QualifiedName {
    /// The schema (namespace) name, exactly as stored in `pg_namespace`.
    pub schema: String,
    /// The table name, exactly as stored in `pg_class`.
    pub table: String,
}

impl QualifiedName {
    /// A qualified name from its parts.
    pub fn new(schema: impl Into<String>, table: impl Into<String>) -> QualifiedName {
        QualifiedName { schema: schema.into(), table: table.into() }
    }
}

impl fmt::Display for QualifiedName {
    /// `schema.table`, each part double-quoted when PostgreSQL would need it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", quote_ident(&self.schema), quote_ident(&self.table))
    }
}

/// A column known to the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogColumn {
    /// The column name, exactly as stored in `pg_attribute`.
    pub name: String,
    /// Whether the column holds text (text, varchar, char, citext, an enum, or a domain over
    /// them): only literals compared with such columns are reported.
    pub text_like: bool,
}

impl CatalogColumn {
    /// A text-like column.
    pub fn text(name: impl Into<String>) -> CatalogColumn {
        CatalogColumn { name: name.into(), text_like: true }
    }
    /// A column of any other type.
    pub fn other(name: impl Into<String>) -> CatalogColumn {
        CatalogColumn { name: name.into(), text_like: false }
    }
}

/// A table known to the catalog, with its columns in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogTable {
    /// Schema and table name.
    pub name: QualifiedName,
    /// Columns in attribute order (what `*` expands to).
    pub columns: Vec<CatalogColumn>,
}

/// The tables and views a query may refer to, and the search path that resolves unqualified
/// table names. The glue fills it from `pg_catalog` (the caller's `current_schemas(true)` as
/// search path; only relations the role may see).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// Schemas searched, in order, for an unqualified table name.
    pub search_path: Vec<String>,
    /// Known tables and views.
    pub tables: Vec<CatalogTable>,
}

impl Catalog {
    /// An empty catalog with the given search path.
    pub fn new<S: Into<String>>(search_path: impl IntoIterator<Item = S>) -> Catalog {
        Catalog { search_path: search_path.into_iter().map(Into::into).collect(), tables: Vec::new() }
    }

    /// Adds a table (builder style).
    pub fn with_table(mut self, schema: &str, table: &str, columns: Vec<CatalogColumn>) -> Catalog {
        self.add_table(schema, table, columns);
        self
    }

    /// Adds a table.
    pub fn add_table(&mut self, schema: &str, table: &str, columns: Vec<CatalogColumn>) {
        self.tables.push(CatalogTable { name: QualifiedName::new(schema, table), columns });
    }

    /// The table `schema.name`, or for `schema = None` the first `name` along the search path.
    pub fn lookup(&self, schema: Option<&str>, name: &str) -> Option<&CatalogTable> {
        let find = |s: &str| self.tables.iter().find(|t| t.name.schema == s && t.name.table == name);
        match schema {
            Some(s) => find(s),
            None => self.search_path.iter().find_map(|s| find(s)),
        }
    }

    /// The column `column` of `table`, if both are known.
    pub fn column(&self, table: &QualifiedName, column: &str) -> Option<&CatalogColumn> {
        self.lookup(Some(&table.schema), &table.table)?.columns.iter().find(|c| c.name == column)
    }
}
