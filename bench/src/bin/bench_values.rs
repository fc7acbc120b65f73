//! Benchmark of the value memory. Run through `bash scripts/bench.sh values`.
//!
//! 1. Lookup latency against 1,000,000 distinct values in one column: the candidate search of
//!    value correction (exact and case-insensitive probes, embedding neighbours through the
//!    column's HNSW index, trigram neighbours through its GIN index, fusion and decision), with
//!    the literal's embedding computed beforehand (`ask._value_lookup`, the path `ask()` takes).
//!    The million values are embedded by the stand-in server's deterministic pseudo-embeddings
//!    over HTTP (ask.embedding_provider = openai): the local model would need about 50 minutes.
//! 2. The same lookup against columns of 500 values (searched exactly, without an index), 2,000
//!    and 10,000 (own indexes), and, for comparison, pg_trgm's own trigram search through the
//!    GIN index of the 2,000- and 1,000,000-value columns (the search correction leaves out).
//! 3. The literal's embedding with the local model (warm), reported on its own.
//! 4. `ask.index_values()` of 100,000 distinct values with local embeddings.
//!
//! Sizes: PG_ASK_BENCH_VALUES (default 1000000), PG_ASK_BENCH_LOCAL_VALUES (default 100000).
//! PG_ASK_BENCH_REUSE=1 keeps the installed extension and a `bv.big` already indexed at that
//! size (run against a kept cluster through PG_ASK_IT_HOST/PG_ASK_IT_PORT), skipping its build.

use std::time::Instant;

use llm_standin::{Script, StandIn};
use pg_ask_it::{connect, connect_as_is, report};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// 100 pronounceable words; three of them make one of a million distinct names.
fn words() -> Vec<String> {
    let a = ["ka", "lo", "mi", "ra", "ven", "tor", "el", "san", "bri", "do"];
    let b = ["ran", "lis", "mont", "ber", "ca", "dale", "ford", "ton", "vik", "za"];
    let mut out = Vec::new();
    for x in a {
        for y in b {
            let w = format!("{x}{y}");
            out.push(w[..1].to_uppercase() + &w[1..]);
        }
    }
    out
}

/// Literals that miss both probes: one letter dropped, and a word swapped for one that makes
/// no stored value when the column is smaller than the full product.
fn literals(values: &[String], n: usize) -> Vec<String> {
    let mut out = Vec::new();
    let step = (values.len() / n).max(1);
    for (i, v) in values.iter().step_by(step).take(n).enumerate() {
        let chars: Vec<char> = v.chars().collect();
        let lit = if i % 2 == 0 {
            let cut = 1 + (i * 7) % (chars.len() - 2);
            chars.iter().enumerate().filter(|(j, _)| *j != cut).map(|(_, c)| *c).collect()
        } else {
            format!("{} Zorvak", v.rsplit_once(' ').map(|(h, _)| h).unwrap_or(v))
        };
        out.push(lit);
    }
    out
}

fn lookups(c: &mut postgres::Client, table: &str, lits: &[String]) -> (Vec<f64>, Vec<f64>, usize) {
    let embs: Vec<Vec<f32>> = lits.iter().map(|l| c.query_one("SELECT ask.embed_real($1)", &[l]).unwrap().get(0)).collect();
    let q = format!("SELECT ask._value_lookup('{table}'::regclass, 'name', $1, $2)::text");
    // Warm-up pass over the same literals, then the measured one.
    for (l, e) in lits.iter().zip(&embs) {
        c.query_one(&q, &[l, e]).unwrap();
    }
    let (mut wall, mut server, mut replaced) = (Vec::new(), Vec::new(), 0);
    for (l, e) in lits.iter().zip(&embs) {
        let t = Instant::now();
        let row = c.query_one(&q, &[l, e]).unwrap();
        wall.push(t.elapsed().as_secs_f64() * 1000.0);
        let trace: serde_json::Value = serde_json::from_str(row.get::<_, &str>(0)).unwrap();
        server.push(trace["lookup_ms"].as_f64().unwrap());
        if trace["decision"]["action"] == "replace" {
            replaced += 1;
        }
    }
    (wall, server, replaced)
}

