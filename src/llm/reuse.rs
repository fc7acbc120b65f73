//! The response cache (`ask.cache`) and the token budget (`ask.max_tokens_per_day`) around
//! every chat call; what they decide is in the core's `llm::reuse`.

use pgrx::prelude::*;
use pgrx::JsonB;

use pg_ask_core::config::LlmConfig;
use pg_ask_core::llm::reuse::{cacheable, from_cached, most_tokens, to_cached};
use pg_ask_core::llm::{ChatRequest, ChatResponse};

use crate::pg::errors::Raised;
use crate::pg::gucs;
use crate::pg::identity::as_memory_owner;

/// The cache needs its table (0.2.0 on): during an upgrade it is left out.
fn cache_ttl() -> Option<std::time::Duration> {
    gucs::cache().filter(|_| crate::pg::version::sql_at_least("0.2.0"))
}

/// The cached reply of the request whose key is `key`, if `ask.cache` is on and one is fresh.
/// Read as the extension's owner: nobody reads the cache but pg_ask.
pub(crate) fn lookup(key: &str) -> Option<ChatResponse> {
    let ttl = cache_ttl()?;
    let reply = as_memory_owner(|| {
        Spi::get_one_with_args::<JsonB>(
            "SELECT (SELECT reply FROM ask.llm_cache WHERE key = pg_catalog.sha256(pg_catalog.convert_to($1, 'UTF8'))
                        AND created_at > pg_catalog.clock_timestamp() - pg_catalog.make_interval(secs => $2))",
            &[key.into(), (ttl.as_secs_f64()).into()],
        )
    });
    match reply {
        Ok(Some(JsonB(v))) => from_cached(&v),
        Ok(None) => None,
        Err(e) => {
            warning!("pg_ask: could not read ask.llm_cache: {e}");
            None
        }
    }
}

/// Keep a complete reply for the identical request (not in a read-only transaction, where
/// nothing can be written).
pub(crate) fn store(key: &str, cfg: &LlmConfig, r: &ChatResponse) {
    // SAFETY: reading a backend-local flag.
    if cache_ttl().is_none() || !cacheable(r) || unsafe { pg_sys::XactReadOnly } {
        return;
    }
    let stored = as_memory_owner(|| {
        Spi::run_with_args(
            "INSERT INTO ask.llm_cache (key, provider, model, reply)
             VALUES (pg_catalog.sha256(pg_catalog.convert_to($1, 'UTF8')), $2, $3, $4)
             ON CONFLICT (key) DO UPDATE SET provider = EXCLUDED.provider, model = EXCLUDED.model,
                 reply = EXCLUDED.reply, created_at = EXCLUDED.created_at",
            &[key.into(), cfg.provider.as_str().into(), cfg.model.as_str().into(), JsonB(to_cached(r)).into()],
        )
    });
    if let Err(e) = stored {
        warning!("pg_ask: could not write ask.llm_cache: {e}");
    }
}

/// Refuse, before anything is sent, calls that could take the role past
/// `ask.max_tokens_per_day`: the tokens it spent today (UTC, from the ledger) and the most
/// `reqs` can spend (prompts and whole completion limits).
pub(crate) fn check_budget(cfg: &LlmConfig, reqs: &[&ChatRequest]) {
    if reqs.is_empty() {
        return;
    }
    let need: u64 = reqs.iter().map(|r| most_tokens(cfg, r)).sum();
    let calls = if reqs.len() == 1 { "this call".to_string() } else { format!("these {} calls", reqs.len()) };
    require_budget(need, "LLM call", &calls);
}

/// Refuses (SQLSTATE 53000) what could take the calling role over `ask.max_tokens_per_day`:
/// `need` tokens more than it spent today. Embedding requests count too (`ask.embed()`, value
/// and schema memories embedded by a server).
pub(crate) fn require_budget(need: u64, what: &str, calls: &str) {
    let Some(limit) = gucs::max_tokens_per_day() else { return };
    // Read as the extension's owner (search path pinned): the caller's search path cannot
    // change what is summed.
    let role = Spi::get_one::<String>("SELECT current_user::text").ok().flatten().unwrap_or_default();
    let used = as_memory_owner(|| {
        Spi::get_one_with_args::<i64>(
            "SELECT coalesce(sum(coalesce(prompt_tokens, 0)::bigint + coalesce(completion_tokens, 0)), 0)::bigint
               FROM ask.llm_calls
              WHERE role = $1
                AND called_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
            &[role.as_str().into()],
        )
    })
    .ok()
    .flatten()
    .unwrap_or(0)
    .max(0) as u64;
    if used + need > limit {
        Raised::new(
            pgrx::pg_sys::errcodes::PgSqlErrorCode::ERRCODE_INSUFFICIENT_RESOURCES,
            format!("the {what} would go over the token budget of role \"{role}\" for today: {used} of {limit} tokens spent, {calls} could spend up to {need}"),
        )
        .detail("ask.max_tokens_per_day counts the prompt and completion tokens of the role's calls in ask.llm_calls since midnight UTC; a call counts its prompt (about four characters a token) and its whole completion limit.")
        .hint("Wait until midnight UTC, lower ask.max_tokens, or have a superuser raise the budget: ALTER ROLE ... SET ask.max_tokens_per_day = ...; SELECT * FROM ask.usage shows the spending.")
        .raise();
    }
}
