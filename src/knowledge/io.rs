//! A schema's knowledge as one JSON document, for version control: `ask.export_knowledge()`
//! writes what the caller sees, `ask.import_knowledge()` adds or replaces each item as
//! `ask.add_*` would — all of them, or none when one fails (each failure is listed).

use pgrx::pg_sys::errcodes::PgSqlErrorCode::{self, *};
use pgrx::prelude::*;
use serde_json::{json, Map, Value};

use pg_ask_core::knowledge::Kind;

use super::check::stored;
use super::NewItem;
use crate::pg::errors::Raised;

/// The document's format version.
const FORMAT: i64 = 1;

/// The knowledge items the caller sees, as one document: with `in_schema`, those about its
/// tables and the schema's instructions; without, every item (the database's instructions
/// too). Items in the order they were added.
#[pg_extern(name = "export_knowledge", stable, parallel_safe)]
fn export_knowledge(in_schema: default!(Option<&str>, "NULL")) -> pgrx::JsonB {
    let filter = match in_schema {
        Some(s) => format!(
            "WHERE coalesce((SELECT n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                             WHERE c.oid OPERATOR(pg_catalog.=) k.about::pg_catalog.oid),
                            (SELECT n.nspname FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) k.about_schema::pg_catalog.oid))
                   OPERATOR(pg_catalog.=) {}",
            pg_ask_core::sqltext::quote_literal(s)
        ),
        None => String::new(),
    };
    let items: Vec<Value> = stored(&filter).iter().map(|s| item_json(s.kind, &s.item, s.table.as_deref())).collect();
    pgrx::JsonB(json!({"pg_ask_knowledge": FORMAT, "items": items}))
}

fn item_json(kind: Kind, it: &NewItem, table: Option<&str>) -> Value {
    let mut o = Map::new();
    o.insert("kind".into(), json!(kind.as_str()));
    if let Some(t) = table {
        o.insert("table".into(), json!(t));
    }
    if let Some(s) = &it.about_schema {
        o.insert("schema".into(), json!(s));
    }
    match kind {
        Kind::Instruction => {
            o.insert("text".into(), json!(it.body));
        }
        Kind::Synonym => {
            o.insert("synonym".into(), json!(it.name));
            if let Some(c) = &it.column {
                o.insert("column".into(), json!(c));
            }
            if let Some(v) = &it.value {
                o.insert("value".into(), json!(v));
            }
        }
        Kind::Metric | Kind::Dimension | Kind::Filter => {
            o.insert("name".into(), json!(it.name));
            let field = if kind == Kind::Filter { "predicate" } else { "expression" };
            o.insert(field.into(), json!(it.body));
        }
    }
    if let Some(d) = &it.description {
        o.insert("description".into(), json!(d));
    }
    if !it.synonyms.is_empty() {
        o.insert("synonyms".into(), json!(it.synonyms));
    }
    Value::Object(o)
}

/// One item of a document as `ask.add_*` takes it; why not otherwise.
fn item_of(v: &Value) -> Result<NewItem, String> {
    let o = v.as_object().ok_or("an item is not a JSON object")?;
    let text = |k: &str| -> Result<Option<String>, String> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("\"{k}\" is not a string")),
        }
    };
    let known =
        ["kind", "table", "schema", "text", "synonym", "column", "value", "name", "expression", "predicate", "description", "synonyms"];
    if let Some(k) = o.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("unknown field \"{k}\""));
    }
    let kind = text("kind")?.ok_or("\"kind\" is missing")?;
    let kind = Kind::parse(&kind)
        .ok_or_else(|| format!("\"kind\" is \"{kind}\"; it is one of instruction, metric, filter, dimension, synonym"))?;
    let about = match text("table")? {
        Some(t) => Some(
            Spi::get_one_with_args::<pg_sys::Oid>("SELECT pg_catalog.to_regclass($1)::pg_catalog.oid", &[t.as_str().into()])
                .ok()
                .flatten()
                .ok_or_else(|| format!("relation \"{t}\" does not exist"))?,
        ),
        None => None,
    };
    let synonyms = match o.get("synonyms") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|s| s.as_str().map(str::to_string).ok_or("\"synonyms\" holds a value that is not a string"))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"synonyms\" is not an array".into()),
    };
    let (name, body) = match kind {
        Kind::Instruction => (None, text("text")?.unwrap_or_default()),
        Kind::Synonym => (text("synonym")?, String::new()),
        Kind::Filter => (text("name")?, text("predicate")?.or(text("expression")?).unwrap_or_default()),
        Kind::Metric | Kind::Dimension => (text("name")?, text("expression")?.unwrap_or_default()),
    };
    Ok(NewItem {
        kind: Some(kind),
        name,
        about,
        about_schema: text("schema")?,
        column: text("column")?,
        value: text("value")?,
        body,
        description: text("description")?,
        synonyms,
    })
}

/// Add or replace every item of `document` (what `ask.export_knowledge()` writes), each checked
/// as `ask.add_*` checks it, as the caller. When any item fails, none is kept: the error lists
/// every failure by its place in the document. Returns the number of items.
#[pg_extern(name = "import_knowledge", volatile, strict, parallel_unsafe)]
fn import_knowledge(document: pgrx::JsonB) -> i32 {
    super::writable("import knowledge").unwrap_or_else(|r| r.raise());
    let doc = document.0;
    let version = doc.get("pg_ask_knowledge").and_then(Value::as_i64);
    if version != Some(FORMAT) {
        Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, "the document is not pg_ask's knowledge (format 1)")
            .hint("ask.export_knowledge() writes one: {\"pg_ask_knowledge\": 1, \"items\": [...]}")
            .raise();
    }
    let Some(items) = doc.get("items").and_then(Value::as_array) else {
        Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, "the document has no \"items\" array").raise();
    };
    let mut failures: Vec<(usize, String, PgSqlErrorCode)> = Vec::new();
    for (i, v) in items.iter().enumerate() {
        pgrx::check_for_interrupts!();
        let item = match item_of(v) {
            Ok(it) => it,
            Err(why) => {
                failures.push((i + 1, why, ERRCODE_INVALID_PARAMETER_VALUE));
                continue;
            }
        };
        match crate::pg::subxact::run(crate::pg::subxact::OnSuccess::Release, || super::add(item).map_err(|r| (r.message, r.code))) {
            Ok(Ok(_)) => {}
            Ok(Err((message, code))) => failures.push((i + 1, message, code)),
            Err(caught) => failures.push((i + 1, crate::pg::subxact::caught_message(caught), ERRCODE_INVALID_PARAMETER_VALUE)),
        }
    }
    if let Some((_, _, code)) = failures.first() {
        let detail: Vec<String> = failures.iter().map(|(n, why, _)| format!("item {n}: {why}")).collect();
        Raised::new(*code, format!("{} of {} knowledge items cannot be imported; none was", failures.len(), items.len()))
            .detail(detail.join("\n"))
            .hint("Fix the items listed and import the document again; importing is idempotent.")
            .raise();
    }
    i32::try_from(items.len()).unwrap_or(i32::MAX)
}
