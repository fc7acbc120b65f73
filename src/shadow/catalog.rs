//! Catalog look-ups shared by enabling capture (admin) and replaying it (replay): a table's
//! schema-qualified name and primary key, and a log row as a [`DeltaEntry`].

use crate::pg::errors::raise;
use pg_ask_core::shadow::delta::{DeltaEntry, Encoding, Operation, TableName};
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{Map, Value};

/// Primary-key column names of `rel`, in key order.
pub(crate) fn key_columns(rel: pg_sys::Oid) -> Vec<String> {
    Spi::get_one_with_args::<Vec<String>>(
        "SELECT coalesce(pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY k.ord), '{}')
           FROM pg_catalog.pg_index i
           CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY AS k(attnum, ord)
           JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid AND a.attnum OPERATOR(pg_catalog.=) k.attnum
          WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND i.indisprimary",
        &[rel.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_default()
}

pub(crate) fn parse_encoding(encoding: &str) -> Encoding {
    encoding.parse().unwrap_or_else(|_| {
        raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, format!("unknown encoding {encoding:?}"), "Use 'sql' or 'nl'.")
    })
}

pub(crate) fn operation(op: i8) -> Operation {
    match op as u8 {
        b'I' => Operation::Insert,
        b'U' => Operation::Update,
        _ => Operation::Delete,
    }
}

/// Schema-qualified name parts of a relation.
pub(crate) fn table_name(rel: pg_sys::Oid) -> TableName {
    let parts = Spi::get_two_with_args::<String, String>(
        "SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1",
        &[rel.into()],
    );
    match parts {
        Ok((Some(schema), Some(name))) => TableName::new(Some(&schema), &name),
        _ => raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, format!("relation {rel:?} does not exist"), ""),
    }
}

pub(crate) fn entry(table: TableName, op: i8, old: Option<JsonB>, new: Option<JsonB>, seq: i64, xid: i64, keys: Vec<String>) -> DeltaEntry {
    let obj = |j: Option<JsonB>| match j.map(|j| j.0) {
        Some(Value::Object(m)) => Some(m),
        _ => None::<Map<String, Value>>,
    };
    DeltaEntry { seq, xid, op: operation(op), table, key_columns: keys, old_row: obj(old), new_row: obj(new) }
}
