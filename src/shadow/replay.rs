//! `ask.shadow_replay()`: the captured changes shown to the LLM, the query run for real, the
//! answer scored.

use super::catalog::{entry, key_columns, parse_encoding, table_name};
use crate::pg::errors::raise;
use crate::pg::gucs::{self, LlmOverrides};
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::relname;
use crate::pg::subxact::{self, OnSuccess};
use crate::{guard, llm};
use pg_ask_core::shadow::delta::TableName;
use pg_ask_core::shadow::prompting::{Answer, PastCommand, Prompting, QueryKind, ReplayPrompt};
use pg_ask_core::shadow::replay::{query_kind, table_text, ColumnDef};
use pg_ask_core::shadow::run::{answer_json, Scored};
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::pg_sys::panic::CaughtError;
use pgrx::prelude::*;
use pgrx::JsonB;
use std::collections::HashMap;
use std::time::Instant;

pub(crate) fn parse_prompting(prompting: &str) -> Prompting {
    prompting.parse().unwrap_or_else(|_| {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("unknown prompting {prompting:?}"),
            "Use 'zero_shot', 'zero_cot' or 'few_shot'.",
        )
    })
}

/// Tables a query names, resolved as the caller's search_path resolves them.
pub(crate) fn tables_of(query: &str) -> Vec<pg_sys::Oid> {
    let names = pg_ask_core::shadow::workload::tables_in(query).unwrap_or_else(|e| {
        raise(
            PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
            format!("cannot read the query: {e}"),
            "Pass one SELECT, INSERT, UPDATE or DELETE statement.",
        )
    });
    let mut out = Vec::new();
    for name in names {
        let oid = Spi::get_one_with_args::<pg_sys::Oid>("SELECT pg_catalog.to_regclass($1)::oid", &[name.clone().into()]).ok().flatten();
        match oid {
            Some(oid) => out.push(oid),
            None => raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"), ""),
        }
    }
    out.sort_by_key(|o| o.to_u32());
    out.dedup();
    out
}

pub(crate) fn columns_of(rel: pg_sys::Oid) -> Vec<ColumnDef> {
    let mut out = Vec::new();
    Spi::connect(|client| {
        let rows = client.select(
            "SELECT attname::text, pg_catalog.format_type(atttypid, atttypmod), attnotnull
               FROM pg_catalog.pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            None,
            &[rel.into()],
        )?;
        for row in rows {
            out.push(ColumnDef {
                name: row.get::<String>(1)?.unwrap_or_default(),
                type_name: row.get::<String>(2)?.unwrap_or_default(),
                not_null: row.get::<bool>(3)?.unwrap_or(false),
            });
        }
        Ok::<_, pgrx::spi::Error>(())
    })
    .unwrap_or_else(|e| crate::pg::errors::internal("could not read the columns", e).raise());
    out
}

/// The truth of `query`, run for real as the caller: rows of a SELECT (read-only, guarded), or
/// whether an INSERT/UPDATE/DELETE succeeds (run in a subtransaction that is rolled back).
pub(crate) fn true_answer(query: &str, kind: QueryKind) -> Answer {
    match kind {
        QueryKind::Select => {
            let limits = guard::Limits { row_limit: gucs::row_limit(), timeout_ms: gucs::statement_timeout_ms() };
            match guard::execute(query, &limits) {
                Ok(rs) => Answer::Rows(rs.rows),
                Err(e) => raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, format!("the query cannot be run: {}", e.for_llm()), ""),
            }
        }
        QueryKind::Modify => {
            if let Err(refusal) = pg_ask_core::guard::check_write_step(query) {
                raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("the statement is refused: {refusal}"), "");
            }
            outcome_of(query, OnSuccess::RollBack)
        }
    }
}

/// Run one statement in its own subtransaction, kept or rolled back as `on_success` says:
/// Succeed or Fail.
pub(crate) fn outcome_of(sql: &str, on_success: OnSuccess) -> Answer {
    run_outcome(sql, on_success, Checked::No)
}

/// What [`run_outcome`] checks before it runs a statement.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Checked {
    /// Nothing: the caller's own statement.
    No,
    /// Another role's statement: refused (Fail) when it calls a function off the allow-list or
    /// any volatile one, `nextval` included.
    NoVolatile,
}

