//! The HTTP gate against real loopback connections, with no database: which token may use a
//! session, that slow requests of one client do not hold up another's session opening, and
//! the request body's deadline and size. The tokens connect nowhere: `initialize`,
//! `tools/list`, GET and DELETE need no database connection.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

const ALICE: &str = "alice-token-0123456789abcdef";
const MALLORY: &str = "mallory-token-0123456789abcd";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
const CANCEL: &str = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#;

/// A server on a free loopback port, stopped when dropped.
struct Server {
    addr: SocketAddr,
    stop: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn start(limits: Limits) -> Server {
    let tokens = Tokens::parse(&format!(
        "{ALICE} host=/nonexistent/pg_ask-mcp-test port=1 user=alice dbname=shop\n\
         {MALLORY} host=/nonexistent/pg_ask-mcp-test port=1 user=mallory dbname=shop\n"
    ))
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let shutdown = stop.clone();
    tokio::spawn(async move { serve(listener, tokens, limits, &[], shutdown).await });
    Server { addr, stop }
}

/// One answered request: its status, its headers and body as text.
struct Answer {
    status: u16,
    text: String,
}

impl Answer {
    fn session(&self) -> String {
        let line = self.text.lines().find(|l| l.to_ascii_lowercase().starts_with("mcp-session-id:")).expect("no session id");
        line.split_once(':').unwrap().1.trim().to_owned()
    }
}

/// Sends one request on a connection of its own and reads the whole answer.
async fn send(addr: SocketAddr, method: &str, token: &str, session: Option<&str>, body: &str) -> Answer {
    assert!(addr.ip().is_loopback());
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "{method} / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(id) = session {
        head.push_str(&format!("Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-06-18\r\n"));
    }
    stream.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut raw)).await.expect("no answer in 30 s").unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Answer { status, text }
}

/// A client that opens a session by sending its headers and then its body one byte at a
/// time, `every` apart: bounded to loopback, to `Content-Length` bytes and to `for_at_most`.
/// Returns the status it got (0 when none came before it gave up) and when.
async fn trickle(addr: SocketAddr, every: Duration, for_at_most: Duration) -> (u16, Duration) {
    assert!(addr.ip().is_loopback(), "the trickling client talks to loopback only");
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {MALLORY}\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        INIT.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let sender = async move {
        for byte in INIT.as_bytes() {
            if started.elapsed() > for_at_most || write.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(every).await;
        }
        std::future::pending::<()>().await
    };
    let reader = async move {
        let mut raw = Vec::new();
        let _ = read.read_to_end(&mut raw).await;
        String::from_utf8_lossy(&raw).split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
    };
    tokio::select! {
        status = reader => (status, started.elapsed()),
        _ = sender => unreachable!(),
        _ = tokio::time::sleep(for_at_most) => (0, started.elapsed()),
    }
}

/// Another token's DELETE, GET, call or cancellation on a session gets the same 404 as an
/// unknown session, and leaves the session to its own token.
#[tokio::test]
async fn a_session_answers_only_the_token_that_opened_it() {
    let server = start(Limits::default()).await;
    let a = server.addr;
    let opened = send(a, "POST", ALICE, None, INIT).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let id = opened.session();
    assert_eq!(send(a, "POST", ALICE, Some(&id), INITIALIZED).await.status, 202);
    let unknown = send(a, "DELETE", MALLORY, Some("no-such-session"), "").await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    for (method, body) in [("DELETE", ""), ("GET", ""), ("POST", LIST), ("POST", CANCEL), ("POST", INITIALIZED)] {
        let r = send(a, method, MALLORY, Some(&id), body).await;
        assert_eq!(r.status, 404, "mallory's {method} {body}: {}", r.text);
        assert!(r.text.ends_with(&format!("{NO_SESSION}\n")), "{}", r.text);
        assert!(!r.text.contains("\"tools\""), "{}", r.text);
    }
    let listed = send(a, "POST", ALICE, Some(&id), LIST).await;
    assert!(listed.status == 200 && listed.text.contains("\"ask\""), "the session did not survive: {}", listed.text);
    assert_eq!(send(a, "DELETE", ALICE, Some(&id), "").await.status, 204);
    assert_eq!(send(a, "POST", ALICE, Some(&id), LIST).await.status, 404);
}

