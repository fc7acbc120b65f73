//! What the benchmark programs share: the repository's path and a database with the sample
//! and the defog databases loaded; the bare model as the accuracy baseline ([`bare`]) and
//! `ask()` timed as a user meets it ([`asked`]).

use std::path::Path;

pub mod asked;
pub mod bare;
pub mod suites;

use pg_ask_core::sqltext::quote_ident;
use pg_ask_it::{connect_as_is, connect_to};
use postgres::Client;

pub fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// A fresh database `db` with the sample in `public`, every defog database in a schema of its
/// name, and pg_ask.
pub fn database(db: &str) -> Client {
    database_with(db, false)
}

/// [`database`], with defog's column descriptions (its `<db>.json` `table_metadata`) as the
/// columns' comments when `described`: a documented database, as pg_ask reads comments and
/// the bare model's `CREATE TABLE` statements carry them ([`bare::create_tables`]).
pub fn database_with(db: &str, described: bool) -> Client {
    let mut admin = connect_as_is();
    // Two statements, not one batch: DROP DATABASE cannot run in a transaction block.
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    let mut c = connect_to("postgres", db);
    c.batch_execute(&std::fs::read_to_string(repo().join("sample/sample.sql")).unwrap()).expect("load the sample");
    let defog = repo().join("../shared/datasets/defog");
    for entry in std::fs::read_dir(&defog).expect("../shared/datasets/defog") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("sql") {
            continue;
        }
        let schema = path.file_stem().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        // Some files qualify their tables with public., others not: both land in the schema.
        c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; SET search_path = {schema};")).unwrap();
        // ewallet's file creates its tables in consumer_div; the questions name the database.
        let text = text.replace("public.", &format!("{schema}.")).replace("consumer_div.", &format!("{schema}."));
        c.batch_execute(&text).unwrap_or_else(|e| panic!("load defog {schema}: {e}"));
        if described {
            describe_columns(&mut c, &schema, &defog.join(format!("{schema}.json")));
        }
        c.batch_execute("RESET search_path").unwrap();
    }
    c.batch_execute("CREATE EXTENSION pg_ask CASCADE").unwrap();
    c
}

/// `COMMENT ON COLUMN` for each column defog describes in `metadata` that exists in `schema`.
fn describe_columns(c: &mut Client, schema: &str, metadata: &std::path::Path) {
    let Ok(text) = std::fs::read_to_string(metadata) else { return };
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else { return };
    let Some(tables) = doc.get("table_metadata").and_then(|t| t.as_object()) else { return };
    for (table, columns) in tables {
        for col in columns.as_array().into_iter().flatten() {
            let (Some(name), Some(about)) = (col["column_name"].as_str(), col["column_description"].as_str()) else { continue };
            let exists = c
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_class t ON t.oid = a.attrelid
                                     JOIN pg_namespace n ON n.oid = t.relnamespace
                                    WHERE n.nspname = $1 AND t.relname = $2 AND a.attname = $3 AND a.attnum > 0)",
                    &[&schema, &table.as_str(), &name],
                )
                .map(|r| r.get::<_, bool>(0))
                .unwrap_or(false);
            if exists && !about.trim().is_empty() {
                c.batch_execute(&format!(
                    "COMMENT ON COLUMN {}.{}.{} IS {}",
                    quote_ident(schema),
                    quote_ident(table),
                    quote_ident(name),
                    pg_ask_core::sqltext::quote_literal(about.trim())
                ))
                .unwrap();
            }
        }
    }
}

/// The stand-in the selection benchmarks talk to: its plan reply cannot be read, so `ask()`
/// falls back to the best schema and every question makes the plan call (whose prompt is
/// measured) and one generate call.
pub fn selection_standin() -> llm_standin::StandIn {
    use llm_standin::{Reply, Rule, Script, StandIn};
    StandIn::start(
        Script::default()
            .rule(Rule::new(&["retrieval steps"], Reply::text("no plan")))
            .rule(Rule::new(&["<schema>"], Reply::text("```sql\nSELECT 1 AS one\n```")))
            .rule(Rule::new(&["<result"], Reply::text("ROWS"))),
    )
    .unwrap()
}