/// [`outcome_of`], with a statement refused (Fail) as `checked` says.
pub(crate) fn run_outcome(sql: &str, on_success: OnSuccess, checked: Checked) -> Answer {
    let Ok(csql) = std::ffi::CString::new(sql) else { return Answer::Fail };
    // Only trusted code may start while it runs: the statement may write to a table whose
    // triggers, index expressions or types another role wrote.
    match subxact::run(on_success, move || {
        // SAFETY: one statement analysed, then run in its own SPI session.
        guard::trusted::only(|| unsafe {
            if checked == Checked::NoVolatile && guard::statement_refusal(&csql, false).is_some() {
                return Err("refused".to_string());
            }
            guard::spi_execute(&csql, false, 0)
        })
    }) {
        Ok(Ok(_)) => Answer::Succeed,
        Ok(Err(_)) => Answer::Fail,
        Err(e) => fail_or_rethrow(e),
    }
}

/// A statement's error means Fail; a cancel or a panic goes on up.
pub(crate) fn fail_or_rethrow(e: CaughtError) -> Answer {
    match &e {
        CaughtError::PostgresError(r) | CaughtError::ErrorReport(r)
            if r.sql_error_code() as isize != PgSqlErrorCode::ERRCODE_QUERY_CANCELED as isize
                && r.sql_error_code() as isize != PgSqlErrorCode::ERRCODE_ADMIN_SHUTDOWN as isize =>
        {
            Answer::Fail
        }
        _ => e.rethrow(),
    }
}

/// Show the LLM the last `last_n` captured changes of the tables `query` reads, ask it for the
/// query's result, run the query for real, and score the LLM's answer (the InConDB metric).
// The arguments and the result's column names are the SQL signature pgrx builds.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
#[pg_extern(volatile, parallel_unsafe)]
pub(crate) fn shadow_replay(
    query: &str,
    encoding: default!(&str, "'sql'"),
    prompting: default!(&str, "'few_shot'"),
    last_n: default!(i32, 100),
    model: default!(Option<&str>, "NULL"),
    provider: default!(Option<&str>, "NULL"),
    base_url: default!(Option<&str>, "NULL"),
) -> TableIterator<
    'static,
    (name!(llm_answer, Option<JsonB>), name!(true_answer, JsonB), name!(score, f64), name!(tokens, Option<i64>), name!(ms, f64)),
