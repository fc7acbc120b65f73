//! The wire formats: which path speaks which protocol, what a request's prompt is, and the
//! JSON shapes of responses and errors.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// An API endpoint the stand-in serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    OpenAiChat,
    AnthropicMessages,
    OllamaChat,
    OpenAiEmbeddings,
    OllamaEmbed,
    /// Ollama's older `/api/embeddings` (`{model, prompt}` → `{embedding}`).
    OllamaEmbeddings,
}

/// The error shape a response uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    OpenAi,
    Anthropic,
    Ollama,
    /// Unknown paths outside `/api/`: `{"type":"error","error":{"type","message"}}`, readable
    /// by both OpenAI and Anthropic clients.
    Generic,
}

/// The class of an error, mapped to each protocol's error type names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    InvalidRequest,
    Authentication,
    Permission,
    NotFound,
    RateLimit,
    Server,
    Overloaded,
}

impl ErrorKind {
    pub(crate) fn for_status(code: u16) -> ErrorKind {
        match code {
            401 => ErrorKind::Authentication,
            403 => ErrorKind::Permission,
            404 => ErrorKind::NotFound,
            429 => ErrorKind::RateLimit,
            529 => ErrorKind::Overloaded,
            500..=599 => ErrorKind::Server,
            _ => ErrorKind::InvalidRequest,
        }
    }

    fn type_name(self, style: Style) -> &'static str {
        match (self, style) {
            (ErrorKind::InvalidRequest, _) => "invalid_request_error",
            (ErrorKind::Authentication, _) => "authentication_error",
            (ErrorKind::Permission, _) => "permission_error",
            (ErrorKind::NotFound, _) => "not_found_error",
            (ErrorKind::RateLimit, _) => "rate_limit_error",
            (ErrorKind::Server, Style::Anthropic) => "api_error",
            (ErrorKind::Server, _) => "server_error",
            (ErrorKind::Overloaded, _) => "overloaded_error",
        }
    }
}

impl Endpoint {
    /// The endpoint served at `path` (without query string).
    pub(crate) fn route(path: &str) -> Option<Endpoint> {
        match path {
            "/v1/chat/completions" | "/chat/completions" => Some(Endpoint::OpenAiChat),
            "/v1/messages" => Some(Endpoint::AnthropicMessages),
            "/api/chat" => Some(Endpoint::OllamaChat),
            "/v1/embeddings" | "/embeddings" => Some(Endpoint::OpenAiEmbeddings),
            "/api/embed" => Some(Endpoint::OllamaEmbed),
            "/api/embeddings" => Some(Endpoint::OllamaEmbeddings),
            _ => None,
        }
    }

    pub(crate) fn style(self) -> Style {
        match self {
            Endpoint::OpenAiChat | Endpoint::OpenAiEmbeddings => Style::OpenAi,
            Endpoint::AnthropicMessages => Style::Anthropic,
            Endpoint::OllamaChat | Endpoint::OllamaEmbed | Endpoint::OllamaEmbeddings => Style::Ollama,
        }
    }

    pub(crate) fn is_chat(self) -> bool {
        matches!(self, Endpoint::OpenAiChat | Endpoint::AnthropicMessages | Endpoint::OllamaChat)
    }
}

impl Style {
    /// The style of an unknown path.
    pub(crate) fn for_unknown_path(path: &str) -> Style {
        if path.starts_with("/api/") {
            Style::Ollama
        } else {
            Style::Generic
        }
    }
}

/// An error body in the protocol's shape.
pub(crate) fn error_body(style: Style, kind: ErrorKind, message: &str) -> Value {
    match style {
        Style::OpenAi => json!({
            "error": {"message": message, "type": kind.type_name(style), "param": null, "code": null}
        }),
        Style::Anthropic | Style::Generic => json!({
            "type": "error",
            "error": {"type": kind.type_name(style), "message": message}
        }),
        Style::Ollama => json!({ "error": message }),
    }
}

/// The text a request is matched on.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// System prompt and all messages (or all embedding inputs), joined by newlines.
    pub full: String,
    /// The last message's text (or the last embedding input).
    pub last: String,
}

impl Prompt {
    pub(crate) fn tokens(&self) -> usize {
        word_count(&self.full)
    }
}

/// Token counts are whitespace-separated words.
pub(crate) fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// The text of a message `content` (or an Anthropic `system`): a string, or a list of parts
/// whose `text` fields are joined by newlines (images and other parts are ignored).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(s) => Some(s.as_str()),
                _ => part.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The prompt of a request body for `endpoint`. Parts missing from the body are skipped.
