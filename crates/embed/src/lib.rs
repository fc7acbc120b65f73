//! Local sentence embeddings: all-MiniLM-L6-v2 run in-process with candle's BERT.
//!
//! [`Embedder::load`] reads a model directory holding `model.safetensors`, `config.json` (the
//! BERT configuration) and `tokenizer.json`; [`Embedder::embed`] turns a batch of texts into
//! L2-normalised sentence vectors (384 dimensions for all-MiniLM-L6-v2) by mean pooling the last
//! hidden states over the real tokens of each text.
//!
//! # Running inside a PostgreSQL backend
//!
//! * Nothing here prints or logs.
//! * **One text at a time** (a question, a literal: calls with at most [`SINGLE_TEXTS`] texts)
//!   runs through the single-text encoder (`single.rs`), which reads the weights in place from
//!   the memory-mapped model file: those pages are the page cache's, shared by every backend
//!   that maps the model, not a private copy. Its linear layers read each weight row once
//!   (prefetching the next rows) and dot it with every token; the work of each step is cut
//!   into chunks that the calling thread and a helper from rayon's pool claim, so a helper that
//!   wakes late never holds the pass up. A question of about ten word pieces takes about 4 ms
//!   on two cores, 6–8 ms on one (`examples/question_latency.rs`).
//! * **Batches** (building the schema and value memories) run through candle's BERT in padded,
//!   masked batches. candle's model is loaded on the first such call and copies the weights
//!   into the backend's memory: about 90 MB more RSS for that backend. Its linear weights are
//!   stored transposed once (`(in, out)`, contiguous, seen by candle as the same `(out, in)`
//!   tensor), so that the matrix kernels read them row by row: 570 values/s instead of 457
//!   (`examples/throughput.rs`, 2,000 values).
//! * candle (and its matrix kernels, `gemm`) run their parallel parts on rayon's global thread
//!   pool. [`Embedder::load`] calls [`init_thread_pool`], which builds that pool (if nobody has
//!   yet) with threads that block every signal, so that PostgreSQL's signal handlers only ever
//!   run on the backend's own thread. The worker threads only do arithmetic on candle's buffers;
//!   they never call into PostgreSQL. The pool lives as long as the process.
//! * An [`Embedder`] is loaded once per backend by the caller and used from the backend's
//!   thread; [`Embedder::begin_one`] embeds a question on rayon's pool while that thread reads
//!   the catalog, and the thread waits for the vector when it needs it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

mod single;
use single::SingleEncoder;

/// File names expected in a model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The BERT configuration (Hugging Face `config.json` of the transformer, not of a pooling layer).
pub const CONFIG_FILE: &str = "config.json";
/// The Hugging Face `tokenizers` description.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// Longest input, in word pieces including `[CLS]` and `[SEP]`, that is embedded; longer texts
/// are cut at the end. 256 is all-MiniLM-L6-v2's `max_seq_length` (it was trained on at most 128,
/// its position table holds 512); the limit is lowered further if a model has fewer positions.
pub const MAX_TOKENS: usize = 256;

/// Texts run through the transformer together. Within a call, texts are sorted by length
/// before they are cut into batches, so little work goes into padding.
pub const BATCH_SIZE: usize = 32;

/// Where `scripts/setup.sh` installs all-MiniLM-L6-v2 (PostgreSQL 15's share directory).
pub const INSTALLED_MODEL_DIR: &str = "/usr/share/postgresql/15/extension/pg_ask/models/all-MiniLM-L6-v2";

/// The model directory for tools, examples and tests run outside PostgreSQL:
/// `PG_ASK_MODEL_DIR`, else [`INSTALLED_MODEL_DIR`]. (A backend finds the model through its
/// own share directory and `ask.model_path`.)
pub fn tool_model_dir() -> PathBuf {
    std::env::var_os("PG_ASK_MODEL_DIR").map_or_else(|| PathBuf::from(INSTALLED_MODEL_DIR), PathBuf::from)
}

/// Calls with at most this many texts run each text alone through the single-text encoder
/// (see `single.rs`); larger calls run in padded batches through candle.
pub const SINGLE_TEXTS: usize = 4;

