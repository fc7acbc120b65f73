//! HTTP/1.1 over TCP: one thread per connection, kept alive between requests.
//!
//! A client with a connection pool opens several connections at once and keeps them open
//! between requests, so every connection has a thread of its own for as long as it is open:
//! no connection ever waits for another to close. Request bodies come with `Content-Length`
//! or chunked (`Expect: 100-continue` is honoured); responses always carry `Content-Length`.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::lock;

/// The request line and headers together may not be longer than this.
const MAX_HEAD: usize = 64 * 1024;
/// Nor may a request body.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A request as read from the wire.
pub(crate) struct Request {
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// Header names in lower case, values trimmed, in the order sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The client asked to close the connection after this request (or spoke HTTP/1.0
    /// without asking to keep it open).
    close: bool,
    http10: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// A response to write.
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// Answers requests; runs on the connection's thread.
pub(crate) type Handler = dyn Fn(Request) -> Response + Send + Sync;

/// Why a request could not be read.
enum ReadError {
    /// The connection ended (or failed) between requests or in the middle of one: no one to
    /// answer.
    Gone,
    /// The request is malformed: answer with this status and close.
    Bad(u16, &'static str),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> ReadError {
        ReadError::Gone
    }
}

/// The open connections, so that stopping can end the idle ones and wait for the rest.
#[derive(Default)]
struct Connections {
    open: Mutex<HashMap<u64, TcpStream>>,
    closed: Condvar,
    next: AtomicU64,
}

impl Connections {
    fn add(&self, stream: &TcpStream) -> Option<u64> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let clone = stream.try_clone().ok()?;
        lock(&self.open).insert(id, clone);
        Some(id)
    }

    fn remove(&self, id: u64) {
        let mut open = lock(&self.open);
        open.remove(&id);
        if open.is_empty() {
            self.closed.notify_all();
        }
    }

    /// Stops reading on every open connection: a connection waiting for its next request
    /// ends; one whose request is being answered still writes its response, then ends.
    fn stop_reading(&self) {
        for stream in lock(&self.open).values() {
            let _ = stream.shutdown(Shutdown::Read);
        }
    }

    /// Waits until every connection has ended, or `timeout` passes.
    fn wait_closed(&self, timeout: Duration) -> bool {
        let open = lock(&self.open);
        let (open, _) = self.closed.wait_timeout_while(open, timeout, |open| !open.is_empty()).unwrap_or_else(PoisonError::into_inner);
        open.is_empty()
    }
}

/// A connection in the registry, removed when dropped.
struct Registered {
    connections: Arc<Connections>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.connections.remove(self.id);
    }
}

/// A listening server; [`Server::stop`] (or dropping it) ends it.
pub(crate) struct Server {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    connections: Arc<Connections>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `listener` (reachable at `addr`) on a thread of its own, each connection on
    /// another.
    pub(crate) fn start(listener: TcpListener, addr: SocketAddr, handler: Arc<Handler>) -> io::Result<Server> {
        let stopping = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Connections::default());
        let accept = {
            let (stopping, connections) = (Arc::clone(&stopping), Arc::clone(&connections));
            thread::Builder::new().name("llm-standin".into()).spawn(move || accept_loop(&listener, &stopping, &connections, &handler))?
        };
        Ok(Server { addr, stopping, connections, accept: Some(accept) })
    }

    /// Stops accepting, ends idle connections, and waits up to `grace` for the connections
    /// whose requests are being answered. Returns whether all of them ended.
    pub(crate) fn stop(&mut self, grace: Duration) -> bool {
        let Some(accept) = self.accept.take() else {
            return true;
        };
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop with a connection of our own; it sees the flag and returns,
        // dropping (closing) the listener.
        if TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok() {
            let _ = accept.join();
        }
        // Otherwise the accept loop ends (and closes the listener) at its next connection.
        self.connections.stop_reading();
        self.connections.wait_closed(grace)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

fn accept_loop(listener: &TcpListener, stopping: &AtomicBool, connections: &Arc<Connections>, handler: &Arc<Handler>) {
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            // A connection that failed before it was accepted (e.g. reset): keep listening,
            // but do not spin if the listener itself is broken.
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Some(id) = connections.add(&stream) else {
            continue;
        };
        // Leaves the registry when the thread ends, however it ends (or when no thread could
        // be started: the closure, and the guard in it, is dropped then).
        let open = Registered { connections: Arc::clone(connections), id };
        let handler = Arc::clone(handler);
        let _ = thread::Builder::new().name("llm-standin-connection".into()).spawn(move || {
            let _open = open;
            serve(stream, &*handler);
        });
    }
}

