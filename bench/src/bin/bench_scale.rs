//! Generated catalogs of 200 and 10,000 tables in 50 schemas (columns, keys, comments; the
//! core's `synthetic_scale_catalog`). Run through `scripts/bench.sh scale`.
//!
//! For each size (`SCALE_TABLES=200,10000` by default) and embeddings off and local
//! (`SCALE_EMBEDDINGS=off,local`): `ask.index_schema()` time and the backend's memory meanwhile
//! (RssAnon, sampled every 100 ms), the backend's memory kept after the first questions,
//! `ask.select_tables(q, 10)` client p50/p95, the `select` stage of `ask()` p50/p95, the
//! described tables' share of the full description; then new backends as applications get
//! them: a connection per question (its first and second `ask()`, and a first
//! `ask.select_tables()`), and a pool of 8 backends reused round-robin; then the first `ask()`
//! after each kind of catalog change (`ALTER TABLE ... ADD COLUMN`, `COMMENT ON`, a new table):
//! pg_ask's own time (total less the LLM calls) and the stages that read the catalog.
//! Then (`SCALE_LOOKALIKE=0` skips it; `SCALE_TABLES=` with no size runs it alone) a schema-per-tenant catalog of look-alikes: 50 schemas
//! of 200 tables with the same five columns (`s1.t1_1` … `s50.t50_200`), embeddings off:
//! `ask.select_tables()` warm and from new backends, and whether a question that names a table
//! by its identifier (`how many rows in t3_9?`) finds it first.
//! `SCALE_FRESH_ONLY=1` stops after the new backends. `SCALE_KEEP=1` leaves the catalog and
//! the memory; `SCALE_REUSE=1` then measures only the new backends on them, on that cluster
//! started again by hand and named by `PG_ASK_IT_HOST` / `PG_ASK_IT_PORT`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pg_ask_core::selection::recall::{synthetic_scale_catalog, synthetic_scale_ddl};
use pg_ask_it::{connect, connect_as_is, report, use_llm};
use postgres::Client;

const QUESTIONS: [&str; 10] = [
    "How many claims did the insurance department record last month?",
    "List the open tickets of the railway area",
    "Total amount of invoices per customer in billing",
    "Which patients had a lab result in the clinic this year?",
    "Notes written about shipments in logistics",
    "Which vendors have more than three purchases in procurement?",
    "Average amount of loans in banking",
    "Reservations of guests at the hotel by season",
    "Inspections of machines in manufacturing and their reports",
    "How many members renewed their membership at the sports club?",
];

fn trace(c: &mut Client, q: &str) -> serde_json::Value {
    let s: String = c.query_one("SELECT ask.explain($1)::text", &[&q]).unwrap().get(0);
    serde_json::from_str(&s).unwrap()
}

