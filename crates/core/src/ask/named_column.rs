//! The column PostgreSQL names: a query that reads `t2.name`, a column `t2` does not have,
//! fails with `column t2.name does not exist` and, when another table of the query has that
//! column (or one spelt nearly so), PostgreSQL's hint names it: `Perhaps you meant to reference
//! the column "t1.name".` A small model asked to repair such a query most often writes it again
//! unchanged (measured: BENCHMARKS.md, "The column PostgreSQL names"); the query is run once more
//! with the column the hint names, with no LLM call, before the model is asked.
//!
//! Only when the hint names exactly one column, both names are plain (lower case, no quotes),
//! and the rewrite does not compare the named column with itself (`t1.id = t2.id` made
//! `t1.id = t1.id` holds for every row: a join the model wrote over a column one table lacks
//! is not mended by it). The rewritten query goes through the guard and runs as any other.

use sqlparser::tokenizer::Token;

use super::execute::run_renamed;
use super::host::{ExecFailure, Host};
use super::stage;
use crate::rows::ResultSet;
use crate::sqledit::{apply, Tokens};
use crate::sqltext::quote_ident;
use crate::trace::Trace;

/// After `sql` failed with `failure`: the query run again with the column PostgreSQL's hint
/// names ([`rewrite`]), as the caller and under the guard; its statement and rows when it ran
/// and returned rows, otherwise `None` (the failure is repaired as before). The
/// `named_column` stage records the change.
pub(super) fn run_again(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    step: Option<usize>,
    sql: &str,
    failure: &ExecFailure,
    max_prompt_tokens: usize,
) -> Option<(String, ResultSet)> {
    let ExecFailure::Error { sqlstate, message, hint, .. } = failure else { return None };
    if sqlstate.as_str() != "42703" {
        return None;
    }
    let (fixed, from, to) = rewrite(sql, message, hint.as_deref())?;
    match run_renamed(host, trace, stage::NAMED_COLUMN, attempt, step, (sql, &fixed), (from, to), max_prompt_tokens) {
        Ok((checked, rows)) if !rows.rows.is_empty() => Some((checked.sql, rows)),
        _ => None,
    }
}

/// `(qualifier, column)` of `a.b`, both names `quote_ident` writes bare.
fn qualified(text: &str) -> Option<(&str, &str)> {
    let (a, b) = text.split_once('.')?;
    (quote_ident(a) == a && quote_ident(b) == b).then_some((a, b))
}

