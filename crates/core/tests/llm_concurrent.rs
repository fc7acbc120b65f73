//! Many chat calls at once against the stand-in over real HTTP: order kept, concurrency
//! bounded, failures reported per call.

use std::time::{Duration, Instant};

mod common;

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_core::config::LlmConfig;
use pg_ask_core::llm::{chat_all, ChatRequest, LlmError, Runner};

fn cfg(url: String) -> LlmConfig {
    common::llm_config(&url)
}

#[test]
fn answers_come_back_in_request_order_and_overlap() {
    let mut script = Script::default();
    for i in 0..6 {
        script = script.rule(Rule::new(&[&format!("question {i}")], Reply::text(format!("answer {i}"))).delay(200));
    }
    let s = StandIn::start(script).unwrap();
    let runner = Runner::new().unwrap();
    let reqs: Vec<ChatRequest> = (0..6).map(|i| ChatRequest::new("sys", format!("question {i}"))).collect();

    let started = Instant::now();
    let out = runner.block_on(chat_all(runner.http(), &cfg(s.url()), reqs.clone(), 3), &|| false).unwrap();
    let took = started.elapsed();
    let texts: Vec<String> = out.iter().map(|(r, _)| r.as_ref().unwrap().content.clone()).collect();
    assert_eq!(texts, (0..6).map(|i| format!("answer {i}")).collect::<Vec<_>>());
    assert!(out.iter().all(|(_, d)| *d >= Duration::from_millis(190)));
    // Two waves of three: about 400 ms, far from the 1.2 s of one at a time.
    assert!(took < Duration::from_millis(1000), "took {took:?}");

    // One at a time really is one at a time.
    let started = Instant::now();
    let _ = runner.block_on(chat_all(runner.http(), &cfg(s.url()), reqs, 1), &|| false).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(1150), "took {:?}", started.elapsed());
}

#[test]
fn a_failing_call_fails_alone() {
    let script = Script::default().rule(Rule::new(&["bad"], Reply::Malformed)).or_else(Reply::text("fine"));
    let s = StandIn::start(script).unwrap();
    let runner = Runner::new().unwrap();
    let reqs = vec![ChatRequest::new("s", "good one"), ChatRequest::new("s", "bad one"), ChatRequest::new("s", "good two")];
    let out = runner.block_on(chat_all(runner.http(), &cfg(s.url()), reqs, 8), &|| false).unwrap();
    assert_eq!(out[0].0.as_ref().unwrap().content, "fine");
    assert!(matches!(out[1].0, Err(LlmError::Malformed { .. })), "{:?}", out[1].0);
    assert_eq!(out[2].0.as_ref().unwrap().content, "fine");
}

#[test]
fn an_interrupt_abandons_every_call() {
    let s = StandIn::start(Script::default().or_else(Reply::Hang)).unwrap();
    let runner = Runner::new().unwrap();
    let reqs: Vec<ChatRequest> = (0..4).map(|i| ChatRequest::new("s", format!("q{i}"))).collect();
    let started = Instant::now();
    let out = runner.block_on(chat_all(runner.http(), &cfg(s.url()), reqs, 4), &|| started.elapsed() > Duration::from_millis(150));
    assert!(out.is_err());
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn a_retry_that_runs_into_the_deadline_reports_the_servers_refusal() {
    // Every answer is a 500 after 450 ms: the second attempt starts at about 650-700 ms and
    // cannot finish before the 1 s deadline. The call failed because the server refused it.
    let s = StandIn::start(Script::default().or_else(Reply::status(500)).rule(Rule::new(&["q"], Reply::status(500)).delay(450))).unwrap();
    let runner = Runner::new().unwrap();
    let cfg = LlmConfig { request_timeout: Duration::from_millis(1000), ..cfg(s.url()) };
    let out = runner.block_on(pg_ask_core::llm::chat(runner.http(), &cfg, &ChatRequest::new("sys", "q")), &|| false).unwrap();
    assert!(matches!(out, Err(LlmError::Http { status: 500, .. })), "{out:?}");
    assert!(s.requests().len() >= 2, "it was retried");
}
