//! The SQL functions of the text-to-SQL pipeline: `ask()`, `ask.sql()`, `ask.rows()`,
//! `ask.explain()`.

pub(crate) mod calls;
mod earlier;
pub(crate) mod host;
pub(crate) mod query;
#[cfg(any(test, feature = "pg_test"))]
mod tests;

use pgrx::prelude::*;
use pgrx::JsonB;

use pg_ask_core::ask::{self as pipeline, Goal, Outcome};
use pg_ask_core::trace::Source;

use crate::ask::host::BackendHost;
use crate::pg::errors::{self, Raised};
use crate::pg::gucs::{self, LlmOverrides};

/// Named arguments every function takes, overriding the GUCs for one call.
struct CallArgs {
    llm: LlmOverrides,
    max_attempts: Option<i32>,
}

/// The call's host, with its settings read once.
fn host(args: &CallArgs) -> BackendHost {
    BackendHost::configured(&args.llm, gucs::ask_config(args.max_attempts, &args.llm))
}

/// Run the pipeline as one call of the call log (a turn of `conversation` when given),
/// raising its error as a PostgreSQL error.
fn run(question: &str, context: Option<&str>, conversation: Option<i64>, args: &CallArgs, goal: Goal) -> Outcome {
    let history = conversation.map(crate::conversation::history).unwrap_or_default();
    let mut h = host(args);
    let cfg = h.cfg.clone();
    let call = calls::begin();
    match pipeline::run_in_conversation(&mut h, question, &history, context, &cfg, goal) {
        Ok(mut outcome) => {
            answered(&call, question, conversation, &mut outcome);
            if let Some(pg_ask_core::conversation::Reading::Rewritten { standalone, follows, .. }) = &outcome.trace.reading {
                notice!("pg_ask: read as a follow-up of turn {follows}: {standalone}");
            }
            if outcome.result.truncated {
                notice!("pg_ask: the result was cut at ask.row_limit ({} rows)", cfg.row_limit);
            }
            if outcome.result.size_cut {
                notice!(
                    "pg_ask: the result was cut at ask.max_result_size ({} kB): rows past it were not read, cells larger than it were cut",
                    cfg.max_result_bytes / 1024
                );
            }
            for n in &outcome.trace.notices {
                notice!("{n}");
            }
            match (outcome.trace.source, outcome.trace.verified_id) {
                (Some(Source::Verified), Some(id)) => notice!("pg_ask: answered from verified query {id} without an LLM call"),
                (Some(Source::VerifiedTemplate), Some(id)) => {
                    notice!("pg_ask: answered from verified query {id} as a template, its values chosen by the LLM")
                }
                _ => {
                    // Why no template answered, for a DBA who asks (client_min_messages = debug1).
                    if let Some(st) = outcome.trace.stages.iter().find(|s| s.stage == pipeline::stage::TEMPLATE) {
                        debug1!("pg_ask: no verified template answered: offered {:?}, {}", outcome.trace.templates_offered, st.output);
                    }
                }
            }
            outcome
        }
        Err((e, _trace)) => errors::from_ask(&e).raise(),
    }
}

/// Record a call that answered: its call id in the trace, its row in the call log, and the
/// turn it was of `conversation`.
fn answered(call: &calls::Call, question: &str, conversation: Option<i64>, outcome: &mut Outcome) {
    outcome.trace.call_id = call.id;
    finish(call, question, &outcome.trace, Some(&outcome.sql));
    if let Some(id) = conversation {
        crate::conversation::record(id, question, &outcome.trace, &outcome.sql, &outcome.result, call.id);
    }
}

/// Record a finished call: its row in the call log (a follow-up as the standalone question it
/// was answered as), and a use of each verified query that answered it or was shown to the LLM.
fn finish(call: &calls::Call, question: &str, trace: &pg_ask_core::trace::Trace, sql: Option<&str>) {
    call.record(trace.reading.as_ref().map_or(question, |r| r.question(question)), trace, sql);
    crate::verified::count_uses(&trace.verified_used);
}

fn args(
    model: Option<&str>,
    provider: Option<&str>,
    base_url: Option<&str>,
    temperature: Option<f64>,
    max_attempts: Option<i32>,
) -> CallArgs {
    if let Some(n) = max_attempts {
        let range = pg_ask_core::config::MAX_ATTEMPTS;
        if !range.contains(&n) {
            Raised::new(
                pgrx::pg_sys::errcodes::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("max_attempts must be between {} and {}, not {n}", range.start(), range.end()),
            )
            .raise();
        }
    }
    CallArgs {
        llm: LlmOverrides {
            provider: provider.map(str::to_string),
            base_url: base_url.map(str::to_string),
            model: model.map(str::to_string),
            temperature,
        },
        max_attempts,
    }
}

/// Value correction alone: the statement with its literals corrected against the value memory.
#[pg_extern(name = "correct_sql", volatile, parallel_unsafe)]
fn correct_sql(sql: &str, use_llm: default!(bool, true)) -> String {
    let mut host =
        if use_llm { crate::ask::host::BackendHost::new(&Default::default()) } else { crate::ask::host::BackendHost::for_lookups() };
    let mut trace = pg_ask_core::trace::Trace::default();
    let max_prompt_tokens = crate::pg::gucs::max_prompt_tokens();
    // A statement the guard refuses (a write, several statements, text that does not parse)
    // is returned as written: pg_ask would not run it, so it corrects nothing in it.
    let Ok(checked) = pg_ask_core::guard::check_read_only(sql) else { return sql.to_string() };
    let corrected = pg_ask_core::ask::correct_statement(&mut host, &mut trace, None, &checked, use_llm, max_prompt_tokens);
    for n in &trace.notices {
        notice!("{n}");
    }
    match corrected {
        Ok(c) if c.changed => c.statement.sql,
        Ok(_) => sql.to_string(),
        Err(e) => crate::pg::errors::Raised::new(
            crate::pg::errors::sqlstate_code(e.sqlstate).unwrap_or(pgrx::pg_sys::errcodes::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR),
            format!("could not correct the statement: {e}"),
        )
        .raise(),
    }
}

