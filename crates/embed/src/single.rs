//! The BERT encoder over one text, computed here rather than through candle, with the weights
//! read in place from the memory-mapped safetensors file.
//!
//! A question or a literal is one short sequence (about ten word pieces). Its forward pass is
//! dominated by the linear layers, `x (tokens × in) · Wᵀ`, where each weight is used by only a
//! few rows: the work is streaming 42 MB of weights past a handful of rows. [`linear`] does
//! exactly that: it reads each weight row once, in the file's own `(out, in)` layout, and
//! takes its dot products with every token row while the row is in cache; the output rows are
//! split between rayon's threads. One sequence has no padding, so attention needs no mask.
//!
//! The weights stay in the file's pages (the page cache, shared by every backend that maps the
//! model), not in a private copy. The arithmetic is the model's (exact-erf GELU, LayerNorm with
//! the configured epsilon), in f32; the vectors agree with candle's batched path to float
//! rounding (tests check 1e-5).

use std::fs::File;
use std::path::Path;

use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};
use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};

use crate::EmbedError;

/// Output rows of a linear layer computed per task: enough work to be worth a thread.
const ROWS_PER_TASK: usize = 96;

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
    /// The f32 weights, when the mapping is not 4-byte aligned for them (never for files
    /// written by safetensors, whose header is padded; kept for safety).
    copy: Option<Vec<f32>>,
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
    /// this encoder does not apply (weights not f32, an activation other than exact GELU,
    /// positions other than absolute); the caller then uses candle for every text.
    pub(crate) fn load(weights: &Path, config: &BertConfig) -> Result<Option<SingleEncoder>, EmbedError> {
        let io = |source| EmbedError::Io { path: weights.to_path_buf(), source };
        let file = File::open(weights).map_err(io)?;
        // SAFETY: read-only mapping of a model file that is installed once and not rewritten
        // in place (as for candle's own mapping of the same file).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        if config.hidden_act != HiddenAct::Gelu || config.hidden_size % config.num_attention_heads != 0 {
            return Ok(None);
        }
        let bad = |reason: String| EmbedError::BadWeights {
            path: weights.to_path_buf(),
            source: candle_core::Error::Msg(reason),
        };
        let (header, metadata) = SafeTensors::read_metadata(&map).map_err(|e| bad(e.to_string()))?;
        let base = 8 + header;
        let tensors = metadata.tensors();
        // Names with or without the "bert." prefix some checkpoints carry.
        let prefix = if tensors.contains_key("embeddings.word_embeddings.weight") { "" } else { "bert." };
        let all_f32 = std::cell::Cell::new(true);
        let find = |name: &str, shape: &[usize]| -> Result<Span, EmbedError> {
            let full = format!("{prefix}{name}");
            let info = tensors.get(&full).ok_or_else(|| bad(format!("no tensor {full}")))?;
            if info.shape != shape {
                return Err(bad(format!("{full} has shape {:?}, expected {shape:?}", info.shape)));
            }
            all_f32.set(all_f32.get() && info.dtype == Dtype::F32);
            let (from, to) = info.data_offsets;
            let bytes = info.dtype.bitsize() / 8 * shape.iter().product::<usize>();
            if base + to > map.len() || to - from != bytes {
                return Err(bad(format!("{full} lies outside the file")));
            }
            Ok(Span { start: base + from, len: (to - from) / 4 })
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
        if !all_f32.get() {
            return Ok(None);
        }
        let copy = if map.as_ptr().align_offset(4) == 0 {
            None
        } else {
            Some(map.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        };
        Ok(Some(SingleEncoder {
            map,
            copy,
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
        match &self.copy {
            Some(copy) => &copy[span.start / 4..span.start / 4 + span.len],
            None => {
                let bytes = &self.map[span.start..span.start + 4 * span.len];
                assert!(cfg!(target_endian = "little"), "safetensors data is little-endian");
                // SAFETY: `bytes` lies inside the mapping (checked at load), the mapping is
                // 4-byte aligned and so is `span.start` (a multiple of 4 past an 8-aligned
                // header), f32 has no invalid bit patterns, and the mapping is read-only and
                // lives as long as `self`.
                unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<f32>(), span.len) }
            }
        }
    }

    /// The mean of the last hidden states of the sequence `ids` (not normalised).
    pub(crate) fn mean_hidden(&self, ids: &[u32]) -> Vec<f32> {
        let (h, n) = (self.hidden, ids.len());
        let words = self.f32s(self.word);
        let positions = self.f32s(self.position);
        let token_type = &self.f32s(self.token_type)[..h];
        let mut x = vec![0f32; n * h];
        for (t, &id) in ids.iter().enumerate() {
            let row = &mut x[t * h..(t + 1) * h];
            let word = &words[id as usize * h..(id as usize + 1) * h];
            let position = &positions[t * h..(t + 1) * h];
            for (j, v) in row.iter_mut().enumerate() {
                *v = word[j] + position[j] + token_type[j];
            }
        }
        self.layer_norm(&mut x, self.embedding_norm);

        let mut q = vec![0f32; n * h];
        let mut k = vec![0f32; n * h];
        let mut v = vec![0f32; n * h];
        let mut context = vec![0f32; n * h];
        let mut attended = vec![0f32; n * h];
        let mut inner = vec![0f32; n * self.intermediate];
        let mut out = vec![0f32; n * h];
        for layer in &self.layers {
            self.linear(&x, layer.query, &mut q);
            self.linear(&x, layer.key, &mut k);
            self.linear(&x, layer.value, &mut v);
            attention(&q, &k, &v, n, h, self.heads, &mut context);
            self.linear(&context, layer.attention_out, &mut attended);
            add(&mut attended, &x);
            self.layer_norm(&mut attended, layer.attention_norm);
            self.linear(&attended, layer.intermediate, &mut inner);
            inner.iter_mut().for_each(|z| *z = gelu(*z));
            self.linear(&inner, layer.output, &mut out);
            add(&mut out, &attended);
            self.layer_norm(&mut out, layer.output_norm);
            std::mem::swap(&mut x, &mut out);
        }
        let mut mean = vec![0f32; h];
        for row in x.chunks_exact(h) {
            add(&mut mean, row);
        }
        mean.iter_mut().for_each(|m| *m /= n as f32);
        mean
    }

    fn linear(&self, x: &[f32], (weight, bias): (Span, Span), out: &mut [f32]) {
        linear(x, self.f32s(weight), self.f32s(bias), out);
    }

    fn layer_norm(&self, x: &mut [f32], (gamma, beta): (Span, Span)) {
        let (gamma, beta) = (self.f32s(gamma), self.f32s(beta));
        let h = gamma.len();
        for row in x.chunks_exact_mut(h) {
            let mean = row.iter().sum::<f32>() / h as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
            let scale = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                *v = (*v - mean) * scale * g + b;
            }
        }
    }
}

