//! A stand-in LLM server for pg_ask's tests.
//!
//! It speaks the real HTTP protocols over loopback — OpenAI-compatible chat completions and
//! embeddings, Anthropic messages, Ollama chat and embeddings (non-streaming only) — and
//! answers chat requests from a [`Script`]: scripted texts, delays, and faults (hung
//! requests, HTTP errors with `Retry-After`, malformed and truncated bodies, empty answers).
//! Embedding requests get deterministic pseudo-embeddings ([`pseudo_embedding`]).
//!
//! Tests start it on a free port, in-process ([`StandIn::start`]; its threads touch nothing
//! but their own sockets and it never prints, so it may run inside a PostgreSQL backend) or as
//! the `llm-standin` binary.
//!
//! ```
//! use llm_standin::{Reply, Rule, Script, StandIn};
//!
//! let script = Script::default()
//!     .rule(Rule::new(&["cities"], Reply::status(429)).times(1)) // 429 once,
//!     .rule(Rule::new(&["cities"], Reply::text("SELECT name FROM cities"))) // then the answer
//!     .or_else(Reply::text("you said: {{last}}"));
//! let llm = StandIn::start(script).expect("bind a loopback port");
//! assert!(llm.url().starts_with("http://127.0.0.1:"));
//! // ... point the client at llm.url(), then inspect llm.requests() ...
//! llm.shutdown();
//! ```
//!
//! # Endpoints
//!
//! | path | protocol |
//! |---|---|
//! | `POST /v1/chat/completions`, `POST /chat/completions` | OpenAI-compatible chat |
//! | `POST /v1/messages` | Anthropic messages (needs `x-api-key` and `anthropic-version` headers) |
//! | `POST /api/chat` | Ollama chat (needs `"stream": false`) |
//! | `POST /v1/embeddings`, `POST /embeddings` | OpenAI embeddings (`input`: string or list; optional `dimensions`) |
//! | `POST /api/embed` | Ollama embeddings (`input`: string or list) |
//! | `POST /api/embeddings` | Ollama's older embeddings (`prompt`: string) |
//! | `POST /_standin/script` | control: replace the script (body: script JSON) |
//! | `GET /_standin/requests` | control: the recorded requests, as a JSON list of [`Recorded`] |
//! | `POST /_standin/clear` | control: forget the recorded requests |
//!
//! Responses have the services' JSON shapes. Token counts are whitespace-separated words of
//! the prompt (system prompt and all messages) and of the reply. Requests the real service
//! would reject or would answer in a stream get a 400 (401 for Anthropic without an API key)
//! in the protocol's error shape: `{"error":{"message","type",..}}` for OpenAI,
//! `{"type":"error","error":{"type","message"}}` for Anthropic and for unknown paths outside
//! `/api/`, `{"error":"..."}` for Ollama. Unknown paths get a 404.
//!
//! Every API request (not the control requests) is recorded, including rejected ones.
//!
//! # Scripts
//!
//! A chat request is answered by the first rule, in order, whose `contains` strings all occur
//! in the request's prompt text (system prompt and all messages' texts joined by newlines),
//! whose `last_contains` strings all occur in the last message's text and none of whose
//! `last_lacks` strings does, whose `has_field` names
//! are all top-level fields of the request body (so a rule can refuse requests that carry a
//! `grammar` or a `response_format`), and which has uses left (`times`). Matching is case-sensitive substring search. If no rule answers, `default` does;
//! without a default the request gets a 500 whose message quotes the start of the last
//! message. A rule's `delay_ms` is waited before its reply. In a `text` reply, `{{last}}` is
//! replaced by the last message's text. Embedding requests are not scripted.
//!
//! The JSON form (all fields but `reply` are optional):
//!
//! ```json
//! {
//!   "rules": [
//!     {"contains": ["cities"], "reply": {"status": {"code": 429, "retry_after": 1}}, "times": 1},
//!     {"contains": ["cities"], "last_contains": ["how many"], "reply": {"text": "SELECT count(*) FROM cities"}},
//!     {"contains": ["slow"], "reply": {"text": "SELECT 1"}, "delay_ms": 200},
//!     {"contains": ["stuck"], "reply": "hang"},
//!     {"contains": ["garbage"], "reply": "malformed"},
//!     {"contains": ["cut"], "reply": "truncated"},
//!     {"contains": ["nothing"], "reply": "empty"},
//!     {"contains": ["key"], "reply": {"status": {"code": 401, "body": "{\"error\":{\"message\":\"bad key\",\"type\":\"invalid_request_error\"}}"}}}
//!   ],
//!   "default": {"text": "echo: {{last}}"}
//! }
//! ```
//!
//! Replies: `{"text": "..."}` (a completion with this content), `"empty"` (a completion with
//! content `""`), `"hang"` (never answers until the server shuts down, or ten minutes pass;
//! then a 503), `{"status": {"code": N, "retry_after": SECONDS, "body": "..."}}` (an HTTP
//! error; `retry_after` becomes a `Retry-After` header; an empty or missing `body` becomes an
//! error body in the protocol's shape), `"malformed"` (200, `application/json`, a body that is
//! not JSON), `"truncated"` (200, a well-formed response cut in the middle, Content-Length
//! matching what is sent).