pub(crate) fn prompt_of(endpoint: Endpoint, body: &Value) -> Prompt {
    if endpoint.is_chat() {
        let mut texts = Vec::new();
        if let Some(system) = body.get("system") {
            texts.push(content_text(system));
        }
        let messages: Vec<String> = body
            .get("messages")
            .and_then(Value::as_array)
            .map(|ms| ms.iter().map(|m| content_text(m.get("content").unwrap_or(&Value::Null))).collect())
            .unwrap_or_default();
        let last = messages.last().cloned().unwrap_or_default();
        texts.extend(messages);
        Prompt { full: texts.join("\n"), last }
    } else {
        let inputs = embedding_inputs(endpoint, body).unwrap_or_default();
        Prompt { last: inputs.last().cloned().unwrap_or_default(), full: inputs.join("\n") }
    }
}

/// A chat body's system prompt and its other messages as (role, text), in order.
pub(crate) fn turns_of(body: &Value) -> (String, Vec<(String, String)>) {
    let mut system: Vec<String> = body.get("system").map(content_text).into_iter().collect();
    let mut turns = Vec::new();
    for m in body.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user").to_owned();
        let text = content_text(m.get("content").unwrap_or(&Value::Null));
        if role == "system" {
            system.push(text);
        } else {
            turns.push((role, text));
        }
    }
    (system.join("\n"), turns)
}

/// The texts to embed, or a message saying why the body has none.
pub(crate) fn embedding_inputs(endpoint: Endpoint, body: &Value) -> Result<Vec<String>, String> {
    let field = if endpoint == Endpoint::OllamaEmbeddings { "prompt" } else { "input" };
    match body.get(field) {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_owned).ok_or_else(|| format!("stand-in: `{field}` must be a string or a list of strings"))
            })
            .collect(),
        Some(Value::Array(_)) => Err(format!("stand-in: `{field}` is an empty list")),
        _ => Err(format!("stand-in: `{field}` must be a string or a list of strings")),
    }
}

/// Checks what the real service would reject (or answer in a form the stand-in does not
/// produce, such as a stream). Returns the status, error kind and message of the rejection.
pub(crate) fn validate(endpoint: Endpoint, headers: &[(String, String)], body: &Value) -> Result<(), (u16, ErrorKind, String)> {
    let invalid = |msg: &str| Err((400, ErrorKind::InvalidRequest, format!("stand-in: {msg}")));
    let header = |name: &str| headers.iter().any(|(k, _)| k == name);

    if endpoint == Endpoint::AnthropicMessages {
        if !header("x-api-key") {
            return Err((401, ErrorKind::Authentication, "x-api-key header is required".into()));
        }
        if !header("anthropic-version") {
            return invalid("anthropic-version header is required");
        }
    }
    if !body.get("model").is_some_and(Value::is_string) {
        return invalid("`model` (a string) is required");
    }
    if endpoint.is_chat() {
        let has_messages = body.get("messages").and_then(Value::as_array).is_some_and(|ms| !ms.is_empty());
        if !has_messages {
            return invalid("`messages` must be a non-empty list");
        }
        let stream = body.get("stream");
        let streams = match endpoint {
            // Ollama streams unless told otherwise.
            Endpoint::OllamaChat => stream != Some(&Value::Bool(false)),
            _ => stream == Some(&Value::Bool(true)),
        };
        if streams {
            return invalid("only non-streaming requests are supported (send \"stream\": false)");
        }
    }
    if endpoint == Endpoint::AnthropicMessages && !body.get("max_tokens").is_some_and(Value::is_u64) {
        return invalid("`max_tokens` (an integer) is required");
    }
    if !endpoint.is_chat() {
        embedding_inputs(endpoint, body).map_err(|m| (400, ErrorKind::InvalidRequest, m))?;
    }
    Ok(())
}

/// A successful chat response of the protocol.
pub(crate) fn chat_response(endpoint: Endpoint, id: u64, model: &str, content: &str, prompt_tokens: usize) -> Value {
    let completion_tokens = word_count(content);
    match endpoint {
        Endpoint::AnthropicMessages => json!({
            "id": format!("msg_standin_{id:016}"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": content}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens}
        }),
        Endpoint::OllamaChat => json!({
            "model": model,
            "created_at": rfc3339_now(),
            "message": {"role": "assistant", "content": content},
            "done_reason": "stop",
            "done": true,
            "total_duration": 1_000_000,
            "load_duration": 0,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 500_000,
            "eval_count": completion_tokens,
            "eval_duration": 500_000
        }),
        _ => json!({
            "id": format!("chatcmpl-standin-{id}"),
            "object": "chat.completion",
            "created": unix_now(),
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": null,
                "finish_reason": "stop"
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens
            }
        }),
    }
}

