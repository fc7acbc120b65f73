//! A kept-alive connection the server closed between two calls: the second call is sent again
//! on a new connection and answered, not failed as a connection error.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use pg_ask_core::llm::{chat, ChatRequest, LlmError, Runner};

fn cfg(port: u16) -> pg_ask_core::config::LlmConfig {
    common::llm_config(&format!("http://127.0.0.1:{port}"))
}

/// Reads one HTTP request (headers and a Content-Length body) from `r`; false at end of stream.
fn read_request(r: &mut BufReader<TcpStream>) -> bool {
    let mut length = 0usize;
    let mut first = true;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return !first;
        }
        first = false;
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).unwrap();
    true
}

fn answer(s: &mut TcpStream, text: &str) {
    let body = format!(r#"{{"choices":[{{"message":{{"content":"{text}"}},"finish_reason":"stop"}}]}}"#);
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    s.flush().unwrap();
}

#[test]
fn a_connection_closed_while_kept_alive_is_made_again() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        // The first connection: one answer, kept alive; the next request on it is read and the
        // connection closed without an answer, as a server does whose keep-alive ran out.
        let (stream, _) = listener.accept().unwrap();
        let mut r = BufReader::new(stream.try_clone().unwrap());
        assert!(read_request(&mut r));
        answer(&mut stream.try_clone().unwrap(), "first");
        assert!(read_request(&mut r), "the second call went out on the kept-alive connection");
        stream.shutdown(std::net::Shutdown::Both).unwrap();
        drop(r);
        // A new connection for the call sent again.
        let (stream, _) = listener.accept().unwrap();
        let mut r = BufReader::new(stream.try_clone().unwrap());
        assert!(read_request(&mut r));
        answer(&mut stream.try_clone().unwrap(), "second");
    });
    let runner = Runner::new().unwrap();
    let c = cfg(port);
    let first = runner.block_on(chat(runner.http(), &c, &ChatRequest::new("s", "one")), &|| false).unwrap().unwrap();
    assert_eq!((first.content.as_str(), first.attempts), ("first", 1));
    let second = runner.block_on(chat(runner.http(), &c, &ChatRequest::new("s", "two")), &|| false).unwrap().unwrap();
    assert_eq!((second.content.as_str(), second.attempts), ("second", 2));
    server.join().unwrap();
}

#[test]
fn a_server_that_is_down_is_still_a_connection_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let runner = Runner::new().unwrap();
    let out = runner.block_on(chat(runner.http(), &cfg(port), &ChatRequest::new("s", "one")), &|| false).unwrap();
    assert!(matches!(out, Err(LlmError::Connect { .. })), "{out:?}");
}