/// Three session openings that trickle their bodies (one token holder) do not stall
/// another client's `initialize`: no lock is held while a body is read.
#[tokio::test]
async fn slow_openings_do_not_hold_up_another_clients() {
    let server = start(Limits::default()).await;
    let a = server.addr;
    let slow: Vec<_> = (0..3).map(|_| tokio::spawn(trickle(a, Duration::from_millis(500), Duration::from_secs(15)))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let opened = send(a, "POST", ALICE, None, INIT).await;
    let took = started.elapsed();
    assert_eq!(opened.status, 200, "{}", opened.text);
    // The stall the old lock caused was the body deadline (10 s) for each slow opening.
    assert!(took < Duration::from_secs(2), "another client's initialize took {took:?}");
    eprintln!("initialize beside three trickling openings: {took:?}");
    for t in slow {
        t.abort();
    }
}

/// A body that trickles is cut off with 408 after --body-timeout; a body over
/// --max-request-bytes gets 413 without being read to its end.
#[tokio::test]
async fn bodies_have_a_deadline_and_a_size() {
    let limits = Limits { body_timeout: Duration::from_secs(1), max_request_bytes: 4096, ..Limits::default() };
    let server = start(limits).await;
    let (status, took) = trickle(server.addr, Duration::from_millis(100), Duration::from_secs(10)).await;
    assert_eq!(status, 408, "after {took:?}");
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(4), "408 after {took:?}");
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(5000));
    assert_eq!(send(server.addr, "POST", ALICE, None, &big).await.status, 413);
    assert_eq!(send(server.addr, "POST", ALICE, None, INIT).await.status, 200);
}

/// Openings that arrive together do not pass --max-sessions, nor a token's share of it.
#[tokio::test]
async fn concurrent_openings_keep_the_session_limit() {
    let server = start(Limits { max_sessions: 4, ..Limits::default() }).await;
    let a = server.addr;
    let opened = |token: &'static str| {
        let tries: Vec<_> = (0..6).map(|_| tokio::spawn(async move { send(a, "POST", token, None, INIT).await.status })).collect();
        async move {
            let mut statuses = Vec::new();
            for t in tries {
                statuses.push(t.await.unwrap());
            }
            assert!(statuses.iter().all(|s| *s == 200 || *s == 503), "{statuses:?}");
            statuses.iter().filter(|s| **s == 200).count()
        }
    };
    // Two tokens in the file: each may hold two of the four places, however many it asks for.
    assert_eq!(opened(MALLORY).await, 2);
    assert_eq!(opened(MALLORY).await, 0, "a token holding its share opens no more");
    assert_eq!(opened(ALICE).await, 2, "another token still finds its share free");
}

/// A session the client deleted gives its place back at once: the same token, holding its
/// whole share, opens the next one right after the DELETE's answer (a client that closes a
/// session and opens another is not told its share is taken by the session it closed).
#[tokio::test]
async fn a_deleted_session_frees_its_place_at_once() {
    let server = start(Limits { max_sessions: 2, ..Limits::default() }).await;
    let a = server.addr;
    for round in 0..30 {
        let opened = send(a, "POST", ALICE, None, INIT).await;
        assert_eq!(opened.status, 200, "round {round}: {}", opened.text);
        let id = opened.session();
        assert_eq!(send(a, "POST", ALICE, Some(&id), INITIALIZED).await.status, 202);
        assert_eq!(send(a, "POST", ALICE, Some(&id), LIST).await.status, 200);
        // The client's standing GET stream, open while it deletes the session (as the MCP
        // SDKs' clients do).
        let stream = {
            let id = id.clone();
            tokio::spawn(async move { send(a, "GET", ALICE, Some(&id), "").await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(send(a, "DELETE", ALICE, Some(&id), "").await.status, 204, "round {round}");
        let reopened = send(a, "POST", ALICE, None, INIT).await;
        assert_eq!(reopened.status, 200, "round {round}, right after the DELETE: {}", reopened.text);
        assert_eq!(send(a, "DELETE", ALICE, Some(&reopened.session()), "").await.status, 204);
        stream.abort();
    }
    // The share is one session: a second one open at once is still refused.
    let first = send(a, "POST", ALICE, None, INIT).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let second = send(a, "POST", ALICE, None, INIT).await;
    assert_eq!(second.status, 503, "{}", second.text);
    // A DELETE another token sends frees nothing.
    assert_eq!(send(a, "DELETE", MALLORY, Some(&first.session()), "").await.status, 404);
    assert_eq!(send(a, "POST", ALICE, None, INIT).await.status, 503);
}