mod embed;
mod http;
pub mod oracle;
mod protocol;
mod script;
mod server;

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use embed::{pseudo_embedding, DEFAULT_EMBEDDING_DIM};
#[doc(hidden)]
pub use http::read_requests;
#[doc(hidden)]
pub use protocol::decode_request;
pub use script::{Reply, Rule, Script};

use server::Shared;

/// Locks a mutex, ignoring poisoning: the data behind every mutex here stays consistent (each
/// critical section is a single assignment, push or removal).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How long shutting down waits for connections still writing their responses.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A request the stand-in received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// The path, without query string.
    pub path: String,
    /// Header names in lower case, values as sent, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The JSON body; `null` if empty, a JSON string holding the text if it is not JSON.
    pub body: serde_json::Value,
    /// The prompt text as used for matching: system prompt and all messages joined by newlines
    /// (for embeddings, the inputs joined by newlines).
    pub prompt: String,
}

impl Recorded {
    /// The value of the first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A running stand-in server. Shuts down when dropped.
pub struct StandIn {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: http::Server,
}

impl StandIn {
    /// Starts a server on a free loopback port (127.0.0.1:0).
    pub fn start(script: Script) -> io::Result<StandIn> {
        StandIn::start_on("127.0.0.1:0", script)
    }

    /// Starts a server on `addr` (`host:port`; port 0 picks a free one).
    pub fn start_on(addr: &str, script: Script) -> io::Result<StandIn> {
        let listener = TcpListener::bind(addr)?;
        let mut addr = listener.local_addr()?;
        if addr.ip().is_unspecified() {
            let loopback = match addr {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            };
            addr.set_ip(loopback);
        }
        let shared = Arc::new(Shared::new(script, DEFAULT_EMBEDDING_DIM));
        let handler = {
            let shared = Arc::clone(&shared);
            Arc::new(move |request| server::handle(&shared, request))
        };
        let server = http::Server::start(listener, addr, handler)?;
        Ok(StandIn { addr, shared, server })
    }

    /// The base URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Replaces the script; the use counts of `times` start again from zero.
    pub fn set_script(&self, script: Script) {
        self.shared.set_script(script);
    }

    /// Sets the dimension of embeddings (default [`DEFAULT_EMBEDDING_DIM`]; at least 1). An
    /// OpenAI-style request's `dimensions` field takes precedence.
    pub fn set_embedding_dim(&self, dim: usize) {
        self.shared.set_embedding_dim(dim);
    }

    /// Every API request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.shared.clear_requests();
    }

    /// Stops accepting requests, releases hung and delayed requests, and waits (up to five
    /// seconds) for the connections still answering to finish. Dropping the handle does the same.
    pub fn shutdown(self) {
        drop(self);
    }

    fn stop(&mut self) {
        // Release hung and delayed requests first, so that their connections can answer.
        self.shared.stop();
        self.server.stop(SHUTDOWN_GRACE);
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for StandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandIn").field("addr", &self.addr).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn handles_can_be_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::StandIn>();
        send_sync::<super::Script>();
        send_sync::<super::Recorded>();
    }
}
