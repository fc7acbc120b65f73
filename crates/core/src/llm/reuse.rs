//! Spending fewer tokens: the response cache's key and stored reply, and the estimate a token
//! budget is checked against before a call is sent.
//!
//! The cache key is the whole request as it would go out — provider, base URL and the JSON
//! body, which holds the model, the settings (temperature, completion limit, stop sequences,
//! constraint) and the full prompt. A prompt describes only what its role may read, so two
//! roles share a cached reply only when they would have sent the very same request.

use serde_json::{json, Value};

use super::protocol::request_body;
use super::{ChatRequest, ChatResponse};
use crate::config::LlmConfig;

/// The text that identifies a request for the cache (hashed by the database).
pub fn cache_key(cfg: &LlmConfig, req: &ChatRequest) -> String {
    format!("{}\n{}\n{}", cfg.provider.as_str(), cfg.base_url, request_body(cfg, req))
}

/// A reply as the cache keeps it: what the stage reads, and the tokens it cost.
pub fn to_cached(r: &ChatResponse) -> Value {
    json!({
        "content": r.content,
        "model": r.model,
        "prompt_tokens": r.prompt_tokens,
        "completion_tokens": r.completion_tokens,
        "finish_reason": r.finish_reason,
        "constrained": r.constrained,
    })
}

/// A cached reply as this call's answer (no tokens spent, [`ChatResponse::cached`] the tokens
/// the original call spent), or `None` when the stored value is not one.
pub fn from_cached(v: &Value) -> Option<ChatResponse> {
    let constrained = v.get("constrained").and_then(|k| serde_json::from_value(k.clone()).ok());
    let spent = ["prompt_tokens", "completion_tokens"].iter().filter_map(|k| v.get(*k).and_then(Value::as_u64)).sum();
    Some(ChatResponse {
        content: v.get("content")?.as_str()?.to_string(),
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_string(),
        prompt_tokens: Some(0),
        completion_tokens: Some(0),
        finish_reason: v.get("finish_reason").and_then(Value::as_str).map(str::to_string),
        attempts: 0,
        constrained,
        unconstrained: None,
        cached_prompt_tokens: None,
        cached: Some(spent),
    })
}

/// Whether a reply is worth keeping: a complete answer, not one cut at the limit or empty.
pub fn cacheable(r: &ChatResponse) -> bool {
    !r.content.trim().is_empty() && !matches!(r.finish_reason.as_deref(), Some("length" | "max_tokens"))
}

/// The most tokens a call can cost: its prompt (about four characters a token, rounded up)
/// and its whole completion limit. A budget refuses the call when this would go past it.
pub fn most_tokens(cfg: &LlmConfig, req: &ChatRequest) -> u64 {
    (req.prompt_chars() as u64).div_ceil(4) + u64::from(req.completion_limit(cfg.max_tokens))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Provider;

    fn cfg() -> LlmConfig {
        LlmConfig {
            provider: Provider::OpenAi,
            base_url: "http://127.0.0.1:1/v1".into(),
            model: "m".into(),
            api_key: crate::secret::Secret::new(""),
            request_timeout: std::time::Duration::from_secs(1),
            temperature: 0.0,
            max_tokens: 100,
            max_response_bytes: 1 << 20,
            constraints: Default::default(),
        }
    }

    #[test]
    fn the_key_is_the_whole_request() {
        let req = ChatRequest::new("system", "how many restaurants?");
        let k = cache_key(&cfg(), &req);
        assert_eq!(k, cache_key(&cfg(), &req.clone()));
        // Another prompt, model, setting, URL or limit is another key.
        assert_ne!(k, cache_key(&cfg(), &ChatRequest::new("system", "how many cities?")));
        assert_ne!(k, cache_key(&LlmConfig { model: "other".into(), ..cfg() }, &req));
        assert_ne!(k, cache_key(&LlmConfig { temperature: 0.7, ..cfg() }, &req));
        assert_ne!(k, cache_key(&LlmConfig { base_url: "http://127.0.0.1:2/v1".into(), ..cfg() }, &req));
        assert_ne!(k, cache_key(&cfg(), &req.clone().limit(10)));
        // The key never holds the API key (it is not in the body).
        let keyed = LlmConfig { api_key: crate::secret::Secret::new("sk-secret-123"), ..cfg() };
        assert!(!cache_key(&keyed, &req).contains("sk-secret-123"));
    }

    #[test]
    fn a_cached_reply_reads_back() {
        let r = ChatResponse {
            content: "SELECT 1".into(),
            model: "m".into(),
            prompt_tokens: Some(120),
            completion_tokens: Some(8),
            finish_reason: Some("stop".into()),
            attempts: 2,
            constrained: Some(crate::constrain::Kind::Grammar),
            unconstrained: None,
            cached_prompt_tokens: None,
            cached: None,
        };
        let back = from_cached(&to_cached(&r)).unwrap();
        assert_eq!(back, ChatResponse { attempts: 0, prompt_tokens: Some(0), completion_tokens: Some(0), cached: Some(128), ..r.clone() });
        assert!(cacheable(&r));
        assert!(!cacheable(&ChatResponse { finish_reason: Some("length".into()), ..r.clone() }));
        assert!(!cacheable(&ChatResponse { content: " ".into(), ..r }));
        assert!(from_cached(&json!({"model": "m"})).is_none());
    }

    #[test]
    fn the_estimate_bounds_the_call() {
        let req = ChatRequest::new("abcd", "efghi");
        assert_eq!(most_tokens(&cfg(), &req), 3 + 100);
        assert_eq!(most_tokens(&cfg(), &req.limit(10)), 3 + 10);
    }
}
