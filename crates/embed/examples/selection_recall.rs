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
//!
//! `--scale N` then adds N generated tables (`synthetic_scale_catalog`: up to 50 schemas of
//! 200) beside the eleven databases and measures again, lexical and fused: what the distractors
//! of a large catalog cost recall at `ask.max_tables` (10).
//!
//! Each lexical run is also measured as `ask()` selects from the stored lexical index
//! (`ask.selection_index`): the best 30 tables by the index's postings and their join
//! neighbours, ranked with the whole index's statistics. `--lexical-only` skips the
//! embeddings (and the model).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use pg_ask_core::selection::recall::{evaluate, load_defog, stored_recall};
use pg_ask_core::selection::{Catalog, Fusion, TableProfile};

/// `catalog` with `n` generated tables beside it (up to 50 schemas of 200).
fn with_generated(catalog: &Catalog, n: usize) -> Catalog {
    let generated = pg_ask_core::selection::recall::synthetic_scale_catalog(50, n.div_ceil(50).min(200));
    let mut profiles: Vec<TableProfile> = catalog.tables().to_vec();
    profiles.extend(generated.into_iter().map(TableProfile::new));
    Catalog::new(profiles, &[])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scale: Option<usize> = args.iter().position(|a| a == "--scale").map(|i| args[i + 1].parse().expect("--scale N"));
    let dir = args
        .iter()
        .find(|a| !a.starts_with("--") && a.parse::<usize>().is_err())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/defog")));
    let lexical_only = args.iter().any(|a| a == "--lexical-only");
    let embedder = if lexical_only { None } else { Some(pg_ask_embed::Embedder::load(&pg_ask_embed::tool_model_dir())?) };
    let (catalog, cases) = load_defog(&dir, true)?;
    println!("defog: {} schemas, {} tables, {} questions", catalog.schemas().len(), catalog.tables().len(), cases.len());

    let memo: RefCell<HashMap<String, Vec<f32>>> = RefCell::new(HashMap::new());
    let embed = |text: &str| -> Vec<f32> {
        if let Some(v) = memo.borrow().get(text) {
            return v.clone();
        }
        let v = embedder.as_ref().expect("the model").embed_one(text).expect("embedding");
        memo.borrow_mut().insert(text.to_string(), v.clone());
        v
    };

    let lexical = evaluate(&catalog, &cases, None, Fusion::default())?;
    println!("lexical only:            {}", lexical.selection);
    let stored = |c: &Catalog| -> Result<(), Box<dyn std::error::Error>> {
        let (hits, n, described) = stored_recall(c, &cases)?;
        println!(
            "from the stored index:   table recall@10 as ask() selects {:.3} ({hits} of {n}), {described:.1} tables described per question",
            hits as f64 / n as f64
        );
        Ok(())
    };
    stored(&catalog)?;
    if lexical_only {
        if let Some(n) = scale {
            let big = with_generated(&catalog, n);
            println!("with {} generated tables beside them:", big.tables().len() - catalog.tables().len());
            println!("lexical only:            {}", evaluate(&big, &cases, None, Fusion::default())?.selection);
            stored(&big)?;
        }
        return Ok(());
    }
    let t = Instant::now();
    let rrf = evaluate(&catalog, &cases, Some(&embed), Fusion::default())?;
    println!("(embedded {} texts in {:.1} s)", memo.borrow().len(), t.elapsed().as_secs_f64());
    println!("MiniLM baseline:         {}", rrf.baseline.as_ref().expect("baseline"));
    println!("pg_ask fused (RRF):      {}", rrf.selection);
    for w in [0.3, 0.5, 0.7] {
        let ws = evaluate(&catalog, &cases, Some(&embed), Fusion::WeightedSum { embedding_weight: w })?;
        println!("pg_ask weighted sum {w:.1}: {}", ws.selection);
    }
    if let Some(n) = scale {
        let big = with_generated(&catalog, n);
        println!(
            "with {} generated tables beside them: {} tables in {} schemas",
            big.tables().len() - catalog.tables().len(),
            big.tables().len(),
            big.schemas().len()
        );
        let t = Instant::now();
        let big_lexical = evaluate(&big, &cases, None, Fusion::default())?;
        println!("lexical only:            {}   ({:.1} s)", big_lexical.selection, t.elapsed().as_secs_f64());
        stored(&big)?;
        let t = Instant::now();
        let big_rrf = evaluate(&big, &cases, Some(&embed), Fusion::default())?;
        println!(
            "pg_ask fused (RRF):      {}   ({:.1} s, {} texts embedded in all)",
            big_rrf.selection,
            t.elapsed().as_secs_f64(),
            memo.borrow().len()
        );
        println!(
            "table recall@10 drop: lexical {:.3}, fused {:.3}",
            lexical.selection.table_recall_at_10 - big_lexical.selection.table_recall_at_10,
            rrf.selection.table_recall_at_10 - big_rrf.selection.table_recall_at_10
        );
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