/// Errors of loading or running the embedding model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A file the model directory must hold is not there.
    #[error("the embedding model directory {dir} has no {file} (install the model with scripts/setup.sh)")]
    MissingFile {
        /// The model directory.
        dir: PathBuf,
        /// The missing file's name.
        file: &'static str,
    },
    /// A file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// `config.json` is not a BERT configuration.
    #[error("{path} is not a BERT model configuration: {reason}")]
    BadConfig {
        /// The file.
        path: PathBuf,
        /// Why it was rejected.
        reason: String,
    },
    /// The weights do not load into a BERT of that configuration.
    #[error("cannot load the weights {path}: {source}")]
    BadWeights {
        /// The safetensors file.
        path: PathBuf,
        /// candle's error.
        source: candle_core::Error,
    },
    /// The tokenizer cannot be loaded or fails on an input.
    #[error("tokenizer error: {0}")]
    Tokenizer(String),
    /// The forward pass failed (out of memory, shape mismatch).
    #[error("embedding inference failed: {0}")]
    Inference(#[from] candle_core::Error),
    /// An embedding begun in the background ended without a vector (it panicked).
    #[error("the embedding begun in the background stopped: {0}")]
    Background(String),
}

/// An embedding begun by [`Embedder::begin_one`].
pub struct Pending {
    receive: std::sync::mpsc::Receiver<Result<(Vec<f32>, std::time::Duration), EmbedError>>,
    /// The pass the waiter may take part in (none when candle computes the vector).
    shared: Option<Arc<single::Background>>,
    started: std::time::Instant,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("started", &self.started).finish_non_exhaustive()
    }
}

impl Pending {
    /// Takes part in what is left of the pass (a few milliseconds at most, without a point to
    /// stop at): its vector, or `None` when there is no pass to take part in (candle computes
    /// the vector) or another thread's part of it failed (its error comes through the channel).
    fn take_part(&mut self) -> Option<Result<(Vec<f32>, std::time::Duration), EmbedError>> {
        let pass = self.shared.take()?;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pass.run())) {
            Ok(Some((mean, done))) => Some(Ok((normalise(mean), done - self.started))),
            Ok(None) => None,
            Err(panic) => Some(Err(EmbedError::Background(panic_text(&panic)))),
        }
    }

    /// Takes part in what is left of the pass, then waits for the vector at most `step` and
    /// returns it, or gives the pending embedding back when it is not done yet (so that the
    /// caller can check for a cancel between steps).
    pub fn wait_for(mut self, step: std::time::Duration) -> Result<Result<(Vec<f32>, std::time::Duration), EmbedError>, Pending> {
        if let Some(result) = self.take_part() {
            return Ok(result);
        }
        match self.receive.recv_timeout(step) {
            Ok(result) => Ok(result),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(self),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Ok(Err(ended())),
        }
    }

    /// Waits for the vector (and the time computing it took), taking part in the pass.
    pub fn wait(mut self) -> Result<(Vec<f32>, std::time::Duration), EmbedError> {
        match self.take_part() {
            Some(result) => result,
            None => self.receive.recv().unwrap_or_else(|_| Err(ended())),
        }
    }
}

/// The error of a pending embedding whose thread is gone without sending anything.
fn ended() -> EmbedError {
    EmbedError::Background("its thread ended without an answer".into())
}

/// A panic's message, when it has one.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// Blocks every signal in the calling thread.
///
/// Used as the start handler of the worker threads that compute embeddings, so that signals
/// sent to a PostgreSQL backend (SIGINT for cancel, SIGTERM, SIGUSR1 latches, SIGALRM timeouts)
/// are always delivered to the backend's main thread. Call it first thing in any other thread
/// started inside a backend.
pub fn block_signals_in_current_thread() {
    // SAFETY: `set` is a plain, fully initialised signal set on our stack; pthread_sigmask only
    // changes the calling thread's mask. Failure (impossible with SIG_BLOCK and a valid set) would
    // leave the mask as it was, which is no worse than not calling this.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// How rayon's global pool came to be, as seen by [`init_thread_pool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadPoolState {
    /// Built here: its threads block all signals.
    BuiltWithSignalsBlocked,
    /// Someone built the global pool before us; its threads' signal mask is theirs.
    BuiltElsewhere,
}

/// Builds rayon's global thread pool, used by candle's CPU kernels, with worker threads that
/// block all signals (see [`block_signals_in_current_thread`]). Idempotent; the first call
/// decides. The number of threads follows `RAYON_NUM_THREADS`, else the number of CPUs.
pub fn init_thread_pool() -> ThreadPoolState {
    static STATE: OnceLock<ThreadPoolState> = OnceLock::new();
    *STATE.get_or_init(|| {
        match rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("pg_ask-embed-{i}"))
            .start_handler(|_| block_signals_in_current_thread())
            .build_global()
        {
            Ok(()) => ThreadPoolState::BuiltWithSignalsBlocked,
            Err(_) => ThreadPoolState::BuiltElsewhere,
        }
    })
}

