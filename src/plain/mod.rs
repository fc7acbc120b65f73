//! The SQL in plain words: `ask.explain_sql()`, and the DETAIL of `ask()`'s SQL NOTICE with
//! `ask.sql_in_words` on. What a statement does is read from its parse in the core
//! (`pg_ask_core::plain`), never from a model: each line says only what the SQL holds.

use pgrx::pg_sys::errcodes::PgSqlErrorCode::*;
use pgrx::prelude::*;

use pg_ask_core::plain::{describe, PlainError};

use crate::pg::errors::Raised;

/// Bytes of a query `ask.explain_sql()` reads at most (what it says grows with what it reads).
const MAX_SQL_BYTES: usize = 100_000;

/// What `sql` (one query) does, in short lines a reader who does not write SQL can check
/// against the question: the tables it reads and how they are joined, the rows it keeps, the
/// groups and what it computes for each, the order and how many rows.
#[pg_extern(name = "explain_sql", stable, strict, parallel_safe)]
fn explain_sql(sql: &str) -> String {
    if sql.len() > MAX_SQL_BYTES {
        Raised::new(ERRCODE_PROGRAM_LIMIT_EXCEEDED, format!("ask.explain_sql() reads a query of at most {MAX_SQL_BYTES} bytes")).raise();
    }
    match describe(sql) {
        Ok(plain) => plain.text(),
        Err(e) => raised(&e).raise(),
    }
}

fn raised(e: &PlainError) -> Raised {
    match e {
        PlainError::NotAQuery(_) => Raised::new(ERRCODE_FEATURE_NOT_SUPPORTED, e.to_string())
            .hint("ask.explain_sql() says what a query (SELECT, VALUES, WITH … SELECT) does."),
        PlainError::Parse(_) | PlainError::NotSingleStatement(_) => {
            Raised::new(ERRCODE_SYNTAX_ERROR, e.to_string()).hint("Give one query, as ask.sql() returns it.")
        }
    }
}

/// The NOTICE `ask()` raises with its SQL: with `ask.sql_in_words` on, the SQL in plain words
/// as its DETAIL (nothing when the statement cannot be described).
pub(crate) fn sql_notice(sql: &str) {
    let message = format!("pg_ask SQL: {sql}");
    if !crate::pg::gucs::sql_in_words() {
        notice!("{message}");
        return;
    }
    match describe(sql) {
        Ok(plain) => Raised::new(ERRCODE_SUCCESSFUL_COMPLETION, message).detail(plain.text()).notice(),
        Err(_) => notice!("{message}"),
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::*;

    #[pg_test]
    fn explain_sql_says_what_a_query_does_and_refuses_the_rest() {
        let text: String =
            one("SELECT ask.explain_sql($$SELECT count(*) FROM restaurants WHERE city = 'San Francisco' AND closed_on IS NULL$$)");
        assert!(text.contains("restaurants") && text.contains("'San Francisco'") && text.contains("empty"), "{text}");
        assert!(text.lines().all(|l| l.ends_with('.')), "{text}");
        let (code, _, _) = error_of("SELECT ask.explain_sql('DELETE FROM restaurants')");
        assert_eq!(code, "0A000");
        let (code, _, _) = error_of("SELECT ask.explain_sql('SELECT 1; SELECT 2')");
        assert_eq!(code, "42601");
        let (code, _, _) = error_of("SELECT ask.explain_sql('SELEC')");
        assert_eq!(code, "42601");
        assert!(Spi::get_one::<String>("SELECT ask.explain_sql(NULL)").unwrap().is_none());
        // A role without privileges may call it: it reads no table.
        Spi::run("CREATE ROLE plain_nobody").unwrap();
        Spi::run("SET ROLE plain_nobody").unwrap();
        let text: String = one("SELECT ask.explain_sql('SELECT name FROM public.secrets ORDER BY name LIMIT 3')");
        Spi::run("RESET ROLE").unwrap();
        assert!(text.contains("public.secrets") && text.contains('3'), "{text}");
    }
}
