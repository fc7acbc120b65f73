use super::kernels::dots;
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
        worst = worst.max((f64::from(super::kernels::erf(x)) - want).abs());
    }
    assert!(worst < 1e-6, "worst absolute error {worst:e}");
}

#[test]
fn a_panicking_chunk_ends_the_pass_instead_of_hanging_it() {
    // A token id past the vocabulary makes its embedding chunk panic (a bug the tokenizer
    // never causes): every thread must stop and the caller must get the panic.
    let embedder = crate::Embedder::load(&crate::tool_model_dir()).expect("the model (scripts/setup.sh)");
    let single = embedder.single.as_ref().expect("the single-text encoder applies to all-MiniLM-L6-v2");
    let good = [101, 2054, 2003, 102];
    let bad = [101, 2054, u32::MAX, 2003, 102];
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let result = pool.install(|| std::panic::catch_unwind(AssertUnwindSafe(|| single.mean_hidden(&bad, super::MAX_THREADS))));
        assert!(result.is_err(), "{threads} threads: no panic");
        // The pool is still usable.
        assert_eq!(pool.install(|| single.mean_hidden(&good, super::MAX_THREADS)).len(), 384);
    }
}

#[test]
fn linear_matches_a_plain_product_for_every_shape_and_split() {
    // Sizes around the tiles (4 token rows, 2 weight rows, 8 lanes), columns split in parts
    // as threads split them, with and without GELU, with and without FMA.
    for (m, k, n) in [(1, 8, 1), (3, 13, 5), (4, 16, 2), (5, 384, 97), (11, 385, 200), (9, 24, 193)] {
        let x: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 5 % 11) as f32 - 5.0) / 9.0).collect();
        let b: Vec<f32> = (0..n).map(|j| j as f32 / 10.0).collect();
        for (parts, gelu) in [(1, false), (2, true), (3, false)] {
            let mut out = vec![f32::NAN; m * n];
            let buf = Buf::new(&mut out);
            for p in 0..parts {
                // SAFETY: one thread, parts written one after the other.
                unsafe { linear_cols(&x, &w, &b, n * p / parts..n * (p + 1) / parts, gelu, &buf) };
            }
            let mut plain = vec![f32::NAN; m * n];
            dots::<false, _>(&x, &w, k, m, |i, j, dot| plain[i * n + j] = dot + b[j]);
            for i in 0..m {
                for j in 0..n {
                    let want: f32 = (0..k).map(|c| x[i * k + c] * w[j * k + c]).sum::<f32>() + b[j];
                    let want = if gelu { super::kernels::gelu(want) } else { want };
                    let got = out[i * n + j];
                    assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0), "({m},{k},{n}) [{i},{j}]: {got} vs {want}");
                    let p = if gelu { super::kernels::gelu(plain[i * n + j]) } else { plain[i * n + j] };
                    assert!((p - got).abs() <= 1e-4 * got.abs().max(1.0), "without FMA: {p} vs {got}");
                }
            }
        }
    }
}
