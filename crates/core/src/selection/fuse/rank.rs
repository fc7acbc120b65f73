//! Fusion of the two signals into one ranking: reciprocal rank fusion or a normalised weighted
//! sum (see the [module documentation](super)), with each candidate's score parts.

use serde::Serialize;

use crate::selection::lexical::{Label, LexicalScore};

/// The `k` of reciprocal rank fusion: larger values flatten the difference between ranks. The
/// usual 60 is tuned for web-scale result lists; a catalog has tens to hundreds of tables, and
/// with 20 the first ranks still stand apart from the tenth.
pub const RRF_K: f64 = 20.0;
/// The weight of the embedding signal in reciprocal rank fusion.
pub const RRF_EMBEDDING_WEIGHT: f64 = 1.0;
/// The weight of the lexical signal in reciprocal rank fusion.
pub const RRF_LEXICAL_WEIGHT: f64 = 1.0;
/// The weight of the normalised cosine in the weighted sum (the lexical score gets the rest).
pub const WEIGHTED_EMBEDDING_WEIGHT: f64 = 0.5;

/// How the embedding and lexical signals are combined (see the [module documentation](super)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Fusion {
    /// Reciprocal rank fusion.
    Rrf { k: f64, embedding_weight: f64, lexical_weight: f64 },
    /// Normalised weighted sum; `embedding_weight` in 0..=1.
    WeightedSum { embedding_weight: f64 },
}

impl Default for Fusion {
    fn default() -> Fusion {
        Fusion::Rrf { k: RRF_K, embedding_weight: RRF_EMBEDDING_WEIGHT, lexical_weight: RRF_LEXICAL_WEIGHT }
    }
}

/// The parts of a fused score, for `ask.explain()`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ScoreParts {
    /// The cosine, when the description has an embedding.
    pub cosine: Option<f64>,
    /// The rank by cosine among the candidates (1 = best).
    pub cosine_rank: Option<usize>,
    pub lexical: f64,
    /// The rank by lexical score, when it is above zero.
    pub lexical_rank: Option<usize>,
    /// The question terms that matched the description.
    pub matched: Vec<Label>,
}

/// One candidate after fusion.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Fused {
    pub(super) index: usize,
    pub(super) score: f64,
    pub(super) parts: ScoreParts,
}

/// Competition ranks (1, 2, 2, 4) of `values`, larger is better; `None` stays unranked.
pub(super) fn ranks(values: &[Option<f64>]) -> Vec<Option<usize>> {
    // 1 + how many are greater: a binary search in the values sorted best first (10,000
    // candidates are a few milliseconds of pairwise counting).
    let mut sorted: Vec<f64> = values.iter().flatten().copied().collect();
    sorted.sort_by(|a, b| b.total_cmp(a));
    values.iter().map(|v| v.map(|v| 1 + sorted.partition_point(|&o| o > v))).collect()
}

/// Fuse per-candidate lexical scores and cosines into one ranking, best first. Ties are
/// broken by the lexical score, then the cosine, then the candidate's position.
pub(super) fn fuse(lexical: Vec<LexicalScore>, cosines: &[Option<f64>], fusion: Fusion) -> Vec<Fused> {
    let lex: Vec<Option<f64>> = lexical.iter().map(|l| (l.score > 0.0).then_some(l.score)).collect();
    let lex_ranks = ranks(&lex);
    let cos_ranks = ranks(cosines);
    let (cos_min, cos_max) = cosines.iter().flatten().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &c| (lo.min(c), hi.max(c)));
    let lex_max = lex.iter().flatten().fold(0.0_f64, |m, &l| m.max(l));
    let mut out: Vec<Fused> = lexical
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let score = match fusion {
                Fusion::Rrf { k, embedding_weight, lexical_weight } => {
                    cos_ranks[i].map_or(0.0, |r| embedding_weight / (k + r as f64))
                        + lex_ranks[i].map_or(0.0, |r| lexical_weight / (k + r as f64))
                }
                Fusion::WeightedSum { embedding_weight } => {
                    let cos = cosines[i].map_or(0.0, |c| if cos_max > cos_min { (c - cos_min) / (cos_max - cos_min) } else { 1.0 });
                    let lexn = if lex_max > 0.0 { l.score / lex_max } else { 0.0 };
                    embedding_weight * cos + (1.0 - embedding_weight) * lexn
                }
            };
            Fused {
                index: i,
                score,
                parts: ScoreParts {
                    cosine: cosines[i],
                    cosine_rank: cos_ranks[i],
                    lexical: l.score,
                    lexical_rank: lex_ranks[i],
                    matched: l.matched,
                },
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.parts.lexical.total_cmp(&a.parts.lexical))
            .then(b.parts.cosine.unwrap_or(-2.0).total_cmp(&a.parts.cosine.unwrap_or(-2.0)))
            .then(a.index.cmp(&b.index))
    });
    out
}
