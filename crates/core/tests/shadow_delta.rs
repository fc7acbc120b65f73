//! Delta log entries rendered as SQL statements and English sentences.

use pg_ask_core::shadow::delta::{encode_log, quote_literal, sql_literal, DeltaEntry, DeltaError, Encoding, Operation, TableName};
use serde_json::{json, Map, Value};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

fn obj(v: Value) -> Option<Map<String, Value>> {
    Some(v.as_object().unwrap().clone())
}

fn entry(op: Operation, old: Value, new: Value, key: &[&str]) -> DeltaEntry {
    DeltaEntry {
        seq: 7,
        xid: 1234,
        op,
        table: TableName::new(Some("public"), "Items"),
        key_columns: key.iter().map(|s| s.to_string()).collect(),
        old_row: if old.is_null() { None } else { obj(old) },
        new_row: if new.is_null() { None } else { obj(new) },
    }
}

fn parses(sql: &str) {
    Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[test]
fn insert_renders_every_json_kind() {
    let e = entry(
        Operation::Insert,
        Value::Null,
        json!({"id": 1, "name": "O'Brien", "note": null, "ok": true, "price": 12.5, "tags": ["a", "b"],
               "Weird Col": "back\\slash", "neg": -3}),
        &["id"],
    );
    let sql = e.to_sql().unwrap();
    assert_eq!(
        sql,
        "INSERT INTO public.\"Items\" (\"Weird Col\", id, name, neg, note, ok, price, tags) \
         VALUES (E'back\\\\slash', 1, 'O''Brien', -3, NULL, TRUE, 12.5, '[\"a\",\"b\"]');"
    );
    parses(&sql);
    assert_eq!(
        e.to_nl().unwrap(),
        "insert a row into the public.Items table with the Weird Col = 'back\\slash', the id = 1, the name = 'O''Brien', \
         the neg = -3, the note = NULL, the ok = TRUE, the price = 12.5, and the tags = '[\"a\",\"b\"]'."
    );
}

#[test]
fn update_sets_changed_columns_keyed_by_the_old_key() {
    let e =
        entry(Operation::Update, json!({"id": 5, "name": "old", "qty": 2}), json!({"id": 5, "name": "new_username", "qty": 2}), &["id"]);
    assert_eq!(e.to_sql().unwrap(), "UPDATE public.\"Items\" SET name = 'new_username' WHERE id = 5;");
    assert_eq!(e.to_nl().unwrap(), "update the row of the public.Items table with the id = 5 to have the name = 'new_username'.");
    // A key change: SET the new key WHERE the old one.
    let e = entry(Operation::Update, json!({"id": 5, "k": "a"}), json!({"id": 6, "k": "a"}), &["id"]);
    assert_eq!(e.to_sql().unwrap(), "UPDATE public.\"Items\" SET id = 6 WHERE id = 5;");
    // No change at all: a no-op update of every column, still valid SQL.
    let e = entry(Operation::Update, json!({"id": 5, "k": "a"}), json!({"id": 5, "k": "a"}), &["id"]);
    assert_eq!(e.to_sql().unwrap(), "UPDATE public.\"Items\" SET id = 5, k = 'a' WHERE id = 5;");
    parses(&e.to_sql().unwrap());
}

#[test]
fn delete_is_keyed_by_primary_key_or_all_columns() {
    let e = entry(Operation::Delete, json!({"a": 1, "b": 2, "c": "x"}), Value::Null, &["b", "a"]);
    assert_eq!(e.to_sql().unwrap(), "DELETE FROM public.\"Items\" WHERE b = 2 AND a = 1;");
    assert_eq!(e.to_nl().unwrap(), "delete the row of the public.Items table with the b = 2 and the a = 1.");
    let e = entry(Operation::Delete, json!({"a": 1, "c": null}), Value::Null, &[]);
    assert_eq!(e.to_sql().unwrap(), "DELETE FROM public.\"Items\" WHERE a = 1 AND c IS NULL;");
    let mut unqualified = e.clone();
    unqualified.table = TableName::new(None, "users");
    assert_eq!(unqualified.to_sql().unwrap(), "DELETE FROM users WHERE a = 1 AND c IS NULL;");
    assert_eq!(unqualified.to_nl().unwrap(), "delete the row of the users table with the a = 1 and the c = NULL.");
}

#[test]
fn broken_entries_are_errors_not_panics() {
    let e = entry(Operation::Insert, Value::Null, Value::Null, &[]);
    assert!(matches!(e.to_sql(), Err(DeltaError::MissingImage { which: "new", .. })));
    let e = entry(Operation::Delete, json!({"a": 1}), Value::Null, &["id"]);
    assert!(matches!(e.to_nl(), Err(DeltaError::MissingKey { ref column, .. }) if column == "id"));
    let e = entry(Operation::Update, json!({}), json!({"a": 1}), &[]);
    assert!(matches!(e.to_sql(), Err(DeltaError::EmptyImage { which: "old", .. })));
    assert!("MERGE".parse::<Operation>().is_err());
    assert!("yaml".parse::<Encoding>().is_err());
}

#[test]
fn entries_come_from_the_glue_as_json() {
    let e: DeltaEntry = serde_json::from_value(json!({
        "seq": 1, "xid": 99, "op": "DELETE", "table": {"schema": null, "name": "t"},
        "key_columns": ["id"], "old_row": {"id": 3}
    }))
    .unwrap();
    assert_eq!(e.op, Operation::Delete);
    assert_eq!(e.new_row, None);
    let log = encode_log(&[e.clone(), e], Encoding::Sql).unwrap();
    assert_eq!(log, ["DELETE FROM t WHERE id = 3;", "DELETE FROM t WHERE id = 3;"]);
    assert_eq!("insert".parse::<Operation>().unwrap(), Operation::Insert);
    assert_eq!("NL".parse::<Encoding>().unwrap(), Encoding::Nl);
}

#[test]
fn literals_quote_every_kind() {
    assert_eq!(quote_literal("it's"), "'it''s'");
    assert_eq!(quote_literal("line\nbreak"), "'line\nbreak'");
    assert_eq!(sql_literal(&json!(false)), "FALSE");
    assert_eq!(sql_literal(&json!(1e100)), "1e+100"); // valid PostgreSQL numeric syntax
    assert_eq!(sql_literal(&json!({"k": "it's"})), "'{\"k\":\"it''s\"}'");
    parses(&format!("SELECT {}", sql_literal(&json!(1e100))));
}