/// pg_trgm's own search for the trigram neighbours of each literal through the column's GIN
/// index (what literal correction leaves out of its pool), client wall time per query.
fn gin_search(c: &mut postgres::Client, table: &str, lits: &[String]) -> Vec<f64> {
    let id: i64 = c.query_one(&format!("SELECT id FROM ask.value_columns WHERE relid = '{table}'::regclass"), &[]).unwrap().get(0);
    let q = format!(
        "SELECT count(*) FROM (SELECT value FROM ask.value_memory WHERE column_id = {id} AND value % $1
                                ORDER BY value <-> $1, value LIMIT 10) t"
    );
    for l in lits {
        c.query_one(&q, &[l]).unwrap();
    }
    lits.iter()
        .map(|l| {
            let t = Instant::now();
            c.query_one(&q, &[l]).unwrap();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

fn main() {
    let big = env_usize("PG_ASK_BENCH_VALUES", 1_000_000);
    let local_n = env_usize("PG_ASK_BENCH_LOCAL_VALUES", 100_000);
    let keep = std::env::var("PG_ASK_BENCH_REUSE").is_ok_and(|v| v == "1");
    let mut c = if keep { connect_as_is() } else { connect() };
    let w = words();
    let mut names: Vec<String> = Vec::with_capacity(1_000_000);
    for x in &w {
        for y in &w {
            for z in &w {
                names.push(format!("{x} {y} {z}"));
            }
        }
    }
    // A spread-out subset of `big` names (stride through the product).
    let stride = (names.len() / big.max(1)).max(1);
    let big_names: Vec<String> = names.iter().step_by(stride).take(big).cloned().collect();
    let reuse = keep
        && c.query_one("SELECT coalesce((SELECT distinct_values FROM ask.value_columns WHERE relid = to_regclass('bv.big')), 0)", &[])
            .unwrap()
            .get::<_, i64>(0)
            == big as i64;
    if !reuse {
        c.batch_execute("DROP SCHEMA IF EXISTS bv CASCADE; CREATE SCHEMA bv; CREATE TABLE bv.big (name text);").unwrap();
        for chunk in big_names.chunks(50_000) {
            c.execute("INSERT INTO bv.big SELECT unnest($1::text[])", &[&chunk.to_vec()]).unwrap();
        }
    }
    c.batch_execute(
        "DROP TABLE IF EXISTS bv.small, bv.gin, bv.mid, bv.local;
         CREATE TABLE bv.small (name text); CREATE TABLE bv.gin (name text); CREATE TABLE bv.mid (name text);
         CREATE TABLE bv.local (name text);",
    )
    .unwrap();
    let spread = |n: usize| -> Vec<String> { names.iter().skip(1).step_by(names.len() / n).take(n).cloned().collect() };
    let (small_names, gin_names, mid_names) = (spread(500), spread(2_000), spread(10_000));
    c.execute("INSERT INTO bv.small SELECT unnest($1::text[])", &[&small_names]).unwrap();
    c.execute("INSERT INTO bv.gin SELECT unnest($1::text[])", &[&gin_names]).unwrap();
    c.execute("INSERT INTO bv.mid SELECT unnest($1::text[])", &[&mid_names]).unwrap();
    let local_names: Vec<String> = names.iter().skip(3).step_by((names.len() / local_n.max(1)).max(1)).take(local_n).cloned().collect();
    c.execute("INSERT INTO bv.local SELECT unnest($1::text[])", &[&local_names]).unwrap();

    let s = StandIn::start(Script::default()).unwrap();
    c.batch_execute(&format!(
        "SET ask.embedding_provider = 'openai'; SET ask.embedding_model = 'pseudo-384';
         SET ask.embedding_base_url = '{}/v1'; SET ask.max_values_per_column = {};
         SET client_min_messages = warning",
        s.url(),
        big.max(local_n)
    ))
    .unwrap();

    println!("== value memory: {big} distinct values in one column (stand-in pseudo-embeddings over HTTP)");
    if reuse {
        println!("(bv.big kept from an earlier run: build not measured)");
    } else {
        let t = Instant::now();
        let n: i64 = c.query_one("SELECT ask.index_values('bv.big')", &[]).unwrap().get(0);
        let built = t.elapsed().as_secs_f64();
        let hnsw: f64 = c
            .query_one("SELECT pg_relation_size(format('%I.%I', schemaname, indexname)::regclass)::float8 / 1048576 FROM pg_indexes WHERE indexname LIKE 'value_memory_c%_hnsw'", &[])
            .unwrap()
            .get(0);
        println!(
            "index_values: {n} values in {built:.1} s (embedding over HTTP, inserts, HNSW + GIN + btree builds); HNSW index {hnsw:.0} MiB"
        );
    }
    // Warm: the memory and the column's indexes in shared buffers.
    c.batch_execute(
        "CREATE EXTENSION IF NOT EXISTS pg_prewarm;
         SELECT pg_prewarm(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'ask' AND c.relname LIKE 'value_memory%'",
    )
    .unwrap();
    let lits = literals(&big_names, 200);
    let (wall, server, replaced) = lookups(&mut c, "bv.big", &lits);
    report("lookup, 1M values: candidate search + decision (server)", server);
    report("lookup, 1M values: client wall time", wall);
    println!("  ({replaced} of {} literals replaced without the LLM)", lits.len());
    report("for comparison, pg_trgm's GIN trigram search alone, 1M values", gin_search(&mut c, "bv.big", &lits[..50]));

    for (table, label, values) in [
        ("bv.small", "500 values (exact scan)", &small_names),
        ("bv.gin", "2,000 values (own indexes)", &gin_names),
        ("bv.mid", "10,000 values (own indexes)", &mid_names),
    ] {
        println!("== value memory: {label}");
        c.query_one(&format!("SELECT ask.index_values('{table}')"), &[]).unwrap();
        let (wall, server, _) = lookups(&mut c, table, &literals(values, 200));
        report(&format!("lookup, {label}: candidate search + decision (server)"), server);
        report(&format!("lookup, {label}: client wall time"), wall);
    }
    report("for comparison, pg_trgm's GIN trigram search alone, 2,000 values", gin_search(&mut c, "bv.gin", &literals(&gin_names, 50)));

    println!("== local embeddings (all-MiniLM-L6-v2 in the backend)");
    c.batch_execute("SET ask.embedding_provider = 'local'").unwrap();
    let t = Instant::now();
    c.query_one("SELECT ask.embed_real('warm up')", &[]).unwrap();
    println!("first embedding in the session (model load included): {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
    let lits = literals(&big_names, 100);
    let mut emb = Vec::new();
    for l in &lits {
        let t = Instant::now();
        c.query_one("SELECT ask.embed_real($1)", &[l]).unwrap();
        emb.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report("one literal's embedding, warm (client wall)", emb);
    let t = Instant::now();
    let n: i64 = c.query_one("SELECT ask.index_values('bv.local')", &[]).unwrap().get(0);
    let secs = t.elapsed().as_secs_f64();
    println!("index_values with local embeddings: {n} values in {secs:.1} s ({:.0} values/s, HNSW + GIN build included)", n as f64 / secs);
}
