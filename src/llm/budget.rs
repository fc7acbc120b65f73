//! The token budget (`ask.max_tokens_per_day`) held across sessions and transactions: what
//! each role spends a day is kept in shared memory, reserved before a call is sent and
//! settled when its reply says what it cost.
//!
//! Why shared memory: the ledger (`ask.llm_calls`) is written in the caller's transaction,
//! so a check that sums it cannot see the calls other sessions have in flight, nor calls
//! made in a read-only or rolled-back transaction, which leave no row. PostgreSQL has no
//! autonomous transaction to write a reservation that outlives the caller's (short of dblink
//! or a background worker); shared memory does, and its lock makes check-and-reserve one
//! step. So:
//! - a role's first budgeted call of the day (UTC) in a database seeds its counter from the
//!   ledger's committed rows of the day; from then on every call of the role in that database
//!   (with or without a budget in force) adds to the counter, whatever becomes of the
//!   caller's transaction;
//! - a call reserves its worst case (its prompt and its whole completion limit) before it is
//!   sent, under an exclusive lock, and is refused when that could go over the budget; its
//!   reply then gives back what it did not spend (a reply without token counts, or a failure
//!   after sending, keeps the whole reservation);
//! - the counter lives until the server restarts; after a restart the ledger's committed rows
//!   seed it again (what read-only and rolled-back callers spent before is not known then);
//! - shared memory exists only when pg_ask is preloaded (`shared_preload_libraries`, as the
//!   README sets it up): without it a budget cannot hold, and a budgeted call is refused
//!   (SQLSTATE 55000) rather than let through.

use std::time::{SystemTime, UNIX_EPOCH};

use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::{pg_shmem_init, PGRXSharedMemory, PgLwLock};

use crate::pg::errors::Raised;
use crate::pg::identity::as_memory_owner;

/// Roles (per database) whose spending of the day is kept at once; slots of earlier days are
/// reused. 4,096 slots are 96 kB of shared memory.
const SLOTS: usize = 4096;

#[derive(Clone, Copy, Default)]
struct Slot {
    database: u32,
    /// The role's OID; 0 is a free slot.
    role: u32,
    /// Days since 1970-01-01, UTC.
    day: i64,
    spent: u64,
}

#[derive(Clone, Copy)]
struct Spending {
    slots: [Slot; SLOTS],
}

impl Default for Spending {
    fn default() -> Self {
        Spending { slots: [Slot::default(); SLOTS] }
    }
}

// SAFETY: plain old data without pointers, the same in every process.
unsafe impl PGRXSharedMemory for Spending {}

// SAFETY: the lock's name is pg_ask's own; no other shared memory of the server uses it.
static SPENDING: PgLwLock<Spending> = unsafe { PgLwLock::new(c"pg_ask token budget") };

/// Ask for the shared memory; only from `_PG_init` while `shared_preload_libraries` loads.
// The macro tests the features of every PostgreSQL major pgrx knows, not only this crate's.
#[allow(unexpected_cfgs)]
pub fn init() {
    pg_shmem_init!(SPENDING);
}

fn today() -> i64 {
    (SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) / 86_400) as i64
}

fn who() -> (u32, u32) {
    // SAFETY: reads the backend's database and current user ids.
    unsafe { (pg_sys::MyDatabaseId.to_u32(), pg_sys::GetUserId().to_u32()) }
}

/// Tokens reserved for calls in flight; [`Reservation::settle`] gives back what they did not
/// spend. Dropped unsettled (an error, a cancel), the whole reservation stays spent.
#[must_use]
pub(crate) struct Reservation {
    at: Option<(u32, u32, i64)>,
    tokens: u64,
}

