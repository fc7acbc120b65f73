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

use super::budget::{self, Over, Reservation};

/// The cache needs its table (0.2.0 on): during an upgrade it is left out.
fn cache_ttl() -> Option<std::time::Duration> {
    gucs::cache().filter(|_| crate::pg::version::sql_at_least("0.2.0"))
}

/// The calling role: the cache is kept per role (by OID), so that no role can tell from a
/// hit, or from how fast an answer came, that another role sent the same request.
fn role() -> pgrx::pg_sys::Oid {
    // SAFETY: reads the backend's current user id.
    unsafe { pgrx::pg_sys::GetUserId() }
}

/// The cached reply of the calling role's request whose key is `key`, if `ask.cache` is on
/// and one is fresh. Read as the extension's owner: nobody reads the cache but pg_ask.
pub(crate) fn lookup(key: &str) -> Option<ChatResponse> {
    let ttl = cache_ttl()?;
    let role = role();
    let reply = as_memory_owner(|| {
        Spi::get_one_with_args::<JsonB>(
            "SELECT (SELECT reply FROM ask.llm_cache
                      WHERE role = $3::pg_catalog.regrole AND key = pg_catalog.sha256(pg_catalog.convert_to($1, 'UTF8'))
                        AND created_at > pg_catalog.clock_timestamp() - pg_catalog.make_interval(secs => $2))",
            &[key.into(), (ttl.as_secs_f64()).into(), role.into()],
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

/// Keep a complete reply for the calling role's identical request (not in a read-only
/// transaction, where nothing can be written).
pub(crate) fn store(key: &str, cfg: &LlmConfig, r: &ChatResponse) {
    // SAFETY: reading a backend-local flag.
    if cache_ttl().is_none() || !cacheable(r) || unsafe { pg_sys::XactReadOnly } {
        return;
    }
    let role = role();
    let stored = as_memory_owner(|| {
        Spi::run_with_args(
            "INSERT INTO ask.llm_cache (role, key, provider, model, reply)
             VALUES ($5::pg_catalog.regrole, pg_catalog.sha256(pg_catalog.convert_to($1, 'UTF8')), $2, $3, $4)
             ON CONFLICT (role, key) DO UPDATE SET provider = EXCLUDED.provider, model = EXCLUDED.model,
                 reply = EXCLUDED.reply, created_at = EXCLUDED.created_at",
            &[key.into(), cfg.provider.as_str().into(), cfg.model.as_str().into(), JsonB(to_cached(r)).into(), role.into()],
        )
    });
    if let Err(e) = stored {
        warning!("pg_ask: could not write ask.llm_cache: {e}");
    }
}

/// Reserve, before anything is sent, what `reqs` can spend (prompts and whole completion
/// limits), or refuse them all when that could take the role past `ask.max_tokens_per_day`
/// ([`super::budget`]). The caller settles the reservation with what the replies spent.
pub(crate) fn check_budget(cfg: &LlmConfig, reqs: &[&ChatRequest]) -> Reservation {
    let need: u64 = reqs.iter().map(|r| most_tokens(cfg, r)).sum();
    let calls = if reqs.len() == 1 { "this call".to_string() } else { format!("these {} calls", reqs.len()) };
    require_budget(need, "LLM call", &calls)
}

/// Reserves `need` tokens for the calling role, or refuses (SQLSTATE 53000) what could take
/// it over `ask.max_tokens_per_day` for today, counting what its other sessions have in
/// flight and what it spent in read-only or rolled-back transactions. Embedding requests
/// count too (`ask.embed()`, value and schema memories embedded by a server).
pub(crate) fn require_budget(need: u64, what: &str, calls: &str) -> Reservation {
    let limit = gucs::max_tokens_per_day();
    if need == 0 {
        return budget::reserve(0, None).unwrap_or_else(|_| unreachable!("no limit, no refusal"));
    }
    match budget::reserve(need, limit) {
        Ok(r) => r,
        Err(Over { used }) => {
            let limit = limit.unwrap_or_default();
            let role = Spi::get_one::<String>("SELECT current_user::text").ok().flatten().unwrap_or_default();
            Raised::new(
                pgrx::pg_sys::errcodes::PgSqlErrorCode::ERRCODE_INSUFFICIENT_RESOURCES,
                format!("the {what} would go over the token budget of role \"{role}\" for today: {used} of {limit} tokens spent or reserved, {calls} could spend up to {need}"),
            )
            .detail("ask.max_tokens_per_day counts the prompt and completion tokens of the role's calls since midnight UTC, in every session and transaction (read-only and rolled-back ones too), and reserves what calls in flight could spend; a call counts its prompt (about four characters a token) and its whole completion limit until its reply says what it spent.")
            .hint("Wait until midnight UTC, lower ask.max_tokens, or have a superuser raise the budget: ALTER ROLE ... SET ask.max_tokens_per_day = ...; SELECT * FROM ask.usage shows the spending written to the ledger.")
            .raise()
        }
    }
}
