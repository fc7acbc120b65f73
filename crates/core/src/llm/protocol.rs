//! Request bodies and response parsing for the OpenAI-compatible, Anthropic and Ollama
//! protocols. Pure functions: no I/O.

use serde_json::{json, Value};

use super::{ChatRequest, ChatResponse, LlmError};
use crate::config::{LlmConfig, Provider};
use crate::constrain::{decide, Constraint, Decision};

/// The Anthropic API version pg_ask speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Request headers (besides content-type) for the provider. The key goes only here.
pub fn headers(cfg: &LlmConfig) -> Vec<(&'static str, String)> {
    let mut h = Vec::new();
    match cfg.provider {
        Provider::Anthropic => {
            if !cfg.api_key.is_empty() {
                h.push(("x-api-key", cfg.api_key.expose().to_string()));
            }
            h.push(("anthropic-version", ANTHROPIC_VERSION.to_string()));
        }
        Provider::OpenAi | Provider::Ollama => {
            if !cfg.api_key.is_empty() {
                h.push(("authorization", format!("Bearer {}", cfg.api_key.expose())));
            }
        }
    }
    h
}

/// The conversation as role/content objects; the system prompt first when `inline_system`
/// (OpenAI and Ollama carry it as a message, Anthropic as a separate field).
fn messages_json(req: &ChatRequest, inline_system: bool) -> Vec<Value> {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if inline_system && !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    messages.extend(req.messages.iter().map(|m| json!({"role": m.role.as_str(), "content": m.content})));
    messages
}

/// The JSON body of a chat request, with its constraint when [`decide`] says to send it (and
/// [`constraint_sent`] says whether it did).
pub fn request_body(cfg: &LlmConfig, req: &ChatRequest) -> Value {
    let max_tokens = req.completion_limit(cfg.max_tokens);
    let temperature = req.sampling.map_or(cfg.temperature, |s| s.temperature);
    let mut body = match cfg.provider {
        Provider::OpenAi => json!({
            "model": cfg.model,
            "messages": messages_json(req, true),
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stream": false,
        }),
        Provider::Anthropic => {
            let mut body = json!({
                "model": cfg.model,
                "max_tokens": max_tokens,
                "temperature": temperature,
                "messages": messages_json(req, false),
            });
            if !req.system.is_empty() {
                body["system"] = Value::String(req.system.clone());
            }
            body
        }
        Provider::Ollama => json!({
            "model": cfg.model,
            "messages": messages_json(req, true),
            "stream": false,
            "options": {"temperature": temperature, "num_predict": max_tokens},
        }),
    };
    if !req.stop.is_empty() {
        match cfg.provider {
            Provider::OpenAi => body["stop"] = json!(req.stop),
            Provider::Anthropic => body["stop_sequences"] = json!(req.stop),
            Provider::Ollama => body["options"]["stop"] = json!(req.stop),
        }
    }
    if let Some(c) = req.constraint.as_ref().filter(|c| decide(cfg, c.kind()) == Decision::Send) {
        add_constraint(&mut body, cfg.provider, c);
    }
    if let Some(s) = req.sampling {
        match cfg.provider {
            Provider::OpenAi => body["seed"] = json!(s.seed),
            Provider::Ollama => body["options"]["seed"] = json!(s.seed),
            Provider::Anthropic => {}
        }
    }
    body
}

/// The name of the tool through which Anthropic is made to answer with a JSON value.
pub const ANSWER_TOOL: &str = "answer";

/// Put a constraint in a request body, the way the provider takes it: OpenAI-compatible
/// servers a `response_format` with the JSON schema, or (llama.cpp) a GBNF `grammar`; Ollama
/// a `format` schema; Anthropic a single tool whose input schema is the JSON schema, which the
/// model is made to call (the stop sequences do not apply to a tool call's input).
fn add_constraint(body: &mut Value, provider: Provider, c: &Constraint) {
    match (provider, c) {
        (Provider::OpenAi, Constraint::JsonSchema { name, schema }) => {
            body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": true}});
        }
        (Provider::OpenAi, Constraint::Grammar { gbnf }) => body["grammar"] = json!(gbnf),
        (Provider::Ollama, Constraint::JsonSchema { schema, .. }) => body["format"] = schema.clone(),
        (Provider::Anthropic, Constraint::JsonSchema { name, schema }) => {
            body["tools"] = json!([{"name": ANSWER_TOOL, "description": format!("Give the reply ({name}).") , "input_schema": schema}]);
            body["tool_choice"] = json!({"type": "tool", "name": ANSWER_TOOL});
        }
        // decide() never sends a grammar elsewhere.
        (Provider::Ollama | Provider::Anthropic, Constraint::Grammar { .. }) => {}
    }
}

