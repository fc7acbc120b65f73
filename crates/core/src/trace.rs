//! The record of one pipeline run, returned by `ask.explain()`.

use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};

use crate::constrain::schemas::Shape;
use crate::llm::{ChatResponse, LlmError};

/// Milliseconds since `t`, to the microsecond.
pub fn ms_since(t: Instant) -> f64 {
    (t.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Trace {
    pub question: String,
    /// Whether each LLM call's stage carries the prompt sent (`input.prompt`: the system
    /// prompt, the messages and the kind of constraint), for `ask.explain()` with
    /// `ask.explain_prompts` on.
    #[serde(skip)]
    pub record_prompts: bool,
    pub stages: Vec<StageTrace>,
    pub final_sql: Option<String>,
    pub attempts: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub llm_calls: u32,
    pub ms: f64,
    /// The id of this `ask()` call in `ask.questions` (what `ask.feedback` takes), when the
    /// glue recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<i64>,
    /// Where the answer came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The verified queries this call used: the one that answered, and those shown to the LLM
    /// as examples (each counted as a use in `ask.verified_uses`).
    #[serde(skip)]
    pub verified_used: Vec<i64>,
    /// The verified queries offered as templates when none answered (for a DBA who asks why).
    #[serde(skip)]
    pub templates_offered: Vec<i64>,
    /// The knowledge items shown to the model for this question (ids in `ask.knowledge`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub knowledge_offered: Vec<i64>,
    /// The knowledge items the final SQL used: written in by name, or written as their
    /// expression, value or table ([`crate::knowledge::used_by`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub knowledge_used: Vec<i64>,
    /// The knowledge items some attempt named and pg_ask wrote in as their expression.
    #[serde(skip)]
    pub knowledge_expanded: Vec<i64>,
    /// How the question was read in its conversation (asked in one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reading: Option<crate::conversation::Reading>,
    /// The verified query the answer came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified_id: Option<i64>,
    /// What the caller is told beside the answer (the glue raises each as a NOTICE).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Set when the run failed: what went wrong, as the error raised would say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// Where an answer came from (`source` in `ask.explain()` and `ask.questions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// SQL the LLM wrote.
    Llm,
    /// A verified query, as stored, without an LLM call.
    Verified,
    /// A verified query as a template, its values chosen by the LLM.
    VerifiedTemplate,
    /// The context given with the question; no SQL ran.
    Context,
    /// A question back to the user; no SQL ran.
    Clarify,
}

impl Source {
    /// As `ask.explain()` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Llm => "llm",
            Source::Verified => "verified",
            Source::VerifiedTemplate => "verified_template",
            Source::Context => "context",
            Source::Clarify => "clarify",
        }
    }

    /// As the call log (`ask.questions.source`) keeps it: a template's answer is a verified
    /// query's.
    pub fn logged(self) -> &'static str {
        match self {
            Source::VerifiedTemplate => "verified",
            other => other.as_str(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct StageTrace {
    pub stage: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    pub input: Value,
    pub output: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    pub ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl StageTrace {
    pub fn new(stage: &'static str, input: Value) -> StageTrace {
        StageTrace { stage, attempt: None, input, output: Value::Null, prompt_tokens: None, completion_tokens: None, ms: 0.0, error: None }
    }
}

impl Trace {
    /// Record an LLM call made for `st` and started at `started`: the reply, model, HTTP
    /// attempts and tokens, or the error. Gives back the reply's text.
    pub fn record_call(
        &mut self,
        mut st: StageTrace,
        started: Instant,
        result: Result<ChatResponse, LlmError>,
    ) -> Result<String, LlmError> {
        st.ms = ms_since(started);
        self.llm_calls += 1;
        match result {
            Ok(resp) => {
                st.output = json!({"reply": resp.content, "model": resp.model, "http_attempts": resp.attempts});
                // Whether the reply was generated under a JSON schema or grammar, or why a
                // request's constraint was not sent.
                if let Some(f) = &resp.finish_reason {
                    st.output["finish"] = json!(f);
                }
                if let Some(kind) = resp.constrained {
                    st.output["constrained"] = json!(kind);
                } else if let Some(why) = resp.unconstrained {
                    st.output["unconstrained"] = json!(why);
                }
                if let Some(n) = resp.cached_prompt_tokens {
                    st.output["cached_prompt_tokens"] = json!(n);
                }
                if let Some(saved) = resp.cached {
                    st.output["cached"] = json!({"tokens_saved": saved});
                }
                st.prompt_tokens = resp.prompt_tokens;
                st.completion_tokens = resp.completion_tokens;
                self.push(st);
                Ok(resp.content)
            }
            Err(e) => {
                st.error = Some(e.to_string());
                self.push(st);
                Err(e)
            }
        }
    }

    /// Read the reply of the last recorded call as `shape`: the text its stage's parser reads,
    /// noting on the call whether it was the structured reply (`read: structured`) or free text
    /// the parser has to find the answer in (`read: text`).
    pub fn read_shaped(&mut self, shape: Shape, reply: &str) -> String {
        let (text, structured) = shape.readable(reply);
        if let Some(st) = self.stages.last_mut() {
            st.output["read"] = json!(if structured { "structured" } else { "text" });
        }
        text
    }

    pub fn push(&mut self, stage: StageTrace) {
        self.prompt_tokens += stage.prompt_tokens.unwrap_or(0);
        self.completion_tokens += stage.completion_tokens.unwrap_or(0);
        self.stages.push(stage);
    }
}
