//! Embeddings over HTTP: OpenAI-compatible `/embeddings` and Ollama's `/api/embed`.

use serde_json::{json, Value};

use super::client::{read_limited, transport_error};
use super::protocol::{error_message, parse_json};
use super::LlmError;
use crate::secret::Secret;

/// Which embedding service, and how to reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedProtocol {
    OpenAi,
    Ollama,
}

#[derive(Debug, Clone)]
pub struct EmbedConfig {
    pub protocol: EmbedProtocol,
    pub base_url: String,
    pub model: String,
    pub api_key: Secret,
    pub request_timeout: std::time::Duration,
    /// Bytes of a response read at most (`ask.max_response_size`).
    pub max_response_bytes: usize,
}

impl EmbedConfig {
    pub fn url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.protocol {
            EmbedProtocol::OpenAi => format!("{base}/embeddings"),
            EmbedProtocol::Ollama => format!("{}/api/embed", base.strip_suffix("/v1").unwrap_or(base)),
        }
    }
}

/// The JSON body of an embedding request.
pub fn request_body(cfg: &EmbedConfig, texts: &[&str]) -> Value {
    json!({"model": cfg.model, "input": texts})
}

/// The vectors of a successful response, in input order; `n` is how many were asked for.
pub fn parse_response(protocol: EmbedProtocol, body: &[u8], n: usize) -> Result<Vec<Vec<f32>>, LlmError> {
    let v = parse_json(body)?;
    let as_vec = |e: &Value| -> Option<Vec<f32>> { e.as_array()?.iter().map(|x| x.as_f64().map(|f| f as f32)).collect() };
    let vectors: Option<Vec<Vec<f32>>> = match protocol {
        EmbedProtocol::OpenAi => v.get("data").and_then(Value::as_array).and_then(|data| {
            let mut out: Vec<(u64, Vec<f32>)> = data
                .iter()
                .enumerate()
                .map(|(i, d)| Some((d.get("index").and_then(Value::as_u64).unwrap_or(i as u64), as_vec(d.get("embedding")?)?)))
                .collect::<Option<_>>()?;
            out.sort_by_key(|(i, _)| *i);
            Some(out.into_iter().map(|(_, e)| e).collect())
        }),
        EmbedProtocol::Ollama => v.get("embeddings").and_then(Value::as_array).and_then(|list| list.iter().map(as_vec).collect()),
    };
    let vectors = vectors.ok_or_else(|| LlmError::MissingField { what: "embeddings".into() })?;
    if vectors.len() != n {
        return Err(LlmError::MissingField { what: format!("{n} embeddings (got {})", vectors.len()) });
    }
    if let Some(first) = vectors.first() {
        if first.is_empty() || vectors.iter().any(|e| e.len() != first.len()) {
            return Err(LlmError::MissingField { what: "embeddings of one common dimension".into() });
        }
    }
    Ok(vectors)
}

/// Embed `texts` with one request, within the configured timeout; a connection that fails is
/// made once more, at once (a kept-alive one the server closed between two calls, as
/// [`super::chat`] does).
pub async fn embed(http: &reqwest::Client, cfg: &EmbedConfig, texts: &[&str]) -> Result<Vec<Vec<f32>>, LlmError> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    match embed_once(http, cfg, texts).await {
        Err(LlmError::Connect { .. }) => embed_once(http, cfg, texts).await,
        done => done,
    }
}

async fn embed_once(http: &reqwest::Client, cfg: &EmbedConfig, texts: &[&str]) -> Result<Vec<Vec<f32>>, LlmError> {
    let url = cfg.url();
    let timeout_ms = cfg.request_timeout.as_millis() as u64;
    let mut rb = http.post(&url).timeout(cfg.request_timeout).json(&request_body(cfg, texts));
    if !cfg.api_key.is_empty() {
        rb = rb.header("authorization", format!("Bearer {}", cfg.api_key.expose()));
    }
    let transport = |e: reqwest::Error| transport_error(&e, &url, timeout_ms, &cfg.api_key);
    let resp = rb.send().await.map_err(transport)?;
    let status = resp.status();
    let bytes = read_limited(resp, &url, cfg.max_response_bytes).await.map_err(|e| e.into_llm(transport))?;
    if !status.is_success() {
        return Err(LlmError::Http {
            url: url.clone(),
            status: status.as_u16(),
            message: cfg.api_key.scrub(&error_message(&bytes)),
            retry_after_s: None,
        });
    }
    parse_response(cfg.protocol, &bytes, texts.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let mut c = EmbedConfig {
            protocol: EmbedProtocol::OpenAi,
            base_url: "http://h:1/v1/".into(),
            model: "m".into(),
            api_key: Secret::default(),
            request_timeout: std::time::Duration::from_secs(1),
            max_response_bytes: 1 << 20,
        };
        assert_eq!(c.url(), "http://h:1/v1/embeddings");
        c.protocol = EmbedProtocol::Ollama;
        assert_eq!(c.url(), "http://h:1/api/embed");
    }

    #[test]
    fn parses_both_shapes_in_input_order() {
        let o = br#"{"data":[{"index":1,"embedding":[0.0,1.0]},{"index":0,"embedding":[1.0,0.0]}]}"#;
        assert_eq!(parse_response(EmbedProtocol::OpenAi, o, 2).unwrap(), vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        let l = br#"{"model":"m","embeddings":[[0.5,0.5]]}"#;
        assert_eq!(parse_response(EmbedProtocol::Ollama, l, 1).unwrap(), vec![vec![0.5, 0.5]]);
    }

    #[test]
    fn rejects_wrong_counts_and_ragged_vectors() {
        let l = br#"{"embeddings":[[0.5,0.5]]}"#;
        assert!(matches!(parse_response(EmbedProtocol::Ollama, l, 2), Err(LlmError::MissingField { .. })));
        let r = br#"{"embeddings":[[0.5,0.5],[1.0]]}"#;
        assert!(matches!(parse_response(EmbedProtocol::Ollama, r, 2), Err(LlmError::MissingField { .. })));
        assert!(matches!(parse_response(EmbedProtocol::OpenAi, b"{\"data\":", 1), Err(LlmError::Truncated { .. })));
    }

    #[test]
    fn talks_to_the_stand_in() {
        let s = llm_standin::StandIn::start(llm_standin::Script::default()).unwrap();
        let runner = crate::llm::Runner::new().unwrap();
        for (protocol, base) in [(EmbedProtocol::OpenAi, format!("{}/v1", s.url())), (EmbedProtocol::Ollama, s.url())] {
            let cfg = EmbedConfig {
                protocol,
                base_url: base,
                model: "all-minilm".into(),
                api_key: Secret::default(),
                request_timeout: std::time::Duration::from_secs(5),
                max_response_bytes: 1 << 20,
            };
            let out = runner.block_on(embed(runner.http(), &cfg, &["Los Angeles", "los angeles", "Chicago"]), &|| false).unwrap().unwrap();
            assert_eq!(out.len(), 3);
            assert_eq!(out[0].len(), llm_standin::DEFAULT_EMBEDDING_DIM);
            let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
            assert!(cos(&out[0], &out[1]) > cos(&out[0], &out[2]));
        }
    }
}
