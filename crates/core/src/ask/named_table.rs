//! The table meant by a name that is nearly one: a query that reads `academic.write` where the
//! described table is `academic.writes` fails with `relation "academic.write" does not exist`.
//! A small model asked to repair it most often writes the same name again (it read it in an
//! instruction, or a table's singular reads better), and the list of tables a repair is shown
//! may not reach the one meant. When exactly one described table is named like it (the same
//! name with or without a plural ending, or one letter apart in a name of five letters or
//! more; in the same schema when the query names one), the query is run once more with that
//! table's name, with no LLM call, before the model is asked.
//!
//! Only plain names (lower case, unquoted) are rewritten, where they name the table: after
//! `FROM`, `JOIN` or a comma, and as the qualifier of a column (`write.aid`). The rewritten
//! query goes through the guard and runs as any other, and the attempt goes on with it: rows
//! answer (or are voted on), no rows are asked again once, a failure is the one repaired.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::execute::{run_renamed, Ran};
use super::host::{ExecFailure, Host};
use super::stage;
use crate::schema::Table;
use crate::sqledit::{apply, Tokens};
use crate::sqltext::quote_ident;
use crate::trace::Trace;

/// What running a query came to: its checked statement and rows, or its failure.
/// What the attempt goes on with after running `sql` came to `ran`: when it failed on a missing
/// relation that one described table is named nearly like ([`rewrite`]), the query with that
/// table's name and what running it as the caller under the guard came to (the `named_table`
/// stage records the change), and `true`; otherwise `sql` and `ran` as they were, and `false`.
#[allow(clippy::too_many_arguments)]
pub(super) fn or_renamed(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    step: Option<usize>,
    sql: String,
    ran: Ran,
    tables: &[Table],
    max_prompt_tokens: usize,
) -> (String, Ran, bool) {
    let rewritten = match &ran {
        Err(ExecFailure::Error { sqlstate, message, .. }) if sqlstate.as_str() == "42P01" => rewrite(&sql, message, tables),
        _ => None,
    };
    let Some((fixed, from, to)) = rewritten else { return (sql, ran, false) };
    let again = run_renamed(host, trace, stage::NAMED_TABLE, attempt, step, (&sql, &fixed), (from, to), max_prompt_tokens);
    (fixed, again, true)
}

/// Whether `a` and `b` (folded, different) name the same thing nearly: one is the other with a
/// plural ending (`s`, `es`, `y`/`ies`), or, both five letters or more, one letter apart.
fn nearly(a: &str, b: &str) -> bool {
    let plural = |one: &str, many: &str| {
        many.strip_suffix('s').is_some_and(|m| m == one)
            || many.strip_suffix("es").is_some_and(|m| m == one)
            || (many.strip_suffix("ies").zip(one.strip_suffix('y')).is_some_and(|(m, o)| m == o))
    };
    a != b && (plural(a, b) || plural(b, a) || (a.chars().count() >= 5 && b.chars().count() >= 5 && super::repair_hint::edits(a, b) == 1))
}

