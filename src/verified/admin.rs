//! Adding and removing verified queries: `ask.add_verified()`, `ask.verify_suite()`,
//! `ask.remove_verified()`. A query is stored only after it passed the same guard as
//! generated SQL and ran read-only as the caller; it is written as the extension's owner.

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use pg_ask_core::ask::ExecFailure;
use pg_ask_core::evaluate::gold::gold_alternatives;
use pg_ask_core::guard::check_read_only;

use crate::guard::{self, Limits};
use crate::llm::embeddings;
use crate::pg::errors::{sqlstate_code, Raised};
use crate::pg::gucs;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::OrRaise;
use crate::pg::spi::{ext_schema, in_schema, vector_text};

/// Where a verified query came from (`ask.verified_queries.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Manual,
    Feedback,
    Suite,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Manual => "manual",
            Source::Feedback => "feedback",
            Source::Suite => "suite",
        }
    }
}

/// Check `sql` as generated SQL is checked, run it read-only as the caller with the search
/// path set to `schema` (by default the caller's current schema), and store it for
/// `question`. The id of the stored query (an
/// existing one when the same question and SQL were verified before in the same schema), or
/// the error to raise.
pub(crate) fn store(question: &str, sql: &str, schema: Option<&str>, source: Source) -> Result<i64, Raised> {
    use PgSqlErrorCode::*;
    let question = question.trim();
    if question.is_empty() {
        return Err(Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, "the question of a verified query is empty"));
    }
    // Without a schema, the verifier's own: the query runs later with the search path set to
    // the schema its names were read in, whoever asks.
    let current = if schema.is_none() { Spi::get_one::<String>("SELECT pg_catalog.current_schema()::text").ok().flatten() } else { None };
    let schema = schema.or(current.as_deref());
    if let Some(s) = schema {
        let exists =
            Spi::get_one_with_args::<bool>("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)", &[s.into()]);
        if exists != Ok(Some(true)) {
            return Err(Raised::new(ERRCODE_INVALID_SCHEMA_NAME, format!("schema \"{s}\" does not exist")));
        }
    }
    let checked = check_read_only(sql).map_err(|refusal| {
        Raised::new(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED, format!("a verified query must pass pg_ask's guard: {refusal}"))
            .hint("A verified query is one read-only SELECT (or WITH ... SELECT) without volatile functions, as ask() runs.")
    })?;
    let limits = Limits { row_limit: gucs::row_limit(), timeout_ms: gucs::statement_timeout_ms() };
    let tables = in_schema(schema, || {
        // The relations as written and as the guard's own analysis found them, inside its
        // read-only, rolled-back subtransaction: a name the parse-level check took for a common
        // table expression, a view's tables, the tables of a row-level security policy. Nothing
        // of the statement is planned or run outside the guard.
        let (_, read) = guard::execute_reading(&checked.sql, &limits)?;
        let mut tables = super::resolve_tables(&checked.tables);
        for t in read {
            if !tables.contains(&t) {
                tables.push(t);
            }
        }
        Ok(tables)
    })
    .map_err(|f: ExecFailure| match f {
        ExecFailure::Refused { reason } => {
            Raised::new(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED, format!("a verified query must pass pg_ask's guard: {reason}"))
        }
        ExecFailure::Error { sqlstate, message, detail, hint } => {
            let r = Raised::new(sqlstate_code(sqlstate).unwrap_or(ERRCODE_DATA_EXCEPTION), format!("the verified query failed: {message}"));
            let r = match detail {
                Some(d) => r.detail(d),
                None => r,
            };
            r.hint(hint.unwrap_or_else(|| "A verified query must run, as the calling role, before it is stored.".into()))
        }
    })?;
    if tables.is_empty() {
        return Err(Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, "a verified query must read a table")
            .hint("A query over no table would be shown to every role; verify one that reads the tables the question is about."));
    }
    // The store shows a query only to roles with SELECT on every table it reads: the one who
    // verifies it must be such a role, or it would store what it cannot see.
    let partial: Vec<String> = crate::pg::spi::select_rows(
        "SELECT t::regclass::text FROM pg_catalog.unnest($1::oid[]) t WHERE NOT pg_catalog.has_table_privilege(t, 'SELECT')",
        &[tables.clone().into()],
        |r| r.get::<String>(1),
    )
    .or_raise("could not check the privileges on the tables a query reads");
    if !partial.is_empty() {
        return Err(Raised::new(
            ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "a verified query needs SELECT on the whole of each table it reads; {} has only column privileges on {}",
                crate::pg::spi::current_user(),
                partial.join(", ")
            ),
        )
        .hint("GRANT SELECT on the table, or let a role that has it verify the query."));
    }
    let embedder = crate::pg::gucs::current_embedder();
    let embedding = embedder.as_ref().map(|_| vector_text(&embeddings::embed_one(question)));
    let model = embedder.map(|(_, m)| m);
    let vector = ext_schema("vector");
    let who = crate::pg::spi::current_user();
    let args: [DatumWithOid; 8] = [
        question.into(),
        checked.sql.as_str().into(),
        schema.into(),
        tables.into(),
        who.as_str().into(),
        source.as_str().into(),
        embedding.into(),
        model.into(),
    ];
    let id = as_memory_owner(|| {
        let existing = Spi::get_one_with_args::<i64>(
            "SELECT id FROM ask.verified_queries WHERE lower(question) = lower($1) AND sql = $2 AND schema IS NOT DISTINCT FROM $3 ORDER BY id LIMIT 1",
            &args[..3],
        );
        match existing {
            Ok(Some(id)) => Ok(id),
            _ => Spi::get_one_with_args::<i64>(
                &format!(
                    "INSERT INTO ask.verified_queries (question, sql, schema, tables, verified_by, source, embedding, embedding_model)
                     VALUES ($1, $2, $3, $4::oid[]::regclass[], $5, $6, $7::{vector}.vector, $8) RETURNING id"
                ),
                &args,
            )
            .map(|id| id.unwrap_or_default()),
        }
    });
    id.map_err(|e| crate::pg::errors::internal("a statement on pg_ask's tables failed", e))
}

