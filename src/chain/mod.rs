//! `ask.do(instruction)`: a chain of SQL writes planned by the LLM (ChatDB's chain of memory),
//! run step by step as the caller, in the caller's transaction: any failing step raises an
//! error and nothing of the chain persists.

#[cfg(any(test, feature = "pg_test"))]
mod tests;

use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;

use pg_ask_core::chain::{run_chain, ChainConfig};

use crate::ask::host::BackendHost;
use crate::pg::errors::Raised;
use crate::pg::gucs::{self, LlmOverrides};

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
    let mcfg = ChainConfig { max_steps: gucs::max_steps(), ..ChainConfig::default() };
    let mut host = BackendHost::new(&overrides);
    match run_chain(&mut host, instruction, &mcfg) {
        Ok(outcome) => {
            for step in &outcome.steps {
                notice!("pg_ask step {}: {}", step.number, step.sql);
            }
            JsonB(outcome.to_json(mcfg.output_rows as usize))
        }
        Err((e, _)) => Raised::from(&e).raise(),
    }
}
