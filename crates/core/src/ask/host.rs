//! What the pipeline needs from its surroundings, as four capabilities ([`Llm`], [`Catalog`],
//! [`Memory`], [`Executor`]; [`Host`] is all four) and their typed error ([`HostError`]).

use serde_json::Value;

use crate::clarify::Ambiguity;
use crate::guard::CheckedSql;
use crate::llm::{ChatRequest, ChatResponse, LlmError};
use crate::rows::ResultSet;
pub use crate::sqlstate::SqlState;
use crate::values::correct::Looked;
use crate::values::literals::LiteralRef;
use crate::verified::Candidate;

/// Why the database refused or failed a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecFailure {
    /// The database-level check refused it (not a plain read-only query, volatile function).
    Refused { reason: String },
    /// PostgreSQL raised an error while planning or running it.
    Error { sqlstate: SqlState, message: String, detail: Option<String>, hint: Option<String> },
}

impl ExecFailure {
    /// The text shown to the LLM when asking for a repair.
    pub fn for_llm(&self) -> String {
        match self {
            ExecFailure::Refused { reason } => format!("refused: {reason}"),
            ExecFailure::Error { message, detail, hint, .. } => {
                let mut s = format!("ERROR: {message}");
                if let Some(d) = detail {
                    s.push_str(&format!("\nDETAIL: {d}"));
                }
                if let Some(h) = hint {
                    s.push_str(&format!("\nHINT: {h}"));
                }
                s
            }
        }
    }
}

/// The outcome of value correction for one statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Correction {
    /// The statement, with corrected literals where any were corrected, checked by the guard.
    pub statement: CheckedSql,
    /// Whether any literal changed.
    pub changed: bool,
    /// Every literal looked at and the decision on it, for the trace.
    pub trace: Value,
}

/// One candidate schema of a [`Selection`]: its selected tables, rendered for the prompt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SchemaCandidate {
    /// The schema's quoted name.
    pub schema: String,
    /// The tables selected in it (plus those their joins need), as [`crate::schema::render`]
    /// writes them.
    pub tables: String,
}

/// The tables the schema selection memory picked for a question.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// The candidate schemas, most relevant first. One candidate: a single-schema question;
    /// several: the retrieval-plan stage decides which to query.
    pub candidates: Vec<SchemaCandidate>,
    /// Every decision (schema and table scores, why each table is in), for the trace.
    pub detail: Value,
}

/// A lookup the host could not make (the catalog, a memory): the SQLSTATE it failed with and
/// its message. The glue raises it with that SQLSTATE; the pipeline never reads it as "none".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct HostError {
    pub sqlstate: SqlState,
    pub message: String,
}

impl HostError {
    /// A failure no user action causes (XX000).
    pub fn internal(message: impl std::fmt::Display) -> HostError {
        HostError { sqlstate: SqlState::INTERNAL_ERROR, message: message.to_string() }
    }
}

/// One `ask()`'s question, with its embedding once a capability made it: the verified queries
/// and the schema selection memory both compare it, and it is embedded at most once per
/// `ask()` (by the first that needs it, under the embedder of that `ask()`).
#[derive(Debug, Default)]
pub struct Question {
    text: String,
    embedding: std::cell::OnceCell<Vec<f32>>,
}

impl Question {
    pub fn new(text: impl Into<String>) -> Question {
        Question { text: text.into(), embedding: std::cell::OnceCell::new() }
    }
    pub fn text(&self) -> &str {
        &self.text
    }
    /// The question's embedding, if it was made already.
    pub fn embedded(&self) -> Option<&[f32]> {
        self.embedding.get().map(Vec::as_slice)
    }
    /// The question's embedding, made by `embed` the first time it is asked for.
    pub fn embedding(&self, embed: impl FnOnce(&str) -> Vec<f32>) -> &[f32] {
        self.embedding.get_or_init(|| embed(&self.text))
    }
}

