//! Reading the chain of steps out of the planning reply.
//!
//! Models write a chain in many shapes; [`parse_chain`] takes them all and returns one
//! statement per step, in order:
//!
//! 1. **JSON**: an array of statements, an array of objects with `sql` (or `query`) and an
//!    optional `purpose` (or `description`, `goal`, `step` as text), or an object with such an
//!    array under `steps`; bare or in a fence.
//! 2. Otherwise the reply is cut into **segments at step headers**: lines outside code fences
//!    that start (after Markdown decoration `#`, `*`, `_`, `>`, a bullet, or a SQL `--`) with
//!    `Step N`, or with a list number `N.` or `N)` followed by a space. What follows the
//!    header on its line is the step's purpose, unless it is SQL (`Step 2: DELETE FROM …`),
//!    told apart from a sentence (`Step 2: Delete the sale`) the way the rest of pg_ask tells
//!    them apart: a statement keyword not in Title case, or text that `sqlparser` parses.
//!    A reply without headers is one segment.
//! 3. In each segment, the SQL is the bodies of its SQL **code fences** when it has any;
//!    otherwise every SQL region of its prose, found with [`extract_sql`] (which is applied
//!    again before and after each region found, so no statement is skipped).
//! 4. Each SQL text is **split into statements** at top-level `;` (by `sqlparser`'s tokenizer,
//!    so a `;` in a literal or comment does not split). Every statement is a step; the first
//!    of a segment gets the header's purpose, and a statement led by a SQL comment
//!    (`-- Step 2: record the purchase`) gets the comment as its purpose otherwise.
//! 5. **Transaction control** (`BEGIN`, `START TRANSACTION`, `COMMIT`, `END`) is dropped and
//!    reported in [`ParsedChain::ignored`]: the chain always runs in the caller's transaction.
//!
//! Nothing a model wrote as a statement is dropped otherwise, whatever it is: judging it is
//! the guard's job ([`crate::guard::check_write_step`]), as with [`extract_sql`].

use serde_json::Value;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use super::placeholder::{find_placeholders, substitute};
use crate::extract::{extract_sql, fenced_blocks, strip_fences};
use crate::guard::OffsetCursor;

/// One step as planned: a single statement, possibly with placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedStep {
    /// What the step is for, as the model described it.
    pub purpose: Option<String>,
    /// The statement, trimmed, without a terminating `;`.
    pub sql: String,
}

/// The chain read from a planning reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParsedChain {
    pub steps: Vec<PlannedStep>,
    /// Transaction-control statements that were dropped.
    pub ignored: Vec<String>,
}

/// Reads the chain of steps in `reply`; see the [module documentation](self).
pub fn parse_chain(reply: &str) -> ParsedChain {
    let mut chain = ParsedChain::default();
    let raw = json_steps(reply).unwrap_or_else(|| text_steps(reply));
    for (purpose, sql) in raw {
        let mut purpose = purpose;
        for (comment, statement) in split_statements(&sql) {
            if is_transaction_control(&statement) {
                chain.ignored.push(statement);
                continue;
            }
            chain.steps.push(PlannedStep { purpose: purpose.take().or(comment), sql: statement });
        }
    }
    chain
}

/// Steps given as JSON: `[…]` or `{"steps": […]}`, items strings or objects.
fn json_steps(reply: &str) -> Option<Vec<(Option<String>, String)>> {
    let candidate = strip_fences(reply);
    if !candidate.starts_with(['[', '{']) {
        return None;
    }
    let value: Value = crate::json::lenient(candidate)?;
    let items = match &value {
        Value::Array(items) => items,
        Value::Object(object) => object.get("steps")?.as_array()?,
        _ => return None,
    };
    let text = |item: &Value, keys: &[&str]| keys.iter().find_map(|k| item.get(*k)?.as_str().map(str::to_string));
    items
        .iter()
        .map(|item| match item {
            Value::String(sql) => Some((None, sql.clone())),
            Value::Object(_) => {
                Some((text(item, &["purpose", "description", "goal", "step"]), text(item, &["sql", "query", "statement"])?))
            }
            _ => None,
        })
        .collect()
}

