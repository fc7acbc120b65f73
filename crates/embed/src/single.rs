//! The BERT encoder over one text, computed here rather than through candle, with the weights
//! read in place from the memory-mapped safetensors file.
//!
//! A question or a literal is one short sequence (about ten word pieces). Its forward pass is
//! dominated by the linear layers, `x (tokens × in) · Wᵀ`, where each weight is used by only a
//! few rows: the work is streaming 42 MB of weights past a handful of rows. [`linear_cols`]
//! does exactly that: it reads each weight row once, in the file's own `(out, in)` layout, and
//! takes its dot products with every token row while the row is in cache. Each step of the
//! pass is cut into chunks that the calling thread and helpers from rayon's pool claim
//! ([`Pass`]). One sequence has no padding, so attention needs no mask.
//!
//! The weights stay in the file's pages (the page cache, shared by every backend that maps the
//! model), not in a private copy. The arithmetic is the model's (exact-erf GELU, LayerNorm with
//! the configured epsilon), in f32; the vectors agree with candle's batched path to float
//! rounding (tests check 1e-5).

use std::fs::File;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};
use safetensors::{Dtype, SafeTensors};

use crate::EmbedError;

mod buf;
mod kernels;
use buf::Buf;
use kernels::{attention, linear_cols};

/// Where a tensor's f32 data lies in the mapped file.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    len: usize,
}

/// The tensors of one encoder layer.
struct Layer {
    query: (Span, Span),
    key: (Span, Span),
    value: (Span, Span),
    attention_out: (Span, Span),
    attention_norm: (Span, Span),
    intermediate: (Span, Span),
    output: (Span, Span),
    output_norm: (Span, Span),
}

/// A BERT encoder for one sequence at a time.
pub(crate) struct SingleEncoder {
    map: memmap2::Mmap,
    word: Span,
    position: Span,
    token_type: Span,
    embedding_norm: (Span, Span),
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    intermediate: usize,
    eps: f32,
}

