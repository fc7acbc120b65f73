//! Sending a chat request with reqwest: deadline, retries with backoff, Retry-After.

use std::time::{Duration, Instant};

use super::protocol::{error_message, headers, parse_response, request_body};
use super::{ChatRequest, ChatResponse, LlmError};
use crate::config::LlmConfig;
use crate::constrain::{decide, is_constraint_refusal, remember_refusal, Decision, Mode};
use crate::secret::Secret;

/// First backoff pause; doubled after each retry, capped at [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Send `req`, retrying 429 and 5xx answers with exponential backoff (or the server's
/// Retry-After), and a connection that failed once at once, all within `cfg.request_timeout`.
///
/// A request with a constraint ([`crate::constrain`]) carries it when the provider and the
/// settings allow. When the server refuses it (HTTP 400 naming the field) and its setting is
/// `auto`, the refusal is remembered for the server and the request is sent again without it;
/// with `on`, that is an error.
pub async fn chat(http: &reqwest::Client, cfg: &LlmConfig, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
    let Some(kind) = req.constraint.as_ref().map(|c| c.kind()) else { return chat_as_is(http, cfg, req).await };
    match decide(cfg, kind) {
        Decision::Refuse(detail) => Err(LlmError::Unsupported { detail }),
        Decision::Skip(why) => {
            let mut resp = chat_as_is(http, cfg, req).await?;
            resp.unconstrained = Some(why);
            Ok(resp)
        }
        Decision::Send => match chat_as_is(http, cfg, req).await {
            Ok(mut resp) => {
                resp.constrained = Some(kind);
                Ok(resp)
            }
            Err(LlmError::Http { status, message, .. }) if is_constraint_refusal(status, &message, kind) => {
                if cfg.constraints.of(kind) == Mode::On {
                    return Err(LlmError::Unsupported {
                        detail: format!(
                            "{} is on, but the LLM server refused the {}: HTTP {status}: {message}",
                            kind.setting(),
                            kind.as_str()
                        ),
                    });
                }
                remember_refusal(&cfg.base_url, kind);
                let mut resp = chat_as_is(http, cfg, req).await?;
                resp.unconstrained = Some("refused");
                Ok(resp)
            }
            Err(e) => Err(e),
        },
    }
}

/// [`chat`] with the body as [`request_body`] makes it now.
async fn chat_as_is(http: &reqwest::Client, cfg: &LlmConfig, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
    let url = cfg.chat_url();
    let body = request_body(cfg, req);
    let deadline = Instant::now() + cfg.request_timeout;
    let mut backoff = FIRST_BACKOFF;
    let mut attempts = 0u32;
    let mut refused: Option<LlmError> = None;
    let mut reconnected = false;
    loop {
        attempts += 1;
        let result = send_once(http, cfg, &url, &body, deadline).await;
        match result {
            Ok(mut resp) => {
                resp.attempts = attempts;
                return Ok(resp);
            }
            // A kept-alive connection the server closed while it sat in the pool between two
            // calls (llama-server closes one idle for 5 s; the backend's runtime, idle between
            // calls, does not see it go) fails as the request goes out on it: sent once more,
            // at once, on a new connection. A server that is down refuses that one too.
            Err(LlmError::Connect { .. }) if !reconnected => reconnected = true,
            // A retry that runs into the deadline: the server's refusals are why the call
            // failed, not the clock (which one came first depended on the machine's load).
            Err(LlmError::Timeout { .. }) if refused.is_some() => return Err(refused.expect("checked")),
            Err(err) if err.is_retryable() => {
                let wait = match &err {
                    LlmError::Http { retry_after_s: Some(s), .. } => Duration::from_secs(*s),
                    _ => jittered(backoff),
                };
                // Give up when the pause would run past the deadline: the error says why.
                if Instant::now() + wait >= deadline {
                    return Err(err);
                }
                tokio::time::sleep(wait).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                refused = Some(err);
            }
            Err(err) => return Err(err),
        }
    }
}

async fn send_once(
    http: &reqwest::Client,
    cfg: &LlmConfig,
    url: &str,
    body: &serde_json::Value,
    deadline: Instant,
) -> Result<ChatResponse, LlmError> {
    let timeout_ms = cfg.request_timeout.as_millis() as u64;
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(LlmError::Timeout { url: url.to_string(), ms: timeout_ms });
    }
    let mut rb = http.post(url).timeout(remaining).json(body);
    for (name, value) in headers(cfg) {
        rb = rb.header(name, value);
    }
    let transport = |e: reqwest::Error| transport_error(&e, url, timeout_ms, &cfg.api_key);
    let resp = rb.send().await.map_err(transport)?;
    let status = resp.status();
    let retry_after_s =
        resp.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    let bytes = read_limited(resp, url, cfg.max_response_bytes).await.map_err(|e| e.into_llm(transport))?;
    if !status.is_success() {
        return Err(LlmError::Http {
            url: url.to_string(),
            status: status.as_u16(),
            message: cfg.api_key.scrub(&error_message(&bytes)),
            retry_after_s,
        });
    }
    parse_response(cfg.provider, &bytes).map_err(|e| scrub_error(e, cfg))
}

