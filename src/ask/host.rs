//! The backend's host: one implementation of every host trait the core defines (the four
//! capabilities of `ask()`'s pipeline, [`Llm`], [`Catalog`], [`Memory`] and [`Executor`],
//! which judging uses too; [`ChainHost`] adds `ask.do()`'s steps):
//! the catalog through SPI, LLM calls through the backend's runner, generated SQL through
//! guarded execution, table selection through the schema selection memory.

use pg_ask_core::ask::{Catalog, ExecFailure, Executor, HostError, Llm, Memory, Question, Selection};
use pg_ask_core::chain::{ChainHost, StepResult};
use pg_ask_core::config::{AskConfig, LlmConfig};
use pg_ask_core::llm::{ChatRequest, ChatResponse, LlmError};
use pg_ask_core::rows::ResultSet;
use pg_ask_core::values::correct::Looked;

use crate::pg::errors;
use crate::pg::gucs::{self, LlmOverrides};
use crate::{guard, llm, schema, selection, values, verified};
use pg_ask_core::values::literals::LiteralRef;

pub struct BackendHost {
    pub llm: LlmConfig,
    pub limits: guard::Limits,
    /// The call's settings, read once: what selection and the verified queries read too.
    pub cfg: AskConfig,
}

impl BackendHost {
    /// The host under the settings in force, with a call's overrides; a bad setting is raised.
    pub fn new(overrides: &LlmOverrides) -> BackendHost {
        BackendHost::configured(overrides, gucs::ask_config(None, overrides))
    }

    /// The host of one call whose settings `cfg` were read (with `overrides`) at its start.
    pub fn configured(overrides: &LlmOverrides, cfg: AskConfig) -> BackendHost {
        let llm = gucs::llm_config(overrides).unwrap_or_else(|m| errors::config(m).raise());
        BackendHost { llm, limits: guard::Limits { row_limit: cfg.row_limit, timeout_ms: gucs::statement_timeout_ms() }, cfg }
    }

    /// A host that only looks things up and makes no LLM call (`ask.correct_sql(use_llm =>
    /// false)`): the LLM settings are not read, so a malformed one is no error here.
    pub fn for_lookups() -> BackendHost {
        let cfg = gucs::ask_config(None, &LlmOverrides::default());
        BackendHost {
            llm: LlmConfig::unused(),
            limits: guard::Limits { row_limit: cfg.row_limit, timeout_ms: gucs::statement_timeout_ms() },
            cfg,
        }
    }

    /// Without a schema selection memory: the tables the caller may read in the schemas on
    /// its `search_path`, or every table it may read when those schemas hold none. (A model
    /// shown every schema of a database queries the wrong schema's tables; the search_path
    /// says which ones the caller means.)
    fn describe_readable(&self) -> Result<String, HostError> {
        let tables = schema::readable_tables()?;
        let path = schema::search_path_schemas();
        let on_path: Vec<_> = tables.iter().filter(|t| path.contains(&t.schema)).cloned().collect();
        Ok(values::listed::render(if on_path.is_empty() { &tables } else { &on_path }))
    }
}

impl Llm for BackendHost {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        llm::chat(&self.llm, stage, req)
    }
}

impl Catalog for BackendHost {
    fn schema_text(&mut self) -> Result<String, HostError> {
        self.describe_readable()
    }

    /// With a schema selection memory (`ask.index_schema`), the `ask.max_tables` best tables
    /// of the best schemas and the tables their joins need; without one, `None`: every
    /// readable table is described.
    fn select_tables(&mut self, question: &Question) -> Result<Option<Selection>, HostError> {
        selection::selection_for(question, &self.cfg).map_err(HostError::internal)
    }

    fn literals_of(&mut self, sql: &str, schema: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
        crate::pg::spi::in_schema(schema, || values::correct::literals(sql)).map_err(HostError::internal)
    }
}

impl Memory for BackendHost {
    fn literal_evidence(&mut self, sql: &pg_ask_core::guard::CheckedSql) -> Result<Vec<Looked>, HostError> {
        values::correct::literal_evidence(sql)
    }

    /// The verified queries most like the question among those over tables the caller may
    /// read (row-level security on ask.verified_queries).
    fn verified(&mut self, question: &Question) -> Result<Vec<pg_ask_core::verified::Candidate>, HostError> {
        verified::candidates(question, self.cfg.embedder.as_ref()).map_err(HostError::internal)
    }

    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError> {
        Ok(values::correct::stored_value(lit, text))
    }

    fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<pg_ask_core::clarify::Ambiguity>, HostError> {
        crate::clarify::ambiguities(question, tables).map_err(HostError::internal)
    }

    fn named_values(&mut self, question: &str, tables: &[String]) -> Result<Vec<pg_ask_core::clarify::Named>, HostError> {
        crate::clarify::named_values(question, tables).map_err(HostError::internal)
    }

    fn knowledge(&mut self, _: &Question, tables: &[String]) -> Result<Vec<pg_ask_core::knowledge::Item>, HostError> {
        crate::knowledge::read::for_question(tables).map_err(HostError::internal)
    }

    fn resolve_relations(&mut self, names: &[Vec<String>]) -> Vec<String> {
        crate::knowledge::read::resolve(names)
    }
}

impl Executor for BackendHost {
    fn execute(&mut self, sql: &pg_ask_core::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        guard::execute(&sql.sql, &self.limits)
    }

    fn execute_verified(&mut self, sql: &pg_ask_core::guard::CheckedSql, schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
        crate::pg::spi::in_schema(schema, || guard::execute(&sql.sql, &self.limits))
    }
}

impl ChainHost for BackendHost {
    fn execute_step(&mut self, sql: &str) -> Result<StepResult, ExecFailure> {
        guard::execute_step(sql, &self.limits)
    }
}
