//! `ask.do(instruction)`: a chain of SQL writes planned by the LLM (ChatDB's chain of memory),
//! run step by step as the caller, in the caller's transaction: any failing step raises an
//! error and nothing of the chain persists.

use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;

use pg_ask_core::config::LlmConfig;
use pg_ask_core::llm::{ChatRequest, ChatResponse, LlmError};
use pg_ask_core::memory::{run_chain, ChainError, MemoryConfig, MemoryHost, StepResult};
use pg_ask_core::pipeline::ExecFailure;
use pg_ask_core::schema;

use crate::errors::{self, sqlstate_code, Raised};
use crate::gucs::{self, LlmOverrides};
use crate::guarded;
use crate::subxact::OnSuccess;
use crate::{catalog, llm};

struct ChainHost {
    llm: LlmConfig,
}

impl MemoryHost for ChainHost {
    fn schema_text(&mut self) -> Result<String, String> {
        Ok(schema::render(&catalog::readable_tables()?))
    }

    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        llm::chat(&self.llm, stage, req)
    }

    /// One step in a subtransaction that is kept on success, under `ask.statement_timeout`;
    /// an error rolls the step back and comes back as a failure, which ends the chain with an
    /// error (so the caller's statement, and with it every earlier step, is rolled back too).
    fn execute_step(&mut self, sql: &str) -> Result<StepResult, ExecFailure> {
        let limits = guarded::Limits { row_limit: gucs::row_limit(), timeout_ms: gucs::statement_timeout_ms() };
        let Ok(csql) = std::ffi::CString::new(sql) else {
            return Err(ExecFailure::Refused { reason: "the statement contains a NUL character".into() });
        };
        let limit = limits.row_limit;
        // SAFETY: one statement analysed, then run in its own SPI session; the rows are copied
        // out before it ends.
        let out = guarded::run(&limits, OnSuccess::Release, move || unsafe {
            if let Some(reason) = volatile_refusal(&csql) {
                return Err(ExecFailure::Refused { reason });
            }
            guarded::spi_execute(&csql, false, limit)
                .map_err(|message| ExecFailure::Error { sqlstate: "XX000".into(), message, detail: None, hint: None })
        })?;
        Ok(StepResult { rows_affected: out.processed, columns: out.rows.columns, rows: out.rows.rows })
    }
}

/// The database layer of the step allowlist: PostgreSQL's own parse analysis of the statement
/// as written (before column defaults are added, so an identity or serial column's `nextval`
/// does not count) must call no volatile function, except `nextval` in an INSERT. The
/// parse-level guard names only the functions it knows; this catches every other volatile
/// one (`random()`, a user's function that writes elsewhere), views excluded as they are
/// expanded only later.
unsafe fn volatile_refusal(sql: &std::ffi::CStr) -> Option<String> {
    use pgrx::pg_sys;
    let raw = pg_sys::pg_parse_query(sql.as_ptr());
    if raw.is_null() || (*raw).length != 1 {
        return Some("expected exactly one statement".into());
    }
    let raw_stmt = (*(*raw).elements).ptr_value as *mut pg_sys::RawStmt;
    let query = pg_sys::parse_analyze_fixedparams(raw_stmt, sql.as_ptr(), std::ptr::null(), 0, std::ptr::null_mut());
    let node = query as *mut pg_sys::Node;
    let insert = (*query).commandType == pg_sys::CmdType::CMD_INSERT;
    let volatile = if insert {
        pg_sys::contain_volatile_functions_not_nextval(node)
    } else {
        pg_sys::contain_volatile_functions(node)
    };
    volatile.then(|| {
        format!(
            "the statement calls a volatile function{} (one that can change the database or give a different result each call)",
            if insert { " other than nextval" } else { "" }
        )
    })
}

fn chain_error(e: &ChainError) -> Raised {
    use PgSqlErrorCode::*;
    match e {
        ChainError::Llm { stage, source } => errors::from_llm(source, stage),
        ChainError::StepFailed { failure, .. } => {
            let code = match failure.as_ref() {
                ExecFailure::Error { sqlstate, .. } => sqlstate_code(sqlstate).unwrap_or(ERRCODE_DATA_EXCEPTION),
                ExecFailure::Refused { .. } => ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
            };
            Raised::new(code, e.to_string()).detail(failure.for_llm()).hint("Nothing of the chain was kept.")
        }
        ChainError::Refused { .. } | ChainError::RewriteChangedKind { .. } => {
            Raised::new(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED, e.to_string())
                .hint("ask.do() runs only SELECT, INSERT, UPDATE and DELETE steps, never DDL.")
        }
        ChainError::TooManySteps { .. } => Raised::new(ERRCODE_PROGRAM_LIMIT_EXCEEDED, e.to_string()).hint("Raise ask.max_steps, or split the instruction."),
        ChainError::NoTables => Raised::new(ERRCODE_INSUFFICIENT_PRIVILEGE, e.to_string()).hint("GRANT the role access to the tables to change."),
        ChainError::EmptyInstruction => Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, e.to_string()),
        _ => Raised::new(ERRCODE_INVALID_TEXT_REPRESENTATION, e.to_string()).hint("Rephrase the instruction, or try another model (ask.model)."),
    }
}

/// Carry out an instruction as a chain of SQL steps (SELECT, INSERT, UPDATE, DELETE) planned by
/// the LLM, filling later steps from earlier results. Runs only with `ask.allow_writes` on, in
/// the caller's transaction; returns the steps with their results and a summary.
#[pg_extern(name = "do", volatile, parallel_unsafe)]
fn ask_do(
    instruction: &str,
    model: default!(Option<&str>, "NULL"),
    provider: default!(Option<&str>, "NULL"),
    base_url: default!(Option<&str>, "NULL"),
) -> JsonB {
    if !gucs::allow_writes() {
        Raised::new(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, "ask.do() may write only with ask.allow_writes on")
            .hint("SET ask.allow_writes = on (or ALTER ROLE ... SET ask.allow_writes = on for a role).")
            .raise();
    }
    let overrides = LlmOverrides {
        model: model.map(str::to_string),
        provider: provider.map(str::to_string),
        base_url: base_url.map(str::to_string),
        temperature: None,
    };
    let cfg = gucs::llm_config(&overrides).unwrap_or_else(|m| errors::config(m).raise());
    let mcfg = MemoryConfig { max_steps: gucs::max_steps(), ..MemoryConfig::default() };
    let mut host = ChainHost { llm: cfg };
    match run_chain(&mut host, instruction, &mcfg) {
        Ok(outcome) => {
            for step in &outcome.steps {
                notice!("pg_ask step {}: {}", step.number, step.sql);
            }
            JsonB(outcome.to_json(mcfg.output_rows as usize))
        }
        Err((e, _)) => chain_error(&e).raise(),
    }
}
