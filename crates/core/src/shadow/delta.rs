//! The delta log: one captured row change per entry, and its two encodings.
//!
//! The capture trigger (in the pgrx glue) records, for every INSERT, UPDATE and DELETE of a
//! shadowed table, the row images as JSON objects (`to_jsonb(OLD)`, `to_jsonb(NEW)`), the
//! table's primary-key columns, the transaction and a global order. This module turns such
//! entries back into commands the LLM reads:
//!
//! * [`Encoding::Sql`]: PostgreSQL statements rebuilt from the row images. An INSERT lists every
//!   column of the new row; UPDATE and DELETE are keyed by the primary key taken from the *old*
//!   row (so a key change is an UPDATE `SET id = new WHERE id = old`); an UPDATE sets only the
//!   columns whose value changed (all columns of the new row when none did, so the statement
//!   stays a valid no-op update). A table without a primary key is keyed by every column of
//!   the old row, with `IS NULL` for NULLs.
//! * [`Encoding::Nl`]: one plain English sentence per command, in the style of InConDB's
//!   `*_nl.json` workloads ("update the row of the Users table with the UserID = 5 to have the
//!   Username = 'new_username'.").
//!
//! Values are rendered from their JSON kind: strings as standard-conforming literals
//! (`'it''s'`), numbers verbatim (JSON numbers from `to_jsonb` are exact decimal text),
//! booleans as `TRUE`/`FALSE`, nulls as `NULL`, and arrays/objects as the literal text of their
//! compact JSON (exact for json/jsonb columns; for PostgreSQL array columns it is the JSON form,
//! which the LLM reads well but which is not array input syntax).
//!
//! Row images come as `serde_json::Map`, whose keys are sorted; columns therefore appear in
//! name order (jsonb does not keep the table's column order either).

pub use crate::sqltext::{quote_ident, quote_literal, sql_literal};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The kind of captured change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Insert,
    Update,
    Delete,
}

impl Operation {
    /// `INSERT`, `UPDATE` or `DELETE`, as PostgreSQL's `TG_OP` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Insert => "INSERT",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Operation {
    type Err = DeltaError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "INSERT" => Ok(Operation::Insert),
            "UPDATE" => Ok(Operation::Update),
            "DELETE" => Ok(Operation::Delete),
            _ => Err(DeltaError::UnknownOperation(s.to_string())),
        }
    }
}

/// A table name as stored in the log: unquoted schema and relation names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TableName {
    /// `None` renders the name unqualified (e.g. tables of a benchmark scratch schema that is
    /// on the search_path).
    pub schema: Option<String>,
    pub name: String,
}

impl TableName {
    pub fn new(schema: Option<&str>, name: &str) -> TableName {
        TableName { schema: schema.map(str::to_string), name: name.to_string() }
    }

    /// The name as SQL: each part quoted as PostgreSQL's `quote_ident` would.
    pub fn to_sql(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{}.{}", quote_ident(schema), quote_ident(&self.name)),
            None => quote_ident(&self.name),
        }
    }

    /// The name as prose: `Users` or `sales.Users`, unquoted.
    pub fn to_prose(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{schema}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// One captured row change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaEntry {
    /// Global order of the change in the log (a sequence value).
    pub seq: i64,
    /// The transaction that made the change (`txid_current()`; only committed changes exist).
    pub xid: i64,
    pub op: Operation,
    pub table: TableName,
    /// Primary-key column names, in key order; empty when the table has no primary key.
    #[serde(default)]
    pub key_columns: Vec<String>,
    /// The row before the change (UPDATE, DELETE).
    #[serde(default)]
    pub old_row: Option<Map<String, Value>>,
    /// The row after the change (INSERT, UPDATE).
    #[serde(default)]
    pub new_row: Option<Map<String, Value>>,
}

/// How the log is shown to the LLM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    Sql,
    Nl,
}

impl Encoding {
    pub const ALL: [Encoding; 2] = [Encoding::Sql, Encoding::Nl];

    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Sql => "sql",
            Encoding::Nl => "nl",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Encoding {
    type Err = DeltaError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sql" => Ok(Encoding::Sql),
            "nl" | "natural_language" | "english" => Ok(Encoding::Nl),
            _ => Err(DeltaError::UnknownEncoding(s.to_string())),
        }
    }
}