impl Reservation {
    /// The calls spent `spent` tokens of those reserved: give back the rest, or count what
    /// they spent past the reservation (a prompt the tokenizer cut finer than the estimate), so
    /// that the role's next call is refused once the budget is spent.
    pub(crate) fn settle(self, spent: u64) {
        let Some(at) = self.at else { return };
        if spent == self.tokens {
            return;
        }
        let mut table = SPENDING.exclusive();
        if let Some(s) = table.slots.iter_mut().find(|s| (s.database, s.role, s.day) == at) {
            s.spent =
                if spent < self.tokens { s.spent.saturating_sub(self.tokens - spent) } else { s.spent.saturating_add(spent - self.tokens) };
        }
    }
}

/// What the role's counter said when a reservation was refused: tokens spent or reserved.
pub(crate) struct Over {
    pub used: u64,
}

/// The committed ledger rows of the calling role today, as the extension's owner.
fn ledger_today(role: u32, day: i64) -> u64 {
    as_memory_owner(|| {
        Spi::get_one_with_args::<i64>(
            "SELECT coalesce(sum(coalesce(prompt_tokens, 0)::bigint + coalesce(completion_tokens, 0)), 0)::bigint
               FROM ask.llm_calls
              WHERE role = $1::pg_catalog.oid::pg_catalog.regrole
                AND called_at >= pg_catalog.to_timestamp($2::float8 * 86400)",
            &[(role as i64).into(), day.into()],
        )
    })
    .ok()
    .flatten()
    .unwrap_or(0)
    .max(0) as u64
}

/// Reserve `need` tokens for the calling role. With a budget (`limit`), refuse when that
/// could take the role's spending of today past it; without one, count them only when the
/// role's spending is already kept (a budgeted call seeded it today).
pub(crate) fn reserve(need: u64, limit: Option<u64>) -> Result<Reservation, Over> {
    let none = Reservation { at: None, tokens: 0 };
    if !crate::pg::key::preloaded() {
        if limit.is_some() {
            Raised::new(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "ask.max_tokens_per_day is set, but pg_ask is not preloaded: the budget cannot be held across sessions",
            )
            .detail("pg_ask keeps each role's spending of the day in shared memory, which exists only when it is in shared_preload_libraries.")
            .hint("ALTER SYSTEM SET shared_preload_libraries = 'pg_ask' (keep the libraries already listed there) and restart PostgreSQL, or RESET ask.max_tokens_per_day.")
            .raise()
        }
        return Ok(none);
    }
    let (database, role) = who();
    let day = today();
    let at = (database, role, day);
    let kept = SPENDING.share().slots.iter().any(|s| (s.database, s.role, s.day) == at);
    let Some(limit) = limit else {
        if !kept {
            return Ok(none);
        }
        let mut table = SPENDING.exclusive();
        return Ok(match table.slots.iter_mut().find(|s| (s.database, s.role, s.day) == at) {
            Some(s) => {
                s.spent = s.spent.saturating_add(need);
                Reservation { at: Some(at), tokens: need }
            }
            None => none,
        });
    };
    // The seed is read before the lock is taken (no SPI under a lightweight lock); a session
    // that seeds the slot first wins, and the others use its counter.
    let seed = if kept { 0 } else { ledger_today(role, day) };
    let mut table = SPENDING.exclusive();
    let slot = match table.slots.iter().position(|s| (s.database, s.role, s.day) == at) {
        Some(i) => i,
        None => match table.slots.iter().position(|s| s.role == 0 || s.day != day) {
            Some(i) => {
                table.slots[i] = Slot { database, role, day, spent: seed };
                i
            }
            None => {
                // Every slot holds another role's day (one role could create thousands of roles
                // and spend once as each): this role is judged by its committed ledger alone,
                // without a counter for calls in flight, rather than refused.
                drop(table);
                if seed.saturating_add(need) > limit {
                    return Err(Over { used: seed });
                }
                return Ok(none);
            }
        },
    };
    let s = &mut table.slots[slot];
    if s.spent.saturating_add(need) > limit {
        return Err(Over { used: s.spent });
    }
    s.spent += need;
    Ok(Reservation { at: Some(at), tokens: need })
}
