//! The streamable HTTP transport: bearer tokens in front of the MCP service, sessions bound
//! to the token that opened them, the session limit, request bodies' deadline and size, and
//! the listener.
//!
//! Every request needs `Authorization: Bearer <token>` of the token file; any other gets 401
//! before the MCP layer sees it, so it never causes a database connection. A request naming a
//! session (`Mcp-Session-Id`: POST, GET, DELETE, notifications and cancellations alike) is
//! served only with the token that opened that session; with any other it gets the 404 of an
//! unknown session, so a session's existence is not told either. Bodies are read here, whole,
//! before anything else: over `--max-request-bytes` get 413, slower than `--body-timeout` 408.
//! A request that would open a session when `--max-sessions` are open or opening gets 503, and
//! so does one whose token already holds its share of them (`--max-sessions` divided among the
//! tokens of the file, at least one each): one token holder cannot take every place. No lock is
//! held while a body is read or a request is served: one client's slow requests do not hold up
//! another's.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::args::Limits;
use crate::server::{give_back, Handler, Principal, SessionSlot, OPEN, OPENING};
use crate::tokens::{bearer, Tokens};

type Body = BoxBody<Bytes, Infallible>;
type Mcp = StreamableHttpService<Handler, LocalSessionManager>;

/// The header a session's requests carry once `initialize` gave them an id.
const SESSION_HEADER: &str = "mcp-session-id";
/// How long a connection may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// What an unknown session and another token's session are both answered (the MCP layer's
/// words for an unknown one).
const NO_SESSION: &str = "Not Found: Session not found";

/// What every request passes through before the MCP service.
struct Gate {
    tokens: Tokens,
    live: Arc<AtomicUsize>,
    max_sessions: usize,
    /// Each session's id and the token-file line of the token that opened it, and the openings
    /// in flight per token line. The lock is held for a map operation only, never across an
    /// await.
    owners: Mutex<Owners>,
    max_request_bytes: usize,
    body_timeout: Duration,
    sessions: Arc<LocalSessionManager>,
    mcp: Mcp,
}

#[derive(Default)]
struct Owners {
    sessions: HashMap<String, Opened>,
    /// Per token line, its sessions open or opening: counted from admission, like `live`, and
    /// held by each session it opened until the session ends.
    live: HashMap<usize, Arc<AtomicUsize>>,
}