/// Why an entry cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    #[error("unknown operation {0:?}: expected INSERT, UPDATE or DELETE")]
    UnknownOperation(String),
    #[error("unknown encoding {0:?}: expected 'sql' or 'nl'")]
    UnknownEncoding(String),
    #[error("delta entry {seq} ({op} on {table}) has no {which} row image")]
    MissingImage { seq: i64, op: Operation, table: String, which: &'static str },
    #[error("delta entry {seq} ({op} on {table}) has an empty {which} row image")]
    EmptyImage { seq: i64, op: Operation, table: String, which: &'static str },
    #[error("delta entry {seq} on {table}: key column {column:?} is missing from the old row image")]
    MissingKey { seq: i64, table: String, column: String },
}

impl DeltaEntry {
    fn image(&self, which: &'static str) -> Result<&Map<String, Value>, DeltaError> {
        let image = if which == "new" { &self.new_row } else { &self.old_row };
        let image =
            image.as_ref().ok_or_else(|| DeltaError::MissingImage { seq: self.seq, op: self.op, table: self.table.to_prose(), which })?;
        if image.is_empty() {
            return Err(DeltaError::EmptyImage { seq: self.seq, op: self.op, table: self.table.to_prose(), which });
        }
        Ok(image)
    }

    /// The (column, value) pairs that identify the old row: the primary key, or every column
    /// when there is none.
    fn key_of_old(&self) -> Result<Vec<(&str, &Value)>, DeltaError> {
        let old = self.image("old")?;
        if self.key_columns.is_empty() {
            return Ok(old.iter().map(|(k, v)| (k.as_str(), v)).collect());
        }
        self.key_columns
            .iter()
            .map(|c| {
                old.get(c).map(|v| (c.as_str(), v)).ok_or_else(|| DeltaError::MissingKey {
                    seq: self.seq,
                    table: self.table.to_prose(),
                    column: c.clone(),
                })
            })
            .collect()
    }

    /// The columns an UPDATE sets: those whose value changed, or all of them when none did.
    fn changed_columns(&self) -> Result<Vec<(&str, &Value)>, DeltaError> {
        let old = self.image("old")?;
        let new = self.image("new")?;
        let changed: Vec<(&str, &Value)> = new.iter().filter(|(k, v)| old.get(*k) != Some(*v)).map(|(k, v)| (k.as_str(), v)).collect();
        if changed.is_empty() {
            Ok(new.iter().map(|(k, v)| (k.as_str(), v)).collect())
        } else {
            Ok(changed)
        }
    }

    /// Render this entry as one command.
    pub fn encode(&self, encoding: Encoding) -> Result<String, DeltaError> {
        match encoding {
            Encoding::Sql => self.to_sql(),
            Encoding::Nl => self.to_nl(),
        }
    }

    /// The entry as a PostgreSQL statement ending in `;`.
    pub fn to_sql(&self) -> Result<String, DeltaError> {
        let table = self.table.to_sql();
        match self.op {
            Operation::Insert => {
                let new = self.image("new")?;
                let columns: Vec<String> = new.keys().map(|k| quote_ident(k)).collect();
                let values: Vec<String> = new.values().map(sql_literal).collect();
                Ok(format!("INSERT INTO {table} ({}) VALUES ({});", columns.join(", "), values.join(", ")))
            }
            Operation::Update => {
                let set: Vec<String> =
                    self.changed_columns()?.into_iter().map(|(k, v)| format!("{} = {}", quote_ident(k), sql_literal(v))).collect();
                let filter = sql_filter(&self.key_of_old()?);
                Ok(format!("UPDATE {table} SET {} WHERE {filter};", set.join(", ")))
            }
            Operation::Delete => {
                let filter = sql_filter(&self.key_of_old()?);
                Ok(format!("DELETE FROM {table} WHERE {filter};"))
            }
        }
    }

    /// The entry as an English sentence ending in `.`.
    pub fn to_nl(&self) -> Result<String, DeltaError> {
        let table = self.table.to_prose();
        match self.op {
            Operation::Insert => {
                let pairs: Vec<(&str, &Value)> = self.image("new")?.iter().map(|(k, v)| (k.as_str(), v)).collect();
                Ok(format!("insert a row into the {table} table with {}.", nl_pairs(&pairs, "and")))
            }
            Operation::Update => {
                let key = self.key_of_old()?;
                let set = self.changed_columns()?;
                Ok(format!("update the row of the {table} table with {} to have {}.", nl_pairs(&key, "and"), nl_pairs(&set, "and")))
            }
            Operation::Delete => {
                let key = self.key_of_old()?;
                Ok(format!("delete the row of the {table} table with {}.", nl_pairs(&key, "and")))
            }
        }
    }
}

/// Encode a whole log, in order.
pub fn encode_log(entries: &[DeltaEntry], encoding: Encoding) -> Result<Vec<String>, DeltaError> {
    entries.iter().map(|e| e.encode(encoding)).collect()
}

fn sql_filter(pairs: &[(&str, &Value)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| match v {
            Value::Null => format!("{} IS NULL", quote_ident(k)),
            _ => format!("{} = {}", quote_ident(k), sql_literal(v)),
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// `the A = 1, the B = 'x', and the C = NULL`
fn nl_pairs(pairs: &[(&str, &Value)], conjunction: &str) -> String {
    let items: Vec<String> = pairs.iter().map(|(k, v)| format!("the {k} = {}", prose_value(v))).collect();
    join_english(&items, conjunction)
}

/// `a`, `a and b`, `a, b, and c`.
pub fn join_english(items: &[String], conjunction: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} {conjunction} {b}"),
        [init @ .., last] => format!("{}, {conjunction} {last}", init.join(", ")),
    }
}

/// A value in an English sentence: like a SQL literal, but text is always plainly quoted
/// (`'back\slash'`), since prose is read by the model, not parsed.
fn prose_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        other => sql_literal(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_like_quote_ident() {
        assert_eq!(quote_ident("users"), "users");
        assert_eq!(quote_ident("user_id2$"), "user_id2$");
        assert_eq!(quote_ident("Users"), "\"Users\"");
        assert_eq!(quote_ident("order"), "\"order\"");
        assert_eq!(quote_ident("2fast"), "\"2fast\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_ident(""), "\"\"");
    }
}
