//! The functions of `ask()`, `ask.sql()`, `ask.rows()` and `ask.explain()` as pg_ask 0.1.0's SQL
//! declares them (without `conversation`), under the C symbols that SQL names. A database
//! whose extension is not yet updated (`ALTER EXTENSION pg_ask UPDATE`) calls these with the
//! new library loaded; they answer as the new functions do outside a conversation. No SQL is
//! generated for them: the current install script declares the functions with `conversation`.

use pgrx::prelude::*;
use pgrx::JsonB;

#[pg_extern(sql = false, volatile, parallel_unsafe)]
fn ask_answer(
    question: &str,
    model: Option<&str>,
    provider: Option<&str>,
    base_url: Option<&str>,
    temperature: Option<f64>,
    max_attempts: Option<i32>,
    context: Option<&str>,
) -> String {
    super::public::ask_answer_with_conversation(question, model, provider, base_url, temperature, max_attempts, context, None)
}

#[pg_extern(sql = false, volatile, parallel_unsafe)]
fn ask_sql(
    question: &str,
    model: Option<&str>,
    provider: Option<&str>,
    base_url: Option<&str>,
    temperature: Option<f64>,
    max_attempts: Option<i32>,
) -> String {
    super::ask_sql_with_conversation(question, model, provider, base_url, temperature, max_attempts, None)
}

#[pg_extern(sql = false, volatile, parallel_unsafe)]
fn ask_rows(
    question: &str,
    model: Option<&str>,
    provider: Option<&str>,
    base_url: Option<&str>,
    temperature: Option<f64>,
    max_attempts: Option<i32>,
) -> SetOfIterator<'static, JsonB> {
    super::ask_rows_with_conversation(question, model, provider, base_url, temperature, max_attempts, None)
}

#[pg_extern(sql = false, volatile, parallel_unsafe)]
fn ask_explain(
    question: &str,
    model: Option<&str>,
    provider: Option<&str>,
    base_url: Option<&str>,
    temperature: Option<f64>,
    max_attempts: Option<i32>,
    context: Option<&str>,
) -> JsonB {
    super::ask_explain_with_conversation(question, model, provider, base_url, temperature, max_attempts, context, None)
}