/// `ask()` lives in `public`, so that it works with the default search_path right after
/// CREATE EXTENSION; everything else is in the extension's schema `ask`.
#[pg_schema]
mod public {
    use super::*;

    /// Answer a question about the database in plain language. The final SQL is raised as a
    /// NOTICE; the answer is either a short text or, when the rows are the answer, the rows as a
    /// table. With `context`, the LLM first decides whether the context already answers the
    /// question; if it does, no SQL runs.
    // The SQL function's named arguments, one per setting a call may override.
    #[allow(clippy::too_many_arguments)]
    #[pg_extern(name = "ask", volatile, parallel_unsafe)]
    pub(super) fn ask_answer_with_conversation(
        question: &str,
        model: default!(Option<&str>, "NULL"),
        provider: default!(Option<&str>, "NULL"),
        base_url: default!(Option<&str>, "NULL"),
        temperature: default!(Option<f64>, "NULL"),
        max_attempts: default!(Option<i32>, "NULL"),
        context: default!(Option<&str>, "NULL"),
        conversation: default!(Option<i64>, "NULL"),
    ) -> String {
        let a = args(model, provider, base_url, temperature, max_attempts);
        let out = run(question, context, conversation, &a, Goal::Answer);
        if out.trace.source == Some(Source::Clarify) {
            notice!("pg_ask: the question is ambiguous (ask.clarify is on): it is asked back; no SQL ran");
        } else if out.sql.is_empty() {
            notice!("pg_ask: answered from the context; no SQL ran");
        } else {
            crate::plain::sql_notice(&out.sql);
        }
        out.answer_text()
    }
}

/// The final, checked and corrected SQL for a question (it was run once, read-only, to
/// validate it). `SELECT ask.sql('...') \gexec` runs it with real column types.
#[pg_extern(name = "sql", volatile, parallel_unsafe)]
pub(super) fn ask_sql_with_conversation(
    question: &str,
    model: default!(Option<&str>, "NULL"),
    provider: default!(Option<&str>, "NULL"),
    base_url: default!(Option<&str>, "NULL"),
    temperature: default!(Option<f64>, "NULL"),
    max_attempts: default!(Option<i32>, "NULL"),
    conversation: default!(Option<i64>, "NULL"),
) -> String {
    let a = args(model, provider, base_url, temperature, max_attempts);
    run(question, None, conversation, &a, Goal::Sql).sql
}

/// The result rows of the final SQL, one jsonb object per row.
#[pg_extern(name = "rows", volatile, parallel_unsafe)]
pub(super) fn ask_rows_with_conversation(
    question: &str,
    model: default!(Option<&str>, "NULL"),
    provider: default!(Option<&str>, "NULL"),
    base_url: default!(Option<&str>, "NULL"),
    temperature: default!(Option<f64>, "NULL"),
    max_attempts: default!(Option<i32>, "NULL"),
    conversation: default!(Option<i64>, "NULL"),
) -> SetOfIterator<'static, JsonB> {
    let a = args(model, provider, base_url, temperature, max_attempts);
    let out = run(question, None, conversation, &a, Goal::Rows);
    notice!("pg_ask SQL: {}", out.sql);
    SetOfIterator::new(out.result.to_objects().into_iter().map(JsonB))
}

/// The full trace of the pipeline for a question: every stage with its input, output, tokens
/// and milliseconds, and every decision (context switch, selected schemas and tables with
/// their scores, retrieval plan, per-step SQL, answer). A failing run returns its trace with an "error" entry instead of raising,
/// so the trace shows where it stopped.
// The SQL function's named arguments, one per setting a call may override.
#[allow(clippy::too_many_arguments)]
#[pg_extern(name = "explain", volatile, parallel_unsafe)]
pub(super) fn ask_explain_with_conversation(
    question: &str,
    model: default!(Option<&str>, "NULL"),
    provider: default!(Option<&str>, "NULL"),
    base_url: default!(Option<&str>, "NULL"),
    temperature: default!(Option<f64>, "NULL"),
    max_attempts: default!(Option<i32>, "NULL"),
    context: default!(Option<&str>, "NULL"),
    conversation: default!(Option<i64>, "NULL"),
) -> JsonB {
    let a = args(model, provider, base_url, temperature, max_attempts);
    let history = conversation.map(crate::conversation::history).unwrap_or_default();
    let mut h = host(&a);
    let mut cfg = gucs::ask_config(a.max_attempts, &a.llm);
    cfg.record_prompts = gucs::explain_prompts();
    let call = calls::begin();
    let trace = match pipeline::run_in_conversation(&mut h, question, &history, context, &cfg, Goal::Answer) {
        Ok(mut out) => {
            answered(&call, question, conversation, &mut out);
            let mut v = serde_json::to_value(&out.trace).unwrap_or_default();
            v["answer"] = serde_json::Value::String(out.answer_text());
            v
        }
        Err((_, mut trace)) => {
            trace.call_id = call.id;
            finish(&call, question, &trace, trace.final_sql.as_deref());
            serde_json::to_value(&trace).unwrap_or_default()
        }
    };
    // The configured key, not the request's: a request to a URL the key is not sent to carries
    // none, and the trace must still be scrubbed.
    JsonB(gucs::scrub_json(trace))
}