/// A loaded sentence-embedding model (BERT encoder + WordPiece tokenizer), CPU only.
pub struct Embedder {
    /// candle's BERT for padded batches, loaded on the first call that needs it (or at once
    /// when the single-text encoder does not apply).
    model: OnceLock<BertModel>,
    weights: PathBuf,
    config: BertConfig,
    /// The same model for one text at a time, when it applies (f32 weights, exact GELU).
    single: Option<SingleEncoder>,
    tokenizer: Arc<Tokenizer>,
    dim: usize,
    max_tokens: usize,
    device: Device,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("dim", &self.dim).field("max_tokens", &self.max_tokens).finish_non_exhaustive()
    }
}

/// A model directory's tokenizer, read and set up for [`Embedder`] (most of what loading a model
/// costs: about 14 ms of JSON for all-MiniLM-L6-v2's). It can be read once, before a process
/// forks, and handed to the [`Embedder`] each child loads ([`Embedder::load_with`]): reading it
/// starts no thread.
#[derive(Clone)]
pub struct PreparedTokenizer {
    dir: PathBuf,
    tokenizer: Arc<Tokenizer>,
}

impl std::fmt::Debug for PreparedTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedTokenizer").field("dir", &self.dir).finish_non_exhaustive()
    }
}

impl PreparedTokenizer {
    /// Reads `dir`'s `tokenizer.json` (and `config.json`, for the longest input). The
    /// tokenizer's own padding and truncation settings are replaced: texts are not padded by
    /// the tokenizer (batches are padded here and masked) and are cut at [`MAX_TOKENS`].
    pub fn load(dir: &Path) -> Result<PreparedTokenizer, EmbedError> {
        PreparedTokenizer::read(dir, &read_config(&model_file(dir, CONFIG_FILE)?)?)
    }

    /// [`PreparedTokenizer::load`], the model's configuration already read.
    fn read(dir: &Path, config: &BertConfig) -> Result<PreparedTokenizer, EmbedError> {
        let tokenizer_path = model_file(dir, TOKENIZER_FILE)?;
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| EmbedError::Tokenizer(format!("{}: {e}", tokenizer_path.display())))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: MAX_TOKENS.min(config.max_position_embeddings),
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        Ok(PreparedTokenizer { dir: dir.to_path_buf(), tokenizer: Arc::new(tokenizer) })
    }

    /// The model directory it was read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// `dir`'s file `name`, which must exist.
fn model_file(dir: &Path, name: &'static str) -> Result<PathBuf, EmbedError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::MissingFile { dir: dir.to_path_buf(), file: name })
    }
}

