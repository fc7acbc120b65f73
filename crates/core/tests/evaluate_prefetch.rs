//! Prefetching a batch's first LLM calls: the pipeline run through `Capture` yields exactly the
//! request it then makes through `Replay`, which serves it from the prefetched reply once and
//! sends repairs to the real host; `check_gold` tells a broken question from a wrong one.

use std::collections::VecDeque;
use std::time::Duration;

use pg_ask_core::ask::{self as pipeline, AskError, Catalog, ExecFailure, Executor, Goal, HostError, Llm, Memory, Question, Selection};
use pg_ask_core::config::AskConfig;
use pg_ask_core::evaluate::prefetch::{Capture, Prefetched, Replay};
use pg_ask_core::evaluate::{check_gold, JudgeError};
use pg_ask_core::knowledge::{Item, Kind};
use pg_ask_core::llm::{ChatRequest, ChatResponse, LlmError};
use pg_ask_core::rows::ResultSet;
use pg_ask_core::values::literals::LiteralRef;
use serde_json::json;

/// A host whose LLM answers from a queue and whose database knows one table, `t(x)`.
struct Fake {
    replies: VecDeque<String>,
    chats: Vec<(&'static str, ChatRequest)>,
    executed: Vec<String>,
    /// The questions schema selection was asked for.
    selections: Vec<String>,
    /// What the knowledge layer holds for the question's tables.
    knowledge: Vec<Item>,
}

impl Fake {
    fn new(replies: &[&str]) -> Fake {
        Fake {
            replies: replies.iter().map(|r| r.to_string()).collect(),
            chats: vec![],
            executed: vec![],
            selections: vec![],
            knowledge: vec![],
        }
    }
}

fn one_row() -> ResultSet {
    ResultSet { columns: vec!["x".into()], rows: vec![vec![json!(1)]], truncated: false, size_cut: false }
}

impl Catalog for Fake {
    fn schema_text(&mut self) -> Result<String, HostError> {
        Ok("TABLE s.t\n  x integer\n".into())
    }
    /// No selection memory (the whole schema is described), but the call is counted.
    fn select_tables(&mut self, question: &Question) -> Result<Option<Selection>, HostError> {
        self.selections.push(question.text().to_string());
        Ok(None)
    }
    fn literals_of(&mut self, _: &str, _: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
        Ok(Vec::new())
    }
}

impl Memory for Fake {
    pg_ask_core::no_memory!();
    fn knowledge(&mut self, _: &Question, _: &[String]) -> Result<Vec<Item>, HostError> {
        Ok(self.knowledge.clone())
    }
    fn resolve_relations(&mut self, names: &[Vec<String>]) -> Vec<String> {
        names.iter().map(|n| n.join(".")).collect()
    }
}

impl Llm for Fake {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.chats.push((stage, req.clone()));
        let content = self.replies.pop_front().expect("the script ran out");
        Ok(ChatResponse { content, prompt_tokens: Some(7), completion_tokens: Some(3), attempts: 1, ..Default::default() })
    }
}

impl Executor for Fake {
    fn execute(&mut self, sql: &pg_ask_core::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        self.executed.push(sql.to_string());
        if sql.sql.contains("s.t") {
            Ok(one_row())
        } else {
            Err(ExecFailure::Error { sqlstate: "42P01".into(), message: "relation does not exist".into(), detail: None, hint: None })
        }
    }
    fn execute_verified(&mut self, sql: &pg_ask_core::guard::CheckedSql, _: Option<&str>) -> Result<ResultSet, ExecFailure> {
        Executor::execute(self, sql)
    }
}

fn reply(content: &str) -> Result<ChatResponse, LlmError> {
    Ok(ChatResponse { content: content.into(), prompt_tokens: Some(100), completion_tokens: Some(5), attempts: 1, ..Default::default() })
}

fn capture(host: &mut Fake, question: &str) -> (&'static str, ChatRequest) {
    let mut capture = Capture::new(host);
    let err = pipeline::run(&mut capture, question, &AskConfig::default(), Goal::Sql).unwrap_err();
    assert!(matches!(err.0, AskError::Llm { .. }), "{:?}", err.0);
    capture.captured.expect("the pipeline made an LLM call")
}

#[test]
fn capture_stops_before_anything_runs_and_replay_serves_the_prefetched_reply() {
    let mut host = Fake::new(&[]);
    let (stage, request) = capture(&mut host, "how many x?");
    assert_eq!(stage, "generate");
    assert!(host.chats.is_empty() && host.executed.is_empty());

    let prefetched = Prefetched { request, reply: reply("SELECT x FROM s.t"), took: Duration::from_millis(200) };
    let mut replay = Replay::new(&mut host, Some(prefetched));
    let out = pipeline::run(&mut replay, "how many x?", &AskConfig::default(), Goal::Sql).unwrap();
    assert_eq!(replay.served, Some(Duration::from_millis(200)));
    assert_eq!(out.sql, "SELECT x FROM s.t");
    assert_eq!(out.trace.prompt_tokens, 100, "the prefetched call's tokens are in the trace");
    assert!(host.chats.is_empty(), "no live call");
    assert_eq!(host.executed, ["SELECT x FROM s.t"]);
}

