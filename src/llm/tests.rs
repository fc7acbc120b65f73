//! In-backend tests of embeddings: the local model against the reference, HTTP providers, off.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::Script;
    use pgrx::prelude::*;

    use crate::pg::testing::*;

    fn cosine(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (*x as f64) * (*y as f64)).sum()
    }

    #[pg_test]
    fn local_embeddings_match_the_reference_model() {
        let la: Vec<f32> = one("SELECT ask.embed_real('Los Angeles')");
        let la2: Vec<f32> = one("SELECT ask.embed_real('LA')");
        assert_eq!(la.len(), 384);
        let norm: f64 = cosine(&la, &la);
        assert!((norm - 1.0).abs() < 1e-5, "L2-normalised: {norm}");
        // The numpy reference (shared/tools/minilm_reference.py) gives 0.8424.
        let c = cosine(&la, &la2);
        assert!((c - 0.8424).abs() < 1e-3, "cosine('Los Angeles', 'LA') = {c}");
        Spi::run("SET LOCAL search_path = public, ask").unwrap();
        let dims: i32 = one("SELECT vector_dims(ask.embed('Los Angeles'))");
        assert_eq!(dims, 384);
    }

    #[pg_test]
    fn embeddings_over_http_and_off() {
        let s = llm(Script::default());
        for provider in ["openai", "ollama"] {
            Spi::run(&format!("SET ask.embedding_provider = '{provider}'; SET ask.embedding_base_url = '{}/v1'", s.url())).unwrap();
            let v: Vec<f32> = one("SELECT ask.embed_real('Los Angeles')");
            assert_eq!(v, llm_standin::pseudo_embedding("Los Angeles", llm_standin::DEFAULT_EMBEDDING_DIM), "{provider}");
        }
        let paths: Vec<String> = s.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(paths, ["/v1/embeddings", "/api/embed"]);
        Spi::run("SET ask.embedding_provider = 'off'").unwrap();
        let (code, msg, hint) = error_of("SELECT ask.embed_real('x')");
        assert_eq!(code, "0A000", "{msg}");
        assert!(hint.unwrap().contains("ask.embedding_provider"));
    }
}