/// The LLM the pipeline talks to.
pub trait Llm {
    /// One LLM call, on behalf of `stage`.
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

/// What the caller may read, and how a statement's literals resolve against it.
pub trait Catalog {
    /// The description of the tables the caller may read, as prompt text (empty: none).
    fn schema_text(&mut self) -> Result<String, HostError>;
    /// The tables to describe for `question`, from the schema selection memory; `None` when no
    /// memory was built: every readable table is described ([`Catalog::schema_text`]).
    fn select_tables(&mut self, question: &Question) -> Result<Option<Selection>, HostError>;
    /// The string literals of `sql` compared with text columns, resolved to their columns, with
    /// the search path set to `schema` when given.
    fn literals_of(&mut self, sql: &str, schema: Option<&str>) -> Result<Vec<LiteralRef>, HostError>;
}

/// The memories: stored values, verified queries, the values a question may mean.
pub trait Memory {
    /// The string literals of a checked statement compared with columns, each with what the
    /// enum's labels or the value memory hold like it ([`crate::values::correct`] decides).
    /// The statement's tree is read, not its text parsed again.
    fn literal_evidence(&mut self, sql: &CheckedSql) -> Result<Vec<Looked>, HostError>;
    /// The verified queries most like `question` that the caller may use (over tables it may
    /// read), best first.
    fn verified(&mut self, question: &Question) -> Result<Vec<Candidate>, HostError>;
    /// The value stored in `lit`'s column that `text` stands for, when the column holds it
    /// (ignoring case) or the value memory's lexical rule reads it as one (an initialism, a
    /// plural, a typo); `None` otherwise.
    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError>;
    /// Words of `question` that the value memory reads in two ways ([`clarify`](crate::clarify))
    /// among the columns of `tables` (the described tables, qualified as the description
    /// writes them).
    fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<Ambiguity>, HostError>;
    /// The phrases of `question` ([`crate::clarify::phrases`]) that the value memory holds
    /// exactly, any case, in a column of `tables` the caller may read, as the question writes
    /// them, with the columns that hold them; a phrase inside a longer one held is left out.
    /// None by default.
    fn named_values(&mut self, question: &str, tables: &[String]) -> Result<Vec<crate::clarify::Named>, HostError> {
        let _ = (question, tables);
        Ok(Vec::new())
    }
    /// The knowledge items the caller may see that bear on `tables` (the described tables,
    /// qualified as the description writes them): instructions on the database, their schemas
    /// or them, synonyms, metrics, filters and dimensions over them. None by default.
    fn knowledge(&mut self, question: &Question, tables: &[String]) -> Result<Vec<crate::knowledge::Item>, HostError> {
        let _ = (question, tables);
        Ok(Vec::new())
    }
    /// The relations a statement's relation names (`names`: each as its parts, folded) stand
    /// for under the caller's search path, schema-qualified and quoted as a description
    /// writes them (`public.orders`); a name that names no relation is left out. By default a
    /// name with its schema stands for itself and one without for the `public` schema's.
    fn resolve_relations(&mut self, names: &[Vec<String>]) -> Vec<String> {
        use crate::sqltext::quote_ident;
        names
            .iter()
            .filter_map(|parts| match parts.as_slice() {
                [name] => Some(format!("public.{}", quote_ident(name))),
                [.., schema, name] => Some(format!("{}.{}", quote_ident(schema), quote_ident(name))),
                [] => None,
            })
            .collect()
    }
}

/// Guarded execution with the caller's privileges.
pub trait Executor {
    /// Run a statement that passed the parse-level guard (its type says so), with the
    /// database-level checks, read-only, under the statement timeout and row limit.
    fn execute(&mut self, sql: &CheckedSql) -> Result<ResultSet, ExecFailure>;
    /// Run a verified query (through the parse-level guard) as [`Executor::execute`] does,
    /// with the search path set to `schema` when given.
    fn execute_verified(&mut self, sql: &CheckedSql, schema: Option<&str>) -> Result<ResultSet, ExecFailure>;
}

/// What the pipeline needs from its surroundings: the four capabilities, each implemented in
/// full (no method has a default body). A host without a memory says so with [`NoMemory`]'s
/// answers; a host that wraps another states what it forwards.
pub trait Host: Llm + Catalog + Memory + Executor {}

impl<T: Llm + Catalog + Memory + Executor + ?Sized> Host for T {}

/// No memory at all: no literal evidence, nothing verified, no stored value, no ambiguity.
pub struct NoMemory;

impl Memory for NoMemory {
    fn literal_evidence(&mut self, _sql: &CheckedSql) -> Result<Vec<Looked>, HostError> {
        Ok(Vec::new())
    }
    fn verified(&mut self, _question: &Question) -> Result<Vec<Candidate>, HostError> {
        Ok(Vec::new())
    }
    fn stored_value(&mut self, _lit: &LiteralRef, _text: &str) -> Result<Option<String>, HostError> {
        Ok(None)
    }
    fn ambiguities(&mut self, _question: &str, _tables: &[String]) -> Result<Vec<Ambiguity>, HostError> {
        Ok(Vec::new())
    }
}

/// `impl Memory for H { pg_ask_core::no_memory!(); }`: a host whose memories are off, its
/// answers [`NoMemory`]'s.
#[macro_export]
macro_rules! no_memory {
    () => {
        fn literal_evidence(
            &mut self,
            sql: &$crate::guard::CheckedSql,
        ) -> Result<Vec<$crate::values::correct::Looked>, $crate::ask::HostError> {
            $crate::ask::Memory::literal_evidence(&mut $crate::ask::NoMemory, sql)
        }
        fn verified(&mut self, question: &$crate::ask::Question) -> Result<Vec<$crate::verified::Candidate>, $crate::ask::HostError> {
            $crate::ask::Memory::verified(&mut $crate::ask::NoMemory, question)
        }
        fn stored_value(
            &mut self,
            lit: &$crate::values::literals::LiteralRef,
            text: &str,
        ) -> Result<Option<String>, $crate::ask::HostError> {
            $crate::ask::Memory::stored_value(&mut $crate::ask::NoMemory, lit, text)
        }
        fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<$crate::clarify::Ambiguity>, $crate::ask::HostError> {
            $crate::ask::Memory::ambiguities(&mut $crate::ask::NoMemory, question, tables)
        }
    };
}