/// Answers the requests of one connection until it closes.
fn serve(stream: TcpStream, handler: &Handler) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut writer = io::BufWriter::new(write_half);
    loop {
        match read_request(&mut reader, &mut writer) {
            Ok(request) => {
                let (close, http10) = (request.close, request.http10);
                // A handler that panics (a bug) answers 500 rather than leaving the client
                // waiting.
                let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(request)));
                let Ok(mut response) = answered else {
                    let _ = write_response(&mut writer, &plain(500, "stand-in: the request handler panicked"), true);
                    return;
                };
                if http10 && !close {
                    response.headers.push(("Connection", "keep-alive".to_owned()));
                }
                if write_response(&mut writer, &response, close).is_err() || close {
                    return;
                }
            }
            Err(ReadError::Gone) => return,
            Err(ReadError::Bad(status, message)) => {
                if write_response(&mut writer, &plain(status, message), true).is_ok() {
                    // The rest of the request may still be unread: closing now would reset
                    // the connection and could lose the answer. Stop sending, and read what
                    // the client still sends for a moment.
                    let stream = reader.get_ref();
                    let _ = stream.shutdown(Shutdown::Write);
                    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                    let _ = io::copy(&mut reader.take(MAX_BODY as u64), &mut io::sink());
                }
                return;
            }
        }
    }
}

fn plain(status: u16, message: &str) -> Response {
    Response { status, headers: vec![("Content-Type", "text/plain; charset=utf-8".to_owned())], body: message.as_bytes().to_vec() }
}

/// Reads one line of the head (without its CR LF), counting it against `budget`.
fn head_line(reader: &mut impl BufRead, budget: &mut usize) -> Result<String, ReadError> {
    let mut line = Vec::new();
    let limit = u64::try_from(*budget).unwrap_or(u64::MAX);
    let n = reader.take(limit).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(ReadError::Gone);
    }
    if line.last() != Some(&b'\n') {
        return Err(if n as u64 >= limit { ReadError::Bad(431, "stand-in: request head too large") } else { ReadError::Gone });
    }
    *budget -= n;
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| ReadError::Bad(400, "stand-in: request head is not UTF-8"))
}

fn read_request(reader: &mut impl BufRead, writer: &mut impl Write) -> Result<Request, ReadError> {
    let mut budget = MAX_HEAD;
    // Empty lines before a request line are allowed (RFC 9112, 2.2).
    let mut line = head_line(reader, &mut budget)?;
    while line.is_empty() {
        line = head_line(reader, &mut budget)?;
    }
    let bad_line = ReadError::Bad(400, "stand-in: malformed request line");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad_line);
    };
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ if version.starts_with("HTTP/") => return Err(ReadError::Bad(505, "stand-in: only HTTP/1.0 and HTTP/1.1")),
        _ => return Err(bad_line),
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) || target.is_empty() {
        return Err(bad_line);
    }
    let mut headers = Vec::new();
    loop {
        let line = head_line(reader, &mut budget)?;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Bad(400, "stand-in: malformed header line"));
        };
        if name.is_empty() || name.trim() != name {
            return Err(ReadError::Bad(400, "stand-in: malformed header name"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut request = Request { method: method.to_owned(), target: target.to_owned(), headers, body: Vec::new(), close: false, http10 };
    let connection = request.header("connection").unwrap_or("").to_ascii_lowercase();
    request.close = connection.contains("close") || (http10 && !connection.contains("keep-alive"));

    let chunked = match request.header("transfer-encoding").map(str::to_ascii_lowercase) {
        None => false,
        Some(v) if v == "chunked" => true,
        Some(_) => return Err(ReadError::Bad(501, "stand-in: only the chunked transfer coding")),
    };
    let length = match request.header("content-length") {
        None => None,
        Some(v) => match v.parse::<usize>() {
            Ok(n) => Some(n),
            Err(_) => return Err(ReadError::Bad(400, "stand-in: malformed Content-Length")),
        },
    };
    if length.is_some_and(|n| n > MAX_BODY) {
        return Err(ReadError::Bad(413, "stand-in: request body too large"));
    }
    if !http10
        && (chunked || length.is_some_and(|n| n > 0))
        && request.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        writer.flush()?;
    }
    request.body = if chunked {
        read_chunked(reader)?
    } else {
        let mut body = Vec::new();
        read_exactly(reader, length.unwrap_or(0), &mut body)?;
        body
    };
    Ok(request)
}

/// A chunked body, its trailers skipped.
fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        // Each framing line has the head's limit; so do the trailers together.
        let mut budget = MAX_HEAD;
        let line = head_line(reader, &mut budget)?;
        let size = line.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size, 16) else {
            return Err(ReadError::Bad(400, "stand-in: malformed chunk size"));
        };
        if size == 0 {
            let mut trailers = MAX_HEAD;
            while !head_line(reader, &mut trailers)?.is_empty() {}
            return Ok(body);
        }
        if size > MAX_BODY - body.len() {
            return Err(ReadError::Bad(413, "stand-in: request body too large"));
        }
        read_exactly(reader, size, &mut body)?;
        let mut budget = MAX_HEAD;
        if !head_line(reader, &mut budget)?.is_empty() {
            return Err(ReadError::Bad(400, "stand-in: chunk longer than its size"));
        }
    }
}