fn add(acc: &mut [f32], x: &[f32]) {
    acc.iter_mut().zip(x).for_each(|(a, b)| *a += b);
}

/// Multi-head self-attention of one unpadded sequence: `q`, `k`, `v` are `n × h` (heads side
/// by side), `context` gets `softmax(q kᵀ / √d) v` per head.
fn attention(q: &[f32], k: &[f32], v: &[f32], n: usize, h: usize, heads: usize, context: &mut [f32]) {
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let mut scores = vec![0f32; n];
    context.fill(0.0);
    for head in 0..heads {
        let cols = head * d..(head + 1) * d;
        for i in 0..n {
            let qi = &q[i * h..][cols.clone()];
            for (j, s) in scores.iter_mut().enumerate() {
                let kj = &k[j * h..][cols.clone()];
                *s = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * scale;
            }
            let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut total = 0.0;
            for s in &mut scores {
                *s = (*s - max).exp();
                total += *s;
            }
            let ci = &mut context[i * h..][cols.clone()];
            for (j, s) in scores.iter().enumerate() {
                let p = s / total;
                let vj = &v[j * h..][cols.clone()];
                ci.iter_mut().zip(vj).for_each(|(c, x)| *c += p * x);
            }
        }
    }
}

/// GELU with the exact erf, as the model was trained (`hidden_act: "gelu"`).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// erf for f32 as a rational function of x² on [-4, 4] (±1 outside), absolute error below
/// 1e-6 (tested against the C library's double erf): no exp, so it vectorises.
fn erf(x: f32) -> f32 {
    const ALPHA: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_600_1e-3,
        -1.609_603_3e-2,
    ];
    const BETA: [f32; 5] = [-1.456_607_2e-5, -2.133_740_6e-4, -1.682_827e-3, -7.373_329_3e-3, -1.426_474e-2];
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = ALPHA.iter().fold(0.0, |acc, a| acc * x2 + a) * x;
    let q = BETA.iter().fold(0.0, |acc, b| acc * x2 + b);
    p / q
}