fn stage_ms(t: &serde_json::Value, names: &[&str]) -> f64 {
    t["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| names.contains(&s["stage"].as_str().unwrap()))
        .map(|s| s["ms"].as_f64().unwrap())
        .sum()
}

const LLM_STAGES: [&str; 5] = ["generate", "repair", "answer", "plan", "context"];

/// pg_ask's own time of a call: the whole less the LLM calls (milliseconds).
fn own_ms(t: &serde_json::Value) -> f64 {
    t["ms"].as_f64().unwrap() - stage_ms(t, &LLM_STAGES)
}

/// The stage of a call, outside the LLM calls, that took longest, and its milliseconds.
fn slowest_own_stage(t: &serde_json::Value) -> (String, f64) {
    t["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !LLM_STAGES.contains(&s["stage"].as_str().unwrap()))
        .map(|s| (s["stage"].as_str().unwrap().to_string(), s["ms"].as_f64().unwrap()))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or_default()
}

/// The select stage's detail `field` (milliseconds), if the trace has it.
fn select_detail_if_any(t: &serde_json::Value, field: &str) -> Option<f64> {
    t["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "select").and_then(|s| s["output"][field].as_f64())
}

/// The select stage's detail `field` (milliseconds); the memory exists here, so it is there.
fn select_detail(t: &serde_json::Value, field: &str) -> f64 {
    select_detail_if_any(t, field).unwrap_or_else(|| panic!("the select stage shows no {field}: {t}"))
}

/// A new backend, as a client that opens a connection per question gets one: pointed at the
/// stand-in and the embedding provider, nothing of pg_ask called yet.
fn new_backend(llm: &str, provider: &str) -> Client {
    let mut c = connect_as_is();
    use_llm(&mut c, llm);
    c.batch_execute(&format!("SET ask.embedding_provider = '{provider}'")).unwrap();
    c
}

/// First and later questions in new backends: one connection per question (its first and
/// second question), then a pool of 8 backends reused round-robin (each backend's first
/// question, and every later one).
fn fresh_backends(llm: &str, provider: &str, tables: usize) {
    println!("-- new backends ({tables} tables, embeddings {provider})");
    let (mut wall, mut own, mut catalog, mut select, mut second) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut second_slowest: std::collections::BTreeMap<String, f64> = std::collections::BTreeMap::new();
    let mut describe = Vec::new();
    for (i, q) in QUESTIONS.iter().cycle().take(20).enumerate() {
        let mut c = new_backend(llm, provider);
        let t = Instant::now();
        let first = trace(&mut c, q);
        wall.push(t.elapsed().as_secs_f64() * 1000.0);
        own.push(own_ms(&first));
        select.push(stage_ms(&first, &["select"]));
        catalog.push(select_detail(&first, "catalog_ms"));
        describe.push(select_detail(&first, "describe_ms"));
        let then = trace(&mut c, QUESTIONS[(i + 1) % QUESTIONS.len()]);
        second.push(own_ms(&then));
        let (stage, ms) = slowest_own_stage(&then);
        *second_slowest.entry(stage).or_insert(0.0_f64) += ms;
    }
    report("first ask() of a new backend: client wall time", wall);
    report("  pg_ask's own time (outside the LLM)", own);
    report("  select stage", select);
    report("  of which reading the catalog", catalog);
    report("    of which describing the readable tables", describe);
    report("second ask() of that backend: pg_ask's own time", second);
    let mut slowest: Vec<(String, f64)> = second_slowest.into_iter().collect();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!(
        "  its slowest stage outside the LLM, summed over the backends: {}",
        slowest.iter().map(|(s, ms)| format!("{s} {ms:.1} ms")).collect::<Vec<_>>().join(", ")
    );
    let mut first_select = Vec::new();
    for q in QUESTIONS.iter().cycle().take(20) {
        let mut c = new_backend(llm, provider);
        let t = Instant::now();
        c.query("SELECT * FROM ask.select_tables($1, 10)", &[q]).unwrap();
        first_select.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report("first ask.select_tables() of a new backend (client)", first_select);
    let mut pool: Vec<Client> = (0..8).map(|_| new_backend(llm, provider)).collect();
    let (mut first, mut later) = (Vec::new(), Vec::new());
    let (mut select, mut lexical, mut described, mut memory, mut outside) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut candidates = Vec::new();
    let (mut embedded, mut waited) = (Vec::new(), Vec::new());
    for (i, q) in QUESTIONS.iter().cycle().take(80).enumerate() {
        let t = trace(&mut pool[i % 8], q);
        if i < 8 {
            first.push(own_ms(&t))
        } else {
            later.push(own_ms(&t));
            let s = stage_ms(&t, &["select"]);
            select.push(s);
            outside.push(own_ms(&t) - s);
            lexical.push(select_detail(&t, "lexical_ms"));
            described.push(select_detail(&t, "describe_ms"));
            memory.push(select_detail(&t, "memory_ms"));
            candidates.push(select_detail(&t, "candidates_described"));
            if provider != "off" {
                embedded.push(select_detail(&t, "embedding_ms"));
                // (Not in the traces of versions that embedded the question after the reads.)
                waited.extend(select_detail_if_any(&t, "embedding_wait_ms"));
            }
        }
    }
    report("pool of 8 backends: each one's first ask(), own time", first);
    report("pool of 8 backends: later ask(), own time", later);
    report("  select stage", select);
    report("    reading the index", lexical);
    report("    describing the candidates", described);
    report("    values, stored rows and refresh", memory);
    if !embedded.is_empty() {
        report("    the question's embedding, computed while the index is read", embedded);
        if !waited.is_empty() {
            report("    of which waited for", waited);
        }
    }
    report("  other stages outside the LLM", outside);
    candidates.sort_by(f64::total_cmp);
    println!(
        "  tables described per question: median {:.0}, max {:.0}",
        candidates[candidates.len() / 2],
        candidates.last().copied().unwrap_or_default()
    );
}

fn rss_anon_kb(pid: i32) -> i64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("RssAnon:")).and_then(|r| r.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// Runs `f` while sampling `pid`'s RssAnon; returns f's result and the peak growth in kB.
fn with_peak<R>(pid: i32, f: impl FnOnce() -> R) -> (R, i64) {
    let start = rss_anon_kb(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !stop.load(Ordering::Relaxed) {
                peak = peak.max(rss_anon_kb(pid));
                std::thread::sleep(Duration::from_millis(100));
            }
            peak.max(rss_anon_kb(pid))
        })
    };
    let out = f();
    stop.store(true, Ordering::Relaxed);
    let peak = sampler.join().unwrap();
    (out, peak - start)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("SCALE_TABLES")
        .unwrap_or_else(|_| "200,10000".into())
        .split(',')
        .filter(|n| !n.trim().is_empty())
        .map(|n| n.trim().parse().expect("SCALE_TABLES: numbers of tables, comma-separated"))
        .collect();
    let providers: Vec<String> =
        std::env::var("SCALE_EMBEDDINGS").unwrap_or_else(|_| "off,local".into()).split(',').map(str::to_owned).collect();
    for n in sizes {
        println!("\n==== {n} tables in 50 schemas");
        run(n, &providers);
    }
    if std::env::var("SCALE_LOOKALIKE").map_or(true, |v| v != "0") {
        lookalike();
    }
}

/// Questions over the look-alike catalog, each with the table it names.
const LOOKALIKE_QUESTIONS: [(&str, &str); 5] = [
    ("how many rows in t3_9?", "s3.t3_9"),
    ("total amount by status in t42_117", "s42.t42_117"),
    ("names created last week in t7_200", "s7.t7_200"),
    ("average amount of t50_1", "s50.t50_1"),
    ("which statuses does t12_34 have", "s12.t12_34"),
];

/// The schema-per-tenant catalog: 50 schemas of 200 tables with the same five columns.
fn lookalike() {
    println!("\n==== look-alike tables: 50 schemas x 200 tables (s1.t1_1 ... s50.t50_200), the same five columns, embeddings off");
    let mut c = connect();
    let t = Instant::now();
    for s in 1..=50 {
        let mut ddl = format!("CREATE SCHEMA s{s};");
        for n in 1..=200 {
            ddl.push_str(&format!(
                "CREATE TABLE s{s}.t{s}_{n} (id int PRIMARY KEY, name text, amount numeric, created_at timestamptz, status text);"
            ));
        }
        c.batch_execute(&ddl).expect("create the look-alike catalog");
    }
    println!("created 10000 tables in {:.0} s", t.elapsed().as_secs_f64());
    let llm = pg_ask_bench::selection_standin();
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.embedding_provider = 'off'").unwrap();
    let t = Instant::now();
    let described: i64 = c.query_one("SELECT ask.index_schema()", &[]).unwrap().get(0);
    println!("ask.index_schema() described {described} tables in {:.1} s", t.elapsed().as_secs_f64());
    let mut found = 0;
    for (q, want) in LOOKALIKE_QUESTIONS {
        let first: Option<String> = c.query("SELECT rel::text FROM ask.select_tables($1, 5)", &[&q]).unwrap().first().map(|r| r.get(0));
        let ok = first.as_deref() == Some(want);
        found += usize::from(ok);
        println!("  {q:45} first: {:20} {}", first.as_deref().unwrap_or("(none)"), if ok { "right" } else { "WRONG" });
    }
    println!("questions naming a table found it first: {found} of {}", LOOKALIKE_QUESTIONS.len());
    let mut warm = Vec::new();
    for _ in 0..5 {
        for (q, _) in LOOKALIKE_QUESTIONS.iter().chain(QUESTIONS.iter().map(|q| (*q, "")).collect::<Vec<_>>().iter()) {
            let t = Instant::now();
            c.query("SELECT * FROM ask.select_tables($1, 10)", &[q]).unwrap();
            warm.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    report("look-alikes: ask.select_tables(q, 10), warm session", warm);
    let mut fresh = Vec::new();
    for (q, _) in LOOKALIKE_QUESTIONS.iter().cycle().take(20) {
        let mut n = new_backend(&llm.url(), "off");
        let t = Instant::now();
        n.query("SELECT * FROM ask.select_tables($1, 10)", &[q]).unwrap();
        fresh.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report("look-alikes: first ask.select_tables() of a new backend", fresh);
    if std::env::var("SCALE_KEEP").is_ok() {
        return;
    }
    c.batch_execute("DELETE FROM ask.schema_memory_tables; DELETE FROM ask.schema_memory_schemas").unwrap();
    for s in 1..=50 {
        c.batch_execute(&format!("DROP SCHEMA s{s} CASCADE")).unwrap();
    }
}

/// The whole measurement on a generated catalog of `n` tables, for each embedding provider.
fn run(n: usize, providers: &[String]) {
    let tables = synthetic_scale_catalog(50, n.div_ceil(50).min(200));
    // SCALE_REUSE=1: the catalog and the memory a run with SCALE_KEEP=1 left, on a cluster
    // started again by hand (PG_ASK_IT_HOST, PG_ASK_IT_PORT), measured without building them.
    let reuse = std::env::var("SCALE_REUSE").is_ok();
    let mut c = if reuse { connect_as_is() } else { connect() };
    let t = Instant::now();
    for chunk in tables.chunk_by(|a, b| a.schema == b.schema).filter(|_| !reuse) {
        c.batch_execute(&synthetic_scale_ddl(chunk)).expect("create the generated catalog");
    }
    println!("created {} tables in 50 schemas in {:.0} s", tables.len(), t.elapsed().as_secs_f64());
    let llm = pg_ask_bench::selection_standin();
    use_llm(&mut c, &llm.url());
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);

    for provider in providers {
        c.batch_execute(&format!("SET ask.embedding_provider = '{provider}'")).unwrap();
        let kept: i64 = c.query_one("SELECT count(*) FROM ask.schema_memory_tables", &[]).unwrap().get(0);
        if reuse && kept > 0 {
            fresh_backends(&llm.url(), provider, tables.len());
            continue;
        }
        c.batch_execute("DELETE FROM ask.schema_memory_tables; DELETE FROM ask.schema_memory_schemas").unwrap();
        if provider == "local" {
            c.query_one("SELECT ask.embed_real('warm up')", &[]).unwrap();
        }
        let t = Instant::now();
        let (described, peak) = with_peak(pid, || -> i64 { c.query_one("SELECT ask.index_schema()", &[]).unwrap().get(0) });
        println!(
            "\n== ask.embedding_provider = {provider}: ask.index_schema() described {described} tables in {:.1} s; backend RssAnon peak +{:.1} MB",
            t.elapsed().as_secs_f64(),
            peak as f64 / 1024.0
        );
        let before = rss_anon_kb(pid);
        for q in QUESTIONS {
            c.query("SELECT * FROM ask.select_tables($1, 10)", &[&q]).unwrap();
        }
        println!("backend RssAnon growth over the first questions: {:+.1} MB", (rss_anon_kb(pid) - before) as f64 / 1024.0);
        let mut wall = Vec::new();
        for _ in 0..5 {
            for q in QUESTIONS {
                let t = Instant::now();
                c.query("SELECT * FROM ask.select_tables($1, 10)", &[&q]).unwrap();
                wall.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        report("client wall time of ask.select_tables(q, 10)", wall);
        let (mut select, mut own, mut shares) = (Vec::new(), Vec::new(), Vec::new());
        // The whole catalog's description, as a selection without the stored index reads it.
        c.batch_execute("SET ask.selection_index = off").unwrap();
        let whole = trace(&mut c, QUESTIONS[0]);
        let full_chars =
            whole["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "select").unwrap()["output"]["full_chars"].as_f64().unwrap();
        c.batch_execute("RESET ask.selection_index").unwrap();
        for _ in 0..3 {
            for q in QUESTIONS {
                let t = trace(&mut c, q);
                select.push(stage_ms(&t, &["select"]));
                own.push(own_ms(&t));
                let sel = t["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "select").unwrap();
                // From the stored index, the full description is the candidates' only: the
                // share is of the whole catalog's description, which the steady numbers above
                // read once.
                shares.push(sel["output"]["described_chars"].as_f64().unwrap() / full_chars);
            }
        }
        report("select stage of ask() (explain)", select);
        report("ask() outside the LLM calls, steady", own);
        let max = shares.iter().cloned().fold(0.0, f64::max);
        println!(
            "described tables vs the full description: mean {:.2} %, max {:.2} %",
            100.0 * shares.iter().sum::<f64>() / shares.len() as f64,
            100.0 * max
        );

        fresh_backends(&llm.url(), provider, tables.len());
        if std::env::var("SCALE_FRESH_ONLY").is_ok() {
            continue;
        }

        for (kind, change) in [
            ("ALTER TABLE ... ADD COLUMN", "ALTER TABLE {first} ADD COLUMN extra_{i} int"),
            ("COMMENT ON TABLE", "COMMENT ON TABLE {first} IS 'changed {i}'"),
            ("CREATE TABLE", "CREATE TABLE {schema}.new_table_{i} (id int PRIMARY KEY, name text)"),
        ] {
            let change =
                change.replace("{first}", &format!("{}.{}", tables[0].schema, tables[0].name)).replace("{schema}", &tables[0].schema);
            let (mut own, mut reading) = (Vec::new(), Vec::new());
            for i in 0..20 {
                c.batch_execute(&change.replace("{i}", &format!("{provider}_{i}"))).unwrap();
                let t = trace(&mut c, QUESTIONS[i % QUESTIONS.len()]);
                own.push(own_ms(&t));
                reading.push(stage_ms(&t, &["select", "schema"]));
            }
            report(&format!("first ask() after {kind}: outside the LLM"), own);
            report("  of which select + schema stages", reading);
        }
    }
    if reuse || std::env::var("SCALE_KEEP").is_ok() {
        return;
    }
    // One schema per transaction: dropping 10,000 tables at once needs more locks than the
    // default lock table holds.
    c.batch_execute("DELETE FROM ask.schema_memory_tables; DELETE FROM ask.schema_memory_schemas").unwrap();
    for schema in tables.iter().map(|t| t.schema.clone()).collect::<std::collections::BTreeSet<_>>() {
        c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).unwrap();
    }
}
