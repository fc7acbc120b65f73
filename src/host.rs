//! The pipeline's [`Host`] inside a backend: catalog through SPI, LLM calls through the
//! backend's runner, generated SQL through guarded execution, table selection through the
//! schema selection memory.

use pg_ask_core::config::LlmConfig;
use pg_ask_core::llm::{ChatRequest, ChatResponse, LlmError};
use pg_ask_core::pipeline::{Correction, ExecFailure, Host, Selection};
use pg_ask_core::rows::ResultSet;
use pg_ask_core::schema;

use crate::{catalog, correct, guarded, gucs, llm, schema_memory};

pub struct BackendHost {
    pub llm: LlmConfig,
    pub limits: guarded::Limits,
}

impl Host for BackendHost {
    fn schema_text(&mut self) -> Result<String, String> {
        Ok(schema::render(&catalog::readable_tables()?))
    }

    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        llm::chat(&self.llm, stage, req)
    }

    fn execute(&mut self, sql: &str) -> Result<ResultSet, ExecFailure> {
        guarded::execute(sql, &self.limits)
    }

    fn correct_values(&mut self, sql: &str) -> Result<Correction, String> {
        correct::correct(sql, Some(&self.llm))
    }

    /// With a schema selection memory (`ask.index_schema`), the `ask.max_tables` best tables
    /// of the best schemas and the tables their joins need; without one, `None`: every
    /// readable table is described.
    fn select_tables(&mut self, question: &str) -> Result<Option<Selection>, String> {
        schema_memory::selection_for(question, gucs::max_tables())
    }
}