#[test]
fn the_knowledge_an_evaluation_offers_is_in_the_captured_request_and_the_replayed_run() {
    let mut host = Fake::new(&[]);
    host.knowledge = vec![Item { id: 41, kind: Some(Kind::Instruction), body: "x counts in dozens.".into(), ..Default::default() }];
    let (_, request) = capture(&mut host, "how many x?");
    let prompt: String = request.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(prompt.contains("x counts in dozens."), "the captured first request shows the knowledge: {prompt}");

    let prefetched = Prefetched { request, reply: reply("SELECT x FROM s.t"), took: Duration::from_millis(5) };
    let mut replay = Replay::new(&mut host, Some(prefetched));
    let out = pipeline::run(&mut replay, "how many x?", &AskConfig::default(), Goal::Sql).unwrap();
    assert!(replay.served.is_some() && host.chats.is_empty(), "the replayed run made the same request: no live call");
    assert_eq!(out.trace.knowledge_offered, [41]);
}

#[test]
fn the_schema_selection_is_made_once_per_question() {
    let mut host = Fake::new(&["SELECT x FROM s.t"]);
    let mut capture = Capture::new(&mut host);
    let _ = pipeline::run(&mut capture, "how many x?", &AskConfig::default(), Goal::Sql);
    let (_, request) = capture.captured.clone().expect("a request");
    let selection = capture.selection.take().expect("the selection the pipeline made");
    assert_eq!(selection.question, "how many x?");
    assert_eq!(host.selections.len(), 1);
    let prefetched = Prefetched { request, reply: reply("SELECT x FROM s.t"), took: Duration::from_millis(200) };
    let took = selection.took;
    let mut replay = Replay::new(&mut host, Some(prefetched)).with_selection(Some(selection.clone()));
    pipeline::run(&mut replay, "how many x?", &AskConfig::default(), Goal::Sql).unwrap();
    assert_eq!(replay.selection_served, Some(took));
    assert_eq!(replay.prefetched_time(), Duration::from_millis(200) + took);
    assert_eq!(host.selections.len(), 1, "served, not made again");
    // Captured for another question: made live.
    let mut replay = Replay::new(&mut host, None).with_selection(Some(selection));
    let _ = pipeline::run(&mut replay, "another question", &AskConfig::default(), Goal::Sql);
    assert_eq!(replay.selection_served, None);
    assert_eq!(host.selections, ["how many x?", "another question"]);
}

#[test]
fn repairs_go_to_the_llm_live() {
    let mut host = Fake::new(&["SELECT x FROM s.t"]);
    let (_, request) = capture(&mut host, "q");
    let prefetched = Prefetched { request, reply: reply("SELECT x FROM nowhere"), took: Duration::ZERO };
    let mut replay = Replay::new(&mut host, Some(prefetched));
    // An edit repair, which shows the failure (`auto` asks a missing relation afresh).
    let edit = AskConfig { first_repair: pg_ask_core::config::FirstRepair::Edit, ..AskConfig::default() };
    let out = pipeline::run(&mut replay, "q", &edit, Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT x FROM s.t");
    assert_eq!(out.trace.attempts, 2);
    assert_eq!(host.chats.len(), 1);
    assert_eq!(host.chats[0].0, "repair");
    assert!(host.chats[0].1.messages.last().unwrap().content.contains("relation does not exist"));
}

#[test]
fn a_prefetched_failure_is_the_pipeline_failure_and_a_different_request_goes_live() {
    let mut host = Fake::new(&["SELECT x FROM s.t"]);
    let (_, request) = capture(&mut host, "q");
    let prefetched = Prefetched { request: request.clone(), reply: Err(LlmError::EmptyContent), took: Duration::ZERO };
    let mut replay = Replay::new(&mut host, Some(prefetched));
    let err = pipeline::run(&mut replay, "q", &AskConfig::default(), Goal::Sql).unwrap_err();
    assert_eq!(err.0, AskError::Llm { stage: "generate", source: LlmError::EmptyContent });
    // Prefetched for another question: not served, the call is made live.
    let other = Prefetched { request, reply: reply("SELECT 'wrong'"), took: Duration::ZERO };
    let mut replay = Replay::new(&mut host, Some(other));
    let out = pipeline::run(&mut replay, "another question", &AskConfig::default(), Goal::Sql).unwrap();
    assert_eq!(replay.served, None);
    assert_eq!(out.sql, "SELECT x FROM s.t");
    assert_eq!(host.chats.len(), 1);
}

#[test]
fn check_gold_tells_broken_questions_apart() {
    let mut host = Fake::new(&[]);
    assert_eq!(check_gold(&mut host, "SELECT x FROM nowhere; SELECT x FROM s.t"), Ok(()));
    match check_gold(&mut host, "SELECT x FROM nowhere; DELETE FROM s.t") {
        Err(JudgeError::GoldFailed(m)) => {
            assert!(m.contains("relation does not exist") && m.contains("refused"), "{m}")
        }
        other => panic!("{other:?}"),
    }
}