/// Steps from Markdown or prose: segments at step headers, SQL from fences or prose.
fn text_steps(reply: &str) -> Vec<(Option<String>, String)> {
    let fences = fenced_blocks(reply);
    let fence_ranges: Vec<(usize, usize)> = fences
        .iter()
        .map(|b| {
            let start = b.body.as_ptr() as usize - reply.as_ptr() as usize;
            (start, start + b.body.len())
        })
        .collect();
    let inside_fence = |at: usize| fence_ranges.iter().any(|&(s, e)| s <= at && at < e);

    // Segments: (header text after the number, segment body range).
    let mut segments: Vec<(Option<&str>, usize, usize)> = Vec::new();
    let mut current: (Option<&str>, usize) = (None, 0);
    let mut line_start = 0;
    while line_start < reply.len() {
        let line_end = reply[line_start..].find('\n').map_or(reply.len(), |i| line_start + i);
        let line = &reply[line_start..line_end];
        if !inside_fence(line_start) {
            if let Some(rest) = step_header(line) {
                segments.push((current.0, current.1, line_start));
                current = (Some(rest), (line_end + 1).min(reply.len()));
            }
        }
        line_start = line_end + 1;
    }
    segments.push((current.0, current.1, reply.len()));

    let mut steps = Vec::new();
    for (header, start, end) in segments {
        let body = &reply[start..end];
        let (purpose, header_sql) = match header.map(str::trim) {
            Some(rest) if !rest.is_empty() && header_is_sql(rest) => (None, Some(rest)),
            Some(rest) if !rest.is_empty() => (Some(clean_purpose(rest)), None),
            _ => (None, None),
        };
        let mut found: Vec<String> = Vec::new();
        let sql_fences: Vec<&str> = fences
            .iter()
            .filter(|b| {
                let at = b.body.as_ptr() as usize - reply.as_ptr() as usize;
                at >= start && at < end.max(start + 1) && !b.body.trim().is_empty()
            })
            .filter(|b| b.is_tagged_sql() || extract_sql(b.body).is_some())
            .map(|b| b.body)
            .collect();
        if let Some(sql) = header_sql {
            if sql_fences.is_empty() {
                collect_prose_sql(&format!("{sql}\n{body}"), &mut found);
            } else {
                found.push(sql.to_string());
            }
        }
        if sql_fences.is_empty() {
            if header_sql.is_none() {
                collect_prose_sql(body, &mut found);
            }
        } else {
            found.extend(sql_fences.iter().map(|b| b.to_string()));
        }
        let mut purpose = purpose;
        for sql in found {
            steps.push((purpose.take(), sql));
        }
    }
    steps
}

/// Every SQL region of `text` in order: [`extract_sql`] finds one, then the text before and
/// after it is searched the same way.
fn collect_prose_sql(text: &str, out: &mut Vec<String>) {
    let Some(sql) = extract_sql(text) else {
        return;
    };
    let Some(at) = text.find(&sql).filter(|_| !sql.is_empty()) else {
        out.push(sql);
        return;
    };
    collect_prose_sql(&text[..at], out);
    out.push(sql.clone());
    collect_prose_sql(&text[at + sql.len()..], out);
}

/// The text after a step header (`Step 2:`, `**Step 2.**`, `2.`, `2)`, `### Step 2 -`,
/// `-- Step 2:`), or `None` when the line is not one.
fn step_header(line: &str) -> Option<&str> {
    let mut t = line.trim_start();
    loop {
        let before = t.len();
        t = t.trim_start_matches(['#', '*', '_', '>']).trim_start();
        if let Some(rest) = t.strip_prefix("--") {
            t = rest.trim_start();
        } else if let Some(rest) = t.strip_prefix("- ") {
            t = rest.trim_start();
        }
        if t.len() == before {
            break;
        }
    }
    let numbered_by_step = t.get(..4).is_some_and(|head| head.eq_ignore_ascii_case("step"));
    let after_word = if numbered_by_step { t[4..].trim_start_matches([' ', '_', '#']) } else { t };
    let digits = after_word.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = after_word[digits..].trim_start_matches(['*', '_']);
    if numbered_by_step {
        let rest = rest.trim_start();
        let rest = rest.strip_prefix([':', '.', ')', '-', '–', '—']).unwrap_or(rest);
        return Some(rest.trim_start_matches(['*', '_']).trim());
    }
    let rest = rest.strip_prefix(['.', ')'])?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim_start_matches(['*', '_']).trim())
}

