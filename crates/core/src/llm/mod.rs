//! LLM chat clients for the three wire protocols, with retries, and an interruptible runner.
//!
//! [`protocol`] builds request bodies and parses responses (pure functions); [`client`] sends
//! them with reqwest and retries; [`runtime`] runs a request on a current-thread runtime while
//! polling a caller-supplied "interrupted?" check, so a query cancel ends the request promptly.

pub mod client;
pub mod embed;
pub mod protocol;
pub mod reuse;
pub mod runtime;

use serde::Serialize;

use crate::constrain::{Constraint, Kind};

pub use client::{chat, chat_all};
pub use runtime::{Interrupted, Runner};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: Role::User, content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: Role::Assistant, content: content.into() }
    }
}

/// One chat request: a system prompt and the conversation so far, and where its stage's
/// answer ends.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    /// Completion tokens the stage's answer needs at most; the smaller of this and
    /// `ask.max_tokens` is sent. `None`: `ask.max_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Texts at which the stage's answer is complete: the server stops generating there (and
    /// leaves the text out of the reply). At most four (OpenAI's limit).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// The shape the reply must have, sent where the provider and the settings allow
    /// ([`crate::constrain::decide`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraint: Option<Constraint>,
    /// Sampling for this request in place of the settings' temperature: a candidate drawn for
    /// a vote, with a seed of its own so that candidates differ (and the response cache, whose
    /// key is the request, never serves one candidate's reply for another).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
}

/// A temperature and a seed for one request ([`ChatRequest::sampled`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sampling {
    pub temperature: f64,
    pub seed: u64,
}

impl ChatRequest {
    pub fn new(system: impl Into<String>, user: impl Into<String>) -> ChatRequest {
        ChatRequest { system: system.into(), messages: vec![Message::user(user)], ..Default::default() }
    }

    /// The same request, asking for at most `tokens` completion tokens.
    pub fn limit(mut self, tokens: u32) -> ChatRequest {
        self.max_tokens = Some(tokens);
        self
    }

    /// The same request, ending generation at any of `stop`.
    pub fn stop_at(mut self, stop: &[&str]) -> ChatRequest {
        self.stop = stop.iter().take(4).map(|s| s.to_string()).collect();
        self
    }

    /// The same request, sampled at `temperature` with `seed` (the provider's seed where it
    /// takes one: OpenAI-compatible servers and Ollama).
    pub fn sampled(mut self, temperature: f64, seed: u64) -> ChatRequest {
        self.sampling = Some(Sampling { temperature, seed });
        self
    }

    /// The same request, its reply constrained to `constraint`.
    pub fn constrain(mut self, constraint: Constraint) -> ChatRequest {
        self.constraint = Some(constraint);
        self
    }

    /// The same request, its reply a JSON value matching `schema` (see [`crate::constrain::schemas`]).
    pub fn json_schema(self, name: &'static str, schema: serde_json::Value) -> ChatRequest {
        self.constrain(Constraint::JsonSchema { name, schema })
    }

    /// The same request, its reply constrained to a fixed-shape stage's JSON schema.
    pub fn shaped(self, shape: crate::constrain::schemas::Shape) -> ChatRequest {
        self.json_schema(shape.name(), shape.schema())
    }

    /// Completion tokens to ask for, given the configured limit.
    pub fn completion_limit(&self, configured: u32) -> u32 {
        self.max_tokens.map_or(configured, |m| m.min(configured))
    }

    /// Characters of prompt text, a cheap size measure for traces.
    pub fn prompt_chars(&self) -> usize {
        self.system.len() + self.messages.iter().map(|m| m.content.len()).sum::<usize>()
    }
}

/// What came back from one (possibly retried) call.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ChatResponse {
    pub content: String,
    pub model: String,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// Of the prompt tokens, those the server read from its cache of an earlier prompt with
    /// the same start (where it says: OpenAI, llama.cpp, Anthropic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u64>,
    /// The provider's reason for stopping (`stop`, `length`, `end_turn`, `max_tokens`, ...).
    pub finish_reason: Option<String>,
    /// HTTP requests made, retries included.
    pub attempts: u32,
    /// The constraint the reply was generated under, if the request had one and it was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constrained: Option<Kind>,
    /// Why a request's constraint was not sent (`off`, `provider`, `refused_before`, `refused`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<&'static str>,
    /// Answered from the response cache (`ask.cache`): the tokens the original call spent
    /// (this one spent none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached: Option<u64>,
}