/// The result of `sql` run in `schema` (None when the query fails), its cells as PostgreSQL's
/// text, in column order, for [`judged_same`].
pub fn result_of(c: &mut Client, schema: &str, sql: &str) -> Option<pg_ask_core::rows::ResultSet> {
    c.batch_execute(&format!("SET search_path = {schema}")).ok()?;
    let messages = c.simple_query(sql.trim().trim_end_matches(';')).ok();
    c.batch_execute("RESET search_path").ok();
    let mut out = pg_ask_core::rows::ResultSet::default();
    for m in messages? {
        if let postgres::SimpleQueryMessage::Row(r) = m {
            if out.columns.is_empty() {
                out.columns = r.columns().iter().map(|c| c.name().to_string()).collect();
            }
            out.rows
                .push((0..r.len()).map(|i| r.get(i).map_or(serde_json::Value::Null, |v| serde_json::Value::String(v.into()))).collect());
        }
    }
    Some(out)
}

/// Whether `predicted` answers the question whose gold result is `gold`, as `ask.evaluate`'s
/// judge decides it (rows as a multiset, columns matched by values, extra columns allowed,
/// numbers by value: `pg_ask_core::compare`).
pub fn judged_same(gold: &pg_ask_core::rows::ResultSet, predicted: &pg_ask_core::rows::ResultSet) -> bool {
    pg_ask_core::compare::compare_results(gold, predicted, pg_ask_core::compare::RowOrder::Unordered).is_ok()
}

/// The rows of `sql` run in `schema`, each as its sorted values joined, sorted: two results
/// compare equal when they hold the same rows whatever their order and column names (None
/// when the query fails).
pub fn sorted_rows(c: &mut Client, schema: &str, sql: &str) -> Option<Vec<String>> {
    c.batch_execute(&format!("SET search_path = {schema}")).ok()?;
    let out = c.query(&format!("SELECT to_jsonb(t)::text FROM ({}) t", sql.trim().trim_end_matches(';')), &[]).ok().map(|rs| {
        let mut v: Vec<String> = rs
            .iter()
            .map(|r| {
                let j: serde_json::Value = serde_json::from_str(&r.get::<_, String>(0)).unwrap_or_default();
                let mut vals: Vec<String> = j.as_object().map(|o| o.values().map(|v| v.to_string()).collect()).unwrap_or_default();
                vals.sort();
                vals.join("|")
            })
            .collect();
        v.sort();
        v
    });
    c.batch_execute("RESET search_path").ok();
    out
}

/// Index the text columns of `schema` that hold short values (names, codes, categories) in
/// the value memory.
pub fn index_short_text(c: &mut Client, schema: &str) {
    let cols = c
        .query(
            "SELECT format('%I.%I', s.schemaname, s.tablename), array_agg(s.attname::text)
             FROM pg_stats s JOIN information_schema.columns i
               ON i.table_schema = s.schemaname AND i.table_name = s.tablename AND i.column_name = s.attname
             WHERE s.schemaname = $1 AND i.data_type IN ('text', 'character varying', 'character') AND s.avg_width <= 40
             GROUP BY 1",
            &[&schema],
        )
        .unwrap();
    for r in cols {
        let (table, columns): (String, Vec<String>) = (r.get(0), r.get(1));
        c.query_one("SELECT ask.index_values($1::text::regclass, $2::text[])", &[&table, &columns]).unwrap();
    }
}

/// The sample's columns `scripts/run.sh` puts in the value memory (its `INDEX_SPECS`): (table,
/// columns), read from the script so that a benchmark sets the sample up as run.sh does.
pub fn run_sh_value_columns() -> Vec<(String, Vec<String>)> {
    let script = std::fs::read_to_string(repo().join("scripts/run.sh")).unwrap();
    let start = script.find("INDEX_SPECS=(").expect("run.sh lists INDEX_SPECS");
    let list = &script[start + "INDEX_SPECS=(".len()..];
    let list = &list[..list.find(')').expect("INDEX_SPECS ends")];
    list.split('"')
        .skip(1)
        .step_by(2)
        .map(|spec| {
            let (table, columns) = spec.split_once(':').expect("table:columns");
            (table.to_string(), columns.split(',').map(str::to_string).collect())
        })
        .collect()
}

/// The gold SQL of a question of the sample suite (`sample/questions.json`).
pub fn sample_gold(question: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo().join("sample/questions.json")).unwrap()).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .find(|q| q["question"] == question)
        .and_then(|q| q["gold_sql"].as_str())
        .unwrap_or_else(|| panic!("no sample question {question:?}"))
        .to_string()
}