/// Whether the text after a header is SQL rather than a description (see the module docs).
fn header_is_sql(rest: &str) -> bool {
    let Some(first) = rest.split(|c: char| !c.is_ascii_alphabetic()).next() else {
        return false;
    };
    const KEYWORDS: &[&str] = &[
        "SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "ALTER", "DROP", "TRUNCATE", "GRANT", "REVOKE", "COPY", "CALL",
        "DO", "SET", "VALUES", "TABLE", "BEGIN", "COMMIT", "START", "END", "ROLLBACK", "LOCK",
    ];
    if !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(first)) {
        return false;
    }
    let title_case =
        first.len() > 1 && first.starts_with(|c: char| c.is_ascii_uppercase()) && first[1..].bytes().all(|b| b.is_ascii_lowercase());
    if !title_case {
        return true;
    }
    // `Select the supplier` reads as a sentence; `Select id FROM suppliers` parses.
    let placeholders = find_placeholders(rest);
    let nulls = vec!["NULL".to_string(); placeholders.len()];
    let probe = substitute(rest, &placeholders, &nulls);
    Parser::parse_sql(&PostgreSqlDialect {}, &probe).is_ok()
}

/// A description without Markdown emphasis and a trailing colon.
fn clean_purpose(text: &str) -> String {
    text.trim().trim_matches(['*', '_', '`']).trim_end_matches(':').trim().to_string()
}

/// Splits SQL text into statements at top-level `;`; each comes with the text of the comment
/// that leads it, if any (without a `Step N:` prefix). Text the tokenizer cannot read stays
/// whole, for the guard to refuse.
fn split_statements(sql: &str) -> Vec<(Option<String>, String)> {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() else {
        let trimmed = sql.trim().trim_end_matches(';').trim();
        return if trimmed.is_empty() { vec![] } else { vec![(None, trimmed.to_string())] };
    };
    let mut cursor = OffsetCursor::new(sql);
    let mut out = Vec::new();
    for part in tokens.split(|t| t.token == Token::SemiColon) {
        let significant = |t: &&sqlparser::tokenizer::TokenWithSpan| !matches!(t.token, Token::Whitespace(_) | Token::EOF);
        let (Some(first), Some(last)) = (part.iter().find(significant), part.iter().rev().find(significant)) else {
            continue;
        };
        let comment = part
            .iter()
            .take_while(|t| matches!(t.token, Token::Whitespace(_)))
            .filter_map(|t| match &t.token {
                Token::Whitespace(Whitespace::SingleLineComment { comment, .. }) => Some(comment.trim()),
                Token::Whitespace(Whitespace::MultiLineComment(comment)) => Some(comment.trim()),
                _ => None,
            })
            .filter(|c| !c.is_empty())
            .last()
            .map(|c| {
                let without_header = step_header(c).unwrap_or(c);
                clean_purpose(without_header)
            })
            .filter(|c| !c.is_empty());
        let start = cursor.offset(first.span.start);
        let end = cursor.offset(last.span.end);
        out.push((comment, sql[start..end].to_string()));
    }
    out
}

