//! The HTTP side: accepting requests, one thread per request, and answering them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};

use crate::embed::pseudo_embedding;
use crate::http::{Request, Response};
use crate::protocol::{self, Endpoint, ErrorKind, Prompt, Style};
use crate::script::{Choice, Reply, Script, ScriptState};
use crate::{lock, Recorded};

/// How long a `Reply::Hang` holds a request when the server is not shut down.
const HANG_LIMIT: Duration = Duration::from_secs(600);

/// State shared by the handle and the connection threads.
pub(crate) struct Shared {
    script: Mutex<ScriptState>,
    requests: Mutex<Vec<Recorded>>,
    stopping: Mutex<bool>,
    stop_signal: Condvar,
    embedding_dim: AtomicUsize,
    next_id: AtomicU64,
}

impl Shared {
    pub(crate) fn new(script: Script, embedding_dim: usize) -> Shared {
        Shared {
            script: Mutex::new(ScriptState::new(script)),
            requests: Mutex::new(Vec::new()),
            stopping: Mutex::new(false),
            stop_signal: Condvar::new(),
            embedding_dim: AtomicUsize::new(embedding_dim),
            next_id: AtomicU64::new(1),
        }
    }

    pub(crate) fn set_script(&self, script: Script) {
        *lock(&self.script) = ScriptState::new(script);
    }

    pub(crate) fn requests(&self) -> Vec<Recorded> {
        lock(&self.requests).clone()
    }

    pub(crate) fn clear_requests(&self) {
        lock(&self.requests).clear();
    }

    pub(crate) fn set_embedding_dim(&self, dim: usize) {
        self.embedding_dim.store(dim.max(1), Ordering::Relaxed);
    }

    /// Tells every waiting (hung or delayed) request that the server is shutting down.
    pub(crate) fn stop(&self) {
        *lock(&self.stopping) = true;
        self.stop_signal.notify_all();
    }

    /// Sleeps for `duration` or until the server shuts down, whichever comes first.
    fn sleep_unless_stopped(&self, duration: Duration) {
        let stopping = lock(&self.stopping);
        let _ = self.stop_signal.wait_timeout_while(stopping, duration, |stopping| !*stopping).unwrap_or_else(PoisonError::into_inner);
    }
}

/// A response to send.
struct Out {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    retry_after: Option<u64>,
}

impl Out {
    fn json(status: u16, body: &Value) -> Out {
        Out { status, content_type: "application/json", body: body.to_string().into_bytes(), retry_after: None }
    }

    fn error(status: u16, style: Style, kind: ErrorKind, message: &str) -> Out {
        Out::json(status, &protocol::error_body(style, kind, message))
    }

    fn response(self) -> Response {
        let headers = [Some(("Content-Type", self.content_type.to_owned())), self.retry_after.map(|s| ("Retry-After", s.to_string()))];
        Response { status: self.status, headers: headers.into_iter().flatten().collect(), body: self.body }
    }
}

/// What to do with a request once it has been read.
enum Action {
    Respond(Out),
    /// Hold the request until shutdown (or [`HANG_LIMIT`]), then answer 503 in this style.
    Hang(Style),
}

/// Answers one request. Runs on its connection's thread.
pub(crate) fn handle(shared: &Shared, request: Request) -> Response {
    let target = request.target.as_str();
    let path = target.split(['?', '#']).next().unwrap_or(target).to_owned();
    let text = String::from_utf8_lossy(&request.body);
    let method = request.method.as_str();

    let action = match path.strip_prefix("/_standin/") {
        Some(command) => Action::Respond(control(shared, method, command, &text)),
        None => api(shared, method, path, request.headers.clone(), &text),
    };
    match action {
        Action::Respond(out) => out.response(),
        Action::Hang(style) => {
            shared.sleep_unless_stopped(HANG_LIMIT);
            let message = "stand-in: a hung request was released (server shut down or time limit)";
            Out::error(503, style, ErrorKind::Overloaded, message).response()
        }
    }
}

/// The `/_standin/...` control endpoints.
fn control(shared: &Shared, method: &str, command: &str, body: &str) -> Out {
    let reply = |status: u16, value: Value| Out::json(status, &value);
    match (method, command) {
        ("POST", "script") => match Script::from_json(body) {
            Ok(script) => {
                let rules = script.rules.len();
                shared.set_script(script);
                reply(200, json!({"ok": true, "rules": rules}))
            }
            Err(e) => reply(400, json!({"error": e})),
        },
        ("GET", "requests") => match serde_json::to_value(shared.requests()) {
            Ok(list) => reply(200, list),
            Err(e) => reply(500, json!({"error": e.to_string()})),
        },
        ("POST", "clear") => {
            shared.clear_requests();
            reply(200, json!({"ok": true}))
        }
        (_, "script" | "requests" | "clear") => reply(405, json!({"error": format!("method {method} not allowed here")})),
        _ => reply(404, json!({"error": format!("unknown control endpoint /_standin/{command}")})),
    }
}

