//! What a run is asked for and what it gives back: how far to take a question ([`Goal`]), the
//! [`Outcome`], and why a run stopped ([`AskError`]).

use serde_json::{json, Value};

use super::host::HostError;
use crate::llm::LlmError;
use crate::prompt::AnswerDecision;
use crate::rows::ResultSet;
use crate::trace::Trace;

/// How far to take a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// The final SQL (executed once to validate and repair it).
    Sql,
    /// The SQL and its rows.
    Rows,
    /// The SQL, its rows and the answer stage.
    Answer,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    /// The final SQL: the answering step's, or every step's joined by `;` and a line break
    /// when a written answer combines several steps; empty when the context answered.
    pub sql: String,
    pub result: ResultSet,
    pub answer: Option<AnswerDecision>,
    pub trace: Trace,
}

impl Outcome {
    /// The answer as the text `ask()` returns: the written answer, or the rows as a table.
    pub fn answer_text(&self) -> String {
        match &self.answer {
            Some(AnswerDecision::Text(t)) => t.clone(),
            _ => self.result.render_table(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskError {
    #[error("the question is empty")]
    EmptyQuestion,
    #[error("there are no tables the current role may read")]
    NoTables,
    #[error("{0}")]
    Host(HostError),
    #[error("{source}")]
    Llm { stage: &'static str, source: LlmError },
    #[error("the LLM's reply contained no SQL after {attempts} attempt(s)")]
    NoSql { attempts: u32, reply: String },
    #[error("the generated SQL was refused after {attempts} attempt(s): {reason}")]
    Refused { attempts: u32, reason: String, sql: String },
    #[error("the generated SQL failed after {attempts} attempt(s): {message}")]
    Failed { attempts: u32, sqlstate: crate::sqlstate::SqlState, message: String, sql: String },
    /// `ask.clarify` is on and the question is ambiguous: the question back.
    #[error("{question}")]
    Ambiguous { question: String },
    /// A prompt that cannot be cut is larger than `ask.max_prompt_tokens`.
    #[error("the {stage} prompt would be about {tokens} tokens, over ask.max_prompt_tokens ({max})")]
    PromptTooLarge { stage: &'static str, tokens: usize, max: usize },
}

impl AskError {
    pub(super) fn to_json(&self) -> Value {
        let mut v = json!({"message": self.to_string()});
        match self {
            AskError::Llm { stage, source } => {
                v["stage"] = json!(stage);
                v["kind"] = json!(source.outcome());
            }
            AskError::Refused { sql, .. } => v["sql"] = json!(sql),
            AskError::Failed { sql, sqlstate, .. } => {
                v["sql"] = json!(sql);
                v["sqlstate"] = json!(sqlstate);
            }
            _ => {}
        }
        v
    }
}

/// What a run produced: the final SQL, its rows and the answer.
pub(super) type Produced = (String, ResultSet, Option<AnswerDecision>);