impl SingleEncoder {
    /// Maps `weights` and finds the tensors a BERT of `config` needs. Returns `Ok(None)` when
    /// this encoder does not apply (weights not f32 or not 4-byte aligned in the file, an
    /// activation other than exact GELU, a big-endian CPU); the caller then uses candle for
    /// every text.
    pub(crate) fn load(weights: &Path, config: &BertConfig) -> Result<Option<SingleEncoder>, EmbedError> {
        let io = |source| EmbedError::Io { path: weights.to_path_buf(), source };
        let file = File::open(weights).map_err(io)?;
        // SAFETY: read-only mapping of a model file that is installed once and not rewritten
        // in place (as for candle's own mapping of the same file).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        // The file's f32 are little-endian and read in place.
        if config.hidden_act != HiddenAct::Gelu
            || !config.hidden_size.is_multiple_of(config.num_attention_heads)
            || cfg!(target_endian = "big")
        {
            return Ok(None);
        }
        let bad = |reason: String| EmbedError::BadWeights { path: weights.to_path_buf(), source: candle_core::Error::Msg(reason) };
        let (header, metadata) = SafeTensors::read_metadata(&map).map_err(|e| bad(e.to_string()))?;
        let base = 8 + header;
        let tensors = metadata.tensors();
        // Names with or without the "bert." prefix some checkpoints carry.
        let prefix = if tensors.contains_key("embeddings.word_embeddings.weight") { "" } else { "bert." };
        let in_place = std::cell::Cell::new(true);
        let find = |name: &str, shape: &[usize]| -> Result<Span, EmbedError> {
            let full = format!("{prefix}{name}");
            let info = tensors.get(&full).ok_or_else(|| bad(format!("no tensor {full}")))?;
            if info.shape != shape {
                return Err(bad(format!("{full} has shape {:?}, expected {shape:?}", info.shape)));
            }
            // Read in place only when f32 and 4-byte aligned in the file (the mapping itself
            // is page-aligned): safetensors pads its header, but a file need not. The offsets
            // were checked against the dtype, the shape and the file's length by
            // `read_metadata`, and `f32s` slices the mapping with bounds checks.
            let from = base + info.data_offsets.0;
            in_place.set(in_place.get() && info.dtype == Dtype::F32 && from % 4 == 0);
            Ok(Span { start: from, len: shape.iter().product() })
        };
        let (h, i) = (config.hidden_size, config.intermediate_size);
        let dense = |name: &str, out: usize, inp: usize| -> Result<(Span, Span), EmbedError> {
            Ok((find(&format!("{name}.weight"), &[out, inp])?, find(&format!("{name}.bias"), &[out])?))
        };
        let norm = |name: &str| -> Result<(Span, Span), EmbedError> {
            Ok((find(&format!("{name}.LayerNorm.weight"), &[h])?, find(&format!("{name}.LayerNorm.bias"), &[h])?))
        };
        let word = find("embeddings.word_embeddings.weight", &[config.vocab_size, h])?;
        let position = find("embeddings.position_embeddings.weight", &[config.max_position_embeddings, h])?;
        let token_type = find("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, h])?;
        let embedding_norm = norm("embeddings")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            layers.push(Layer {
                query: dense(&format!("{p}.attention.self.query"), h, h)?,
                key: dense(&format!("{p}.attention.self.key"), h, h)?,
                value: dense(&format!("{p}.attention.self.value"), h, h)?,
                attention_out: dense(&format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: norm(&format!("{p}.attention.output"))?,
                intermediate: dense(&format!("{p}.intermediate.dense"), i, h)?,
                output: dense(&format!("{p}.output.dense"), h, i)?,
                output_norm: norm(&format!("{p}.output"))?,
            });
        }
        if !in_place.get() {
            return Ok(None);
        }
        Ok(Some(SingleEncoder {
            map,
            word,
            position,
            token_type,
            embedding_norm,
            layers,
            hidden: h,
            heads: config.num_attention_heads,
            intermediate: i,
            eps: config.layer_norm_eps as f32,
        }))
    }

    /// The f32 values of a tensor.
    fn f32s(&self, span: Span) -> &[f32] {
        let bytes = &self.map[span.start..span.start + 4 * span.len];
        // SAFETY: `bytes` lies inside the mapping and is 4-byte aligned (both checked at
        // load), the CPU is little-endian like the file (checked at load), f32 has no invalid
        // bit patterns, and the mapping is read-only and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<f32>(), span.len) }
    }

    /// The mean of the last hidden states of the sequence `ids` (not normalised), computed by
    /// the calling thread and helpers from rayon's pool, `threads` at most in all.
    pub(crate) fn mean_hidden(&self, ids: &[u32], threads: usize) -> Vec<f32> {
        let mut buffers = Buffers::new(self, ids.len());
        let pass = Pass::new(self, ids, &mut buffers);
        let helpers = rayon::current_num_threads().min(threads.max(1)) - 1;
        if helpers == 0 {
            pass.run();
        } else {
            rayon::in_place_scope(|scope| {
                for _ in 0..helpers {
                    scope.spawn(|_| pass.run());
                }
                pass.run();
            });
        }
        drop(pass);
        mean_of(&buffers.x, self.hidden)
    }

    /// A pass over `ids` that threads take part in later ([`Background::run`]), owning what it
    /// computes in. Safety: `owner` owns `self` (keeps it where it is) as long as it lives.
    pub(crate) unsafe fn background(&self, owner: Arc<dyn Send + Sync>, ids: Vec<u32>) -> Background {
        let mut buffers = Buffers::new(self, ids.len());
        let pass = Pass::new(self, &ids, &mut buffers);
        // SAFETY: the pass points into the heap memory of `ids` and of the buffers' vectors,
        // which moving them does not move, and into `self`, which `owner` keeps; the
        // Background holds all three and drops the pass first (fields drop in order).
        let pass = unsafe { std::mem::transmute::<Pass<'_>, Pass<'static>>(pass) };
        Background { pass, hidden: self.hidden, finished: OnceLock::new(), _buffers: buffers, _ids: ids, _owner: owner }
    }
}

/// The mean of the rows of `x` (`n × h`).
fn mean_of(x: &[f32], h: usize) -> Vec<f32> {
    let n = x.len() / h;
    let mut mean = vec![0f32; h];
    for row in x.chunks_exact(h) {
        mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
    }
    mean.iter_mut().for_each(|m| *m /= n as f32);
    mean
}

/// What one pass computes in.
struct Buffers {
    x: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    context: Vec<f32>,
    attended: Vec<f32>,
    inner: Vec<f32>,
    out: Vec<f32>,
}

impl Buffers {
    fn new(e: &SingleEncoder, n: usize) -> Buffers {
        let h = vec![0f32; n * e.hidden];
        Buffers {
            x: h.clone(),
            q: h.clone(),
            k: h.clone(),
            v: h.clone(),
            context: h.clone(),
            attended: h.clone(),
            inner: vec![0f32; n * e.intermediate],
            out: h,
        }
    }
}

/// A forward pass begun by one thread that others may join: whichever threads call
/// [`Background::run`] share its chunks, and the first to see it done takes the mean.
pub(crate) struct Background {
    /// Dropped first: it points into the fields below.
    pass: Pass<'static>,
    hidden: usize,
    /// When the first thread saw the pass done.
    finished: OnceLock<Instant>,
    _buffers: Buffers,
    _ids: Vec<u32>,
    _owner: Arc<dyn Send + Sync>,
}

impl Background {
    /// Takes part in the pass until it is done; then its mean (not normalised) and when the
    /// pass was done, or `None` when a chunk panicked (in this thread, the panic goes on).
    pub(crate) fn run(&self) -> Option<(Vec<f32>, Instant)> {
        self.pass.run();
        if self.pass.failed.load(Ordering::Relaxed) {
            return None;
        }
        let finished = *self.finished.get_or_init(Instant::now);
        // SAFETY: every chunk of every phase is done (run returned without a failure), so no
        // thread writes the hidden states any more, and the Acquire of the last wait orders
        // their writes before this read.
        Some((mean_of(unsafe { self.pass.x.all() }, self.hidden), finished))
    }
}

/// Threads computing one forward pass: the caller and at most this many less one of rayon's
/// threads.
pub(crate) const MAX_THREADS: usize = 4;

/// Output columns per piece of work in a linear layer (about 10–20 µs for ten tokens).
const COLUMNS_PER_CHUNK: usize = 32;

/// The steps of a forward pass, in order; each is cut in chunks that threads claim.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Word + position + token type embeddings, LayerNorm: a chunk per token.
    Embed,
    /// The query, key and value projections of layer `l`.
    Qkv(usize),
    /// Self-attention: a chunk per head.
    Attention,
    AttentionOut(usize),
    /// Residual and LayerNorm after attention: a chunk per token.
    AttentionNorm(usize),
    /// The feed-forward layer's first projection, with GELU.
    Intermediate(usize),
    Output(usize),
    /// Residual and LayerNorm after the feed-forward layer: a chunk per token.
    OutputNorm(usize),
}

