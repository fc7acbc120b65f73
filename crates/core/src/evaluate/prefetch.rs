//! Many questions' first LLM calls in flight at once, without changing the pipeline.
//!
//! The pipeline ([`crate::ask::run`]) makes its LLM calls one after another, through its
//! [`Host`]. To evaluate a batch of questions with their calls concurrent, `ask.evaluate()`
//! runs each question's pipeline twice:
//!
//! 1. with a [`Capture`] host, whose [`Llm::chat`] records the request and fails at once
//!    ([`LlmError::Interrupted`]): the pipeline stops at its first call, having built exactly
//!    the request it would send (after reading the schema, before executing anything);
//! 2. the captured requests of the whole batch are sent together (the glue's `chat_many`);
//! 3. with a [`Replay`] host, which answers a request equal to the prefetched one from the
//!    prefetched reply, once, and passes every other call (repairs after an error) to the real
//!    host, live.
//!
//! The pipeline is deterministic up to its first LLM call, so the request it makes in step 3
//! equals the captured one; should it not (the schema changed in between), [`Replay`] simply
//! calls the LLM live, and the prefetched reply goes unused ([`Replay::served`] says which).
//!
//! The schema selection made before the first call (embedding the question, ranking the
//! tables) is captured too, with its time, and served to the replay of the same question, so
//! that it is computed once per question.

use std::time::{Duration, Instant};

use crate::ask::{Catalog, ExecFailure, Executor, Host, HostError, Llm, Memory, NoMemory, Question, Selection};
use crate::clarify::Ambiguity;
use crate::llm::{ChatRequest, ChatResponse, LlmError};
use crate::rows::ResultSet;
use crate::values::correct::Looked;
use crate::values::literals::LiteralRef;
use crate::verified::Candidate;

/// The schema selection a pipeline asked for, with its question and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectionMade {
    pub question: String,
    pub result: Result<Option<Selection>, HostError>,
    pub took: Duration,
}

/// A host that records the first LLM request and stops the pipeline there.
pub struct Capture<'a> {
    inner: &'a mut dyn Host,
    /// The stage and request of the first LLM call, once the pipeline has made it.
    pub captured: Option<(&'static str, ChatRequest)>,
    /// The first schema selection, if the pipeline made one.
    pub selection: Option<SelectionMade>,
}

impl<'a> Capture<'a> {
    /// Wraps `inner`, whose schema description (and nothing else) the pipeline reaches before
    /// its first call.
    pub fn new(inner: &'a mut dyn Host) -> Capture<'a> {
        Capture { inner, captured: None, selection: None }
    }
}

/// Capture reads the catalog and the memories through `inner`, as the pipeline would up to
/// its first call; it answers the LLM itself and runs nothing.
impl Catalog for Capture<'_> {
    fn schema_text(&mut self) -> Result<String, HostError> {
        self.inner.schema_text()
    }
    fn select_tables(&mut self, question: &Question) -> Result<Option<Selection>, HostError> {
        let started = Instant::now();
        let result = self.inner.select_tables(question);
        if self.selection.is_none() {
            self.selection = Some(SelectionMade { question: question.text().to_string(), result: result.clone(), took: started.elapsed() });
        }
        result
    }
    fn literals_of(&mut self, sql: &str, schema: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
        self.inner.literals_of(sql, schema)
    }
}

impl Llm for Capture<'_> {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.captured.is_none() {
            self.captured = Some((stage, req.clone()));
        }
        Err(LlmError::Interrupted)
    }
}

/// Never reached before the first call; refuses, so that nothing runs twice.
impl Executor for Capture<'_> {
    fn execute(&mut self, _sql: &crate::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        Err(ExecFailure::Refused { reason: "capturing the first LLM request only".into() })
    }
    fn execute_verified(&mut self, sql: &crate::guard::CheckedSql, _schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.execute(sql)
    }
}

