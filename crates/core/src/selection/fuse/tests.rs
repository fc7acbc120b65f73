//! Unit tests of the fusion of cosines and lexical scores, and of the vector arithmetic.

use super::rank::ranks;
use super::*;

#[test]
fn the_dot_of_unit_vectors_is_their_cosine() {
    let a: Vec<f32> = (0..389).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
    let b: Vec<f32> = (0..389).map(|i| ((i * 53 % 97) as f32 - 40.0) / 3.0).collect();
    assert!((unit_dot(&unit(&a), &unit(&b)) - cosine(&a, &b)).abs() < 1e-5);
    assert!((unit_dot(&unit(&a), &unit(&a)) - 1.0).abs() < 1e-5);
    assert_eq!(unit(&[0.0, 0.0]), [0.0, 0.0]);
    assert_eq!(unit_dot(&[1.0], &[1.0, 0.0]), 0.0);
}

fn lex(scores: &[f64]) -> Vec<LexicalScore> {
    scores.iter().map(|&s| LexicalScore { score: s, matched: vec![] }).collect()
}

#[test]
fn ranks_share_ties() {
    assert_eq!(ranks(&[Some(0.5), None, Some(0.9), Some(0.5)]), [Some(2), None, Some(1), Some(2)]);
}

#[test]
fn rrf_prefers_agreement() {
    // Candidate 2 is second in both rankings; 0 is first lexically and last by embedding,
    // 1 the other way round. With k = 20: 2/22 > 1/21 + 1/25. The tie of 0 and 1 goes to
    // the better lexical score.
    let out = fuse(lex(&[5.0, 1.0, 4.0, 3.0, 2.0]), &[Some(0.1), Some(0.9), Some(0.8), Some(0.3), Some(0.2)], Fusion::default());
    assert_eq!(out.iter().map(|f| f.index).collect::<Vec<_>>(), [2, 0, 1, 3, 4]);
    assert_eq!((out[0].parts.cosine_rank, out[0].parts.lexical_rank), (Some(2), Some(2)));
    assert!((out[0].score - 2.0 / 22.0).abs() < 1e-12);
}

#[test]
fn one_signal_alone_decides() {
    let out = fuse(lex(&[0.0, 1.0, 2.0]), &[None, None, None], Fusion::default());
    assert_eq!(out.iter().map(|f| f.index).collect::<Vec<_>>(), [2, 1, 0]);
    assert_eq!(out[2].score, 0.0);
    let out = fuse(lex(&[0.0, 0.0]), &[Some(0.1), Some(0.3)], Fusion::WeightedSum { embedding_weight: 0.5 });
    assert_eq!(out[0].index, 1);
}

#[test]
fn weighted_sum_keeps_gaps() {
    // Lexically candidate 0 is far ahead; by embedding 1 is slightly ahead of 0.
    let out =
        fuse(lex(&[10.0, 1.0, 0.0, 0.0]), &[Some(0.50), Some(0.52), Some(0.20), Some(0.10)], Fusion::WeightedSum { embedding_weight: 0.5 });
    assert_eq!(out.iter().map(|f| f.index).collect::<Vec<_>>(), [0, 1, 2, 3]);
    // 0.5 · (0.40 / 0.42) + 0.5 · 1.0, against 0.5 · 1.0 + 0.5 · 0.1.
    assert!((out[0].score - (0.5 * 0.40 / 0.42 + 0.5)).abs() < 1e-9, "{}", out[0].score);
    assert!((out[1].score - 0.55).abs() < 1e-9, "{}", out[1].score);
}

#[test]
fn cosine_of_vectors() {
    assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
    assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-12);
    assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    assert_eq!(cosine(&[1.0], &[1.0, 1.0]), 0.0);
}
