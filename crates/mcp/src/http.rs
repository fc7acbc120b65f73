//! The streamable HTTP transport: bearer tokens in front of the MCP service, the session
//! limit, and the listener.
//!
//! Every request needs `Authorization: Bearer <token>` of the token file; any other gets 401
//! before the MCP layer sees it, so it never causes a database connection. A request that
//! would open a session when `--max-sessions` are open gets 503. Bodies over
//! `--max-request-bytes` get 413 (the MCP layer enforces it while reading the body).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::args::Limits;
use crate::server::{Handler, Principal, SessionSlot};
use crate::tokens::{bearer, Tokens};

type Body = BoxBody<Bytes, Infallible>;
type Mcp = StreamableHttpService<Handler, LocalSessionManager>;

/// The header a session's requests carry once `initialize` gave them an id.
const SESSION_HEADER: &str = "mcp-session-id";
/// How long a request that opens a session may take to arrive and be answered.
const OPENING_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// What every request passes through before the MCP service.
struct Gate {
    tokens: Tokens,
    live: Arc<AtomicUsize>,
    max_sessions: usize,
    /// Held while a request that may open a session is served, so the count it checked is
    /// the count it leaves (sessions open one at a time; calls in sessions are not held).
    opening: tokio::sync::Mutex<()>,
    mcp: Mcp,
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

impl Gate {
    async fn handle(self: Arc<Self>, mut req: Request<Incoming>) -> Response<Body> {
        let presented = bearer(req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes()));
        let Some(entry) = presented.and_then(|t| self.tokens.find(t)) else {
            let mut r = plain(StatusCode::UNAUTHORIZED, "pg_ask-mcp: a valid `Authorization: Bearer <token>` is required");
            r.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer realm=\"pg_ask-mcp\""));
            return r;
        };
        req.extensions_mut().insert(Principal { line: entry.line, config: entry.config.clone() });
        if req.method() == Method::DELETE {
            // A session ended: rmcp answers 202, which clients that expect 200 or 204 log as a
            // failure; nothing is left to accept, so say 204.
            let mut r = self.forward(req).await;
            if r.status() == StatusCode::ACCEPTED {
                *r.status_mut() = StatusCode::NO_CONTENT;
                *r.body_mut() = Full::new(Bytes::new()).boxed();
            }
            return r;
        }
        let opens_session = req.method() == Method::POST && !req.headers().contains_key(SESSION_HEADER);
        if !opens_session {
            return self.forward(req).await;
        }
        let _opening = self.opening.lock().await;
        let live = self.live.load(Ordering::SeqCst);
        if live >= self.max_sessions {
            let mut r = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("pg_ask-mcp: {live} sessions are open, the most --max-sessions allows; close one or retry later"),
            );
            r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
            return r;
        }
        // A client that sends its body slowly would hold every other session's opening.
        match tokio::time::timeout(OPENING_TIMEOUT, self.forward(req)).await {
            Ok(r) => r,
            Err(_) => plain(StatusCode::REQUEST_TIMEOUT, "pg_ask-mcp: the request that opens a session took too long to arrive"),
        }
    }

    async fn forward(&self, req: Request<Incoming>) -> Response<Body> {
        use hyper::service::Service as _;
        match hyper_util::service::TowerToHyperService::new(self.mcp.clone()).call(req).await {
            Ok(r) => r,
            Err(never) => match never {},
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
    let factory = {
        let (live, limits) = (live.clone(), limits.clone());
        move || Ok(Handler::http(limits.clone(), SessionSlot::new(live.clone())))
    };
    let mcp = StreamableHttpService::new(factory, Arc::new(manager), config);
    let gate = Arc::new(Gate { tokens, live, max_sessions: limits.max_sessions, opening: tokio::sync::Mutex::new(()), mcp });
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
mod tests {
    use super::*;

    #[test]
    fn hosts_include_the_bound_address() {
        let hosts = allowed_hosts("10.0.0.5:8808".parse().unwrap(), &["mcp.example.com".into()]);
        assert!(hosts.contains(&"10.0.0.5".to_owned()) && hosts.contains(&"mcp.example.com".to_owned()));
        assert!(!allowed_hosts("0.0.0.0:1".parse().unwrap(), &[]).contains(&"0.0.0.0".to_owned()));
    }
}
