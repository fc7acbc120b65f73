//! Helpers shared by the embedding tests.

use std::path::PathBuf;

/// The model directory for tests ([`pg_ask_embed::tool_model_dir`]).
/// Panics (the test fails, it is not skipped) when the model is not installed.
pub fn model_dir() -> PathBuf {
    let dir = pg_ask_embed::tool_model_dir();
    for f in ["model.safetensors", "config.json", "tokenizer.json"] {
        assert!(
            dir.join(f).is_file(),
            "the all-MiniLM-L6-v2 model is not installed: {} has no {f}; run scripts/setup.sh \
             (or point PG_ASK_MODEL_DIR at a directory with model.safetensors, config.json and tokenizer.json)",
            dir.display()
        );
    }
    dir
}

/// Loads the embedder from [`model_dir`], failing the test with the loader's message.
pub fn embedder() -> pg_ask_embed::Embedder {
    let dir = model_dir();
    pg_ask_embed::Embedder::load(&dir).unwrap_or_else(|e| panic!("cannot load the model from {}: {e}", dir.display()))
}