/// Parse a JSON body, telling a cut-off body from one that is not JSON at all.
pub fn parse_json(body: &[u8]) -> Result<Value, LlmError> {
    serde_json::from_slice(body).map_err(|e| {
        let snippet = snippet(body);
        if e.is_eof() {
            LlmError::Truncated { detail: format!("{e} (body starts: {snippet})") }
        } else {
            LlmError::Malformed { detail: format!("{e} (body starts: {snippet})") }
        }
    })
}

/// The first 120 characters of a body, for error messages.
pub fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s: String = text.chars().take(120).collect();
    if text.chars().count() > 120 {
        s.push('…');
    }
    s
}

fn missing(what: &str) -> LlmError {
    LlmError::MissingField { what: what.to_string() }
}

/// Parse a successful (HTTP 2xx) response body.
pub fn parse_response(provider: Provider, body: &[u8]) -> Result<ChatResponse, LlmError> {
    let v = parse_json(body)?;
    let (content, finish_reason, prompt_tokens, completion_tokens) = match provider {
        Provider::OpenAi => {
            let choice = v.get("choices").and_then(|c| c.get(0)).ok_or_else(|| missing("choices[0]"))?;
            let content = choice.get("message").and_then(|m| m.get("content")).ok_or_else(|| missing("choices[0].message.content"))?;
            let usage = v.get("usage");
            (
                content.as_str().unwrap_or_default().to_string(),
                choice.get("finish_reason").and_then(Value::as_str).map(str::to_string),
                usage.and_then(|u| u.get("prompt_tokens")).and_then(Value::as_u64),
                usage.and_then(|u| u.get("completion_tokens")).and_then(Value::as_u64),
            )
        }
        Provider::Anthropic => {
            let blocks = v.get("content").and_then(Value::as_array).ok_or_else(|| missing("content"))?;
            // A forced tool call carries the structured reply as its input.
            let tool_input = blocks.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")).and_then(|b| b.get("input"));
            let text: String = match tool_input {
                Some(input) => input.to_string(),
                None => blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(""),
            };
            let usage = v.get("usage");
            (
                text,
                v.get("stop_reason").and_then(Value::as_str).map(str::to_string),
                usage.and_then(|u| u.get("input_tokens")).and_then(Value::as_u64),
                usage.and_then(|u| u.get("output_tokens")).and_then(Value::as_u64),
            )
        }
        Provider::Ollama => {
            let content = v.get("message").and_then(|m| m.get("content")).ok_or_else(|| missing("message.content"))?;
            (
                content.as_str().unwrap_or_default().to_string(),
                v.get("done_reason").and_then(Value::as_str).map(str::to_string),
                v.get("prompt_eval_count").and_then(Value::as_u64),
                v.get("eval_count").and_then(Value::as_u64),
            )
        }
    };
    if content.trim().is_empty() {
        return Err(LlmError::EmptyContent);
    }
    // Prompt tokens the server took from its cache of an earlier prompt with the same start:
    // OpenAI's and llama.cpp's `prompt_tokens_details.cached_tokens`, Anthropic's
    // `cache_read_input_tokens`.
    let usage = v.get("usage");
    let cached_prompt_tokens = usage
        .and_then(|u| u.get("prompt_tokens_details"))
        .and_then(|d| d.get("cached_tokens"))
        .or_else(|| usage.and_then(|u| u.get("cache_read_input_tokens")))
        .and_then(Value::as_u64);
    Ok(ChatResponse {
        content,
        cached_prompt_tokens,
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_string(),
        prompt_tokens,
        completion_tokens,
        finish_reason,
        attempts: 1,
        ..Default::default()
    })
}

