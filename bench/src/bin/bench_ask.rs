//! Benchmark: the time `ask()` spends outside the LLM, on a generated 200-table schema, with
//! the stand-in LLM answering at once. Run through `scripts/bench.sh`.
//!
//! Reports p50/p95 of the client-side wall time of `SELECT ask(...)` (everything: catalog
//! read, prompt building, two loopback HTTP round trips, parse guard, analysis, execution,
//! ledger), and of the pipeline's own stages from `ask.explain()`.

use std::time::Instant;

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, report, use_llm};

const TABLES: usize = 200;
const RUNS: usize = 300;

fn main() {
    let mut c = connect();
    let mut ddl = String::from("DROP SCHEMA IF EXISTS bench CASCADE; CREATE SCHEMA bench;\n");
    for i in 0..TABLES {
        let fk = if i > 0 { format!(", parent_id int REFERENCES bench.t{}(id)", i - 1) } else { String::new() };
        ddl.push_str(&format!(
            "CREATE TABLE bench.t{i} (id int PRIMARY KEY, name text NOT NULL, code varchar(12), amount numeric(10,2), \
             created_at timestamptz, active boolean, notes text{fk});\n\
             COMMENT ON TABLE bench.t{i} IS 'generated table number {i}';\n\
             INSERT INTO bench.t{i} (id, name, code, amount) SELECT g, 'name ' || g, 'C' || g, g * 1.5 FROM generate_series(1, 20) g;\n"
        ));
    }
    c.batch_execute(&ddl).expect("create the 200-table schema");
    let llm = StandIn::start(
        Script::default()
            .rule(Rule::new(&["<schema>"], Reply::text("```sql\nSELECT name, amount FROM bench.t42 WHERE id <= 5 ORDER BY id\n```")))
            .rule(Rule::new(&["<result"], Reply::text("ROWS"))),
    )
    .unwrap();
    use_llm(&mut c, &llm.url());

    // Warm up: the runtime, the HTTP connection, catalog caches.
    for _ in 0..10 {
        c.query_one("SELECT ask('warm up')", &[]).unwrap();
    }
    let prompt_chars: i64 = c.query_one("SELECT (jsonb_path_query_first(ask.explain('size'), '$.stages[*] ? (@.stage == \"generate\").input.prompt_chars'))::text::bigint", &[]).unwrap().get(0);

    let mut wall = Vec::with_capacity(RUNS);
    for i in 0..RUNS {
        let t = Instant::now();
        c.query_one(&format!("SELECT ask('question {i}')"), &[]).unwrap();
        wall.push(t.elapsed().as_secs_f64() * 1000.0);
    }

    let mut total = Vec::new();
    let mut by_stage: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut between = Vec::new();
    let mut llm_ms = Vec::new();
    let mut schema_ms = Vec::new();
    let mut guard_exec_ms = Vec::new();
    for i in 0..RUNS {
        let trace: serde_json::Value = c
            .query_one(&format!("SELECT ask.explain('question {i}')::text"), &[])
            .map(|r| {
                let s: String = r.get(0);
                serde_json::from_str(&s).unwrap()
            })
            .unwrap();
        let stages = trace["stages"].as_array().unwrap();
        let ms = |names: &[&str]| {
            stages.iter().filter(|s| names.contains(&s["stage"].as_str().unwrap())).map(|s| s["ms"].as_f64().unwrap()).sum::<f64>()
        };
        total.push(trace["ms"].as_f64().unwrap());
        // Each stage's own time (the LLM's stages count the HTTP call, the ledger's row and
        // the budget check), and what no stage covers.
        let mut staged = 0.0;
        let mut this: std::collections::BTreeMap<String, f64> = Default::default();
        for st in stages {
            let ms = st["ms"].as_f64().unwrap();
            staged += ms;
            *this.entry(st["stage"].as_str().unwrap().to_owned()).or_default() += ms;
        }
        for (stage, ms) in this {
            by_stage.entry(stage).or_default().push(ms);
        }
        between.push(trace["ms"].as_f64().unwrap() - staged);
        llm_ms.push(ms(&["generate", "repair", "answer"]));
        schema_ms.push(ms(&["schema"]));
        guard_exec_ms.push(ms(&["guard", "execute"]));
    }
    let outside: Vec<f64> = total.iter().zip(&llm_ms).map(|(t, l)| t - l).collect();

    // The same after a catalog change each time (the cached description is dropped).
    let mut cold_outside = Vec::with_capacity(RUNS / 3);
    let mut cold_schema = Vec::with_capacity(RUNS / 3);
    for i in 0..RUNS / 3 {
        c.batch_execute(&format!("COMMENT ON TABLE bench.t0 IS 'changed {i}'")).unwrap();
        let s: String = c.query_one(&format!("SELECT ask.explain('cold {i}')::text"), &[]).unwrap().get(0);
        let trace: serde_json::Value = serde_json::from_str(&s).unwrap();
        let stages = trace["stages"].as_array().unwrap();
        let ms = |names: &[&str]| {
            stages.iter().filter(|s| names.contains(&s["stage"].as_str().unwrap())).map(|s| s["ms"].as_f64().unwrap()).sum::<f64>()
        };
        cold_outside.push(trace["ms"].as_f64().unwrap() - ms(&["generate", "repair", "answer"]));
        cold_schema.push(ms(&["schema"]));
    }

    println!("ask() on a {TABLES}-table schema, stand-in LLM answering at 0 ms; prompt {prompt_chars} chars");
    report("client wall time of SELECT ask()", wall);
    report("pipeline total (explain)", total);
    report("  outside the LLM calls", outside);
    report("  LLM calls (2 loopback HTTP)", llm_ms);
    report("  schema description", schema_ms);
    report("  guard + guarded execution", guard_exec_ms);
    println!("by stage (summed over a stage's calls):");
    for (stage, ms) in by_stage {
        report(&format!("  {stage}"), ms);
    }
    report("  between the stages", between);
    println!("after a catalog change before every question (description read afresh):");
    report("  outside the LLM calls", cold_outside);
    report("  schema description", cold_schema);
    c.batch_execute("DROP SCHEMA bench CASCADE").unwrap();
}
