//! In-backend tests of embeddings (the local model against the reference, HTTP providers,
//! off), the response cache and the token budget.

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
        // pg_ask is preloaded here (as the README sets it up): the server read the tokenizer
        // before it forked this backend, and the vectors made with it are those of a model
        // that reads its own.
        let dir = crate::pg::gucs::model_dir();
        assert_eq!(crate::llm::embeddings::preloaded_tokenizer_dir(), Some(dir.clone()));
        let own = pg_ask_embed::Embedder::load(&dir).unwrap().embed_one("Los Angeles").unwrap();
        assert_eq!(own, la);
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

    /// The second identical ask() of a role sends nothing. Another role that may read the
    /// same tables, and so sends the very same prompt, is not answered from the first role's
    /// replies (it could tell from a hit, or from how fast the answer came, that the first
    /// asked that question): it has its own entries.
    #[pg_test]
    fn the_cache_answers_a_roles_own_identical_requests_only() {
        setup();
        let s = llm(pipeline_script("which Italian restaurants are in LA?", ITALIAN_SQL, "Two: Roma and Trattoria."));
        Spi::run("SET ask.cache = on").unwrap();
        let ask_as = |role: &str| -> String {
            Spi::run(&format!("SET LOCAL ROLE {role}")).unwrap();
            let answer: String = one("SELECT ask('which Italian restaurants are in LA?')");
            Spi::run("RESET ROLE").unwrap();
            answer
        };
        Spi::run(
            "CREATE ROLE ask_cache_a; CREATE ROLE ask_cache_b;
             GRANT SELECT ON public.cities, public.restaurants TO ask_cache_a, ask_cache_b",
        )
        .unwrap();
        let first = ask_as("ask_cache_a");
        let sent = s.requests().len();
        assert_eq!(sent, 1, "generate (the rows say the answer)");
        assert_eq!(ask_as("ask_cache_a"), first);
        assert_eq!(s.requests().len(), sent, "no request the second time");
        let hits: i64 = one("SELECT count(*) FROM ask.llm_calls WHERE cached AND tokens_saved > 0 AND prompt_tokens = 0");
        assert_eq!(hits, 1);
        // A role that reads the same tables sends the very same request, to the server: no
        // hit from another role's reply, and nothing in its ledger says cached.
        assert_eq!(ask_as("ask_cache_b"), first);
        let reqs = s.requests();
        assert_eq!(reqs.len(), 2 * sent, "ask_cache_b's identical requests are its own calls");
        assert_eq!(reqs[sent].body, reqs[0].body, "the very same request");
        let b_hits: i64 = one("SELECT count(*) FROM ask.llm_calls WHERE cached AND role = 'ask_cache_b'::regrole");
        assert_eq!(b_hits, 0);
        // Its own second ask() is answered from its own entries.
        assert_eq!(ask_as("ask_cache_b"), first);
        assert_eq!(s.requests().len(), 2 * sent);
        // Off, it is not read.
        Spi::run("SET ask.cache = off").unwrap();
        let before = s.requests().len();
        ask_as("ask_cache_a");
        assert_eq!(s.requests().len(), before + 1);
    }

    /// A budget refuses before sending; what was spent today counts.
    #[pg_test]
    fn the_budget_refuses_before_sending() {
        setup();
        let s = llm(pipeline_script("which Italian restaurants are in LA?", ITALIAN_SQL, "Two: Roma and Trattoria."));
        Spi::run("SET ask.max_tokens_per_day = 100").unwrap();
        let (code, msg, hint) = error_of("SELECT ask('which Italian restaurants are in LA?')");
        assert_eq!(code, "53000", "{msg}");
        assert!(msg.contains("0 of 100 tokens spent or reserved"), "{msg}");
        assert!(hint.unwrap().contains("ask.max_tokens_per_day"));
        assert!(s.requests().is_empty(), "nothing was sent");
        // Spent tokens count: with 500 tokens left, the next generation (its prompt and a
        // completion limit of 1024) is refused.
        Spi::run("SET ask.max_tokens_per_day = 1000000").unwrap();
        let _: String = one("SELECT ask('which Italian restaurants are in LA?')");
        let spent: i64 = one("SELECT tokens FROM ask.usage WHERE role = current_user::regrole");
        assert!(spent > 0);
        Spi::run(&format!("SET ask.max_tokens_per_day = {}", spent + 500)).unwrap();
        let (code, msg, _) = error_of("SELECT ask('which Italian restaurants are in LA?')");
        assert_eq!(code, "53000", "{msg}");
        // The replies gave back what they did not spend: the counter is the ledger's (other
        // tests of this cluster run as the same role, and count once a budget was set).
        let used: i64 =
            msg.split("for today: ").nth(1).and_then(|m| m.split(' ').next()).and_then(|n| n.parse().ok()).expect("the tokens used");
        assert!(used >= spent && msg.contains(&format!(" of {} tokens spent or reserved", spent + 500)), "{msg}");
    }
}