/// The LLM API endpoints: record the request, then answer it as the script says.
fn api(shared: &Shared, method: &str, path: String, headers: Vec<(String, String)>, text: &str) -> Action {
    let endpoint = Endpoint::route(&path);
    let parsed: Result<Value, _> = if text.trim().is_empty() { Ok(Value::Null) } else { serde_json::from_str(text) };
    let body = parsed.as_ref().cloned().unwrap_or_else(|_| Value::String(text.to_owned()));
    let prompt = endpoint.map(|e| protocol::prompt_of(e, &body)).unwrap_or_default();

    lock(&shared.requests).push(Recorded { path: path.clone(), headers: headers.clone(), body: body.clone(), prompt: prompt.full.clone() });

    let Some(endpoint) = endpoint else {
        let style = Style::for_unknown_path(&path);
        let message = format!("stand-in: no endpoint {path}");
        return Action::Respond(Out::error(404, style, ErrorKind::NotFound, &message));
    };
    let style = endpoint.style();
    if method != "POST" {
        let message = format!("stand-in: {path} accepts POST, not {method}");
        return Action::Respond(Out::error(405, style, ErrorKind::InvalidRequest, &message));
    }
    if let Err(e) = parsed {
        let message = format!("stand-in: the request body is not JSON: {e}");
        return Action::Respond(Out::error(400, style, ErrorKind::InvalidRequest, &message));
    }
    if let Err((status, kind, message)) = protocol::validate(endpoint, &headers, &body) {
        return Action::Respond(Out::error(status, style, kind, &message));
    }
    let model = body.get("model").and_then(Value::as_str).unwrap_or_default();

    if !endpoint.is_chat() {
        return Action::Respond(embed(shared, endpoint, model, &body, &prompt));
    }

    let fields: Vec<&str> = body.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    let choice = lock(&shared.script).choose(&prompt.full, &prompt.last, &fields);
    let (reply, delay_ms) = match choice {
        Choice::Reply { reply, delay_ms } => (reply, delay_ms),
        Choice::NoMatch => {
            let head: String = prompt.last.chars().take(200).collect();
            let message = format!("stand-in: no rule matched; last message begins: {head}");
            return Action::Respond(Out::error(500, style, ErrorKind::Server, &message));
        }
    };
    if delay_ms > 0 {
        shared.sleep_unless_stopped(Duration::from_millis(delay_ms));
    }

    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let success = |content: &str| protocol::chat_response(endpoint, id, model, content, prompt.tokens());
    Action::Respond(match reply {
        Reply::Text(content) => Out::json(200, &success(&content.replace("{{last}}", &prompt.last))),
        Reply::Empty => Out::json(200, &success("")),
        Reply::Oracle(spec) => {
            let (system, turns) = protocol::turns_of(&body);
            match crate::oracle::answer(&spec, &system, &turns) {
                Ok(content) => Out::json(200, &success(&content)),
                Err(message) => Out::error(500, style, ErrorKind::Server, &format!("stand-in oracle: {message}")),
            }
        }
        Reply::Hang => return Action::Hang(style),
        Reply::Status { code, retry_after, body } => status_reply(style, code, retry_after, body),
        Reply::Malformed => Out {
            status: 200,
            content_type: "application/json",
            body: b"stand-in: this body is not JSON {\"choices\": [".to_vec(),
            retry_after: None,
        },
        Reply::Truncated => {
            let full = success("SELECT 'stand-in truncated reply'").to_string();
            let mut cut = full.len() / 2;
            while !full.is_char_boundary(cut) {
                cut -= 1;
            }
            Out { status: 200, content_type: "application/json", body: full.as_bytes()[..cut].to_vec(), retry_after: None }
        }
    })
}

/// A scripted HTTP error.
fn status_reply(style: Style, code: u16, retry_after: Option<u64>, body: String) -> Out {
    let mut out = if body.is_empty() {
        let message = format!("stand-in: scripted status {code}");
        Out::error(code, style, ErrorKind::for_status(code), &message)
    } else {
        let is_json = serde_json::from_str::<Value>(&body).is_ok();
        Out {
            status: code,
            content_type: if is_json { "application/json" } else { "text/plain; charset=utf-8" },
            body: body.into_bytes(),
            retry_after: None,
        }
    };
    out.retry_after = retry_after;
    out
}

/// An embeddings request: deterministic vectors of the configured (or requested) dimension.
fn embed(shared: &Shared, endpoint: Endpoint, model: &str, body: &Value, prompt: &Prompt) -> Out {
    let inputs = match protocol::embedding_inputs(endpoint, body) {
        Ok(inputs) => inputs,
        Err(message) => return Out::error(400, endpoint.style(), ErrorKind::InvalidRequest, &message),
    };
    let requested =
        body.get("dimensions").and_then(Value::as_u64).and_then(|d| usize::try_from(d).ok()).filter(|d| (1..=65_536).contains(d));
    let dim = requested.unwrap_or_else(|| shared.embedding_dim.load(Ordering::Relaxed));
    let vectors = inputs.iter().map(|t| pseudo_embedding(t, dim)).collect();
    Out::json(200, &protocol::embeddings_response(endpoint, model, vectors, prompt.tokens()))
}