/// `sql` with the column `message` says does not exist written as the one `hint` names, and the
/// two names (`t2.name`, `t1.name`); `None` when the failure is not of that shape or the
/// rewrite would compare the column with itself.
pub(super) fn rewrite(sql: &str, message: &str, hint: Option<&str>) -> Option<(String, String, String)> {
    let missing = message.strip_prefix("column ")?.strip_suffix(" does not exist")?;
    let (from_q, from_c) = qualified(missing)?;
    let hint = hint?.trim();
    let named = hint.strip_prefix("Perhaps you meant to reference the column \"")?.strip_suffix("\".")?;
    let (to_q, to_c) = qualified(named)?;
    let mut tokens = Tokens::read(sql)?;
    let word =
        |t: Option<&Token>, name: &str| matches!(t, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.to_lowercase() == name);
    let comparison =
        |t: Option<&Token>| matches!(t, Some(Token::Eq | Token::DoubleEq | Token::Neq | Token::Lt | Token::Gt | Token::LtEq | Token::GtEq));
    let at = |tokens: &Tokens<'_>, k: usize, q: &str, c: &str| {
        word(tokens.at(k), q) && matches!(tokens.at(k + 1), Some(Token::Period)) && word(tokens.at(k + 2), c)
    };
    let mut found = Vec::new();
    for k in 0..tokens.len() {
        // Not the last two parts of a longer name (`s.t2.name`), nor followed by more parts.
        let longer = k > 0 && matches!(tokens.at(k - 1), Some(Token::Period)) || matches!(tokens.at(k + 3), Some(Token::Period));
        if at(&tokens, k, from_q, from_c) && !longer {
            // The other side of a comparison next to it, once rewritten, would be itself.
            let after = comparison(tokens.at(k + 3)) && at(&tokens, k + 4, to_q, to_c);
            let before = k >= 4 && comparison(tokens.at(k - 1)) && at(&tokens, k - 4, to_q, to_c);
            if after || before {
                return None;
            }
            found.push(k);
        }
    }
    if found.is_empty() {
        return None;
    }
    let to = format!("{to_q}.{to_c}");
    let edits: Vec<(usize, usize, &str)> = found
        .into_iter()
        .map(|k| {
            let (start, end, _) = tokens.text(k, k + 2);
            (start, end, to.as_str())
        })
        .collect();
    Some((apply(sql, &edits), format!("{from_q}.{from_c}"), to.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HINT: Option<&str> = Some("Perhaps you meant to reference the column \"t1.name\".");

    #[test]
    fn the_one_column_the_hint_names_is_written_in() {
        let sql = "SELECT T2.name FROM advising.course AS T1 JOIN advising.program_course AS T2 ON T1.course_id = T2.course_id \
                   WHERE T2.name <> 'x' ORDER BY t2.name";
        let (fixed, from, to) = rewrite(sql, "column t2.name does not exist", HINT).unwrap();
        assert_eq!(
            fixed,
            "SELECT t1.name FROM advising.course AS T1 JOIN advising.program_course AS T2 ON T1.course_id = T2.course_id \
             WHERE t1.name <> 'x' ORDER BY t1.name"
        );
        assert_eq!((from.as_str(), to.as_str()), ("t2.name", "t1.name"));
        // A misspelling of the same table's column, as PostgreSQL suggests it.
        let (fixed, ..) = rewrite(
            "SELECT da.oid FROM academic.domain_author da",
            "column da.oid does not exist",
            Some("Perhaps you meant to reference the column \"da.aid\"."),
        )
        .unwrap();
        assert_eq!(fixed, "SELECT da.aid FROM academic.domain_author da");
        // Text in a literal, a quoted name and a longer name are not the column.
        let (fixed, ..) =
            rewrite("SELECT t2.name, 't2.name', \"T2\".name, s.t2.name FROM x", "column t2.name does not exist", HINT).unwrap();
        assert_eq!(fixed, "SELECT t1.name, 't2.name', \"T2\".name, s.t2.name FROM x");
    }

    #[test]
    fn nothing_is_written_where_the_hint_does_not_name_one_plain_column_or_the_column_would_meet_itself() {
        let sql = "SELECT count(*) FROM atis.flight AS T1 JOIN atis.fare AS T2 ON T1.flight_id = T2.flight_id";
        let hint = Some("Perhaps you meant to reference the column \"t1.flight_id\".");
        assert_eq!(rewrite(sql, "column t2.flight_id does not exist", hint), None, "t1.flight_id = t1.flight_id");
        let flipped = "SELECT count(*) FROM atis.flight AS T1 JOIN atis.fare AS T2 ON T2.flight_id = T1.flight_id";
        assert_eq!(rewrite(flipped, "column t2.flight_id does not exist", hint), None);
        let sql = "SELECT da.oid FROM academic.domain_author da";
        let two = Some("Perhaps you meant to reference the column \"da.aid\" or the column \"da.did\".");
        assert_eq!(rewrite(sql, "column da.oid does not exist", two), None, "two columns named");
        assert_eq!(rewrite(sql, "column da.oid does not exist", None), None, "no hint");
        assert_eq!(rewrite(sql, "column \"oid\" does not exist", HINT), None, "not qualified");
        let quoted = Some("Perhaps you meant to reference the column \"T1.Name\".");
        assert_eq!(rewrite("SELECT t2.name FROM x", "column t2.name does not exist", quoted), None, "a name that is not plain");
        assert_eq!(rewrite("SELECT t3.name FROM x", "column t2.name does not exist", HINT), None, "not in the query");
    }
}