/// Appends exactly `n` bytes from `reader` to `body`. Memory grows with the bytes that
/// arrive, not with the length a client claims: a head announcing 64 MB and sending ten bytes
/// costs ten.
fn read_exactly(reader: &mut impl Read, n: usize, body: &mut Vec<u8>) -> Result<(), ReadError> {
    let read = reader.take(n as u64).read_to_end(body)?;
    if read < n {
        return Err(ReadError::Gone);
    }
    Ok(())
}

/// What [`read_request`] makes of `bytes` sent on one connection: each request read, in
/// order, until the bytes end or one is malformed (its status then ends the list). For the
/// fuzz target of the HTTP framing.
#[doc(hidden)]
pub fn read_requests(bytes: &[u8]) -> Vec<Result<(String, String, usize, usize), u16>> {
    let mut reader = io::BufReader::with_capacity(64, bytes);
    let mut sink = io::sink();
    let mut out = Vec::new();
    loop {
        match read_request(&mut reader, &mut sink) {
            Ok(request) => {
                assert!(request.body.len() <= MAX_BODY, "a body beyond the limit was read");
                out.push(Ok((request.method, request.target, request.headers.len(), request.body.len())));
                if request.close {
                    return out;
                }
            }
            Err(ReadError::Gone) => return out,
            Err(ReadError::Bad(status, _)) => {
                out.push(Err(status));
                return out;
            }
        }
    }
}

