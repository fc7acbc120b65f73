//! Batched embedding throughput: `cargo run --release -p pg_ask_embed --example throughput [N]`.
//!
//! Embeds N (default 3000) short, distinct, value-like strings (the kind of text the value
//! memory holds: names, cities, categories) in one `embed` call after a warm-up, and prints
//! values per second. The model directory is `PG_ASK_MODEL_DIR` or the path setup installs to.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(3000);
    let dir = pg_ask_embed::tool_model_dir();

    let t = Instant::now();
    let embedder = pg_ask_embed::Embedder::load(&dir)?;
    let load = t.elapsed();

    let words = [
        "North", "South", "Saint", "Lake", "River", "Market", "Golden", "Old", "New", "Grand", "Pacific", "Maple", "Cedar", "Harbor",
        "Union", "Royal", "Little", "Green", "Silver", "Park",
    ];
    let kinds = ["Street", "Bakery", "Valley", "Hotel", "Pizza Co.", "Springs", "Avenue", "Trading", "Cafe", "Heights"];
    let values: Vec<String> =
        (0..n).map(|i| format!("{} {} {}", words[i % words.len()], kinds[(i / words.len()) % kinds.len()], i)).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();

    embedder.embed(&refs[..64.min(n)])?; // warm-up
    let t = Instant::now();
    let vectors = embedder.embed(&refs)?;
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), n);

    let t = Instant::now();
    for v in refs.iter().take(50) {
        embedder.embed_one(v)?;
    }
    let single_ms = t.elapsed().as_secs_f64() * 1000.0 / 50.0;

    println!("model load: {:.0} ms", load.as_secs_f64() * 1000.0);
    println!("batched: {n} values in {secs:.2} s = {:.0} values/s", n as f64 / secs);
    println!("single value, one call each: {single_ms:.1} ms");
    Ok(())
}