/// `out (m × n) = x (m × k) · wᵀ + b`, `w` being `n × k` row-major (PyTorch's layout). Each
/// weight row is read once and dotted with every row of `x`; blocks of output columns are
/// computed on rayon's threads into a column-major scratch, then laid out row-major.
pub(crate) fn linear(x: &[f32], w: &[f32], b: &[f32], out: &mut [f32]) {
    let n = b.len();
    let k = w.len() / n;
    let m = x.len() / k;
    debug_assert_eq!((w.len(), x.len(), out.len()), (n * k, m * k, m * n));
    let mut columns = vec![0f32; n * m]; // column j of out at columns[j * m..]
    let kernel = select_kernel();
    columns
        .par_chunks_mut(ROWS_PER_TASK * m)
        .zip(w.par_chunks(ROWS_PER_TASK * k))
        .for_each(|(cols, rows)| kernel(x, rows, k, m, cols));
    for (j, col) in columns.chunks_exact(m).enumerate() {
        for (i, v) in col.iter().enumerate() {
            out[i * n + j] = v + b[j];
        }
    }
}

type Kernel = fn(&[f32], &[f32], usize, usize, &mut [f32]);

fn select_kernel() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return |x, w, k, m, cols| {
                // SAFETY: the CPU has AVX2 and FMA (checked just above).
                unsafe { dots_avx2_fma(x, w, k, m, cols) }
            };
        }
    }
    dots_portable
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dots_avx2_fma(x: &[f32], w: &[f32], k: usize, m: usize, cols: &mut [f32]) {
    dots::<true>(x, w, k, m, cols)
}

fn dots_portable(x: &[f32], w: &[f32], k: usize, m: usize, cols: &mut [f32]) {
    dots::<false>(x, w, k, m, cols)
}

/// Lanes per accumulator: one 256-bit register of f32.
const LANES: usize = 8;

