//! Retrieval recall of the schema selection memory with real all-MiniLM-L6-v2 embeddings:
//! `cargo run --release -p pg_ask_embed --example selection_recall [DEFOG_DIR]`.
//!
//! defog's eleven databases (`../shared/datasets/defog`, read at run time, never copied) are
//! loaded as eleven schemas of one catalog; each question of `questions_gen_postgres.csv` is
//! ranked against them without any LLM call. Reported for each method: schema recall@1 and
//! @5 (the gold schema first / among the first five) and table recall@10 (every table of one
//! acceptable gold query among the ten best tables over all schemas).
//!
//! Methods: lexical only (what `ask.select_tables` does with `ask.embedding_provider = off`),
//! pg_ask's fusion of MiniLM cosines with the lexical score (reciprocal rank fusion, the
//! default, and the normalised weighted sum), and the plain baseline of the issue: the cosine
//! between the question and `schema: table (columns); …`. Descriptions and questions are each
//! embedded once. The model directory is `PG_ASK_MODEL_DIR` or the path setup installs to.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use pg_ask_core::selection::recall::{evaluate, load_defog};
use pg_ask_core::selection::Fusion;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/defog")));
    let embedder = pg_ask_embed::Embedder::load(&pg_ask_embed::tool_model_dir())?;
    let (catalog, cases) = load_defog(&dir, true)?;
    println!("defog: {} schemas, {} tables, {} questions", catalog.schemas().len(), catalog.tables().len(), cases.len());

    let memo: RefCell<HashMap<String, Vec<f32>>> = RefCell::new(HashMap::new());
    let embed = |text: &str| -> Vec<f32> {
        if let Some(v) = memo.borrow().get(text) {
            return v.clone();
        }
        let v = embedder.embed_one(text).expect("embedding");
        memo.borrow_mut().insert(text.to_string(), v.clone());
        v
    };

    let lexical = evaluate(&catalog, &cases, None, Fusion::default())?;
    println!("lexical only:            {}", lexical.selection);
    let t = Instant::now();
    let rrf = evaluate(&catalog, &cases, Some(&embed), Fusion::default())?;
    println!("(embedded {} texts in {:.1} s)", memo.borrow().len(), t.elapsed().as_secs_f64());
    println!("MiniLM baseline:         {}", rrf.baseline.as_ref().expect("baseline"));
    println!("pg_ask fused (RRF):      {}", rrf.selection);
    for w in [0.3, 0.5, 0.7] {
        let ws = evaluate(&catalog, &cases, Some(&embed), Fusion::WeightedSum { embedding_weight: w })?;
        println!("pg_ask weighted sum {w:.1}: {}", ws.selection);
    }
    println!("misses of the fused default:");
    for m in &rrf.misses {
        println!(
            "  {:<9} {:?}\n    expected {:?}\n    got      {:?}",
            m.kind,
            m.question,
            m.expected,
            m.got.iter().take(5).collect::<Vec<_>>()
        );
    }
    Ok(())
}