/// `BEGIN`, `START TRANSACTION`, `COMMIT`, `END`, optionally with `WORK` or `TRANSACTION`.
fn is_transaction_control(statement: &str) -> bool {
    let words: Vec<String> = statement.split_whitespace().map(|w| w.to_ascii_uppercase()).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    matches!(
        words.as_slice(),
        ["BEGIN" | "COMMIT" | "END"] | ["BEGIN" | "COMMIT" | "END", "WORK" | "TRANSACTION"] | ["START", "TRANSACTION"]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqls(reply: &str) -> Vec<String> {
        parse_chain(reply).steps.into_iter().map(|s| s.sql).collect()
    }

    #[test]
    fn headers() {
        assert_eq!(step_header("Step 1: Find the supplier"), Some("Find the supplier"));
        assert_eq!(step_header("**Step 2.** Record it"), Some("Record it"));
        assert_eq!(step_header("### Step 3 - Update"), Some("Update"));
        assert_eq!(step_header("Step4: x"), Some("x"));
        assert_eq!(step_header("2) DELETE FROM t"), Some("DELETE FROM t"));
        assert_eq!(step_header("-- Step 1: find"), Some("find"));
        assert_eq!(step_header("1."), Some(""));
        for not in ["1.5 kg", "2023-01-01 was", "Steps to follow:", "SELECT 1", "10kg"] {
            assert_eq!(step_header(not), None, "{not}");
        }
    }

    #[test]
    fn header_sql_or_sentence() {
        assert!(header_is_sql("SELECT id FROM t"));
        assert!(header_is_sql("delete from t where id = <id>"));
        assert!(header_is_sql("Select id FROM suppliers WHERE name = 'ABC'"));
        assert!(header_is_sql("DROP TABLE t"));
        assert!(!header_is_sql("Select the supplier's id"));
        assert!(!header_is_sql("Insert the purchase"));
        assert!(!header_is_sql("Find the customer"));
    }

    #[test]
    fn fenced_steps_with_headers() {
        let chain = parse_chain(
            "Here is the plan.\n\nStep 1: Find the supplier\n```sql\nSELECT id FROM s WHERE name = 'ABC';\n```\n\
             Step 2: Record the purchase\n```sql\nINSERT INTO p (s) VALUES (<id>)\nRETURNING pid;\n```\nDone.",
        );
        assert_eq!(chain.steps.len(), 2);
        assert_eq!(chain.steps[0].purpose.as_deref(), Some("Find the supplier"));
        assert_eq!(chain.steps[1].sql, "INSERT INTO p (s) VALUES (<id>)\nRETURNING pid");
    }

    #[test]
    fn one_fence_with_commented_steps() {
        let chain = parse_chain(
            "```sql\nBEGIN;\n-- Step 1: find the sale\nSELECT sale_id FROM sales WHERE note = 'a;b';\n\
             -- Step 2: delete its items\nDELETE FROM sale_items WHERE sale_id = <sale_id>;\nCOMMIT;\n```",
        );
        assert_eq!(chain.ignored, ["BEGIN", "COMMIT"]);
        assert_eq!(
            chain.steps,
            [
                PlannedStep { purpose: Some("find the sale".into()), sql: "SELECT sale_id FROM sales WHERE note = 'a;b'".into() },
                PlannedStep { purpose: Some("delete its items".into()), sql: "DELETE FROM sale_items WHERE sale_id = <sale_id>".into() },
            ]
        );
    }

    #[test]
    fn numbered_prose_list() {
        let chain = parse_chain(
            "1. Select the sale of John Doe:\nSELECT sale_id FROM sales WHERE customer_id = 4;\n\n\
             2. DELETE FROM sale_items WHERE sale_id = <sale_id>;\n3) Then remove the sale itself.\n\
             DELETE FROM sales\nWHERE sale_id = <sale_id>;\n\nThat is all.",
        );
        assert_eq!(
            chain.steps.iter().map(|s| s.sql.as_str()).collect::<Vec<_>>(),
            [
                "SELECT sale_id FROM sales WHERE customer_id = 4",
                "DELETE FROM sale_items WHERE sale_id = <sale_id>",
                "DELETE FROM sales\nWHERE sale_id = <sale_id>",
            ]
        );
        assert_eq!(chain.steps[0].purpose.as_deref(), Some("Select the sale of John Doe"));
        assert_eq!(chain.steps[1].purpose, None);
        assert_eq!(chain.steps[2].purpose.as_deref(), Some("Then remove the sale itself."));
    }

    #[test]
    fn prose_without_headers_keeps_every_statement() {
        assert_eq!(
            sqls("First look it up:\nSELECT id FROM t WHERE x = 1;\nThen change it:\nUPDATE t SET y = 2 WHERE id = <id>;"),
            ["SELECT id FROM t WHERE x = 1", "UPDATE t SET y = 2 WHERE id = <id>"]
        );
    }

    #[test]
    fn json_plans() {
        assert_eq!(sqls(r#"["SELECT 1", "DELETE FROM t WHERE id = <id>"]"#).len(), 2);
        let chain = parse_chain("```json\n{\"steps\": [{\"purpose\": \"find\", \"sql\": \"SELECT 1;\"}, {\"sql\": \"SELECT 2\"}]}\n```");
        assert_eq!(chain.steps[0].purpose.as_deref(), Some("find"));
        assert_eq!(chain.steps[0].sql, "SELECT 1");
    }

    #[test]
    fn several_statements_in_one_step_become_steps_and_ddl_is_kept() {
        assert_eq!(
            sqls("Step 1:\n```sql\nCREATE TABLE x (a int); INSERT INTO x VALUES (1);\n```"),
            ["CREATE TABLE x (a int)", "INSERT INTO x VALUES (1)"]
        );
        assert!(sqls("I cannot do that.").is_empty());
    }
}