/// Verify a query: `sql` answers `question`. The SQL must pass pg_ask's guard (one read-only
/// query without volatile functions) and run as the calling role, with the search path set to
/// `schema` when given; then `ask()` shows it to the LLM for similar questions and answers
/// the same question, in other words or with other values, from it without an LLM call.
/// Returns its id (the existing one when the same question and SQL were verified before).
#[pg_extern(name = "add_verified", volatile, parallel_unsafe)]
fn add_verified(question: &str, sql: &str, schema: default!(Option<&str>, "NULL")) -> i64 {
    store(question, sql, schema, Source::Manual).unwrap_or_else(|r| r.raise())
}

/// Every question of the caller's evaluation suite `suite` (ask.load_suite) becomes a verified
/// query with its gold SQL (the first alternative where the gold SQL gives several), in the
/// question's schema. A question whose gold SQL is refused or fails is left out with a
/// WARNING. Returns how many were stored.
#[pg_extern(name = "verify_suite", volatile, strict, parallel_unsafe)]
fn verify_suite(suite: &str) -> i32 {
    let rows: Vec<(i32, String, String, Option<String>)> = crate::pg::spi::select_rows(
        &crate::pg::identity::mine(
            "SELECT qno, question, gold_sql, schema FROM ask.eval_questions WHERE owner = {me} AND suite = $1 ORDER BY qno",
        ),
        &[suite.into()],
        |r| {
            let (Some(qno), Some(question), Some(gold), schema) =
                (r.get::<i32>(1)?, r.get::<String>(2)?, r.get::<String>(3)?, r.get::<String>(4)?)
            else {
                return Ok(None);
            };
            Ok(Some((qno, question, gold, schema)))
        },
    )
    .or_raise("could not read the suite's questions");
    if rows.is_empty() {
        Raised::new(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("there is no evaluation suite \"{suite}\" of role {} with questions", crate::pg::spi::current_user()),
        )
        .hint("Load one with SELECT ask.load_suite(name, rows); ask.eval_suites lists yours.")
        .raise();
    }
    let mut stored = 0;
    for (qno, question, gold, schema) in rows {
        pgrx::check_for_interrupts!();
        let first = match gold_alternatives(&gold) {
            Ok(alts) if !alts.is_empty() => alts[0].clone(),
            Ok(_) => continue,
            Err(e) => {
                warning!("pg_ask: question {qno} of suite \"{suite}\" left out: its gold SQL cannot be read: {e}");
                continue;
            }
        };
        // Each question in its own subtransaction: one that fails leaves the others.
        match crate::pg::subxact::run(crate::pg::subxact::OnSuccess::Release, || {
            store(&question, &first, schema.as_deref(), Source::Suite).map_err(|r| r.message)
        }) {
            Ok(Ok(_)) => stored += 1,
            Ok(Err(message)) => warning!("pg_ask: question {qno} of suite \"{suite}\" left out: {message}"),
            Err(caught) => {
                let message = crate::pg::subxact::caught_message(caught);
                warning!("pg_ask: question {qno} of suite \"{suite}\" left out: {message}");
            }
        }
    }
    stored
}

/// Remove a verified query. Its verifier, the extension's owner and superusers may; others
/// get an error. Returns whether a row was removed (false when it was already gone).
#[pg_extern(name = "remove_verified", volatile, strict, parallel_unsafe)]
fn remove_verified(id: i64) -> bool {
    // Compared in Rust and with qualified operators: the caller's search path must not decide.
    let found = Spi::get_two_with_args::<String, bool>(
        "SELECT v.verified_by::text,
                pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                        WHERE c.oid OPERATOR(pg_catalog.=) 'ask.verified_queries'::pg_catalog.regclass), 'MEMBER')
                OR v.verified_by_role::pg_catalog.oid OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r
                                                                              WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
         FROM ask.verified_queries v WHERE v.id OPERATOR(pg_catalog.=) $1",
        &[id.into()],
    );
    match found {
        // By the verifier's role (its oid), not its name: a role created later with a dropped
        // verifier's name is not that verifier.
        Ok((Some(_), Some(allowed))) if allowed => {}
        Ok((Some(by), _)) => Raised::new(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("verified query {id} was verified by {by}; only its verifier, the extension's owner or a superuser may remove it"),
        )
        .raise(),
        _ => Raised::new(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("there is no verified query {id} that {} may see", crate::pg::spi::current_user()),
        )
        .hint("ask.verified_queries lists the verified queries over tables you may read.")
        .raise(),
    }
    as_memory_owner(|| {
        Spi::get_one_with_args::<bool>(
            "WITH d AS (DELETE FROM ask.verified_queries WHERE id = $1 RETURNING 1) SELECT count(*) > 0 FROM d",
            &[id.into()],
        )
    })
    .ok()
    .flatten()
    .unwrap_or(false)
}
