//! Conversations in the database: `ask.conversation_start()`, the turns that `ask()`,
//! `ask.sql()`, `ask.rows()` and `ask.explain()` add with `conversation => id`, and ending and
//! forgetting them. How a question reads after the earlier turns is the core's
//! ([`pg_ask_core::conversation`]); this module keeps the turns.
//!
//! The tables are written only here, as the extension's owner, with the caller's role in each
//! row; each role reads its own under row-level security, and every read below also names
//! `current_user`, so that a superuser (who bypasses row-level security) continues only its
//! own conversations too.

#[cfg(any(test, feature = "pg_test"))]
mod tests;

use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use pg_ask_core::conversation::Turn;
use pg_ask_core::rows::ResultSet;
use pg_ask_core::trace::Trace;

use crate::pg::errors::Raised;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::{select_rows, OrRaise};

/// Characters of a conversation's title at most.
const MAX_TITLE: usize = 200;

fn caller() -> pg_sys::Oid {
    // SAFETY: reads the backend's current user id.
    unsafe { pg_sys::GetUserId() }
}

fn refuse_read_only(what: &str) {
    // SAFETY: reads a backend-local flag.
    if unsafe { pg_sys::XactReadOnly } {
        Raised::new(
            PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("{what} writes a conversation's turns: not in a read-only transaction"),
        )
        .hint("Ask in a read-write transaction, or without conversation => id.")
        .raise()
    }
}

/// The earlier turns of the caller's conversation `id`, oldest first. A conversation that does
/// not exist, is another role's, or has ended is an error.
pub(crate) fn history(id: i64) -> Vec<Turn> {
    refuse_read_only("a question asked with conversation => id");
    let ended: Vec<Option<pgrx::datum::TimestampWithTimeZone>> = select_rows(
        "SELECT ended_at FROM ask.conversations WHERE id OPERATOR(pg_catalog.=) $1 AND role OPERATOR(pg_catalog.=) pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))",
        &[id.into()],
        |r| Ok(Some(r.get::<pgrx::datum::TimestampWithTimeZone>(1)?)),
    )
    .or_raise("could not read ask.conversations");
    match ended.first() {
        None => Raised::new(PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT, format!("there is no conversation {id} of the current role"))
            .hint("Start one with ask.conversation_start(); ask.conversations lists yours.")
            .raise(),
        Some(Some(_)) => Raised::new(PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, format!("conversation {id} has ended"))
            .hint("Start a new one with ask.conversation_start().")
            .raise(),
        Some(None) => {}
    }
    select_rows(
        "SELECT turn, question, standalone, sql, columns, row_count FROM ask.conversation_turns
          WHERE conversation_id OPERATOR(pg_catalog.=) $1 AND role OPERATOR(pg_catalog.=) pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))
          ORDER BY turn",
        &[id.into()],
        |r| {
            let (Some(turn), Some(question), Some(standalone)) = (r.get::<i32>(1)?, r.get::<String>(2)?, r.get::<String>(3)?) else {
                return Ok(None);
            };
            Ok(Some(Turn {
                turn,
                question,
                standalone,
                sql: r.get::<String>(4)?,
                columns: r.get::<Vec<String>>(5)?.unwrap_or_default(),
                rows: r.get::<i64>(6)?,
            }))
        },
    )
    .or_raise("could not read ask.conversation_turns")
}

/// Add the turn that `question` was in conversation `id`: how it was read (the trace's
/// `reading`), the SQL that ran and its result's shape, and the call id.
pub(crate) fn record(id: i64, question: &str, trace: &Trace, sql: &str, result: &ResultSet, call_id: Option<i64>) {
    let (standalone, reading) = match &trace.reading {
        Some(r) => (r.question(question).to_string(), r.name()),
        None => (question.to_string(), "standalone"),
    };
    let columns: Vec<String> = result.columns.clone();
    let rows: i64 = result.rows.len() as i64;
    let args: [pgrx::datum::DatumWithOid; 9] = [
        id.into(),
        caller().into(),
        question.into(),
        standalone.as_str().into(),
        reading.into(),
        Some(sql).filter(|s| !s.is_empty()).into(),
        columns.into(),
        rows.into(),
        call_id.into(),
    ];
    as_memory_owner(|| {
        // The conversation's row is locked first, so that two sessions adding a turn at once
        // number them one after the other.
        Spi::run_with_args(
            "WITH c AS (SELECT id FROM ask.conversations WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE),
                  t AS (UPDATE ask.conversations SET last_at = pg_catalog.clock_timestamp() WHERE id IN (SELECT id FROM c))
             INSERT INTO ask.conversation_turns (conversation_id, turn, role, question, standalone, reading, sql, columns, row_count, call_id)
             SELECT c.id, coalesce((SELECT pg_catalog.max(turn) FROM ask.conversation_turns WHERE conversation_id OPERATOR(pg_catalog.=) c.id), 0) OPERATOR(pg_catalog.+) 1,
                    $2::pg_catalog.regrole, $3, $4, $5, $6, $7, $8, $9
               FROM c",
            &args,
        )
    })
    .or_raise("could not write to ask.conversation_turns");
}

