//! Embeddings from a backend: the local model (loaded once per backend, lazily) or an
//! embedding service over HTTP, by `ask.embedding_provider`. When pg_ask is preloaded, the
//! server reads the local model's tokenizer once, before it forks any backend
//! ([`preload_tokenizer`]): a new backend's first question then does not parse it (about 14 ms).

use std::sync::Arc;

use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use pg_ask_core::llm::embed::{self, EmbedConfig, EmbedProtocol};
use pg_ask_embed::{Embedder, PreparedTokenizer};

use crate::llm::with_runner_interruptible;
use crate::pg::errors::{self, Raised};
use crate::pg::gucs::{self, model_dir, EmbeddingProvider};

/// Texts embedded per model call (and per HTTP request); interrupts are checked between.
const CHUNK: usize = 64;

/// The embedding of one text (a question, a literal, a phrase) under the current settings. One
/// `ask()` embeds its question at most once, through its `Question`.
pub fn embed_one(text: &str) -> Vec<f32> {
    embed_texts(&[text]).pop().unwrap_or_default()
}

/// A text's embedding, begun before it is needed: with the local model, on its threads while
/// the backend goes on (reading the catalog); with a server's embeddings, made when waited for.
pub(crate) enum Begun {
    Local(pg_ask_embed::Pending),
    Later(String),
}

/// Begin embedding `text` under the current settings ([`Begun::wait`] gives the vector
/// [`embed_one`] would).
pub(crate) fn begin_one(text: &str) -> Begun {
    match gucs::embedding_provider() {
        EmbeddingProvider::Local => Begun::Local(local_model().begin_one(text)),
        _ => Begun::Later(text.to_owned()),
    }
}

impl Begun {
    /// The vector and the time making it took (milliseconds); a cancel is honoured while
    /// waiting for it.
    pub(crate) fn wait(self) -> (Vec<f32>, f64) {
        let mut pending = match self {
            Begun::Later(text) => {
                let started = std::time::Instant::now();
                let v = embed_one(&text);
                return (v, started.elapsed().as_secs_f64() * 1000.0);
            }
            Begun::Local(p) => p,
        };
        loop {
            match pending.wait_for(std::time::Duration::from_millis(1)) {
                Ok(Ok((v, took))) => return (v, took.as_secs_f64() * 1000.0),
                Ok(Err(e)) => Raised::new(PgSqlErrorCode::ERRCODE_DATA_EXCEPTION, format!("local embedding failed: {e}")).raise(),
                Err(p) => pending = p,
            }
            pgrx::check_for_interrupts!();
        }
    }
}

/// The local model's tokenizer as the server read it at start, for the model directory its
/// settings named then.
static PRELOADED_TOKENIZER: std::sync::OnceLock<PreparedTokenizer> = std::sync::OnceLock::new();

/// Read the local model's tokenizer in the postmaster (from `_PG_init` while
/// `shared_preload_libraries` loads), so that every backend forked from it has it. Reading it
/// starts no thread. Nothing is read when the model is not installed there: a backend that
/// needs it then reads it itself, or raises the error that says how to install it.
pub(crate) fn preload_tokenizer() {
    if let Ok(t) = PreparedTokenizer::load(&model_dir()) {
        let _ = PRELOADED_TOKENIZER.set(t);
    }
}

/// The model directory whose tokenizer the server read at start, if it read one (for the tests).
#[cfg(any(test, feature = "pg_test"))]
pub(crate) fn preloaded_tokenizer_dir() -> Option<std::path::PathBuf> {
    PRELOADED_TOKENIZER.get().map(|t| t.dir().to_path_buf())
}

fn local_model() -> Arc<Embedder> {
    let dir = model_dir();
    crate::pg::backend::with(|b| {
        let mut slot = b.local_embedder.borrow_mut();
        if let Some((loaded_from, model)) = slot.as_ref() {
            if *loaded_from == dir {
                return model.clone();
            }
        }
        match Embedder::load_with(&dir, PRELOADED_TOKENIZER.get()) {
            Ok(m) => {
                let m = Arc::new(m);
                *slot = Some((dir, m.clone()));
                m
            }
            Err(e) => Raised::new(PgSqlErrorCode::ERRCODE_UNDEFINED_FILE, format!("could not load the local embedding model: {e}"))
                .hint("Run scripts/setup.sh to install the model, or point ask.model_path at a directory with model.safetensors, config.json and tokenizer.json.")
                .raise(),
        }
    })
}

fn p_name(p: EmbeddingProvider) -> &'static str {
    if p == EmbeddingProvider::OpenAi {
        "openai"
    } else {
        "ollama"
    }
}

/// Embed `texts` with the configured provider. Errors are raised as PostgreSQL errors.
pub fn embed_texts(texts: &[&str]) -> Vec<Vec<f32>> {
    let mut out = Vec::with_capacity(texts.len());
    match gucs::embedding_provider() {
        EmbeddingProvider::Off => {
            Raised::new(PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED, "embeddings are switched off (ask.embedding_provider = off)")
                .hint("SET ask.embedding_provider = 'local' (or openai, ollama).")
                .raise()
        }
        EmbeddingProvider::Local => {
            let model = local_model();
            for chunk in texts.chunks(CHUNK) {
                pgrx::check_for_interrupts!();
                match model.embed(chunk) {
                    Ok(v) => out.extend(v),
                    Err(e) => Raised::new(PgSqlErrorCode::ERRCODE_DATA_EXCEPTION, format!("local embedding failed: {e}")).raise(),
                }
            }
        }
        p @ (EmbeddingProvider::OpenAi | EmbeddingProvider::Ollama) => {
            let base_url = gucs::embedding_base_url();
            let cfg = EmbedConfig {
                protocol: if p == EmbeddingProvider::OpenAi { EmbedProtocol::OpenAi } else { EmbedProtocol::Ollama },
                api_key: gucs::api_key_for(&base_url),
                base_url,
                model: gucs::embedding_model(),
                request_timeout: gucs::request_timeout(),
                max_response_bytes: gucs::max_response_bytes(),
            };
            for chunk in texts.chunks(CHUNK) {
                // A server's embeddings cost tokens: within the role's budget, and in the ledger.
                let tokens: u64 = chunk.iter().map(|t| (t.len() as u64).div_ceil(4).max(1)).sum();
                // Reserved and spent: the estimate is what the ledger counts for it too.
                let _spent = crate::llm::reuse::require_budget(tokens, "embedding request", "this request");
                let started = std::time::Instant::now();
                let result = with_runner_interruptible(|r| r.block_on(embed::embed(r.http(), &cfg, chunk), &crate::llm::cancel_pending));
                crate::llm::ledger::record_embedding(p_name(p), &cfg.model, tokens, &result, started.elapsed());
                match result {
                    Ok(v) => out.extend(v),
                    Err(e) => errors::from_llm(&e, "embed").raise(),
                }
            }
        }
    }
    out
}

/// The embedding of a text under the current settings, as `real[]` (`ask.embed()` casts it
/// to `vector`).
#[pg_extern(name = "embed_real", volatile, parallel_unsafe)]
pub(crate) fn embed_real(text: &str) -> Vec<f32> {
    embed_one(text)
}