impl Memory for Capture<'_> {
    /// Correction follows a generated statement, after the first call: nothing to look up.
    fn literal_evidence(&mut self, sql: &crate::guard::CheckedSql) -> Result<Vec<Looked>, HostError> {
        NoMemory.literal_evidence(sql)
    }
    fn verified(&mut self, question: &Question) -> Result<Vec<Candidate>, HostError> {
        self.inner.verified(question)
    }
    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError> {
        self.inner.stored_value(lit, text)
    }
    fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<Ambiguity>, HostError> {
        self.inner.ambiguities(question, tables)
    }
    fn named_values(&mut self, question: &str, tables: &[String]) -> Result<Vec<crate::clarify::Named>, HostError> {
        self.inner.named_values(question, tables)
    }
    /// The knowledge the first prompt shows, as the run will show it.
    fn knowledge(&mut self, question: &Question, tables: &[String]) -> Result<Vec<crate::knowledge::Item>, HostError> {
        self.inner.knowledge(question, tables)
    }
    fn resolve_relations(&mut self, names: &[Vec<String>]) -> Vec<String> {
        self.inner.resolve_relations(names)
    }
}

/// A reply fetched ahead of the pipeline, with how long the call took.
#[derive(Debug, Clone, PartialEq)]
pub struct Prefetched {
    pub request: ChatRequest,
    pub reply: Result<ChatResponse, LlmError>,
    pub took: Duration,
}

/// A host that serves one prefetched reply (and the captured schema selection) and delegates
/// everything else to `inner`.
pub struct Replay<'a> {
    inner: &'a mut dyn Host,
    prefetched: Option<Prefetched>,
    selection: Option<SelectionMade>,
    /// How long the prefetched call took, once it was served (its time is part of the
    /// question's, though the pipeline's own clock saw it answered at once).
    pub served: Option<Duration>,
    /// How long the captured selection took, once it was served (likewise).
    pub selection_served: Option<Duration>,
}

impl<'a> Replay<'a> {
    pub fn new(inner: &'a mut dyn Host, prefetched: Option<Prefetched>) -> Replay<'a> {
        Replay { inner, prefetched, selection: None, served: None, selection_served: None }
    }

    /// Serves `selection` to the pipeline's first schema selection for the same question.
    pub fn with_selection(mut self, selection: Option<SelectionMade>) -> Replay<'a> {
        self.selection = selection;
        self
    }

    /// The time the served parts took when they were made: to add to the pipeline's own.
    pub fn prefetched_time(&self) -> Duration {
        self.served.unwrap_or_default() + self.selection_served.unwrap_or_default()
    }
}

/// Replay serves what was fetched ahead and forwards every other call to `inner`.
impl Catalog for Replay<'_> {
    fn schema_text(&mut self) -> Result<String, HostError> {
        self.inner.schema_text()
    }
    fn select_tables(&mut self, question: &Question) -> Result<Option<Selection>, HostError> {
        if self.selection.as_ref().is_some_and(|s| s.question == question.text()) {
            let made = self.selection.take().expect("checked above");
            self.selection_served = Some(made.took);
            return made.result;
        }
        self.inner.select_tables(question)
    }
    fn literals_of(&mut self, sql: &str, schema: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
        self.inner.literals_of(sql, schema)
    }
}

impl Llm for Replay<'_> {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.prefetched.as_ref().is_some_and(|p| &p.request == req) {
            let p = self.prefetched.take().expect("checked above");
            self.served = Some(p.took);
            return p.reply;
        }
        self.inner.chat(stage, req)
    }
}

impl Executor for Replay<'_> {
    fn execute(&mut self, sql: &crate::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        self.inner.execute(sql)
    }
    fn execute_verified(&mut self, sql: &crate::guard::CheckedSql, schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.inner.execute_verified(sql, schema)
    }
}

impl Memory for Replay<'_> {
    fn literal_evidence(&mut self, sql: &crate::guard::CheckedSql) -> Result<Vec<Looked>, HostError> {
        self.inner.literal_evidence(sql)
    }
    fn verified(&mut self, question: &Question) -> Result<Vec<Candidate>, HostError> {
        self.inner.verified(question)
    }
    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError> {
        self.inner.stored_value(lit, text)
    }
    fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<Ambiguity>, HostError> {
        self.inner.ambiguities(question, tables)
    }
    fn named_values(&mut self, question: &str, tables: &[String]) -> Result<Vec<crate::clarify::Named>, HostError> {
        self.inner.named_values(question, tables)
    }
    fn knowledge(&mut self, question: &Question, tables: &[String]) -> Result<Vec<crate::knowledge::Item>, HostError> {
        self.inner.knowledge(question, tables)
    }
    fn resolve_relations(&mut self, names: &[Vec<String>]) -> Vec<String> {
        self.inner.resolve_relations(names)
    }
}
