//! Deterministic pseudo-embeddings: similar strings get similar vectors.

/// The embedding dimension unless configured otherwise (that of all-MiniLM-L6-v2).
pub const DEFAULT_EMBEDDING_DIM: usize = 384;

/// The stand-in's embedding of `text` with `dim` components (at least 1).
///
/// The text is lower-cased, its whitespace collapsed to single spaces and padded (two spaces
/// before, one after, as pg_trgm does for words); each character trigram adds ±1 to one
/// component chosen by a stable hash (FNV-1a) of the trigram. The vector is L2-normalised, so
/// the cosine similarity of two texts grows with the trigrams they share. The result depends
/// only on `text` and `dim`, on every machine and in every version of this crate.
pub fn pseudo_embedding(text: &str, dim: usize) -> Vec<f32> {
    let dim = dim.max(1);
    let normalised = text.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = format!("  {normalised} ").chars().collect();

    let mut vector = vec![0f32; dim];
    for trigram in chars.windows(3) {
        let hash = trigram.iter().fold(FNV_OFFSET, |h, c| {
            let mut buf = [0u8; 4];
            c.encode_utf8(&mut buf).bytes().fold(h, fnv_step)
        });
        // `dim` fits in u64 and the remainder is below `dim`, so both conversions are lossless.
        let index = (hash % dim as u64) as usize;
        vector[index] += if hash >> 63 == 0 { 1.0 } else { -1.0 };
    }

    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut vector {
            *x /= norm;
        }
    } else {
        // Every trigram cancelled out (possible only for tiny `dim`): still a unit vector.
        vector[0] = 1.0;
    }
    vector
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv_step(hash: u64, byte: u8) -> u64 {
    (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn unit_length_and_requested_dimension() {
        for text in ["", "a", "Los Angeles", "ünïcödé text"] {
            let v = pseudo_embedding(text, 64);
            assert_eq!(v.len(), 64);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{text:?} has norm {norm}");
        }
        assert_eq!(pseudo_embedding("x", 0).len(), 1);
    }

    #[test]
    fn case_and_spacing_do_not_matter_but_content_does() {
        let la = pseudo_embedding("Los Angeles", DEFAULT_EMBEDDING_DIM);
        assert_eq!(la, pseudo_embedding("  los   ANGELES ", DEFAULT_EMBEDDING_DIM));
        let near = cosine(&la, &pseudo_embedding("Los Angeles, CA", DEFAULT_EMBEDDING_DIM));
        let far = cosine(&la, &pseudo_embedding("Chicago", DEFAULT_EMBEDDING_DIM));
        assert!(near > 0.7, "near = {near}");
        assert!(far < 0.3, "far = {far}");
    }

    #[test]
    fn stable_across_builds() {
        // Pinned (computed independently) so that a change of the algorithm, which would
        // change vectors stored by later tests, is noticed. "  abc " has the trigrams
        // "  a", " ab", "abc", "bc ".
        assert_eq!(pseudo_embedding("abc", 8), [-0.5, 0.0, 0.0, -0.5, -0.5, 0.0, 0.5, 0.0]);
    }
}
