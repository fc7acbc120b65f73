//! The stand-in over real HTTP on loopback.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use llm_standin::{pseudo_embedding, Reply, Rule, Script, StandIn, DEFAULT_EMBEDDING_DIM};
use serde_json::{json, Value};

/// What a test looks at in a response.
#[derive(Debug)]
struct Resp {
    status: u16,
    content_type: String,
    retry_after: Option<String>,
    content_length: Option<usize>,
    text: String,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }
}

fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(timeout)).build().into()
}

fn read(result: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Resp, ureq::Error> {
    let mut response = result?;
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let content_type = header("content-type").unwrap_or_default();
    let retry_after = header("retry-after");
    let content_length = header("content-length").and_then(|v| v.parse().ok());
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string()?;
    Ok(Resp { status, content_type, retry_after, content_length, text })
}

fn try_post(agent: &ureq::Agent, url: &str, headers: &[(&str, &str)], body: &Value) -> Result<Resp, ureq::Error> {
    let mut request = agent.post(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    read(request.send_json(body))
}

fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> Resp {
    try_post(&agent(Duration::from_secs(5)), url, headers, body).expect("request succeeds")
}

fn get(url: &str) -> Resp {
    read(agent(Duration::from_secs(5)).get(url).call()).expect("request succeeds")
}

const ANTHROPIC_HEADERS: [(&str, &str); 2] = [("x-api-key", "sk-test"), ("anthropic-version", "2023-06-01")];

fn openai_chat(question: &str) -> Value {
    json!({
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You write SQL."},
            {"role": "user", "content": question}
        ],
        "temperature": 0
    })
}

/// The reply text of an OpenAI chat response.
fn openai_content(resp: &Resp) -> String {
    assert_eq!(resp.status, 200, "{}", resp.text);
    resp.json()["choices"][0]["message"]["content"].as_str().expect("content is a string").to_owned()
}

fn ask(llm: &StandIn, question: &str) -> Resp {
    post(&format!("{}/v1/chat/completions", llm.url()), &[], &openai_chat(question))
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn vector(v: &Value) -> Vec<f32> {
    v.as_array().expect("a vector").iter().map(|x| x.as_f64().expect("a number") as f32).collect()
}

#[test]
fn openai_chat_has_the_real_shape_on_both_paths() {
    let llm = StandIn::start(Script::reply_always("SELECT 1 -- {{last}}")).unwrap();
    assert_eq!(llm.url(), format!("http://127.0.0.1:{}", llm.port()));
    for path in ["/v1/chat/completions", "/chat/completions"] {
        let resp = post(&format!("{}{path}", llm.url()), &[], &openai_chat("how many cities?"));
        assert_eq!(resp.status, 200);
        assert_eq!(resp.content_type, "application/json");
        let body = resp.json();
        assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
        assert_eq!(body["object"], "chat.completion");
        assert!(body["created"].as_u64().unwrap() > 1_700_000_000);
        assert_eq!(body["model"], "gpt-test");
        assert_eq!(body["choices"][0]["index"], 0);
        assert_eq!(body["choices"][0]["message"]["role"], "assistant");
        assert_eq!(body["choices"][0]["message"]["content"], "SELECT 1 -- how many cities?");
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        // "You write SQL." + "how many cities?" = 6 words; the reply has 6 words.
        assert_eq!(body["usage"], json!({"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}));
    }
    let paths: Vec<String> = llm.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/chat/completions"]);
}

#[test]
fn anthropic_messages_have_the_real_shape_and_require_headers() {
    let llm = StandIn::start(Script::reply_always("SELECT 2")).unwrap();
    let url = format!("{}/v1/messages", llm.url());
    let request = json!({
        "model": "claude-test",
        "max_tokens": 100,
        "system": "You write SQL.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "count rows"}]}]
    });
    let body = post(&url, &ANTHROPIC_HEADERS, &request).json();
    assert!(body["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["content"], json!([{"type": "text", "text": "SELECT 2"}]));
    assert_eq!(body["stop_reason"], "end_turn");
    assert_eq!(body["usage"], json!({"input_tokens": 5, "output_tokens": 2}));

    let recorded = &llm.requests()[0];
    assert_eq!(recorded.prompt, "You write SQL.\ncount rows");
    assert_eq!(recorded.header("X-Api-Key"), Some("sk-test"));
    assert_eq!(recorded.body, request);

    let no_key = post(&url, &[ANTHROPIC_HEADERS[1]], &request);
    assert_eq!(no_key.status, 401);
    assert_eq!(no_key.json()["type"], "error");
    assert_eq!(no_key.json()["error"]["type"], "authentication_error");

    let no_version = post(&url, &[ANTHROPIC_HEADERS[0]], &request);
    assert_eq!(no_version.status, 400);
    assert_eq!(no_version.json()["error"]["type"], "invalid_request_error");

    let mut no_max = request.clone();
    no_max.as_object_mut().unwrap().remove("max_tokens");
    assert_eq!(post(&url, &ANTHROPIC_HEADERS, &no_max).status, 400);
}

#[test]
fn ollama_chat_has_the_real_shape_and_must_not_stream() {
    let llm = StandIn::start(Script::reply_always("SELECT 3")).unwrap();
    let url = format!("{}/api/chat", llm.url());
    let mut request = json!({
        "model": "llama-test",
        "messages": [{"role": "user", "content": "one two three"}],
        "stream": false,
        "options": {"temperature": 0}
    });
    let body = post(&url, &[], &request).json();
    assert_eq!(body["model"], "llama-test");
    let created = body["created_at"].as_str().unwrap();
    assert!(created.len() == 30 && created.ends_with('Z') && created.starts_with("20"), "{created}");
    assert_eq!(body["message"], json!({"role": "assistant", "content": "SELECT 3"}));
    assert_eq!(body["done"], true);
    assert_eq!(body["done_reason"], "stop");
    assert_eq!(body["prompt_eval_count"], 3);
    assert_eq!(body["eval_count"], 2);

    request.as_object_mut().unwrap().remove("stream");
    let streaming = post(&url, &[], &request);
    assert_eq!(streaming.status, 400);
    assert!(streaming.json()["error"].as_str().unwrap().contains("stream"));
}

#[test]
fn embeddings_are_deterministic_and_similar_for_similar_text() {
    let llm = StandIn::start(Script::default()).unwrap();
    let openai = format!("{}/v1/embeddings", llm.url());
    let body = post(&openai, &[], &json!({"model": "emb", "input": ["Los Angeles", "los angeles", "Chicago"]})).json();
    assert_eq!(body["object"], "list");
    assert_eq!(body["model"], "emb");
    assert_eq!(body["usage"], json!({"prompt_tokens": 5, "total_tokens": 5}));
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    for (i, item) in data.iter().enumerate() {
        assert_eq!(item["object"], "embedding");
        assert_eq!(item["index"], i);
    }
    let vs: Vec<Vec<f32>> = data.iter().map(|d| vector(&d["embedding"])).collect();
    assert_eq!(vs[0].len(), DEFAULT_EMBEDDING_DIM);
    assert_eq!(vs[0], pseudo_embedding("Los Angeles", DEFAULT_EMBEDDING_DIM));
    assert!(cosine(&vs[0], &vs[1]) > 0.999);
    assert!(cosine(&vs[0], &vs[1]) > cosine(&vs[0], &vs[2]) + 0.5);

    // A single string, the same vector again on the other path and from Ollama.
    let single = post(&format!("{}/embeddings", llm.url()), &[], &json!({"model": "emb", "input": "Los Angeles"}));
    assert_eq!(vector(&single.json()["data"][0]["embedding"]), vs[0]);
    let ollama = post(&format!("{}/api/embed", llm.url()), &[], &json!({"model": "nomic", "input": ["Los Angeles", "Chicago"]})).json();
    assert_eq!(ollama["model"], "nomic");
    assert_eq!(vector(&ollama["embeddings"][0]), vs[0]);
    assert_eq!(vector(&ollama["embeddings"][1]), vs[2]);
    let legacy = post(&format!("{}/api/embeddings", llm.url()), &[], &json!({"model": "m", "prompt": "Chicago"}));
    assert_eq!(vector(&legacy.json()["embedding"]), vs[2]);

    // The dimension: per request (OpenAI `dimensions`) and per server.
    let small = post(&openai, &[], &json!({"model": "emb", "input": "x", "dimensions": 16}));
    assert_eq!(small.json()["data"][0]["embedding"].as_array().unwrap().len(), 16);
    llm.set_embedding_dim(32);
    let body = post(&format!("{}/api/embed", llm.url()), &[], &json!({"model": "m", "input": "x"})).json();
    assert_eq!(body["embeddings"][0].as_array().unwrap().len(), 32);

    let bad = post(&openai, &[], &json!({"model": "emb", "input": [1, 2, 3]}));
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["type"], "invalid_request_error");
}

#[test]
fn unknown_paths_wrong_methods_and_bad_bodies_get_protocol_errors() {
    let llm = StandIn::start(Script::reply_always("x")).unwrap();
    let openai_style = post(&format!("{}/v1/completions", llm.url()), &[], &json!({}));
    assert_eq!(openai_style.status, 404);
    let error = &openai_style.json()["error"];
    assert!(error["message"].as_str().unwrap().contains("/v1/completions"));
    assert_eq!(error["type"], "not_found_error");

    let ollama_style = post(&format!("{}/api/generate", llm.url()), &[], &json!({}));
    assert_eq!(ollama_style.status, 404);
    assert!(ollama_style.json()["error"].is_string());

    let wrong_method = get(&format!("{}/v1/chat/completions", llm.url()));
    assert_eq!(wrong_method.status, 405);

    let not_json = read(
        agent(Duration::from_secs(5))
            .post(&format!("{}/v1/chat/completions", llm.url()))
            .content_type("application/json")
            .send("{not json"),
    )
    .unwrap();
    assert_eq!(not_json.status, 400);
    assert_eq!(not_json.json()["error"]["type"], "invalid_request_error");

    // Every one of them was recorded; the body that is not JSON as a string.
    let recorded = llm.requests();
    assert_eq!(recorded.len(), 4);
    assert_eq!(recorded[3].body, json!("{not json"));
}

#[test]
fn rules_answer_in_order_and_times_limits_them() {
    let script = Script::default()
        .rule(Rule::new(&["cities"], Reply::Status { code: 429, retry_after: Some(7), body: String::new() }).times(1))
        .rule(Rule::new(&["cities"], Reply::text("first")).times(2))
        .rule(Rule::new(&["cities", "population"], Reply::text("by population")))
        .rule(Rule::new(&["cities"], Reply::text("after")))
        .or_else(Reply::text("default"));
    let llm = StandIn::start(script.clone()).unwrap();

    let limited = ask(&llm, "cities by population");
    assert_eq!(limited.status, 429);
    assert_eq!(limited.retry_after.as_deref(), Some("7"));
    assert_eq!(limited.json()["error"]["type"], "rate_limit_error");
    let answers: Vec<String> =
        ["cities by population", "cities", "cities by population", "cities"].iter().map(|q| openai_content(&ask(&llm, q))).collect();
    assert_eq!(answers, ["first", "first", "by population", "after"]);
    assert_eq!(openai_content(&ask(&llm, "rivers")), "default");

    // A new script starts the counts again.
    llm.set_script(script);
    assert_eq!(ask(&llm, "cities").status, 429);
    assert_eq!(openai_content(&ask(&llm, "cities")), "first");
}

#[test]
fn last_contains_looks_only_at_the_last_message() {
    let script = Script::default()
        .rule(Rule::new(&["schema"], Reply::text("repaired")).last(&["ERROR"]))
        .rule(Rule::new(&["schema"], Reply::text("first try")));
    let llm = StandIn::start(script).unwrap();
    let url = format!("{}/v1/chat/completions", llm.url());
    let conversation = |messages: &[&str]| {
        let messages: Vec<Value> = messages.iter().map(|m| json!({"role": "user", "content": m})).collect();
        openai_content(&post(&url, &[], &json!({"model": "m", "messages": messages})))
    };
    assert_eq!(conversation(&["schema", "ERROR: no such column"]), "repaired");
    assert_eq!(conversation(&["schema", "ERROR: no such column", "and now?"]), "first try");
}

#[test]
fn no_matching_rule_is_a_500_quoting_the_last_message() {
    let llm = StandIn::start(Script::default().rule(Rule::new(&["never"], Reply::text("x")))).unwrap();
    let long_question = format!("which city {}", "z".repeat(300));
    let resp = ask(&llm, &long_question);
    assert_eq!(resp.status, 500);
    let message = resp.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("no rule matched"), "{message}");
    assert!(message.contains(&long_question[..200]), "{message}");
    assert!(!message.contains(&long_question[..201]), "{message}");
}

#[test]
fn delays_and_hangs_do_not_block_other_requests_and_shutdown_releases_hangs() {
    let script = Script::default()
        .rule(Rule::new(&["slow"], Reply::text("late")).delay(300))
        .rule(Rule::new(&["stuck"], Reply::Hang))
        .or_else(Reply::text("quick"));
    let llm = StandIn::start(script).unwrap();
    let url = format!("{}/v1/chat/completions", llm.url());

    // A client with a short timeout gives up on a hung request.
    let started = Instant::now();
    let timed_out = try_post(&agent(Duration::from_millis(300)), &url, &[], &openai_chat("stuck"));
    assert!(timed_out.is_err(), "a hung request was answered: {timed_out:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));

    // Meanwhile: another hung request with a patient client, and a delayed one.
    let patient = {
        let url = url.clone();
        thread::spawn(move || try_post(&agent(Duration::from_secs(10)), &url, &[], &openai_chat("stuck")))
    };
    let slow = {
        let url = url.clone();
        thread::spawn(move || {
            let started = Instant::now();
            let resp = try_post(&agent(Duration::from_secs(10)), &url, &[], &openai_chat("slow"));
            (resp, started.elapsed())
        })
    };
    thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    assert_eq!(openai_content(&ask(&llm, "fast")), "quick");
    assert!(started.elapsed() < Duration::from_millis(250), "blocked: {:?}", started.elapsed());

    let (resp, elapsed) = slow.join().unwrap();
    assert_eq!(openai_content(&resp.unwrap()), "late");
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");

    // Shutting down answers the hung request (503) and returns promptly.
    let started = Instant::now();
    llm.shutdown();
    assert!(started.elapsed() < Duration::from_secs(2), "shutdown took {:?}", started.elapsed());
    let released = patient.join().unwrap().expect("the hung request is answered at shutdown");
    assert_eq!(released.status, 503);
    assert!(released.json()["error"]["message"].as_str().unwrap().contains("hung"));
}

#[test]
fn malformed_truncated_and_empty_replies() {
    let script = Script::default()
        .rule(Rule::new(&["malformed"], Reply::Malformed))
        .rule(Rule::new(&["truncated"], Reply::Truncated))
        .rule(Rule::new(&["empty"], Reply::Empty));
    let llm = StandIn::start(script).unwrap();

    let malformed = ask(&llm, "malformed");
    assert_eq!(malformed.status, 200);
    assert_eq!(malformed.content_type, "application/json");
    assert!(serde_json::from_str::<Value>(&malformed.text).is_err());

    let truncated = ask(&llm, "truncated");
    assert_eq!(truncated.status, 200);
    assert_eq!(truncated.content_type, "application/json");
    assert_eq!(truncated.content_length, Some(truncated.text.len()));
    assert!(truncated.text.starts_with("{\"") && truncated.text.len() > 40, "{}", truncated.text);
    let err = serde_json::from_str::<Value>(&truncated.text).unwrap_err();
    assert!(err.is_eof(), "cut in the middle, not garbage: {err}");

    assert_eq!(openai_content(&ask(&llm, "empty")), "");
    let anthropic = post(
        &format!("{}/v1/messages", llm.url()),
        &ANTHROPIC_HEADERS,
        &json!({"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "empty"}]}),
    );
    assert_eq!(anthropic.json()["content"], json!([{"type": "text", "text": ""}]));
    assert_eq!(anthropic.json()["usage"]["output_tokens"], 0);
}

#[test]
fn status_replies_use_the_given_body_or_the_protocol_shape() {
    let script = Script::default()
        .rule(Rule::new(
            &["custom"],
            Reply::Status {
                code: 401,
                retry_after: None,
                body: r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#.into(),
            },
        ))
        .rule(Rule::new(&["plain"], Reply::Status { code: 502, retry_after: None, body: "Bad Gateway".into() }))
        .rule(Rule::new(&["overloaded"], Reply::status(529)));
    let llm = StandIn::start(script).unwrap();

    let custom = ask(&llm, "custom");
    assert_eq!(custom.status, 401);
    assert_eq!(custom.json()["error"]["message"], "Incorrect API key");
    assert_eq!(custom.retry_after, None);

    let plain = ask(&llm, "plain");
    assert_eq!((plain.status, plain.text.as_str()), (502, "Bad Gateway"));
    assert!(plain.content_type.starts_with("text/plain"));

    let anthropic = post(
        &format!("{}/v1/messages", llm.url()),
        &ANTHROPIC_HEADERS,
        &json!({"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "overloaded"}]}),
    );
    assert_eq!(anthropic.status, 529);
    assert_eq!(anthropic.json()["type"], "error");
    assert_eq!(anthropic.json()["error"]["type"], "overloaded_error");

    let ollama = post(
        &format!("{}/api/chat", llm.url()),
        &[],
        &json!({"model": "l", "stream": false, "messages": [{"role": "user", "content": "overloaded"}]}),
    );
    assert_eq!(ollama.status, 529);
    assert!(ollama.json()["error"].is_string());
}

#[test]
fn control_endpoints_replace_the_script_and_report_requests() {
    let llm = StandIn::start(Script::default()).unwrap();
    assert_eq!(ask(&llm, "hello").status, 500);

    let script = json!({
        "rules": [{"contains": ["hello"], "reply": {"text": "hi: {{last}}"}, "times": 1}],
        "default": "empty"
    });
    let set = read(agent(Duration::from_secs(5)).post(&format!("{}/_standin/script", llm.url())).send(script.to_string())).unwrap();
    assert_eq!(set.status, 200, "{}", set.text);
    assert_eq!(set.json()["rules"], 1);
    assert_eq!(openai_content(&ask(&llm, "hello")), "hi: hello");
    assert_eq!(openai_content(&ask(&llm, "hello")), "");

    let listed = get(&format!("{}/_standin/requests", llm.url())).json();
    let listed: Vec<llm_standin::Recorded> = serde_json::from_value(listed).unwrap();
    assert_eq!(listed, llm.requests());
    assert_eq!(listed.len(), 3, "control requests are not recorded");
    assert_eq!(listed[1].prompt, "You write SQL.\nhello");
    assert!(listed[1].header("content-type").unwrap().starts_with("application/json"));

    let cleared = post(&format!("{}/_standin/clear", llm.url()), &[], &json!({}));
    assert_eq!(cleared.status, 200);
    assert!(llm.requests().is_empty());

    let bad = post(&format!("{}/_standin/script", llm.url()), &[], &json!({"rules": [{"reply": "nonsense"}]}));
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"].as_str().unwrap().contains("invalid stand-in script"));
    assert_eq!(openai_content(&ask(&llm, "hello")), "", "a rejected script changes nothing");
    assert_eq!(get(&format!("{}/_standin/nothing", llm.url())).status, 404);
}

#[test]
fn the_binary_writes_its_port_and_serves_the_script_file() {
    let dir = std::env::temp_dir().join(format!("llm-standin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script_file = dir.join("script.json");
    let port_file = dir.join("port");
    let _ = std::fs::remove_file(&port_file);
    std::fs::write(&script_file, Script::reply_always("from the file").to_json()).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_llm-standin"))
        .args(["--port", "0", "--embedding-dim", "8", "--script"])
        .arg(&script_file)
        .arg("--port-file")
        .arg(&port_file)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = std::fs::read_to_string(&port_file).unwrap().parse().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    assert_eq!(line.trim_end(), format!("listening on {url}"));

    let answer = post(&format!("{url}/chat/completions"), &[], &openai_chat("q"));
    let embedded = post(&format!("{url}/api/embed"), &[], &json!({"model": "m", "input": "x"}));
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    assert_eq!(openai_content(&answer), "from the file");
    assert_eq!(embedded.json()["embeddings"][0].as_array().unwrap().len(), 8);

    let bad = Command::new(env!("CARGO_BIN_EXE_llm-standin")).arg("--bogus").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown option --bogus"));
}

/// Sends one OpenAI chat request over `stream` (HTTP/1.1, keep-alive) and reads the response:
/// status and body.
fn exchange(stream: &mut std::net::TcpStream, question: &str) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let body = openai_chat(question).to_string();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut length = 0;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut text = vec![0; length];
    reader.read_exact(&mut text)?;
    Ok((status, String::from_utf8_lossy(&text).into_owned()))
}

#[test]
fn many_keep_alive_connections_opened_at_once_are_all_answered() {
    // A client with a connection pool (reqwest in a backend running ask.evaluate at
    // ask.concurrency = 8) opens its connections together and keeps them open between requests.
    // Every one of them must be served while the others stay open.
    const CONNECTIONS: usize = 16;
    let script = Script::default().or_else(Reply::text("SELECT {{last}}")).rule(Rule::new(&["slow"], Reply::text("late")).delay(100));
    let llm = StandIn::start(script).unwrap();
    let addr = llm.url().trim_start_matches("http://").to_owned();
    let content = |i: usize, (status, text): (u16, String)| {
        assert_eq!(status, 200, "connection {i}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        v["choices"][0]["message"]["content"].as_str().unwrap().to_owned()
    };
    // All connections at once, each kept open after its answer...
    let clients: Vec<_> = (0..CONNECTIONS)
        .map(|i| {
            let addr = addr.clone();
            thread::spawn(move || {
                let mut stream = std::net::TcpStream::connect(&addr)?;
                stream.set_read_timeout(Some(Duration::from_secs(20)))?;
                let first = exchange(&mut stream, &format!("slow {i}"))?;
                Ok::<_, std::io::Error>((stream, first))
            })
        })
        .collect();
    let mut streams = Vec::new();
    for (i, client) in clients.into_iter().enumerate() {
        let (stream, first) = client.join().unwrap().unwrap_or_else(|e| panic!("connection {i}: {e}"));
        assert_eq!(content(i, first), "late");
        streams.push(stream);
    }
    // ... and each serves a second request.
    for (i, stream) in streams.iter_mut().enumerate() {
        let second = exchange(stream, &format!("again {i}")).unwrap_or_else(|e| panic!("connection {i}, second request: {e}"));
        assert_eq!(content(i, second), format!("SELECT again {i}"));
    }
    assert_eq!(llm.requests().len(), 2 * CONNECTIONS);
}