/// The human-readable message of an error body in any of the three protocols' shapes
/// (`{"error":{"message":…}}`, `{"error":"…"}`, `{"message":…}`), else the body's start.
pub fn error_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let found = v
            .get("error")
            .and_then(|e| e.get("message").and_then(Value::as_str).or_else(|| e.as_str()))
            .or_else(|| v.get("message").and_then(Value::as_str));
        if let Some(m) = found {
            return m.chars().take(300).collect();
        }
    }
    snippet(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;
    use crate::secret::Secret;
    use std::time::Duration;

    fn cfg(provider: Provider) -> LlmConfig {
        LlmConfig {
            provider,
            base_url: "http://x".into(),
            model: "m1".into(),
            api_key: Secret::new("sk-abcdef"),
            request_timeout: Duration::from_secs(1),
            temperature: 0.2,
            max_tokens: 77,
            max_response_bytes: 1 << 20,
            constraints: Default::default(),
        }
    }

    fn req() -> ChatRequest {
        ChatRequest {
            system: "sys".into(),
            messages: vec![Message::user("q"), Message::assistant("a"), Message::user("q2")],
            ..Default::default()
        }
    }

    #[test]
    fn openai_body_and_headers() {
        let b = request_body(&cfg(Provider::OpenAi), &req());
        assert_eq!(b["messages"][0], json!({"role":"system","content":"sys"}));
        assert_eq!(b["messages"][2], json!({"role":"assistant","content":"a"}));
        assert_eq!(b["max_tokens"], 77);
        assert_eq!(headers(&cfg(Provider::OpenAi)), vec![("authorization", "Bearer sk-abcdef".to_string())]);
    }

    #[test]
    fn a_sampled_request_sends_its_temperature_and_seed() {
        let plain = request_body(&cfg(Provider::OpenAi), &req());
        assert_eq!(plain["temperature"], 0.2);
        assert!(plain.get("seed").is_none());
        let sampled = req().sampled(0.7, 3);
        let b = request_body(&cfg(Provider::OpenAi), &sampled);
        assert_eq!((b["temperature"].clone(), b["seed"].clone()), (json!(0.7), json!(3)));
        let b = request_body(&cfg(Provider::Ollama), &sampled);
        assert_eq!((b["options"]["temperature"].clone(), b["options"]["seed"].clone()), (json!(0.7), json!(3)));
        let b = request_body(&cfg(Provider::Anthropic), &sampled);
        assert_eq!(b["temperature"], 0.7);
        assert!(b.get("seed").is_none(), "Anthropic takes no seed");
        let key = |r: &ChatRequest| crate::llm::reuse::cache_key(&cfg(Provider::OpenAi), r);
        assert_ne!(key(&req().sampled(0.7, 2)), key(&req().sampled(0.7, 3)), "candidates are cached apart");
    }

    #[test]
    fn anthropic_body_and_headers() {
        let b = request_body(&cfg(Provider::Anthropic), &req());
        assert_eq!(b["system"], "sys");
        assert_eq!(b["messages"].as_array().unwrap().len(), 3);
        assert_eq!(b["messages"][0]["role"], "user");
        let h = headers(&cfg(Provider::Anthropic));
        assert!(h.contains(&("x-api-key", "sk-abcdef".to_string())));
        assert!(h.contains(&("anthropic-version", ANTHROPIC_VERSION.to_string())));
    }

    #[test]
    fn ollama_body() {
        let b = request_body(&cfg(Provider::Ollama), &req());
        assert_eq!(b["stream"], false);
        assert_eq!(b["options"]["num_predict"], 77);
        assert_eq!(b["messages"][0]["role"], "system");
    }

    #[test]
    fn a_stages_limit_and_stops_reach_every_protocol() {
        let r = req().limit(20).stop_at(&["\n```\n", "END"]);
        let o = request_body(&cfg(Provider::OpenAi), &r);
        assert_eq!((o["max_tokens"].clone(), o["stop"].clone()), (json!(20), json!(["\n```\n", "END"])));
        let a = request_body(&cfg(Provider::Anthropic), &r);
        assert_eq!((a["max_tokens"].clone(), a["stop_sequences"].clone()), (json!(20), json!(["\n```\n", "END"])));
        let l = request_body(&cfg(Provider::Ollama), &r);
        assert_eq!((l["options"]["num_predict"].clone(), l["options"]["stop"].clone()), (json!(20), json!(["\n```\n", "END"])));
        // The configured limit is a ceiling: a stage never asks for more.
        assert_eq!(request_body(&cfg(Provider::OpenAi), &req().limit(500))["max_tokens"], 77);
        // No stops: no field (some servers refuse an empty list).
        assert!(request_body(&cfg(Provider::OpenAi), &req()).get("stop").is_none());
        assert!(request_body(&cfg(Provider::Anthropic), &req()).get("stop_sequences").is_none());
        // At most four, OpenAI's limit.
        assert_eq!(req().stop_at(&["a", "b", "c", "d", "e"]).stop.len(), 4);
    }

    #[test]
    fn constraints_reach_each_protocol_in_its_own_field() {
        let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
        let json_req = req().json_schema("answer", schema.clone());
        let o = request_body(&cfg(Provider::OpenAi), &json_req);
        assert_eq!(o["response_format"]["type"], "json_schema");
        assert_eq!(o["response_format"]["json_schema"]["schema"], schema);
        let l = request_body(&cfg(Provider::Ollama), &json_req);
        assert_eq!(l["format"], schema);
        let a = request_body(&cfg(Provider::Anthropic), &json_req);
        assert_eq!(a["tools"][0]["input_schema"], schema);
        assert_eq!(a["tool_choice"], json!({"type": "tool", "name": ANSWER_TOOL}));
        let g = req().constrain(Constraint::Grammar { gbnf: "root ::= \"x\"".into() });
        assert_eq!(request_body(&cfg(Provider::OpenAi), &g)["grammar"], "root ::= \"x\"");
        // Anthropic and Ollama take no grammar: the request goes without it (in auto).
        assert!(request_body(&cfg(Provider::Anthropic), &g).get("grammar").is_none());
        assert!(request_body(&cfg(Provider::Ollama), &g).get("grammar").is_none());
        // Off: nothing is sent.
        let mut off = cfg(Provider::OpenAi);
        off.constraints.structured_output = crate::constrain::Mode::Off;
        assert!(request_body(&off, &json_req).get("response_format").is_none());
    }

    #[test]
    fn an_anthropic_tool_call_is_the_reply() {
        let a = br#"{"model":"c","content":[{"type":"tool_use","id":"t1","name":"answer","input":{"answer":"ROWS"}}],"stop_reason":"tool_use","usage":{"input_tokens":7,"output_tokens":3}}"#;
        let r = parse_response(Provider::Anthropic, a).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&r.content).unwrap(), json!({"answer": "ROWS"}));
    }

    #[test]
    fn parses_each_protocol() {
        let o = br#"{"model":"m","choices":[{"message":{"role":"assistant","content":"SELECT 1"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}"#;
        let r = parse_response(Provider::OpenAi, o).unwrap();
        assert_eq!(r.cached_prompt_tokens, Some(4));
        assert_eq!((r.content.as_str(), r.prompt_tokens, r.completion_tokens), ("SELECT 1", Some(5), Some(2)));
        let a = br#"{"model":"c","content":[{"type":"text","text":"SEL"},{"type":"text","text":"ECT 2"}],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":3}}"#;
        let r = parse_response(Provider::Anthropic, a).unwrap();
        assert_eq!((r.content.as_str(), r.prompt_tokens, r.finish_reason.as_deref()), ("SELECT 2", Some(7), Some("end_turn")));
        let l = br#"{"model":"l","message":{"role":"assistant","content":"SELECT 3"},"done":true,"prompt_eval_count":9,"eval_count":4}"#;
        let r = parse_response(Provider::Ollama, l).unwrap();
        assert_eq!((r.content.as_str(), r.completion_tokens), ("SELECT 3", Some(4)));
    }

    #[test]
    fn faults_are_told_apart() {
        assert!(matches!(parse_response(Provider::OpenAi, b"<html>oops"), Err(LlmError::Malformed { .. })));
        assert!(matches!(parse_response(Provider::OpenAi, br#"{"choices":[{"message":{"content":"SEL"#), Err(LlmError::Truncated { .. })));
        assert!(matches!(parse_response(Provider::OpenAi, br#"{"choices":[]}"#), Err(LlmError::MissingField { .. })));
        assert_eq!(parse_response(Provider::Ollama, br#"{"message":{"content":"  "}}"#), Err(LlmError::EmptyContent));
    }

    #[test]
    fn error_messages() {
        assert_eq!(error_message(br#"{"error":{"message":"bad model","type":"x"}}"#), "bad model");
        assert_eq!(error_message(br#"{"error":"model not found"}"#), "model not found");
        assert_eq!(error_message(b"plain"), "plain");
    }
}