/// A session the gate saw opened: the token line that opened it and its place among the live
/// sessions, given back when the client deletes the session.
struct Opened {
    line: usize,
    state: Arc<AtomicU8>,
    token: Arc<AtomicUsize>,
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

tokio::task_local! {
    /// The place `admit` counted among the live sessions (and its token's) for the request
    /// being served: the session the request opens takes it over (the service factory runs in
    /// the request's task), so a session counts against its token even when the client drops
    /// the opening request before its answer.
    static PLACE: (Arc<AtomicU8>, Arc<AtomicUsize>);
}

/// A place among `max_sessions` and its token's share, counted as live from admission: given
/// back when the request is answered (or dropped) without opening a session.
struct Place {
    live: Arc<AtomicUsize>,
    token: Arc<AtomicUsize>,
    /// OPENING while the request holds it, OPEN once the session it opened took it over.
    state: Arc<AtomicU8>,
}

impl Drop for Place {
    fn drop(&mut self) {
        give_back(&self.state, OPENING, &self.live, Some(&self.token));
    }
}

/// A new session's count among the live ones: the place its opening request was admitted
/// with, or (opened outside the gate's admission, which does not happen) a new one.
fn session_slot(live: &Arc<AtomicUsize>) -> SessionSlot {
    let taken = PLACE.try_with(|(state, token)| SessionSlot::admitted(live.clone(), token.clone(), state.clone())).ok().flatten();
    taken.unwrap_or_else(|| SessionSlot::new(live.clone()))
}

impl Gate {
    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let presented = bearer(req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes()));
        let Some(entry) = presented.and_then(|t| self.tokens.find(t)) else {
            let mut r = plain(StatusCode::UNAUTHORIZED, "pg_ask-mcp: a valid `Authorization: Bearer <token>` is required");
            r.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer realm=\"pg_ask-mcp\""));
            return r;
        };
        let line = entry.line;
        let session = match req.headers().get(SESSION_HEADER) {
            None => None,
            Some(v) => match v.to_str().ok().filter(|id| self.owner(id) == Some(line)) {
                Some(id) => Some(id.to_owned()),
                None => {
                    if v.to_str().is_ok_and(|id| self.owner(id).is_some()) {
                        eprintln!("pg_ask-mcp: refused a {} with token line {line} on another token's session", req.method());
                    }
                    return plain(StatusCode::NOT_FOUND, NO_SESSION);
                }
            },
        };
        let (mut parts, body) = req.into_parts();
        let body = match self.read_body(&parts.headers, body).await {
            Ok(b) => b,
            Err(r) => return r,
        };
        parts.extensions.insert(Principal { line, config: entry.config.clone() });
        let req = Request::from_parts(parts, Full::new(body));
        if let Some(id) = session {
            let delete = req.method() == Method::DELETE;
            let mut r = self.mcp.handle(req).await;
            if delete && r.status().is_success() {
                let gone = self.owners.lock().unwrap_or_else(|p| p.into_inner()).sessions.remove(&id);
                // The session is closed for the client now; its worker and connection may end
                // a moment later. Its place is free at once, so the same token's next opening
                // is not refused for a session it already closed.
                if let Some(gone) = gone {
                    give_back(&gone.state, OPEN, &self.live, Some(&gone.token));
                }
                // rmcp answers 202, which clients that expect 200 or 204 log as a failure;
                // nothing is left to accept, so say 204.
                if r.status() == StatusCode::ACCEPTED {
                    *r.status_mut() = StatusCode::NO_CONTENT;
                    *r.body_mut() = Full::new(Bytes::new()).boxed();
                }
            }
            return r;
        }
        if req.method() != Method::POST {
            return self.mcp.handle(req).await;
        }
        let place = match self.admit(line) {
            Ok(place) => place,
            Err(why) => {
                eprintln!("pg_ask-mcp: refused a session to token line {line}: {}", why.trim_start_matches("pg_ask-mcp: "));
                let mut r = plain(StatusCode::SERVICE_UNAVAILABLE, &why);
                r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
                return r;
            }
        };
        let r = PLACE.scope((place.state.clone(), place.token.clone()), self.mcp.handle(req)).await;
        let opened = Opened { line, state: place.state.clone(), token: place.token.clone() };
        drop(place);
        if let Some(id) = r.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            self.opened(id.to_owned(), opened).await;
        }
        r
    }

    /// The token line that opened session `id`, if it is known.
    fn owner(&self, id: &str) -> Option<usize> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner()).sessions.get(id).map(|o| o.line)
    }

    /// Notes who opened session `id`, and forgets sessions the MCP layer closed since (idle
    /// ones), so the map holds at most the open sessions.
    async fn opened(&self, id: String, opened: Opened) {
        eprintln!("pg_ask-mcp: token line {} opened a session", opened.line);
        let alive = self.sessions.sessions.read().await;
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        owners.sessions.insert(id, opened);
        owners.sessions.retain(|id, _| alive.contains_key(id.as_str()));
    }

    /// Sessions one token may hold open or opening: `--max-sessions` divided among the tokens,
    /// at least one.
    fn share(&self) -> usize {
        (self.max_sessions / self.tokens.count().max(1)).max(1)
    }

    /// A place among `max_sessions` and among token `line`'s share for a request that may open
    /// a session, counted as live at once (so openings that arrive together cannot pass either
    /// limit), or why not.
    fn admit(&self, line: usize) -> Result<Place, String> {
        let token = self.owners.lock().unwrap_or_else(|p| p.into_inner()).live.entry(line).or_default().clone();
        let share = self.share();
        if token.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < share).then_some(n + 1)).is_err() {
            return Err(format!("pg_ask-mcp: this token holds {share} sessions, its share of --max-sessions; close one or retry later"));
        }
        let max = self.max_sessions;
        if self.live.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1)).is_err() {
            token.fetch_sub(1, Ordering::SeqCst);
            let live = self.live.load(Ordering::SeqCst);
            return Err(format!("pg_ask-mcp: {live} sessions are open, the most --max-sessions allows; close one or retry later"));
        }
        Ok(Place { live: self.live.clone(), token, state: Arc::new(AtomicU8::new(OPENING)) })
    }

    /// The whole body, within `--max-request-bytes` (413) and `--body-timeout` (408).
    async fn read_body(&self, headers: &http::HeaderMap, body: Incoming) -> Result<Bytes, Response<Body>> {
        let too_large = || {
            plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("pg_ask-mcp: the request body is over --max-request-bytes ({} bytes)", self.max_request_bytes),
            )
        };
        let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_request_bytes as u64) {
            return Err(too_large());
        }
        match tokio::time::timeout(self.body_timeout, Limited::new(body, self.max_request_bytes).collect()).await {
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(e)) if e.is::<LengthLimitError>() => Err(too_large()),
            Ok(Err(_)) => Err(plain(StatusCode::BAD_REQUEST, "pg_ask-mcp: the request body could not be read")),
            Err(_) => Err(plain(
                StatusCode::REQUEST_TIMEOUT,
                &format!("pg_ask-mcp: the request body took over --body-timeout ({} ms) to arrive", self.body_timeout.as_millis()),
            )),
        }
    }
}

/// The hosts the MCP layer accepts in `Host` headers: loopback names, the bound address, and
/// those given with `--allow-host`.
fn allowed_hosts(addr: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    if !addr.ip().is_unspecified() {
        hosts.push(addr.ip().to_string());
    }
    hosts.extend(extra.iter().cloned());
    hosts
}

/// Serves until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    tokens: Tokens,
    limits: Limits,
    extra_hosts: &[String],
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let live = Arc::new(AtomicUsize::new(0));
    let limits = Arc::new(limits);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(addr, extra_hosts))
        .with_max_request_body_bytes(limits.max_request_bytes)
        .with_cancellation_token(shutdown.child_token());
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(limits.session_idle);
    let sessions = Arc::new(manager);
    let factory = {
        let (live, limits) = (live.clone(), limits.clone());
        move || Ok(Handler::http(limits.clone(), session_slot(&live)))
    };
    let mcp = StreamableHttpService::new(factory, sessions.clone(), config);
    let gate = Arc::new(Gate {
        tokens,
        live,
        max_sessions: limits.max_sessions,
        owners: Mutex::new(Owners::default()),
        max_request_bytes: limits.max_request_bytes,
        body_timeout: limits.body_timeout,
        sessions,
        mcp,
    });
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("pg_ask-mcp: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => return Ok(()),
        };
        let gate = gate.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let gate = gate.clone();
                async move { Ok::<_, Infallible>(gate.handle(req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.as_mut().await;
                }
            }
        });
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod gate_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_include_the_bound_address() {
        let hosts = allowed_hosts("10.0.0.5:8808".parse().unwrap(), &["mcp.example.com".into()]);
        assert!(hosts.contains(&"10.0.0.5".to_owned()) && hosts.contains(&"mcp.example.com".to_owned()));
        assert!(!allowed_hosts("0.0.0.0:1".parse().unwrap(), &[]).contains(&"0.0.0.0".to_owned()));
    }
}