/// A successful embeddings response of the protocol.
pub(crate) fn embeddings_response(endpoint: Endpoint, model: &str, vectors: Vec<Vec<f32>>, prompt_tokens: usize) -> Value {
    match endpoint {
        Endpoint::OllamaEmbed => json!({
            "model": model,
            "embeddings": vectors,
            "total_duration": 1_000_000,
            "load_duration": 0,
            "prompt_eval_count": prompt_tokens
        }),
        Endpoint::OllamaEmbeddings => json!({
            "embedding": vectors.into_iter().next().unwrap_or_default()
        }),
        _ => json!({
            "object": "list",
            "data": vectors
                .into_iter()
                .enumerate()
                .map(|(index, embedding)| json!({"object": "embedding", "index": index, "embedding": embedding}))
                .collect::<Vec<_>>(),
            "model": model,
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
        }),
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// The current UTC time as Ollama writes it: `2024-01-01T12:34:56.123456789Z`.
fn rfc3339_now() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    rfc3339(now.as_secs(), now.subsec_nanos())
}

fn rfc3339(secs: u64, nanos: u32) -> String {
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{nanos:09}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Year, month, day of a count of days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Decodes a request body as every endpoint the stand-in serves would: route, validation,
/// prompt, turns and embedding inputs. Returns how many endpoints accepted it. For the fuzz
/// target of the protocol decoders.
#[doc(hidden)]
pub fn decode_request(path: &str, headers: &[(String, String)], body: &[u8]) -> usize {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return 0;
    };
    let endpoints = [
        Endpoint::OpenAiChat,
        Endpoint::AnthropicMessages,
        Endpoint::OllamaChat,
        Endpoint::OpenAiEmbeddings,
        Endpoint::OllamaEmbed,
        Endpoint::OllamaEmbeddings,
    ];
    let _ = Endpoint::route(path).map(Endpoint::style).unwrap_or_else(|| Style::for_unknown_path(path));
    let mut accepted = 0;
    for endpoint in endpoints {
        let prompt = prompt_of(endpoint, &body);
        let _ = prompt.tokens();
        if endpoint.is_chat() {
            let (system, turns) = turns_of(&body);
            let _ = crate::oracle::parse_prompt(&system, &turns);
        }
        if validate(endpoint, headers, &body).is_ok() {
            accepted += 1;
        }
    }
    accepted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(rfc3339(1_704_067_200 + 3661, 5), "2024-01-01T01:01:01.000000005Z");
        assert_eq!(rfc3339(951_782_400, 0), "2000-02-29T00:00:00.000000000Z");
        assert_eq!(rfc3339(4_107_456_000, 0), "2100-02-28T00:00:00.000000000Z");
    }

    #[test]
    fn prompts_join_system_and_all_messages() {
        let anthropic = json!({
            "system": [{"type": "text", "text": "You write SQL."}],
            "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "user", "content": "how many cities?"}
            ]
        });
        let p = prompt_of(Endpoint::AnthropicMessages, &anthropic);
        assert_eq!(p.full, "You write SQL.\nfirst\na\nb\nhow many cities?");
        assert_eq!(p.last, "how many cities?");
        assert_eq!(p.tokens(), 9);

        let embed = json!({"input": ["x y", "z"]});
        let p = prompt_of(Endpoint::OpenAiEmbeddings, &embed);
        assert_eq!((p.full.as_str(), p.last.as_str()), ("x y\nz", "z"));
    }

    #[test]
    fn validation_rejects_what_the_services_reject() {
        let ok = json!({"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": false, "max_tokens": 5});
        let headers = vec![("x-api-key".to_owned(), "k".to_owned()), ("anthropic-version".to_owned(), "2023-06-01".to_owned())];
        for endpoint in [Endpoint::OpenAiChat, Endpoint::AnthropicMessages, Endpoint::OllamaChat] {
            assert_eq!(validate(endpoint, &headers, &ok), Ok(()), "{endpoint:?}");
        }
        let no_stream_flag = json!({"model": "m", "messages": [{"role": "user", "content": "q"}]});
        assert!(validate(Endpoint::OllamaChat, &[], &no_stream_flag).is_err());
        assert_eq!(validate(Endpoint::OpenAiChat, &[], &no_stream_flag), Ok(()));
        let err = validate(Endpoint::AnthropicMessages, &[], &ok).unwrap_err();
        assert_eq!((err.0, err.1), (401, ErrorKind::Authentication));
        assert!(validate(Endpoint::OpenAiEmbeddings, &[], &json!({"model": "m", "input": [1, 2]})).is_err());
        assert!(validate(Endpoint::OllamaEmbeddings, &[], &json!({"model": "m", "prompt": "p"})).is_ok());
    }
}
