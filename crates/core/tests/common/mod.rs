//! What the LLM client tests share.

use std::time::Duration;

use pg_ask_core::config::{LlmConfig, Provider};
use pg_ask_core::secret::Secret;

/// An OpenAI-protocol configuration for a server at `url` (`http://host:port`): a 5 s deadline,
/// no key, 64 tokens.
pub fn llm_config(url: &str) -> LlmConfig {
    LlmConfig {
        provider: Provider::OpenAi,
        base_url: format!("{url}/v1"),
        model: "m".into(),
        api_key: Secret::default(),
        request_timeout: Duration::from_secs(5),
        temperature: 0.0,
        max_tokens: 64,
        max_response_bytes: 1 << 20,
        constraints: Default::default(),
    }
}
