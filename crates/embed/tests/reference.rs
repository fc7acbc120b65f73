//! Checks the candle embeddings against the numpy reference implementation
//! (`../shared/tools/minilm_reference.py`), and the batching/masking/truncation behaviour.

mod common;

use std::process::Command;

/// The reference script, relative to this crate.
const REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/tools/minilm_reference.py");

/// Largest allowed absolute difference to the reference.
const TOLERANCE: f64 = 1e-4;

/// The reference prints cosines rounded to 3 decimals: a value within [`TOLERANCE`] of the true
/// cosine may differ from the printed one by up to half a unit in the last place more.
const COSINE_TOLERANCE: f64 = 5e-4 + TOLERANCE;

fn long_sentence() -> String {
    // About 170 word pieces: more than the 128 the shipped tokenizer.json pads/truncates to,
    // less than the 256 the embedder keeps, so both implementations see every token.
    "The municipal archive of the city keeps records of every restaurant, bakery and small \
     grocery that opened between eighteen ninety and nineteen seventy, including the names of \
     their owners, the streets they stood on, the dishes they were known for and the dates on \
     which they closed; historians from Los Angeles, San Francisco and São Paulo have used these \
     ledgers to trace how immigrant families from Italy, France, Japan and Mexico shaped the food \
     of the neighbourhoods they settled in, and how prohibition, two world wars and the arrival \
     of supermarkets changed what people ate on ordinary weekdays and at festivals alike; the \
     collection also holds menus, photographs, tax receipts and letters written by cooks to \
     their relatives abroad, which together describe prices, wages and working hours in detail."
        .to_owned()
}

struct Reference {
    dims: Vec<Vec<f64>>,
    cosines: Vec<f64>,
}

/// The Python with numpy, scipy, safetensors and tokenizers: `PG_ASK_PYTHON`, else the
/// virtual environment scripts/setup.sh makes, else `python3` on the PATH.
fn python() -> String {
    if let Ok(p) = std::env::var("PG_ASK_PYTHON") {
        return p;
    }
    let venv = "/var/cache/pg_ask/venv/bin/python3";
    if std::path::Path::new(venv).exists() {
        venv.to_string()
    } else {
        "python3".to_string()
    }
}

fn run_reference(dir: &std::path::Path, texts: &[&str]) -> Reference {
    let out = Command::new(python())
        .arg(REFERENCE)
        .arg(dir)
        .args(texts)
        .output()
        .expect("python3 must be installed to run the reference embeddings (scripts/setup.sh)");
    assert!(
        out.status.success(),
        "the reference script failed (scripts/setup.sh installs numpy, scipy, safetensors, tokenizers):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("utf-8 output");
    let n = texts.len();
    let lines: Vec<&str> = stdout.lines().collect();
    let pairs = n * (n - 1) / 2;
    assert_eq!(lines.len(), pairs + n, "unexpected reference output:\n{stdout}");
    let cosines = lines[..pairs].iter().map(|l| l.split_whitespace().last().unwrap().parse::<f64>().unwrap()).collect();
    let dims = lines[pairs..]
        .iter()
        .map(|l| {
            let list = &l[l.rfind('[').unwrap() + 1..l.rfind(']').unwrap()];
            list.split(',').map(|x| x.trim().parse::<f64>().unwrap()).collect()
        })
        .collect();
    Reference { dims, cosines }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

#[test]
fn matches_the_numpy_reference() {
    let long = long_sentence();
    let texts: Vec<&str> = vec![
        "Los Angeles",
        "LA",
        "United States",
        "usa",
        "French",
        "france",
        " ",
        &long,
        "Zürich",
        "São Paulo",
        "San Francisco",
        "Great Britain",
        "United Kingdom",
    ];
    let embedder = common::embedder();
    assert_eq!(embedder.dim(), 384);
    let long_tokens = embedder.token_count(&long).unwrap();
    assert!(long_tokens > 128 && long_tokens < embedder.max_tokens(), "{long_tokens} tokens");

    let reference = run_reference(&common::model_dir(), &texts);
    // Both ways through the model: all texts in one call (padded batches through candle) and
    // each text alone (the single-text encoder).
    let batched = embedder.embed(&texts).unwrap();
    let alone: Vec<Vec<f32>> = texts.iter().map(|t| embedder.embed_one(t).unwrap()).collect();
    for ours in [alone, batched] {
        compare(&texts, &reference, &ours);
    }
}

fn compare(texts: &[&str], reference: &Reference, ours: &[Vec<f32>]) {
    let mut worst_dim: f64 = 0.0;
    for (i, (r, o)) in reference.dims.iter().zip(ours).enumerate() {
        assert_eq!(o.len(), 384);
        let norm: f64 = o.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{:?} is not unit length: {norm}", texts[i]);
        for (k, (rv, ov)) in r.iter().zip(o).enumerate() {
            let d = (rv - f64::from(*ov)).abs();
            worst_dim = worst_dim.max(d);
            assert!(d <= TOLERANCE, "{:?} dim {k}: reference {rv}, ours {ov}", texts[i]);
        }
    }
    let mut worst_cos: f64 = 0.0;
    let mut p = 0;
    for i in 0..texts.len() {
        for j in i + 1..texts.len() {
            let c = cosine(&ours[i], &ours[j]);
            let d = (c - reference.cosines[p]).abs();
            worst_cos = worst_cos.max(d);
            assert!(d <= COSINE_TOLERANCE, "{:?}~{:?}: reference {}, ours {c}", texts[i], texts[j], reference.cosines[p]);
            p += 1;
        }
    }
    eprintln!("max |diff| first 8 dims: {worst_dim:.2e}; cosines (reference rounded to 1e-3): {worst_cos:.2e}");
    // cos('Los Angeles', 'LA') as the numpy reference computes it.
    assert!((cosine(&ours[0], &ours[1]) - 0.8424).abs() < 1e-3);
}

#[test]
fn a_vector_does_not_depend_on_its_batch() {
    let embedder = common::embedder();
    let long = long_sentence();
    let alone = embedder.embed(&["Zürich"]).unwrap().remove(0);
    // More texts than SINGLE_TEXTS: padded batches through candle.
    let many = [&long, "Zürich", "a", "United States of America", "b", "c"];
    assert!(many.len() > pg_ask_embed::SINGLE_TEXTS);
    let batched = embedder.embed(&many).unwrap();
    let diff = alone.iter().zip(&batched[1]).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(diff < 1e-5, "padding leaks into the vector, or the single-text encoder differs: max diff {diff}");
    // Order is preserved although batches are sorted by length.
    assert!(cosine(&batched[3], &embedder.embed_one("United States of America").unwrap()) > 0.99999);
    assert!(embedder.embed(&[]).unwrap().is_empty());
}

#[test]
fn a_vector_does_not_depend_on_the_threads_computing_it() {
    // One text is computed by the threads of rayon's pool together: one thread, or several.
    let embedder = common::embedder();
    let text = "which Italian restaurants are in Los Angeles?";
    let with = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| embedder.embed_one(text).unwrap())
    };
    let one = with(1);
    for threads in [2, 3, 4] {
        let diff = one.iter().zip(&with(threads)).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(diff < 1e-6, "{threads} threads differ from one by {diff}");
    }
}

