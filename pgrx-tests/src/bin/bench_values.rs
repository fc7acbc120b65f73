//! Benchmark of the value memory. Run through `bash scripts/bench.sh values`.
//!
//! 1. Lookup latency against 1,000,000 distinct values in one column: the candidate search of
//!    value correction (exact and case-insensitive probes, embedding neighbours through the
//!    column's HNSW index, trigram neighbours through its GIN index, fusion and decision), with
//!    the literal's embedding computed beforehand (`ask._value_lookup`, the path `ask()` takes).
//!    The million values are embedded by the stand-in server's deterministic pseudo-embeddings
//!    over HTTP (ask.embedding_provider = openai): the local model would need about 50 minutes.
//! 2. The same lookup against a column of 2,000 values (searched exactly, without an index).
//! 3. The literal's embedding with the local model (warm), reported on its own.
//! 4. `ask.index_values()` of 100,000 distinct values with local embeddings.
//!
//! Sizes: PG_ASK_BENCH_VALUES (default 1000000), PG_ASK_BENCH_LOCAL_VALUES (default 100000).

use std::time::Instant;

use llm_standin::{Script, StandIn};
use pg_ask_it::{connect, report};



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

fn main() {
    let big = env_usize("PG_ASK_BENCH_VALUES", 1_000_000);
    let local_n = env_usize("PG_ASK_BENCH_LOCAL_VALUES", 100_000);
    let mut c = connect();
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
    c.batch_execute("DROP SCHEMA IF EXISTS bv CASCADE; CREATE SCHEMA bv; CREATE TABLE bv.big (name text); CREATE TABLE bv.small (name text); CREATE TABLE bv.local (name text);").unwrap();
    for chunk in big_names.chunks(50_000) {
        c.execute("INSERT INTO bv.big SELECT unnest($1::text[])", &[&chunk.to_vec()]).unwrap();
    }
    let small_names: Vec<String> = names.iter().step_by(names.len() / 2000).take(2000).cloned().collect();
    c.execute("INSERT INTO bv.small SELECT unnest($1::text[])", &[&small_names]).unwrap();
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
    let t = Instant::now();
    let n: i64 = c.query_one("SELECT ask.index_values('bv.big')", &[]).unwrap().get(0);
    let built = t.elapsed().as_secs_f64();
    let hnsw: f64 = c
        .query_one("SELECT pg_relation_size(format('%I.%I', schemaname, indexname)::regclass)::float8 / 1048576 FROM pg_indexes WHERE indexname LIKE 'value_memory_c%_hnsw'", &[])
        .unwrap()
        .get(0);
    println!("index_values: {n} values in {built:.1} s (embedding over HTTP, inserts, HNSW + GIN builds); HNSW index {hnsw:.0} MiB");
    let lits = literals(&big_names, 200);
    let (wall, server, replaced) = lookups(&mut c, "bv.big", &lits);
    report("lookup, 1M values: candidate search + decision (server)", server);
    report("lookup, 1M values: client wall time", wall);
    println!("  ({replaced} of {} literals replaced without the LLM)", lits.len());

    println!("== value memory: 2,000 values in one column (exact scan)");
    c.query_one("SELECT ask.index_values('bv.small')", &[]).unwrap();
    let lits = literals(&small_names, 200);
    let (wall, server, _) = lookups(&mut c, "bv.small", &lits);
    report("lookup, 2,000 values: candidate search + decision (server)", server);
    report("lookup, 2,000 values: client wall time", wall);

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
