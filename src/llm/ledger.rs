//! Writing LLM calls to `ask.llm_calls`.

use std::time::Duration;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;

use pg_ask_core::config::LlmConfig;
use pg_ask_core::llm::{ChatResponse, LlmError};

const INSERT: &str = "INSERT INTO ask.llm_calls \
    (stage, provider, model, prompt_tokens, completion_tokens, ms, http_attempts, outcome, error, cached, tokens_saved, call_id) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";
/// Before 0.2.0 (during an upgrade), the ledger had no cache columns.
const INSERT_0_1: &str = "INSERT INTO ask.llm_calls \
    (stage, provider, model, prompt_tokens, completion_tokens, ms, http_attempts, outcome, error) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// Record one call in the caller's transaction: a call to the server, or one answered from
/// the response cache ([`ChatResponse::cached`]). In a read-only transaction (a standby, or
/// `SET TRANSACTION READ ONLY`) nothing can be written: the call goes to the server log at
/// DEBUG1 instead.
pub fn record(cfg: &LlmConfig, stage: &str, result: &Result<ChatResponse, LlmError>, took: Duration) {
    let ms = took.as_secs_f64() * 1000.0;
    let tokens = |t: Option<u64>| t.map(|t| t.min(i32::MAX as u64) as i32);
    let (prompt, completion, attempts, outcome, error, saved) = match result {
        Ok(r) => (tokens(r.prompt_tokens), tokens(r.completion_tokens), Some(r.attempts as i32), "ok".to_string(), None, tokens(r.cached)),
        Err(e) => (None, None, None, e.outcome().to_string(), Some(crate::pg::gucs::api_key().scrub(&e.to_string())), None),
    };
    // A failure usually aborts the caller's statement, and the ledger row with it: say it in
    // the server log too.
    if let Some(e) = &error {
        log!("pg_ask: LLM call for stage {stage} failed after {} ms ({outcome}): {e}", ms.round());
    }
    // SAFETY: reading a backend-local flag.
    if unsafe { pg_sys::XactReadOnly } {
        debug1!("pg_ask: {stage} call, {} ms, {outcome} (not written to ask.llm_calls: read-only transaction)", ms.round());
        return;
    }
    let args: [DatumWithOid; 12] = [
        stage.into(),
        cfg.provider.as_str().into(),
        cfg.model.as_str().into(),
        prompt.into(),
        completion.into(),
        ms.into(),
        attempts.into(),
        outcome.as_str().into(),
        error.into(),
        saved.is_some().into(),
        saved.into(),
        crate::pg::backend::current_call().into(),
    ];
    let written = if crate::pg::version::sql_at_least("0.2.0") {
        Spi::run_with_args(INSERT, &args)
    } else {
        Spi::run_with_args(INSERT_0_1, &args[..9])
    };
    if let Err(e) = written {
        warning!("pg_ask: could not write to ask.llm_calls: {e}");
    }
}

/// Record one request to an embedding server: its prompt tokens (estimated, four characters a
/// token), so that `ask.max_tokens_per_day` counts them.
pub fn record_embedding(provider: &str, model: &str, tokens: u64, result: &Result<Vec<Vec<f32>>, LlmError>, took: Duration) {
    // SAFETY: reading a backend-local flag.
    if unsafe { pg_sys::XactReadOnly } || !crate::pg::version::sql_at_least("0.2.0") {
        return;
    }
    let (outcome, error) = match result {
        Ok(_) => ("ok".to_string(), None),
        Err(e) => (e.outcome().to_string(), Some(crate::pg::gucs::api_key().scrub(&e.to_string()))),
    };
    let args: [DatumWithOid; 12] = [
        "embed".into(),
        provider.into(),
        model.into(),
        Some(tokens.min(i32::MAX as u64) as i32).into(),
        Some(0i32).into(),
        (took.as_secs_f64() * 1000.0).into(),
        Some(1i32).into(),
        outcome.as_str().into(),
        error.into(),
        false.into(),
        None::<i32>.into(),
        crate::pg::backend::current_call().into(),
    ];
    if let Err(e) = Spi::run_with_args(INSERT, &args) {
        warning!("pg_ask: could not write to ask.llm_calls: {e}");
    }
}