/// One forward pass, computed by whichever threads run [`Pass::run`]: the caller alone, or
/// with helpers from rayon's pool. Each phase is cut into chunks that the threads claim from
/// a counter, and a phase starts once every chunk of the one before is done. No thread waits
/// for another thread to arrive, only for chunks already claimed: a helper that wakes late
/// (waking a thread whose core went idle takes about 0.1 ms on a virtual machine) joins in the
/// phase under way, or finds nothing left. Waiting threads spin briefly, then yield, then
/// sleep in short steps.
struct Pass<'a> {
    encoder: &'a SingleEncoder,
    ids: &'a [u32],
    /// The hidden states, `n × hidden`; the other buffers are phases' outputs.
    x: Buf<'a>,
    q: Buf<'a>,
    k: Buf<'a>,
    v: Buf<'a>,
    context: Buf<'a>,
    attended: Buf<'a>,
    inner: Buf<'a>,
    out: Buf<'a>,
    phases: Vec<Phase>,
    /// Per phase: chunks handed out (may run past the number of chunks), chunks finished.
    claimed: Vec<AtomicUsize>,
    done: Vec<AtomicUsize>,
    /// A chunk panicked: the pass is abandoned.
    failed: AtomicBool,
}

impl<'a> Pass<'a> {
    fn new(encoder: &'a SingleEncoder, ids: &'a [u32], b: &'a mut Buffers) -> Pass<'a> {
        let mut phases = vec![Phase::Embed];
        for l in 0..encoder.layers.len() {
            phases.extend([
                Phase::Qkv(l),
                Phase::Attention,
                Phase::AttentionOut(l),
                Phase::AttentionNorm(l),
                Phase::Intermediate(l),
                Phase::Output(l),
                Phase::OutputNorm(l),
            ]);
        }
        Pass {
            encoder,
            ids,
            x: Buf::new(&mut b.x),
            q: Buf::new(&mut b.q),
            k: Buf::new(&mut b.k),
            v: Buf::new(&mut b.v),
            context: Buf::new(&mut b.context),
            attended: Buf::new(&mut b.attended),
            inner: Buf::new(&mut b.inner),
            out: Buf::new(&mut b.out),
            claimed: phases.iter().map(|_| AtomicUsize::new(0)).collect(),
            done: phases.iter().map(|_| AtomicUsize::new(0)).collect(),
            failed: AtomicBool::new(false),
            phases,
        }
    }

    fn chunks(&self, phase: Phase) -> usize {
        let e = self.encoder;
        let columns = |n: usize| n.div_ceil(COLUMNS_PER_CHUNK);
        match phase {
            Phase::Embed | Phase::AttentionNorm(_) | Phase::OutputNorm(_) => self.ids.len(),
            Phase::Qkv(_) => 3 * columns(e.hidden),
            Phase::Attention => e.heads,
            Phase::AttentionOut(_) | Phase::Output(_) => columns(e.hidden),
            Phase::Intermediate(_) => columns(e.intermediate),
        }
    }

    /// Takes part in the pass until every chunk of every phase is done.
    fn run(&self) {
        for (p, &phase) in self.phases.iter().enumerate() {
            if p > 0 {
                self.wait_done(p - 1);
            }
            if self.failed.load(Ordering::Relaxed) {
                return;
            }
            let total = self.chunks(phase);
            loop {
                let c = self.claimed[p].fetch_add(1, Ordering::Relaxed);
                if c >= total {
                    break;
                }
                // A chunk that panics (a bug) still counts as done, so that no thread waits
                // for it forever; the panic then ends this thread's part and reaches the
                // caller (through rayon's scope for a helper), and the others stop.
                let result = std::panic::catch_unwind(AssertUnwindSafe(|| self.chunk(phase, c)));
                if result.is_err() {
                    self.failed.store(true, Ordering::Relaxed);
                }
                self.done[p].fetch_add(1, Ordering::Release);
                if let Err(panic) = result {
                    std::panic::resume_unwind(panic);
                }
            }
        }
        self.wait_done(self.phases.len() - 1);
    }

    /// Waits until every chunk of phase `p` is done; its outputs are then visible.
    fn wait_done(&self, p: usize) {
        let total = self.chunks(self.phases[p]);
        let mut spins = 0u32;
        while self.done[p].load(Ordering::Acquire) < total && !self.failed.load(Ordering::Relaxed) {
            spins = spins.saturating_add(1);
            if spins < SPINS_BEFORE_YIELD {
                std::hint::spin_loop();
            } else if spins < SPINS_BEFORE_YIELD + YIELDS_BEFORE_SLEEP {
                // The thread finishing the chunk is not running: let it.
                std::thread::yield_now();
            } else {
                // Still not (a busy machine): stop taking a core from it.
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
    }

    /// Chunk `c` of `phase`.
    fn chunk(&self, phase: Phase, c: usize) {
        let e = self.encoder;
        let h = e.hidden;
        let columns = |n: usize, c: usize| c * COLUMNS_PER_CHUNK..((c + 1) * COLUMNS_PER_CHUNK).min(n);
        let row = |i: usize| i * h..(i + 1) * h;
        // SAFETY (every `unsafe` block below): a chunk writes only its own part of its phase's
        // output (its columns, head or token row), which no other chunk touches; it reads
        // only buffers that no chunk of this phase writes, and that earlier phases finished
        // (`run` waits for them, and the Release/Acquire on `done` orders their writes before
        // these reads).
        match phase {
            Phase::Embed => {
                let id = self.ids[c] as usize;
                let (words, positions) = (e.f32s(e.word), e.f32s(e.position));
                let token_type = &e.f32s(e.token_type)[..h];
                // SAFETY: this chunk's own part of its phase's output; see the note above.
                let out = unsafe { self.x.part(row(c)) };
                let (word, position) = (&words[id * h..(id + 1) * h], &positions[row(c)]);
                for (j, v) in out.iter_mut().enumerate() {
                    *v = word[j] + position[j] + token_type[j];
                }
                e.layer_norm(out, e.embedding_norm);
            }
            Phase::Qkv(l) => {
                let layer = &e.layers[l];
                let (weights, out) = [(layer.query, &self.q), (layer.key, &self.k), (layer.value, &self.v)][c % 3];
                // SAFETY: this chunk's own part of its phase's output; see the note above.
                e.linear(unsafe { self.x.all() }, weights, columns(h, c / 3), false, out);
            }
            // SAFETY: this chunk's own part of its phase's output; see the note above.
            Phase::Attention => unsafe {
                attention(self.q.all(), self.k.all(), self.v.all(), self.ids.len(), h, e.heads, c, &self.context)
            },
            Phase::AttentionOut(l) => {
                // SAFETY: this chunk's own part of its phase's output; see the note above.
                e.linear(unsafe { self.context.all() }, e.layers[l].attention_out, columns(h, c), false, &self.attended)
            }
            Phase::AttentionNorm(l) => {
                // SAFETY: this chunk's own part of its phase's output; see the note above.
                let out = unsafe { self.attended.part(row(c)) };
                // SAFETY: this chunk's own part of its phase's output; see the note above.
                out.iter_mut().zip(unsafe { &self.x.all()[row(c)] }).for_each(|(a, x)| *a += x);
                e.layer_norm(out, e.layers[l].attention_norm);
            }
            Phase::Intermediate(l) => {
                let n = e.intermediate;
                // SAFETY: this chunk's own part of its phase's output; see the note above.
                e.linear(unsafe { self.attended.all() }, e.layers[l].intermediate, columns(n, c), true, &self.inner)
            }
            // SAFETY: this chunk's own part of its phase's output; see the note above.
            Phase::Output(l) => e.linear(unsafe { self.inner.all() }, e.layers[l].output, columns(h, c), false, &self.out),
            Phase::OutputNorm(l) => {
                // SAFETY: this chunk's own part of its phase's output; see the note above.
                let out = unsafe { self.x.part(row(c)) };
                // SAFETY: this chunk's own part of its phase's output; see the note above.
                let (ffn, attended) = unsafe { (&self.out.all()[row(c)], &self.attended.all()[row(c)]) };
                out.iter_mut().zip(ffn.iter().zip(attended)).for_each(|(x, (f, a))| *x = f + a);
                e.layer_norm(out, e.layers[l].output_norm);
            }
        }
    }
}

impl SingleEncoder {
    /// Columns `cols` of `x · Wᵀ + b` (GELU applied if `gelu`) into `out`, row-major.
    fn linear(&self, x: &[f32], (weight, bias): (Span, Span), cols: Range<usize>, gelu: bool, out: &Buf<'_>) {
        let (w, b) = (self.f32s(weight), self.f32s(bias));
        // SAFETY: the caller gives each chunk its own `cols`; `linear_cols` writes only
        // elements of those columns.
        unsafe { linear_cols(x, w, b, cols, gelu, out) }
    }

    /// LayerNorm of one row, in place.
    fn layer_norm(&self, row: &mut [f32], (gamma, beta): (Span, Span)) {
        let (gamma, beta) = (self.f32s(gamma), self.f32s(beta));
        let h = row.len() as f32;
        let mean = row.iter().sum::<f32>() / h;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h;
        let scale = 1.0 / (var + self.eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * scale * g + b;
        }
    }
}

/// About 50 µs of spinning before a waiting thread yields its core...
const SPINS_BEFORE_YIELD: u32 = 20_000;
/// ... and this many yields before it sleeps between checks.
const YIELDS_BEFORE_SLEEP: u32 = 200;

#[cfg(test)]
mod tests;