> {
    let started = Instant::now();
    let encoding = parse_encoding(encoding);
    let prompting = parse_prompting(prompting);
    if last_n < 0 {
        raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, "last_n must not be negative", "");
    }
    let kind = query_kind(query).unwrap_or_else(|| {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "ask.shadow_replay() replays one SELECT, INSERT, UPDATE or DELETE",
            "Pass a single statement of one of those kinds.",
        )
    });
    let overrides = LlmOverrides {
        provider: provider.map(str::to_string),
        base_url: base_url.map(str::to_string),
        model: model.map(str::to_string),
        temperature: None,
    };
    let cfg = gucs::llm_config(&overrides).unwrap_or_else(|m| crate::pg::errors::config(m).raise());

    let rels = tables_of(query);
    if rels.is_empty() {
        raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, "the query reads no table", "");
    }
    let mut schema = Vec::new();
    // Name and key of each table, read once for the schema and every log entry.
    let mut tables: HashMap<u32, (TableName, Vec<String>)> = HashMap::new();
    let mut complete = true;
    for &rel in &rels {
        let allowed = Spi::get_one_with_args::<bool>("SELECT pg_catalog.has_table_privilege($1, 'SELECT')", &[rel.into()]).ok().flatten();
        if allowed != Some(true) {
            raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("permission denied for table {}", relname(rel)), "");
        }
        // SAFETY: reads the backend's current user id.
        if crate::values::rls_hides(rel, unsafe { pg_sys::GetUserId() }) {
            raise(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("the captured changes of {} are not shown: row-level security hides rows of the table from this role", relname(rel)),
                "The log holds the changes of every row, whatever the policies say; the table's owner, a superuser or a role with BYPASSRLS can replay it.",
            );
        }
        let shadowed = as_memory_owner(|| {
            Spi::get_one_with_args::<bool>("SELECT complete FROM ask.shadow_tables WHERE relid = $1", &[rel.into()]).ok().flatten()
        });
        match shadowed {
            None => raise(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("{} is not shadowed", relname(rel)),
                &format!("SELECT ask.shadow_enable('{}'); captures its changes from now on.", relname(rel).replace('\'', "''")),
            ),
            Some(c) => complete &= c,
        }
        let (name, keys) = (table_name(rel), key_columns(rel));
        schema.push(table_text(&name, &columns_of(rel), &keys, encoding));
        tables.insert(rel.to_u32(), (name, keys));
    }

    // The last N entries of those tables, oldest first.
    let (entries, total) = as_memory_owner(|| {
        let total = Spi::get_one_with_args::<i64>("SELECT count(*) FROM ask.shadow_log WHERE relid = ANY($1)", &[rels.clone().into()])
            .ok()
            .flatten()
            .unwrap_or(0);
        let mut raw = Vec::new();
        Spi::connect(|client| {
            let rows = client.select(
                "SELECT seq, xid, relid, op, old_row, new_row FROM
                   (SELECT * FROM ask.shadow_log WHERE relid = ANY($1) ORDER BY seq DESC LIMIT $2) l ORDER BY seq",
                None,
                &[rels.clone().into(), (last_n as i64).into()],
            )?;
            for row in rows {
                raw.push((
                    row.get::<i64>(1)?.unwrap_or(0),
                    row.get::<i64>(2)?.unwrap_or(0),
                    row.get::<pg_sys::Oid>(3)?.unwrap_or(pg_sys::InvalidOid),
                    row.get::<i8>(4)?.unwrap_or(b'I' as i8),
                    row.get::<JsonB>(5)?,
                    row.get::<JsonB>(6)?,
                ));
            }
            Ok::<_, pgrx::spi::Error>(())
        })
        .unwrap_or_else(|e| crate::pg::errors::internal("could not read the log", e).raise());
        (raw, total)
    });
    let mut history = Vec::with_capacity(entries.len());
    for (seq, xid, rel, op, old, new) in entries {
        let (name, keys) = tables[&rel.to_u32()].clone();
        let e = entry(name, op, old, new, seq, xid, keys);
        match e.encode(encoding) {
            Ok(command) => history.push(PastCommand { command, result: Some(Answer::Succeed) }),
            Err(err) => raise(PgSqlErrorCode::ERRCODE_DATA_CORRUPTED, format!("log entry {seq} cannot be encoded: {err}"), ""),
        }
    }
    let initially_empty = complete && total <= last_n as i64;

    let req = ReplayPrompt { encoding, prompting, schema: &schema, history: &history, query, initially_empty, texts: None }
        .build()
        .unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise());
    let (reply, prompt_tokens, completion_tokens) = match llm::chat(&cfg, "shadow_replay", &req) {
        Ok(r) => (r.content, r.prompt_tokens, r.completion_tokens),
        Err(e) => crate::pg::errors::from_llm(&e, "shadow_replay").raise(),
    };
    let truth = true_answer(query, kind);
    let scored = Scored::read(&reply, kind, &truth, Some(query));
    if let Some(e) = &scored.error {
        notice!("pg_ask: the LLM's reply could not be read ({e}); it scores 0");
    }
    let score = scored.score;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let llm_answer = scored.answer.as_ref().map(answer_json);
    let tokens = match (prompt_tokens, completion_tokens) {
        (None, None) => None,
        (p, c) => Some((p.unwrap_or(0) + c.unwrap_or(0)) as i64),
    };
    Spi::run_with_args(
        "INSERT INTO ask.shadow_replays (query, encoding, prompting, last_n, commands, model, llm_answer, true_answer, reply, score, prompt_tokens, completion_tokens, ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        &[
            query.into(),
            encoding.as_str().into(),
            prompting.as_str().into(),
            last_n.into(),
            (history.len() as i32).into(),
            cfg.model.clone().into(),
            llm_answer.clone().map(JsonB).into(),
            JsonB(answer_json(&truth)).into(),
            reply.into(),
            score.into(),
            prompt_tokens.map(|t| t as i64).into(),
            completion_tokens.map(|t| t as i64).into(),
            ms.into(),
        ],
    )
    .unwrap_or_else(|e| crate::pg::errors::internal("could not record the replay", e).raise());
    TableIterator::once((llm_answer.map(JsonB), JsonB(answer_json(&truth)), score, tokens, ms))
}