fn write_response(writer: &mut impl Write, response: &Response, close: bool) -> io::Result<()> {
    write!(writer, "HTTP/1.1 {} {}\r\n", response.status, reason(response.status))?;
    for (name, value) in &response.headers {
        write!(writer, "{name}: {value}\r\n")?;
    }
    write!(writer, "Content-Length: {}\r\n", response.body.len())?;
    if close {
        writer.write_all(b"Connection: close\r\n")?;
    }
    writer.write_all(b"\r\n")?;
    writer.write_all(&response.body)?;
    writer.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        529 => "Overloaded",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server answering `METHOD TARGET BODY` (the body's length if long; a panic for
    /// `/panic`), and a raw connection to it.
    fn echo() -> (Server, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handler: Arc<Handler> = Arc::new(|r: Request| {
            assert!(r.target != "/panic", "a handler bug");
            let body = if r.body.len() > 64 { format!("{} bytes", r.body.len()) } else { String::from_utf8_lossy(&r.body).into_owned() };
            Response { status: 200, headers: vec![], body: format!("{} {} {body}", r.method, r.target).into_bytes() }
        });
        let server = Server::start(listener, addr, handler).unwrap();
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        (server, stream)
    }

    /// Everything the server sends until it closes the connection.
    fn rest(stream: &mut TcpStream) -> String {
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out);
        out
    }

    #[test]
    fn chunked_bodies_expect_continue_and_pipelined_requests() {
        let (_server, mut s) = echo();
        s.write_all(
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n\
              POST /b HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nok\
              GET /c?q=1 HTTP/1.1\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        let out = rest(&mut s);
        let answers: Vec<_> = out.split("HTTP/1.1 ").skip(1).collect();
        assert_eq!(answers.len(), 4, "{out}");
        assert!(answers[0].starts_with("200 OK\r\n") && answers[0].ends_with("\r\n\r\nPOST /a abcde"), "{out}");
        assert_eq!(answers[1], "100 Continue\r\n\r\n");
        assert!(answers[2].ends_with("\r\n\r\nPOST /b ok"), "{out}");
        assert!(answers[3].contains("Connection: close\r\n") && answers[3].ends_with("GET /c?q=1 "), "{out}");
    }

    #[test]
    fn http10_closes_unless_asked_to_keep_alive() {
        let (_server, mut s) = echo();
        s.write_all(b"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /y HTTP/1.0\r\n\r\nGET /z HTTP/1.0\r\n\r\n").unwrap();
        let out = rest(&mut s);
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 2, "{out}");
        assert!(out.contains("Connection: keep-alive\r\n") && out.ends_with("GET /y "), "{out}");
    }

    #[test]
    fn malformed_requests_get_a_status_and_the_connection_closes() {
        for (request, status) in [
            (&b"NONSENSE\r\n\r\n"[..], "400"),
            (b"GET / HTTP/2.0\r\n\r\n", "505"),
            (b"POST / HTTP/1.1\r\nContent-Length: many\r\n\r\n", "400"),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "400"),
            (b"GET / HTTP/1.1\r\nno colon here\r\n\r\n", "400"),
        ] {
            let (_server, mut s) = echo();
            s.write_all(request).unwrap();
            let out = rest(&mut s);
            assert!(out.starts_with(&format!("HTTP/1.1 {status} ")) && out.contains("Connection: close"), "{out}");
        }
        let (_server, mut s) = echo();
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        let _ = s.write_all(huge.as_bytes());
        assert!(rest(&mut s).starts_with("HTTP/1.1 431 "));
    }

    #[test]
    fn hostile_bodies_and_handler_bugs_get_an_answer() {
        // A chunk size that would overflow the body length.
        let (_server, mut s) = echo();
        s.write_all(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\nffffffffffffffff\r\n").unwrap();
        assert!(rest(&mut s).starts_with("HTTP/1.1 413 "));
        // Many small chunks: framing is limited per line, not in total.
        let (_server, mut s) = echo();
        let mut request = b"POST /many HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        for _ in 0..14_000 {
            request.extend_from_slice(b"1\r\nx\r\n");
        }
        request.extend_from_slice(b"0\r\n\r\n");
        s.write_all(&request).unwrap();
        let out = rest(&mut s);
        assert!(out.ends_with("POST /many 14000 bytes"), "{out}");
        // Another transfer coding.
        let (_server, mut s) = echo();
        s.write_all(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").unwrap();
        assert!(rest(&mut s).starts_with("HTTP/1.1 501 "));
        // A body over the limit, partly sent: the answer arrives, not a reset.
        let (_server, mut s) = echo();
        write!(s, "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n", MAX_BODY + 1).unwrap();
        let _ = s.write_all(&vec![b'x'; 1 << 20]);
        assert!(rest(&mut s).starts_with("HTTP/1.1 413 "));
        // A handler that panics: 500, and the connection closes.
        let (mut server, mut s) = echo();
        s.write_all(b"GET /panic HTTP/1.1\r\n\r\n").unwrap();
        let out = rest(&mut s);
        assert!(out.starts_with("HTTP/1.1 500 ") && out.contains("Connection: close"), "{out}");
        assert!(server.stop(Duration::from_secs(5)), "the panicked connection stayed registered");
    }

    #[test]
    fn stopping_ends_idle_connections_and_closes_the_port() {
        let (mut server, mut s) = echo();
        s.write_all(b"GET /x HTTP/1.1\r\n\r\n").unwrap();
        let mut first = [0; 12];
        s.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        assert!(server.stop(Duration::from_secs(5)), "an idle connection kept the server");
        assert!(TcpStream::connect(server.addr).is_err(), "still listening");
    }
}