/// Why an LLM call failed. Texts never contain the API key: bodies are scrubbed before they
/// are stored here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("could not connect to the LLM server at {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("the LLM request to {url} timed out after {ms} ms")]
    Timeout { url: String, ms: u64 },
    #[error("the LLM server at {url} answered HTTP {status}: {message}")]
    Http { url: String, status: u16, message: String, retry_after_s: Option<u64> },
    #[error("the LLM server sent a response that is not valid JSON: {detail}")]
    Malformed { detail: String },
    #[error("the LLM server's response was cut off: {detail}")]
    Truncated { detail: String },
    #[error("the LLM server's response has no {what}")]
    MissingField { what: String },
    #[error("the LLM returned an empty reply")]
    EmptyContent,
    #[error("the LLM request was interrupted")]
    Interrupted,
    /// A constraint the settings require (`on`) cannot be sent, or the server refused it.
    #[error("{detail}")]
    Unsupported { detail: String },
    /// The server's response is larger than `ask.max_response_size`: reading stopped there,
    /// so that a server cannot push the backend out of memory.
    #[error("the response of the server at {url} is larger than {limit} bytes")]
    TooLarge { url: String, limit: usize },
}

impl LlmError {
    /// A short stable word for ledgers and traces.
    pub fn outcome(&self) -> &'static str {
        match self {
            LlmError::Connect { .. } => "connect_error",
            LlmError::Timeout { .. } => "timeout",
            LlmError::Http { status: 429, .. } => "rate_limited",
            e if e.is_context_overflow() => "context_overflow",
            LlmError::Http { .. } => "http_error",
            LlmError::Malformed { .. } => "malformed",
            LlmError::Truncated { .. } => "truncated",
            LlmError::MissingField { .. } => "malformed",
            LlmError::EmptyContent => "empty",
            LlmError::Interrupted => "interrupted",
            LlmError::Unsupported { .. } => "unsupported",
            LlmError::TooLarge { .. } => "too_large",
        }
    }

    /// Whether the service failed rather than the model: the server could not be reached,
    /// timed out, answered an HTTP error, or sent a body that is not its protocol's (not JSON,
    /// cut off, without the reply's fields), or the call was interrupted. Such a call says
    /// nothing about the model, so a measurement (`ask.evaluate`, `ask.benchmark`) stops and
    /// can be resumed instead of scoring it. An empty reply is the model's own answer.
    ///
    /// A prompt larger than the model's context window is not the service's failure either:
    /// it is this request's, and another question's prompt may fit.
    pub fn is_service_failure(&self) -> bool {
        !matches!(self, LlmError::EmptyContent) && !self.is_context_overflow()
    }

    /// The server refused the request because the prompt (with the completion asked for) does
    /// not fit the model's context window: OpenAI's `context_length_exceeded`, Anthropic's
    /// "prompt is too long", llama.cpp's "exceeds the available context size", and their kind.
    pub fn is_context_overflow(&self) -> bool {
        match self {
            LlmError::Http { status: 400 | 413, message, .. } => {
                let m = message.to_ascii_lowercase();
                ["context length", "context size", "context window", "context_length_exceeded", "prompt is too long", "maximum context"]
                    .iter()
                    .any(|p| m.contains(p))
            }
            _ => false,
        }
    }

    /// Whether another attempt might succeed (rate limits, overloaded or failing servers).
    pub fn is_retryable(&self) -> bool {
        matches!(self, LlmError::Http { status, .. } if matches!(status, 429 | 500 | 502 | 503 | 504 | 529))
    }
}

#[cfg(test)]
mod tests {
    use super::LlmError;

    #[test]
    fn a_context_overflow_is_told_from_other_refusals() {
        let http = |status, message: &str| LlmError::Http { url: "u".into(), status, message: message.into(), retry_after_s: None };
        for m in [
            "request (4134 tokens) exceeds the available context size (4096 tokens), try increasing it",
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "{\"error\":{\"code\":\"context_length_exceeded\"}}",
            "prompt is too long: 210000 tokens > 200000 maximum",
        ] {
            let e = http(400, m);
            assert!(e.is_context_overflow() && !e.is_service_failure(), "{m}");
            assert_eq!(e.outcome(), "context_overflow");
        }
        for e in [http(400, "unknown field: grammar"), http(500, "context size exceeded"), http(404, "model not found")] {
            assert!(!e.is_context_overflow() && e.is_service_failure(), "{e}");
        }
    }

    #[test]
    fn only_an_empty_reply_is_the_models_own_failure() {
        let url = || "http://127.0.0.1:1/v1".to_string();
        let service = [
            LlmError::Connect { url: url(), detail: "refused".into() },
            LlmError::Timeout { url: url(), ms: 100 },
            LlmError::Http { url: url(), status: 401, message: "bad key".into(), retry_after_s: None },
            LlmError::Http { url: url(), status: 529, message: "overloaded".into(), retry_after_s: Some(2) },
            LlmError::Malformed { detail: "not JSON".into() },
            LlmError::Truncated { detail: "cut".into() },
            LlmError::MissingField { what: "choices".into() },
            LlmError::Interrupted,
        ];
        for e in &service {
            assert!(e.is_service_failure(), "{e}");
        }
        assert!(!LlmError::EmptyContent.is_service_failure());
    }
}
