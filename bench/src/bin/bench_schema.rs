//! Benchmark: the schema selection memory on a generated 200-table database (ten schemas of
//! twenty tables, with keys and comments). Run through `scripts/bench.sh schema`.
//!
//! Reports the time `ask.index_schema()` takes, p50/p95 of `ask.select_tables(q, 10)` (client
//! wall time, and the `select` stage of `ask.explain()` inside the backend, with the time
//! embedding the question took in it) with local
//! embeddings and with embeddings off, and the size of the first prompt `ask()` sends with
//! the memory against the prompt with every table described.

use std::time::Instant;

use pg_ask_core::selection::recall::{SYNTHETIC_AREAS as AREAS, SYNTHETIC_QUESTIONS as QUESTIONS, SYNTHETIC_SATELLITES as SATELLITES};
use pg_ask_it::{connect, report, use_llm};

const REPEATS: usize = 25;

fn ddl() -> String {
    let mut out = String::new();
    for (schema, entities) in AREAS {
        out.push_str(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};\n"));
        for (i, entity) in entities.iter().enumerate() {
            let words = entity.replace('_', " ");
            out.push_str(&format!(
                "CREATE TABLE {schema}.{entity} (id bigint PRIMARY KEY, name text, status text, amount numeric(12,2), \
                 created_at timestamptz, owner_email text{});\n\
                 COMMENT ON TABLE {schema}.{entity} IS '{words} records of the {schema} area';\n\
                 COMMENT ON COLUMN {schema}.{entity}.name IS 'Name of the {words}';\n\
                 COMMENT ON COLUMN {schema}.{entity}.status IS 'active, closed or archived';\n",
                if i > 0 { format!(", {p}_id bigint REFERENCES {schema}.{p}(id)", p = entities[i - 1]) } else { String::new() }
            ));
            for suffix in &SATELLITES[1..] {
                out.push_str(&format!(
                    "CREATE TABLE {schema}.{entity}{suffix} (id bigint PRIMARY KEY, {entity}_id bigint REFERENCES {schema}.{entity}(id), \
                     body text, recorded_at timestamptz, recorded_by text);\n\
                     COMMENT ON TABLE {schema}.{entity}{suffix} IS '{words} records of the {schema} area';\n"
                ));
            }
        }
    }
    out
}

fn trace(c: &mut postgres::Client, q: &str) -> serde_json::Value {
    let s: String = c.query_one("SELECT ask.explain($1)::text", &[&q]).unwrap().get(0);
    serde_json::from_str(&s).unwrap()
}

fn stage<'a>(t: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    t["stages"].as_array().unwrap().iter().find(|s| s["stage"] == name)
}

fn main() {
    let mut c = connect();
    c.batch_execute(&ddl()).expect("create the 200-table database");
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = ANY($1)",
            &[&AREAS.iter().map(|a| a.0).collect::<Vec<_>>()],
        )
        .unwrap()
        .get(0);
    println!("generated database: {n} tables in {} schemas", AREAS.len());
    let llm = pg_ask_bench::selection_standin();
    use_llm(&mut c, &llm.url());
    c.batch_execute("DELETE FROM ask.schema_memory_tables; DELETE FROM ask.schema_memory_schemas").unwrap();

    // The full-schema prompt: no memory yet.
    let full: Vec<i64> =
        QUESTIONS.iter().map(|q| stage(&trace(&mut c, q), "generate").unwrap()["input"]["prompt_chars"].as_i64().unwrap()).collect();

    for provider in ["local", "off"] {
        c.batch_execute(&format!("SET ask.embedding_provider = '{provider}'")).unwrap();
        c.batch_execute("DELETE FROM ask.schema_memory_tables; DELETE FROM ask.schema_memory_schemas").unwrap();
        // Load the model outside the measurement.
        if provider == "local" {
            c.query_one("SELECT ask.embed_real('warm up')", &[]).unwrap();
        }
        let t = Instant::now();
        let described: i64 = c.query_one("SELECT ask.index_schema()", &[]).unwrap().get(0);
        println!(
            "\n== ask.embedding_provider = {provider}: ask.index_schema() described {described} tables in {:.0} ms",
            t.elapsed().as_secs_f64() * 1000.0
        );
        for q in QUESTIONS {
            c.query(&"SELECT * FROM ask.select_tables($1, 10)".to_string(), &[&q]).unwrap();
        }
        let mut wall = Vec::new();
        for _ in 0..REPEATS {
            for q in QUESTIONS {
                let t = Instant::now();
                c.query("SELECT * FROM ask.select_tables($1, 10)", &[&q]).unwrap();
                wall.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        report("client wall time of ask.select_tables(q, 10)", wall);
        let mut select_ms = Vec::new();
        let mut embed_ms = Vec::new();
        let mut ratios = Vec::new();
        let mut schema_ratios = Vec::new();
        for _ in 0..(REPEATS / 5).max(1) {
            for (q, full_chars) in QUESTIONS.iter().zip(&full) {
                let t = trace(&mut c, q);
                let sel = stage(&t, "select").expect("a select stage");
                select_ms.push(sel["ms"].as_f64().unwrap());
                embed_ms.extend(sel["output"]["embedding_ms"].as_f64());
                let first = t["stages"].as_array().unwrap().iter().find(|s| s["input"]["prompt_chars"].is_number()).unwrap();
                ratios.push(first["input"]["prompt_chars"].as_f64().unwrap() / *full_chars as f64);
                schema_ratios.push(sel["output"]["described_chars"].as_f64().unwrap() / sel["output"]["full_chars"].as_f64().unwrap());
            }
        }
        report("select stage of ask() (explain)", select_ms);
        if !embed_ms.is_empty() {
            report("  of which embedding the question", embed_ms);
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
        println!(
            "first prompt of ask() vs the full-schema prompt ({} chars): mean {:.1}%, max {:.1}%; described tables vs all tables' description: mean {:.1}%, max {:.1}%",
            full[0],
            mean(&ratios) * 100.0,
            max(&ratios) * 100.0,
            mean(&schema_ratios) * 100.0,
            max(&schema_ratios) * 100.0
        );
    }
    let mut drop = String::from("DELETE FROM ask.schema_memory_tables; DELETE FROM ask.schema_memory_schemas;");
    for (schema, _) in AREAS {
        drop.push_str(&format!("DROP SCHEMA {schema} CASCADE;"));
    }
    c.batch_execute(&drop).unwrap();
}