/// Why reading a body stopped: the transport failed, or the body passed the limit.
pub(crate) enum ReadError {
    Transport(reqwest::Error),
    TooLarge { url: String, limit: usize },
}

impl ReadError {
    pub(crate) fn into_llm(self, transport: impl FnOnce(reqwest::Error) -> LlmError) -> LlmError {
        match self {
            ReadError::Transport(e) => transport(e),
            ReadError::TooLarge { url, limit } => LlmError::TooLarge { url, limit },
        }
    }
}

/// A response's body, read chunk by chunk and given up on as soon as it passes `limit` bytes
/// (a declared Content-Length over the limit is refused before reading): a server, chosen by
/// whoever sets the session's base URL, must not be able to fill the backend's memory.
pub(crate) async fn read_limited(mut resp: reqwest::Response, url: &str, limit: usize) -> Result<Vec<u8>, ReadError> {
    let too_large = || ReadError::TooLarge { url: url.to_string(), limit };
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut body = Vec::with_capacity(resp.content_length().map_or(8 * 1024, |n| n as usize));
    while let Some(chunk) = resp.chunk().await.map_err(ReadError::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn scrub_error(e: LlmError, cfg: &LlmConfig) -> LlmError {
    match e {
        LlmError::Malformed { detail } => LlmError::Malformed { detail: cfg.api_key.scrub(&detail) },
        LlmError::Truncated { detail } => LlmError::Truncated { detail: cfg.api_key.scrub(&detail) },
        other => other,
    }
}

/// A transport failure (no HTTP status to speak of) as an [`LlmError`]: a timeout, a body cut
/// off mid-way, or a connection that could not be made or broke; details scrubbed of the key.
pub(crate) fn transport_error(e: &reqwest::Error, url: &str, timeout_ms: u64, key: &Secret) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout { url: url.to_string(), ms: timeout_ms }
    } else if e.is_body() || e.is_decode() {
        LlmError::Truncated { detail: key.scrub(&root_cause(e)) }
    } else {
        LlmError::Connect { url: url.to_string(), detail: key.scrub(&root_cause(e)) }
    }
}

/// The innermost cause of a reqwest error ("Connection refused (os error 111)"), which says
/// more than reqwest's own "error sending request".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Backoff with up to 25% jitter, so that concurrent callers do not retry in lockstep.
fn jittered(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|t| t.subsec_nanos()).unwrap_or(0);
    d + d.mul_f64((nanos % 1000) as f64 / 4000.0)
}

/// One finished call of [`chat_all`]: its result and how long it took.
pub type Timed = (Result<ChatResponse, LlmError>, Duration);

/// The least a response in flight beside others may be read to (a reply of a fixed shape or a
/// written answer is far smaller).
pub const MIN_SHARED_RESPONSE_BYTES: usize = 256 * 1024;

/// Send every request, at most `concurrency` in flight at once, and return the results in the
/// order of `reqs`. Each call retries on its own, as [`chat`] does. Dropping the returned
/// future (an interrupt) aborts every call still in flight. The calls in flight share the
/// response limit (`cfg.max_response_bytes`), so that many of them together cannot read more
/// than one call may.
pub async fn chat_all(http: &reqwest::Client, cfg: &LlmConfig, reqs: Vec<ChatRequest>, concurrency: usize) -> Vec<Timed> {
    use std::sync::Arc;
    let n = reqs.len();
    let concurrency = concurrency.max(1);
    let cfg = &LlmConfig {
        max_response_bytes: (cfg.max_response_bytes / concurrency).max(MIN_SHARED_RESPONSE_BYTES.min(cfg.max_response_bytes)),
        ..cfg.clone()
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut set = tokio::task::JoinSet::new();
    for (i, req) in reqs.into_iter().enumerate() {
        let (http, cfg, slots) = (http.clone(), cfg.clone(), Arc::clone(&slots));
        set.spawn(async move {
            let _slot = slots.acquire_owned().await.expect("the semaphore is never closed");
            let started = Instant::now();
            let result = chat(&http, &cfg, &req).await;
            (i, result, started.elapsed())
        });
    }
    let mut out: Vec<Option<Timed>> = (0..n).map(|_| None).collect();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((i, result, took)) => out[i] = Some((result, took)),
            // A task only ends without a value if it panicked; the panic is re-raised here.
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    out.into_iter().map(|o| o.expect("every task reported")).collect()
}