impl Embedder {
    /// Loads the model from `dir` (`model.safetensors`, `config.json`, `tokenizer.json`); see
    /// [`PreparedTokenizer::load`] for the tokenizer's settings.
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        Embedder::load_with(dir, None)
    }

    /// [`Embedder::load`], with the tokenizer read before when `prepared` was read from `dir`
    /// (otherwise it is read now).
    pub fn load_with(dir: &Path, prepared: Option<&PreparedTokenizer>) -> Result<Embedder, EmbedError> {
        let weights = model_file(dir, WEIGHTS_FILE)?;
        let config = read_config(&model_file(dir, CONFIG_FILE)?)?;
        let max_tokens = MAX_TOKENS.min(config.max_position_embeddings);
        let tokenizer = match prepared.filter(|p| p.dir == dir) {
            Some(p) => p.tokenizer.clone(),
            None => PreparedTokenizer::read(dir, &config)?.tokenizer,
        };

        init_thread_pool();
        let single = SingleEncoder::load(&weights, &config)?;
        let embedder = Embedder {
            model: OnceLock::new(),
            dim: config.hidden_size,
            weights,
            config,
            single,
            tokenizer,
            max_tokens,
            device: Device::Cpu,
        };
        if embedder.single.is_none() {
            embedder.batch_model()?;
        }
        Ok(embedder)
    }

    /// candle's model, loaded now if it is not yet. The weights are copied out of the mapped
    /// file into the process's memory (about 90 MB for all-MiniLM-L6-v2).
    fn batch_model(&self) -> Result<&BertModel, EmbedError> {
        if let Some(model) = self.model.get() {
            return Ok(model);
        }
        let bad = |source| EmbedError::BadWeights { path: self.weights.clone(), source };
        // SAFETY: the safetensors file is memory-mapped read-only. The mapping is undefined
        // behaviour only if the file is modified while mapped; model files are installed once by
        // setup and not rewritten in place.
        let file = unsafe { MmapedSafetensors::new(&self.weights) }.map_err(bad)?;
        let vb = VarBuilder::from_backend(Box::new(RowMajorLinears(file)), DType::F32, self.device.clone());
        let model = BertModel::load(vb, &self.config).map_err(bad)?;
        Ok(self.model.get_or_init(|| model))
    }

    /// Number of dimensions of the vectors (384 for all-MiniLM-L6-v2).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Longest input in word pieces (including `[CLS]`/`[SEP]`); longer texts are truncated.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Number of word pieces `text` becomes (including `[CLS]`/`[SEP]`), after truncation.
    pub fn token_count(&self, text: &str) -> Result<usize, EmbedError> {
        Ok(self.encode(text)?.len())
    }

    /// Embeds one text; see [`Embedder::embed`].
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.embed(&[text])?.pop().expect("one vector per text"))
    }

    /// Begins embedding one text on a thread of rayon's pool and returns at once: the calling
    /// thread does other work (a backend reads its catalog) and then [`Pending::wait`]s for the
    /// vector, which is [`Embedder::embed_one`]'s, with the time computing it took. The pass
    /// starts on that one thread, no helper, so that the caller keeps a core for its own work;
    /// a caller that waits before the pass is done takes part in what is left of it instead of
    /// sleeping. Nothing is handed to a pool this crate did not build (its threads may take the
    /// caller's signals): the waiter then computes the whole pass. The pool's threads never
    /// call into the caller's process state; a panic in them becomes an error of the wait.
    pub fn begin_one(self: &Arc<Self>, text: &str) -> Pending {
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        let started = std::time::Instant::now();
        let ours = init_thread_pool() == ThreadPoolState::BuiltWithSignalsBlocked;
        let shared = match (&self.single, self.encode(text)) {
            (Some(single), Ok(ids)) => {
                let owner: Arc<dyn Send + Sync> = self.clone();
                // SAFETY: `owner` is this embedder, which owns `single`.
                Some(Arc::new(unsafe { single.background(owner, ids) }))
            }
            (_, Err(e)) => {
                let _ = send.send(Err(e));
                return Pending { receive, shared: None, started };
            }
            (None, Ok(_)) if !ours => {
                let _ = send.send(self.embed_one(text).map(|v| (v, started.elapsed())));
                return Pending { receive, shared: None, started };
            }
            (None, Ok(_)) => None,
        };
        if ours {
            let (embedder, text, pass) = (self.clone(), text.to_owned(), shared.clone());
            rayon::spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &pass {
                    Some(pass) => pass
                        .run()
                        .map(|(mean, done)| (normalise(mean), done - started))
                        .ok_or_else(|| EmbedError::Background("a part of the pass failed".into())),
                    None => embedder.embed_one(&text).map(|v| (v, started.elapsed())),
                }))
                .unwrap_or_else(|panic| Err(EmbedError::Background(panic_text(&panic))));
                // The waiter may be gone (its query cancelled) or done: the vector is then dropped.
                let _ = send.send(result);
            });
        }
        Pending { receive, shared, started }
    }

    /// Embeds `texts`, returning one L2-normalised vector of [`Embedder::dim`] floats per text,
    /// in the order given.
    ///
    /// Texts are run in batches of [`BATCH_SIZE`] grouped by length; each batch is padded to
    /// its longest text and the padding is masked out of attention and pooling, so a text's
    /// vector does not depend on what it is batched with (up to float rounding, ~1e-6).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encoded: Vec<Vec<u32>> = texts.iter().map(|t| self.encode(t)).collect::<Result<_, _>>()?;
        if let Some(single) = self.single.as_ref().filter(|_| texts.len() <= SINGLE_TEXTS) {
            return Ok(encoded.iter().map(|ids| normalise(single.mean_hidden(ids, single::MAX_THREADS))).collect());
        }
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encoded[i].len());

        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| encoded[i].as_slice()).collect();
            let vectors = self.embed_batch(&batch)?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn encode(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let enc = self.tokenizer.encode(text, true).map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// One forward pass over token id sequences, padded to the longest and masked.
    fn embed_batch(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let n = batch.len();
        let len = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut ids = vec![0u32; n * len];
        let mut mask = vec![0u32; n * len];
        for (row, seq) in batch.iter().enumerate() {
            ids[row * len..row * len + seq.len()].copy_from_slice(seq);
            mask[row * len..row * len + seq.len()].iter_mut().for_each(|m| *m = 1);
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.batch_model()?.forward(&ids, &token_types, Some(&mask))?; // (n, len, dim)

        // Mean over real tokens: sum(hidden * mask) / sum(mask), then L2 normalisation.
        let mask_f = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
        let summed = hidden.broadcast_mul(&mask_f)?.sum(1)?; // (n, dim)
        let counts = mask_f.sum(1)?; // (n, 1)
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
        let unit = mean.broadcast_div(&norm)?;
        Ok(unit.to_vec2::<f32>()?)
    }
}

/// `v / |v|`.
fn normalise(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// The model's tensors, with every linear layer's weight (a rank-2 `*.weight` that is not an
/// embedding table) stored transposed: the `(out, in)` tensor the model asks for is a
/// transposed view of a contiguous `(in, out)` copy, so `Linear`'s `x · Wᵀ` reads the weight
/// row-major (see the crate documentation). Values are unchanged.
struct RowMajorLinears(MmapedSafetensors);

impl RowMajorLinears {
    fn is_linear_weight(name: &str, t: &Tensor) -> bool {
        t.rank() == 2 && name.ends_with(".weight") && !name.contains("embeddings")
    }
}

impl SimpleBackend for RowMajorLinears {
    fn get(&self, s: Shape, name: &str, h: candle_nn::Init, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let t = SimpleBackend::get(&self.0, s, name, h, dtype, dev)?;
        if Self::is_linear_weight(name, &t) {
            t.t()?.contiguous()?.t()
        } else {
            Ok(t)
        }
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        SimpleBackend::get_unchecked(&self.0, name, dtype, dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        SimpleBackend::contains_tensor(&self.0, name)
    }
}

/// Reads a BERT `config.json`, explaining the common mistake of a sentence-transformers pooling
/// configuration (`1_Pooling/config.json`) installed in its place.
fn read_config(path: &Path) -> Result<BertConfig, EmbedError> {
    let text = std::fs::read_to_string(path).map_err(|source| EmbedError::Io { path: path.to_path_buf(), source })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| EmbedError::BadConfig { path: path.to_path_buf(), reason: e.to_string() })?;
    if value.get("word_embedding_dimension").is_some() && value.get("hidden_size").is_none() {
        return Err(EmbedError::BadConfig {
            path: path.to_path_buf(),
            reason: "it is a sentence-transformers pooling configuration (1_Pooling/config.json); \
                     the model's own config.json (with hidden_size, num_attention_heads, ...) \
                     must be installed instead (scripts/setup.sh)"
                .to_owned(),
        });
    }
    serde_json::from_value(value).map_err(|e| EmbedError::BadConfig { path: path.to_path_buf(), reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directory_names_the_file_and_setup() {
        let err = Embedder::load(Path::new("/nonexistent/model")).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, EmbedError::MissingFile { file: WEIGHTS_FILE, .. }), "{msg}");
        assert!(msg.contains("model.safetensors") && msg.contains("setup.sh"), "{msg}");
    }

    #[test]
    fn pooling_config_is_rejected_with_an_explanation() {
        let dir = std::env::temp_dir().join(format!("pg_ask_embed_cfg_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(CONFIG_FILE);
        std::fs::write(&path, r#"{"word_embedding_dimension": 384, "pooling_mode_mean_tokens": true}"#).unwrap();
        let err = read_config(&path).unwrap_err();
        assert!(err.to_string().contains("pooling configuration"), "{err}");
        std::fs::write(&path, r#"{"hidden_size": 384}"#).unwrap();
        let err = read_config(&path).unwrap_err();
        assert!(matches!(err, EmbedError::BadConfig { .. }), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn worker_threads_block_signals() {
        // Nothing else in this test binary builds rayon's global pool first.
        assert_eq!(init_thread_pool(), ThreadPoolState::BuiltWithSignalsBlocked);
        let blocked = rayon::broadcast(|_| {
            // SAFETY: querying the calling thread's mask into a zeroed set.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set);
                libc::sigismember(&set, libc::SIGINT) == 1 && libc::sigismember(&set, libc::SIGTERM) == 1
            }
        });
        assert!(blocked.iter().all(|&b| b), "{blocked:?}");
    }
}
