//! Latency of embedding one short question, the way the selection stage does:
//! `cargo run --release -p pg_ask_embed --example question_latency [REPEATS [PAUSE_MS]]`.
//!
//! Embeds each of the twelve synthetic selection questions alone, REPEATS (default 25) times
//! after a warm-up, and prints p50/p95 of one `embed_one` call and of the tokenizer alone.
//! The model directory is `PG_ASK_MODEL_DIR` or the path setup installs to.

use std::time::Instant;

use pg_ask_core::selection::recall::SYNTHETIC_QUESTIONS;

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let repeats: usize = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(25);
    // A pause before each question (milliseconds), as between the questions a session asks.
    let pause = std::env::args().nth(2).map(|a| a.parse().map(std::time::Duration::from_millis)).transpose()?;
    let dir = pg_ask_embed::tool_model_dir();
    // What a new backend pays before its first question's vector: loading (the tokenizer
    // parsed, the weights mapped) and the first call (the weights' pages mapped in, rayon's
    // pool started).
    let t = Instant::now();
    let embedder = pg_ask_embed::Embedder::load(&dir)?;
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    embedder.embed_one(SYNTHETIC_QUESTIONS[0])?;
    println!("load {load_ms:.1} ms, first question {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
    for q in SYNTHETIC_QUESTIONS {
        embedder.embed_one(q)?;
    }
    let (mut embed_ms, mut token_ms) = (Vec::new(), Vec::new());
    for _ in 0..repeats {
        for q in SYNTHETIC_QUESTIONS {
            let t = Instant::now();
            embedder.token_count(q)?;
            token_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            if let Some(pause) = pause {
                std::thread::sleep(pause);
            }
            let t = Instant::now();
            embedder.embed_one(q)?;
            embed_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    // Begun as a backend begins its question's vector and waited for at once: the pool's
    // thread and the waiter share the pass.
    let shared = std::sync::Arc::new(embedder);
    let mut begun_ms = Vec::new();
    for _ in 0..repeats {
        for q in SYNTHETIC_QUESTIONS {
            if let Some(pause) = pause {
                std::thread::sleep(pause);
            }
            begun_ms.push(shared.begin_one(q).wait()?.1.as_secs_f64() * 1000.0);
        }
    }
    let embedder = &*shared;
    let tokens: Vec<usize> = SYNTHETIC_QUESTIONS.iter().map(|q| embedder.token_count(q)).collect::<Result<_, _>>()?;
    println!("word pieces per question: {tokens:?}");
    println!("tokenizer alone, p50 / p95: {:.3} / {:.3} ms", percentile(&mut token_ms, 0.5), percentile(&mut token_ms, 0.95));
    println!(
        "one question embedded (n = {}), p50 / p95: {:.2} / {:.2} ms",
        embed_ms.len(),
        percentile(&mut embed_ms, 0.5),
        percentile(&mut embed_ms, 0.95)
    );
    println!(
        "begun and waited for at once (the pool's thread and the waiter), p50 / p95: {:.2} / {:.2} ms",
        percentile(&mut begun_ms, 0.5),
        percentile(&mut begun_ms, 0.95)
    );
    Ok(())
}