/// `cols[r * m + i] = x[i] · w[r]` for the weight rows `w` (each `k` long). Two weight rows
/// against four token rows at a time, eight lanes each: eight independent accumulators that
/// the compiler keeps in vector registers. `FMA` uses fused multiply-add (only where the CPU
/// has it: elsewhere `mul_add` is a slow library call).
#[inline(always)]
fn dots<const FMA: bool>(x: &[f32], w: &[f32], k: usize, m: usize, cols: &mut [f32]) {
    #[inline(always)]
    fn madd<const FMA: bool>(acc: &mut [f32; LANES], a: &[f32], b: &[f32]) {
        for l in 0..LANES {
            acc[l] = if FMA { a[l].mul_add(b[l], acc[l]) } else { acc[l] + a[l] * b[l] };
        }
    }
    #[inline(always)]
    fn reduce(acc: &[f32; LANES]) -> f32 {
        ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
    }
    let rows = w.len() / k;
    let body = k - k % LANES;
    let dot_tail = |a: &[f32], b: &[f32]| a[body..k].iter().zip(&b[body..k]).map(|(p, q)| p * q).sum::<f32>();
    let mut r = 0;
    while r < rows {
        let pair = (rows - r).min(2);
        let w0 = &w[r * k..(r + 1) * k];
        let w1 = &w[(r + pair - 1) * k..(r + pair) * k];
        let mut i = 0;
        while i < m {
            let quad = (m - i).min(4);
            let xr: [&[f32]; 4] = std::array::from_fn(|q| &x[(i + q.min(quad - 1)) * k..(i + q.min(quad - 1) + 1) * k]);
            let mut acc = [[[0f32; LANES]; 4]; 2];
            let mut c = 0;
            while c < body {
                let (a0, a1) = (&w0[c..c + LANES], &w1[c..c + LANES]);
                for q in 0..4 {
                    let xq = &xr[q][c..c + LANES];
                    madd::<FMA>(&mut acc[0][q], xq, a0);
                    madd::<FMA>(&mut acc[1][q], xq, a1);
                }
                c += LANES;
            }
            for q in 0..quad {
                cols[r * m + i + q] = reduce(&acc[0][q]) + dot_tail(xr[q], w0);
                if pair == 2 {
                    cols[(r + 1) * m + i + q] = reduce(&acc[1][q]) + dot_tail(xr[q], w1);
                }
            }
            i += 4;
        }
        r += pair;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn erf(x: f64) -> f64;
    }

    #[test]
    fn erf_matches_the_c_library() {
        let mut worst = 0f64;
        for i in -60_000..=60_000 {
            let x = i as f32 / 10_000.0;
            // SAFETY: the C library's erf is a pure function of a double.
            let want = unsafe { erf(f64::from(x)) };
            worst = worst.max((f64::from(super::erf(x)) - want).abs());
        }
        assert!(worst < 1e-6, "worst absolute error {worst:e}");
    }

    #[test]
    fn linear_matches_a_plain_product_for_every_shape() {
        // rayon's pool as the embedder builds it (another test checks its threads' signals).
        crate::init_thread_pool();
        // Sizes around the tiles (4 token rows, 2 weight rows, 8 lanes) and the task split.
        for (m, k, n) in [(1, 8, 1), (3, 13, 5), (4, 16, 2), (5, 384, 97), (11, 385, 200), (9, 24, 193)] {
            let x: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 5 % 11) as f32 - 5.0) / 9.0).collect();
            let b: Vec<f32> = (0..n).map(|j| j as f32 / 10.0).collect();
            let mut out = vec![0f32; m * n];
            linear(&x, &w, &b, &mut out);
            for i in 0..m {
                for j in 0..n {
                    let want: f32 = (0..k).map(|c| x[i * k + c] * w[j * k + c]).sum::<f32>() + b[j];
                    let got = out[i * n + j];
                    assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0), "({m},{k},{n}) [{i},{j}]: {got} vs {want}");
                }
            }
            let mut portable = vec![0f32; n * m];
            dots_portable(&x, &w, k, m, &mut portable);
            for j in 0..n {
                for i in 0..m {
                    assert!((portable[j * m + i] + b[j] - out[i * n + j]).abs() < 1e-4);
                }
            }
        }
    }
}

#[cfg(test)]
mod speed {
    /// `cargo test --release -p pg_ask_embed --lib -- --ignored --nocapture linear_speed`
    #[test]
    #[ignore]
    fn linear_speed() {
        crate::init_thread_pool();
        for (m, k, n) in [(10, 384, 1536), (10, 1536, 384), (10, 384, 384)] {
            let x: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32).collect();
            let w: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32).collect();
            let b = vec![0f32; n];
            let mut out = vec![0f32; m * n];
            let reps = 2000;
            let t = std::time::Instant::now();
            for _ in 0..reps {
                super::linear(&x, &w, &b, &mut out);
            }
            let s = t.elapsed().as_secs_f64() / reps as f64;
            let mut cols = vec![0f32; n * m];
            let t = std::time::Instant::now();
            for _ in 0..reps {
                (super::select_kernel())(&x, &w, k, m, &mut cols);
            }
            let s1 = t.elapsed().as_secs_f64() / reps as f64;
            println!("{m}x{k}·{n}: linear {:.1} µs ({:.1} GFMA/s), kernel on one thread {:.1} µs ({:.1} GFMA/s)", s * 1e6, (m * k * n) as f64 / s / 1e9, s1 * 1e6, (m * k * n) as f64 / s1 / 1e9);
        }
    }
}