/// Start a conversation of the current role; pass its id as `conversation => id` to `ask()`,
/// `ask.sql()`, `ask.rows()` or `ask.explain()`.
#[pg_extern(name = "conversation_start", volatile, parallel_unsafe)]
fn conversation_start(title: default!(Option<&str>, "NULL")) -> i64 {
    refuse_read_only("ask.conversation_start()");
    if let Some(t) = title.filter(|t| t.chars().count() > MAX_TITLE) {
        Raised::new(
            PgSqlErrorCode::ERRCODE_STRING_DATA_RIGHT_TRUNCATION,
            format!("a conversation's title has at most {MAX_TITLE} characters, not {}", t.chars().count()),
        )
        .raise()
    }
    let args: [pgrx::datum::DatumWithOid; 2] = [caller().into(), title.into()];
    as_memory_owner(|| {
        Spi::get_one_with_args::<i64>("INSERT INTO ask.conversations (role, title) VALUES ($1::pg_catalog.regrole, $2) RETURNING id", &args)
    })
    .or_raise("could not write to ask.conversations")
    .unwrap_or_else(|| crate::pg::errors::internal("could not start a conversation", "no id returned").raise())
}

/// End the current role's conversation `conversation`: it takes no more turns, and its turns
/// stay readable until forgotten. False when it had already ended.
#[pg_extern(name = "conversation_end", volatile, parallel_unsafe)]
fn conversation_end(conversation: i64) -> bool {
    refuse_read_only("ask.conversation_end()");
    let args: [pgrx::datum::DatumWithOid; 2] = [conversation.into(), caller().into()];
    let exists = as_memory_owner(|| {
        Spi::get_one_with_args::<bool>(
            "SELECT EXISTS (SELECT FROM ask.conversations WHERE id OPERATOR(pg_catalog.=) $1 AND role OPERATOR(pg_catalog.=) $2::pg_catalog.regrole)",
            &args,
        )
    })
    .or_raise("could not read ask.conversations");
    if exists != Some(true) {
        Raised::new(PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT, format!("there is no conversation {conversation} of the current role"))
            .hint("ask.conversations lists yours.")
            .raise()
    }
    as_memory_owner(|| {
        Spi::get_one_with_args::<bool>(
            "WITH e AS (UPDATE ask.conversations SET ended_at = pg_catalog.clock_timestamp()
                         WHERE id OPERATOR(pg_catalog.=) $1 AND ended_at IS NULL RETURNING id)
             SELECT EXISTS (SELECT FROM e)",
            &args[..1],
        )
    })
    .or_raise("could not write to ask.conversations")
        == Some(true)
}

/// Forget the current role's conversation `conversation` and its turns. False when there was
/// none of that id.
#[pg_extern(name = "conversation_forget", volatile, parallel_unsafe)]
fn conversation_forget(conversation: i64) -> bool {
    refuse_read_only("ask.conversation_forget()");
    let args: [pgrx::datum::DatumWithOid; 2] = [conversation.into(), caller().into()];
    as_memory_owner(|| {
        Spi::get_one_with_args::<bool>(
            "WITH d AS (DELETE FROM ask.conversations WHERE id OPERATOR(pg_catalog.=) $1 AND role OPERATOR(pg_catalog.=) $2::pg_catalog.regrole RETURNING id)
             SELECT EXISTS (SELECT FROM d)",
            &args,
        )
    })
    .or_raise("could not write to ask.conversations")
        == Some(true)
}

/// Forget the conversations whose last turn is older than `older_than`, with their turns: the
/// current role's, or with `all_roles` every role's (a superuser only). Returns how many.
#[pg_extern(name = "conversation_purge", volatile, parallel_unsafe)]
fn conversation_purge(older_than: default!(pgrx::datum::Interval, "'30 days'"), all_roles: default!(bool, false)) -> i64 {
    refuse_read_only("ask.conversation_purge()");
    // SAFETY: reads whether the current user is a superuser.
    if all_roles && !unsafe { pg_sys::superuser() } {
        Raised::new(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, "only a superuser purges every role's conversations")
            .hint("ask.conversation_purge(older_than) purges your own.")
            .raise()
    }
    let args: [pgrx::datum::DatumWithOid; 3] = [older_than.into(), caller().into(), all_roles.into()];
    as_memory_owner(|| {
        Spi::get_one_with_args::<i64>(
            "WITH d AS (DELETE FROM ask.conversations
                         WHERE last_at OPERATOR(pg_catalog.<) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) $1)
                           AND ($3 OR role OPERATOR(pg_catalog.=) $2::pg_catalog.regrole)
                        RETURNING id)
             SELECT pg_catalog.count(*) FROM d",
            &args,
        )
    })
    .or_raise("could not write to ask.conversations")
    .unwrap_or(0)
}
