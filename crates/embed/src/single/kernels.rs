//! The arithmetic of a pass: self-attention of one sequence, the linear layers (weight rows
//! dotted with token rows while in cache, with fused multiply-add where the CPU has it), GELU
//! with a vectorisable erf.

use std::ops::Range;

use super::buf::Buf;

/// Self-attention of one unpadded sequence for head `head`: `q`, `k`, `v` are `n × h` (heads
/// side by side); `context` gets `softmax(q kᵀ / √d) v` in the head's columns. Safety: no
/// other thread touches those columns of `context` meanwhile.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn attention(q: &[f32], k: &[f32], v: &[f32], n: usize, h: usize, heads: usize, head: usize, context: &Buf<'_>) {
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let mut scores = vec![0f32; n];
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
        let ci = context.part(i * h + cols.start..i * h + cols.end);
        ci.fill(0.0);
        for (j, s) in scores.iter().enumerate() {
            let p = s / total;
            let vj = &v[j * h..][cols.clone()];
            ci.iter_mut().zip(vj).for_each(|(c, x)| *c += p * x);
        }
    }
}

/// GELU with the exact erf, as the model was trained (`hidden_act: "gelu"`).
#[inline(always)]
pub(super) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// erf for f32 as a rational function of x² on [-4, 4] (±1 outside), absolute error below
/// 1e-6 (tested against the C library's double erf): no exp, so it vectorises.
#[inline(always)]
pub(super) fn erf(x: f32) -> f32 {
    const ALPHA: [f32; 7] =
        [-2.726_142_3e-10, 2.770_681_4e-8, -2.101_024e-6, -5.692_506_4e-5, -7.349_906_3e-4, -2.954_600_1e-3, -1.609_603_3e-2];
    const BETA: [f32; 5] = [-1.456_607_2e-5, -2.133_740_6e-4, -1.682_827e-3, -7.373_329_3e-3, -1.426_474e-2];
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = ALPHA.iter().fold(0.0, |acc, a| acc * x2 + a) * x;
    let q = BETA.iter().fold(0.0, |acc, b| acc * x2 + b);
    p / q
}

/// Columns `cols` of `out (m × n) = x (m × k) · wᵀ + b` (then GELU if `gelu`), `w` being
/// `n × k` row-major (PyTorch's layout): each weight row is read once and dotted with every
/// row of `x` while it is in cache. Safety: no other thread touches those columns of `out`.
pub(super) unsafe fn linear_cols(x: &[f32], w: &[f32], b: &[f32], cols: Range<usize>, gelu: bool, out: &Buf<'_>) {
    let n = b.len();
    let k = w.len() / n;
    let m = x.len() / k;
    assert_eq!((w.len(), x.len(), out.len), (n * k, m * k, m * n));
    let rows = &w[cols.start * k..cols.end * k];
    let emit = |i: usize, r: usize, dot: f32| {
        let j = cols.start + r;
        let v = dot + b[j];
        out.set(i * n + j, if gelu { self::gelu(v) } else { v });
    };
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return dots_avx2_fma(x, rows, k, m, emit);
        }
    }
    dots::<false, _>(x, rows, k, m, emit)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn dots_avx2_fma(x: &[f32], w: &[f32], k: usize, m: usize, emit: impl FnMut(usize, usize, f32)) {
    dots::<true, _>(x, w, k, m, emit)
}

/// Asks the CPU to bring the cache line at `p` into cache (a hint: no effect on results).
#[inline(always)]
pub(super) fn prefetch(p: *const f32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Lanes per accumulator: one 256-bit register of f32.
pub(super) const LANES: usize = 8;

/// `emit(i, r, x[i] · w[r])` for every row `i` of `x` and row `r` of `w` (each `k` long).
/// Two weight rows against four token rows at a time, eight lanes each: eight independent
/// accumulators that the compiler keeps in vector registers. `FMA` uses fused multiply-add
/// (only where the CPU has it: elsewhere `mul_add` is a slow library call).
#[inline(always)]
pub(super) fn dots<const FMA: bool, E: FnMut(usize, usize, f32)>(x: &[f32], w: &[f32], k: usize, m: usize, mut emit: E) {
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
        // The next pair of rows, asked for now: the weights come from memory, and the
        // hardware's prefetcher stops at every 4 KiB page of the mapped file.
        if let Some(next) = w.get((r + 2) * k..((r + 4) * k).min(w.len())) {
            for line in next.chunks(16) {
                prefetch(line.as_ptr());
            }
        }
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
                emit(i + q, r, reduce(&acc[0][q]) + dot_tail(xr[q], w0));
                if pair == 2 {
                    emit(i + q, r + 1, reduce(&acc[1][q]) + dot_tail(xr[q], w1));
                }
            }
            i += 4;
        }
        r += pair;
    }
}
