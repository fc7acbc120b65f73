//! LLM calls from a backend: one runtime and connection pool per backend, requests polled
//! against PostgreSQL's interrupt flags, every call written to the ledger.

pub(crate) mod batch;
pub(crate) mod budget;
pub(crate) mod embeddings;
pub(crate) mod ledger;
pub(crate) mod reuse;
#[cfg(any(test, feature = "pg_test"))]
mod tests;

use std::time::Instant;

use pgrx::pg_sys;

use pg_ask_core::config::LlmConfig;
use pg_ask_core::llm::{self, ChatRequest, ChatResponse, LlmError, Runner};

use crate::pg::errors::Raised;

/// A query cancel, a statement timeout or a termination request is pending.
pub fn cancel_pending() -> bool {
    // SAFETY: reads of sig_atomic_t flags that signal handlers set; this is the backend's
    // own thread (the runtime is current-thread, so the check runs here).
    unsafe { pg_sys::InterruptPending != 0 && (pg_sys::QueryCancelPending != 0 || pg_sys::ProcDiePending != 0) }
}

fn with_runner<R>(f: impl FnOnce(&Runner) -> R) -> R {
    crate::pg::backend::with(|b| {
        let mut slot = b.runner.borrow_mut();
        if slot.is_none() {
            match Runner::new() {
                Ok(r) => *slot = Some(r),
                Err(e) => {
                    Raised::new(pg_sys::errcodes::PgSqlErrorCode::ERRCODE_SYSTEM_ERROR, format!("could not start the HTTP runtime: {e}"))
                        .raise()
                }
            }
        }
        f(slot.as_ref().expect("runner was just made"))
    })
}

/// While the backend waits for the LLM or embedding server, `pg_stat_activity` shows it with
/// `wait_event_type = 'Extension'` (as for any extension's wait), not as a session on CPU.
struct WaitingForServer;

impl WaitingForServer {
    fn report() -> WaitingForServer {
        // SAFETY: sets the backend's own wait-event word, as pgstat_report_wait_start does
        // for PostgreSQL's waits; cleared on drop, and by PostgreSQL on any error.
        unsafe { pg_sys::pgstat_report_wait_start(pg_sys::PG_WAIT_EXTENSION) };
        WaitingForServer
    }
}

impl Drop for WaitingForServer {
    fn drop(&mut self) {
        // SAFETY: clears the backend's own wait-event word.
        unsafe { pg_sys::pgstat_report_wait_end() };
    }
}

/// Run `f` with the backend's runner; when it reports an interrupt, let PostgreSQL raise the
/// pending cancel (or say the request was interrupted).
pub fn with_runner_interruptible<T>(f: impl FnOnce(&Runner) -> Result<Result<T, LlmError>, llm::Interrupted>) -> Result<T, LlmError> {
    let _waiting = WaitingForServer::report();
    match with_runner(f) {
        Ok(result) => result,
        Err(llm::Interrupted) => {
            pgrx::check_for_interrupts!();
            Err(LlmError::Interrupted)
        }
    }
}

/// One chat call on behalf of `stage`: from the response cache when `ask.cache` has the
/// identical request, else sent (within `ask.max_tokens_per_day`). A pending cancel drops the
/// request and raises the cancel as PostgreSQL's own error; everything else comes back as a
/// value.
pub fn chat(cfg: &LlmConfig, stage: &str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
    chat_many(cfg, stage, vec![req.clone()], 1).pop().map(|(result, _)| result).expect("one result per request")
}

/// Many chat calls on behalf of `stage`, at most `concurrency` in flight; results in the order
/// of `reqs`, each written to the ledger. Requests the response cache has are answered from
/// it; the budget is checked for the others, all together, before any is sent. A pending
/// cancel abandons every call in flight and raises the cancel.
pub fn chat_many(
    cfg: &LlmConfig,
    stage: &str,
    reqs: Vec<ChatRequest>,
    concurrency: usize,
) -> Vec<(Result<ChatResponse, LlmError>, std::time::Duration)> {
    let caching = crate::pg::gucs::cache().is_some();
    let keys: Vec<Option<String>> = reqs.iter().map(|r| caching.then(|| pg_ask_core::llm::reuse::cache_key(cfg, r))).collect();
    let mut out: Vec<Option<(Result<ChatResponse, LlmError>, std::time::Duration)>> = keys
        .iter()
        .map(|key| {
            let started = Instant::now();
            key.as_deref().and_then(reuse::lookup).map(|hit| (Ok(hit), started.elapsed()))
        })
        .collect();
    let (to_send, sent_at): (Vec<ChatRequest>, Vec<usize>) =
        reqs.into_iter().enumerate().filter(|(i, _)| out[*i].is_none()).map(|(i, r)| (r, i)).unzip();
    if !to_send.is_empty() {
        let reserved = reuse::check_budget(cfg, &to_send.iter().collect::<Vec<_>>());
        let most: Vec<u64> = to_send.iter().map(|r| pg_ask_core::llm::reuse::most_tokens(cfg, r)).collect();
        let n = to_send.len();
        let sent =
            with_runner_interruptible(|r| r.block_on(llm::chat_all(r.http(), cfg, to_send, concurrency.max(1)), &cancel_pending).map(Ok));
        let results = match sent {
            Ok(results) => results,
            Err(e) => (0..n).map(|_| (Err(e.clone()), std::time::Duration::ZERO)).collect(),
        };
        // What the replies say they spent; a reply without counts, or a failure after the
        // request went out, keeps its whole reservation.
        let spent: u64 = results.iter().zip(&most).map(|((result, _), most)| spent_by(result, *most)).sum();
        reserved.settle(spent);
        for (i, result) in sent_at.into_iter().zip(results) {
            if let (Some(key), Ok(r)) = (&keys[i], &result.0) {
                reuse::store(key, cfg, r);
            }
            out[i] = Some(result);
        }
    }
    let out: Vec<_> = out.into_iter().map(|r| r.expect("every request answered")).collect();
    for (result, took) in &out {
        ledger::record(cfg, stage, result, *took);
    }
    out
}

/// The tokens a call spent, for the budget: as its reply counts them, `most` (its
/// reservation) when the reply does not say, nothing when it never reached the server.
fn spent_by(result: &Result<ChatResponse, LlmError>, most: u64) -> u64 {
    match result {
        Ok(r) => match (r.prompt_tokens, r.completion_tokens) {
            (None, None) => most,
            (p, c) => p.unwrap_or(0) + c.unwrap_or(0),
        },
        Err(e) if e.outcome() == "connect_error" => 0,
        Err(_) => most,
    }
}