/// `sql` with the relation `message` says does not exist written as the one described table
/// named nearly like it, and the two names; `None` when the failure is not of that shape, the
/// name is not plain, or not exactly one table is meant.
pub(super) fn rewrite(sql: &str, message: &str, tables: &[Table]) -> Option<(String, String, String)> {
    let missing = message.strip_prefix("relation \"")?.strip_suffix("\" does not exist")?;
    let (schema, name) = match missing.split_once('.') {
        Some((s, n)) => (Some(s), n),
        None => (None, missing),
    };
    if quote_ident(name) != name || schema.is_some_and(|s| quote_ident(s) != s) {
        return None;
    }
    let mut meant = tables.iter().filter(|t| schema.is_none_or(|s| t.schema == s) && nearly(name, &t.name));
    let table = meant.next()?;
    if meant.next().is_some() || tables.iter().any(|t| schema.is_none_or(|s| t.schema == s) && t.name == name) {
        return None;
    }
    let mut tokens = Tokens::read(sql)?;
    let word =
        |t: Option<&Token>, text: &str| matches!(t, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.to_lowercase() == text);
    let period = |t: Option<&Token>| matches!(t, Some(Token::Period));
    let qualified = format!("{}.{}", quote_ident(&table.schema), quote_ident(&table.name));
    let bare = quote_ident(&table.name);
    // (first token, last token, replacement)
    let mut found: Vec<(usize, usize, &str)> = Vec::new();
    let mut k = 0;
    while k < tokens.len() {
        let after_period = k > 0 && period(tokens.at(k - 1));
        match schema {
            Some(s) if !after_period && word(tokens.at(k), s) && period(tokens.at(k + 1)) && word(tokens.at(k + 2), name) => {
                found.push((k, k + 2, qualified.as_str()));
                k += 3;
                continue;
            }
            None if !after_period && word(tokens.at(k), name) => {
                let opens = k > 0 && matches!(tokens.at(k - 1), Some(Token::Comma))
                    || matches!(k.checked_sub(1).and_then(|j| tokens.at(j)), Some(Token::Word(w)) if w.quote_style.is_none() && matches!(w.keyword, Keyword::FROM | Keyword::JOIN));
                if period(tokens.at(k + 1)) {
                    found.push((k, k, bare.as_str()));
                } else if opens {
                    found.push((k, k, qualified.as_str()));
                }
            }
            _ => {}
        }
        k += 1;
    }
    if !found.iter().any(|(_, _, to)| *to == qualified) {
        return None;
    }
    let edits: Vec<(usize, usize, &str)> = found
        .into_iter()
        .map(|(first, last, to)| {
            let (start, end, _) = tokens.text(first, last);
            (start, end, to)
        })
        .collect();
    Some((apply(sql, &edits), missing.to_string(), table.qualified()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(schema: &str, name: &str) -> Table {
        Table {
            schema: schema.into(),
            name: name.into(),
            kind: "table".into(),
            comment: None,
            columns: Vec::new(),
            primary_key: Vec::new(),
            foreign_keys: Vec::new(),
        }
    }

    fn academic() -> Vec<Table> {
        ["author", "writes", "publication", "domain", "domain_author", "cite"].iter().map(|n| table("academic", n)).collect()
    }

    #[test]
    fn the_one_table_named_nearly_is_written_in() {
        let sql = "SELECT a.name, count(*) FROM academic.author a\nJOIN academic.write w ON a.aid = w.aid GROUP BY a.name";
        let (fixed, from, to) = rewrite(sql, "relation \"academic.write\" does not exist", &academic()).unwrap();
        assert_eq!(fixed, "SELECT a.name, count(*) FROM academic.author a\nJOIN academic.writes w ON a.aid = w.aid GROUP BY a.name");
        assert_eq!((from.as_str(), to.as_str()), ("academic.write", "academic.writes"));
        // Unqualified, with the table's name as a column's qualifier; a literal and a column of
        // that name stay.
        let (fixed, ..) = rewrite(
            "SELECT author.name, write.pid, 'write' FROM author JOIN write ON author.aid = write.aid WHERE x.write = 1",
            "relation \"write\" does not exist",
            &academic(),
        )
        .unwrap();
        assert_eq!(
            fixed,
            "SELECT author.name, writes.pid, 'write' FROM author JOIN academic.writes ON author.aid = writes.aid WHERE x.write = 1"
        );
        // A plural written for a singular, `ies` for `y`, one letter apart.
        let tables = vec![table("s", "student"), table("s", "category"), table("s", "business")];
        let again = |sql: &str, missing: &str| rewrite(sql, &format!("relation \"{missing}\" does not exist"), &tables).map(|r| r.0);
        assert_eq!(again("SELECT * FROM s.students", "s.students").as_deref(), Some("SELECT * FROM s.student"));
        assert_eq!(again("SELECT * FROM s.categories c", "s.categories").as_deref(), Some("SELECT * FROM s.category c"));
        assert_eq!(again("SELECT * FROM x, s.busines", "s.busines").as_deref(), Some("SELECT * FROM x, s.business"));
    }

    #[test]
    fn nothing_is_written_where_no_one_table_is_meant() {
        let t = academic();
        let missing = |m: &str| format!("relation \"{m}\" does not exist");
        // No table nearly so; another schema's table; a short name one letter apart.
        assert_eq!(rewrite("SELECT * FROM academic.paper", &missing("academic.paper"), &t), None);
        assert_eq!(rewrite("SELECT * FROM other.write", &missing("other.write"), &t), None);
        assert_eq!(rewrite("SELECT * FROM academic.cites_x", &missing("academic.cites_x"), &t), None);
        assert_eq!(rewrite("SELECT * FROM cito", &missing("cito"), &t), None, "four letters");
        // Two tables nearly so.
        let two = vec![table("s", "order"), table("s", "orders_x"), table("s", "orderes")];
        assert_eq!(rewrite("SELECT * FROM s.orders", &missing("s.orders"), &two), None);
        // Quoted, or not a missing relation, or not where a table is named.
        assert_eq!(rewrite("SELECT * FROM \"academic\".\"Write\"", &missing("academic.Write"), &t), None);
        assert_eq!(rewrite("SELECT * FROM academic.write", "column \"write\" does not exist", &t), None);
        assert_eq!(rewrite("SELECT write FROM x", &missing("write"), &t), None);
    }
}