#[test]
fn long_texts_are_truncated_not_rejected() {
    let embedder = common::embedder();
    let huge = "restaurant ".repeat(2000);
    assert_eq!(embedder.token_count(&huge).unwrap(), embedder.max_tokens());
    let v = embedder.embed_one(&huge).unwrap();
    assert_eq!(v.len(), 384);
    assert!(v.iter().all(|x| x.is_finite()));
    // Everything after the limit is ignored.
    let longer = format!("{huge} Los Angeles");
    let w = embedder.embed_one(&longer).unwrap();
    assert!(cosine(&v, &w) > 0.99999);
}

#[test]
fn a_vector_begun_in_the_background_is_the_same_vector() {
    // The backend begins its question's vector on rayon's pool while it reads the catalog.
    let embedder = std::sync::Arc::new(common::embedder());
    let text = "which Italian restaurants are in Los Angeles?";
    let now = embedder.embed_one(text).unwrap();
    let mut pending = embedder.begin_one(text);
    // Waited for in steps, as a backend does between its checks for a cancel.
    let background = loop {
        match pending.wait_for(std::time::Duration::from_micros(200)) {
            Ok(result) => break result.unwrap().0,
            Err(p) => pending = p,
        }
    };
    let diff = now.iter().zip(&background).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(diff < 1e-6, "the background vector differs by {diff}");
    // Several at once, waited for in another order than begun.
    let texts = ["Zürich", "a", "United States of America"];
    let begun: Vec<_> = texts.iter().map(|t| embedder.begin_one(t)).collect();
    for (t, p) in texts.iter().zip(begun).rev() {
        assert!(cosine(&p.wait().unwrap().0, &embedder.embed_one(t).unwrap()) > 0.99999, "{t}");
    }
    // A waiter that goes away (its query cancelled) leaves the pool working for the next.
    drop(embedder.begin_one(text));
    assert!(cosine(&embedder.begin_one(text).wait().unwrap().0, &now) > 0.99999);
}

#[test]
fn a_waiter_computes_the_vector_when_the_pool_is_busy() {
    // Every thread of rayon's pool held by other work: the backend that waits for its
    // question's vector computes it itself rather than waiting for a free thread.
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Condvar, Mutex};
    let embedder = Arc::new(common::embedder());
    let text = "which Italian restaurants are in Los Angeles?";
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (held, released) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let threads = rayon::current_num_threads();
    for _ in 0..threads {
        let (gate, held, released) = (gate.clone(), held.clone(), released.clone());
        rayon::spawn(move || {
            held.fetch_add(1, Ordering::SeqCst);
            let (open, wake) = &*gate;
            let guard = open.lock().unwrap();
            // Released by the test, or after a minute whatever happens (no test hangs).
            let _ = wake.wait_timeout_while(guard, std::time::Duration::from_secs(60), |open| !*open).unwrap();
            released.fetch_add(1, Ordering::SeqCst);
        });
    }
    while held.load(Ordering::SeqCst) < threads {
        std::thread::yield_now();
    }
    // Waited for in steps, with a deadline far below the gate's minute.
    let mut pending = embedder.begin_one(text);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let background = loop {
        match pending.wait_for(std::time::Duration::from_millis(10)) {
            Ok(result) => break result.unwrap().0,
            Err(p) if std::time::Instant::now() < deadline => pending = p,
            Err(_) => panic!("the waiter did not compute the vector while the pool was busy"),
        }
    };
    // The vector came while every pool thread was still held.
    assert_eq!(released.load(Ordering::SeqCst), 0);
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    let now = embedder.embed_one(text).unwrap();
    let diff = now.iter().zip(&background).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(diff < 1e-6, "the waiter's vector differs by {diff}");
}
