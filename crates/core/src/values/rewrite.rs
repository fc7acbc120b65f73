//! Replacing string and number literals in SQL text, and comparing queries with their literals
//! masked.
//!
//! [`rewrite`] splices new literals into the original text, so everything else (layout,
//! comments, casing) is kept byte for byte, and then proves the edit without parsing: the
//! output must tokenize to exactly the original tokens with the replaced literals' values
//! changed, and nothing else (the parser reads tokens alone, so the syntax tree is the
//! original's with those values). [`rewrite_checked`] does the same to a statement the guard
//! checked, and carries its syntax tree along with the values swapped in, re-checked by the
//! guard's walk without a parse. [`same_structure`] is the acceptance test for SQL an LLM
//! corrected: with every string literal masked, both syntax trees must be equal.

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{Statement, Value, ValueWithSpan, VisitMut, VisitorMut};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use super::literals::{LiteralRef, TextRange};
use crate::guard::{CheckedSql, OffsetCursor};

/// One literal to replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// The quoted literal's range in the SQL text (from [`LiteralRef::range`]), or an unsigned
    /// number's (from [`number_literals`]).
    pub range: TextRange,
    /// The new string value, unquoted (for a LIKE pattern: the whole new pattern); for a
    /// number, the new number as written (digits with at most one decimal point).
    pub text: String,
}

impl Replacement {
    /// Replaces `literal`'s value by `value`, keeping a LIKE pattern's wildcards around it.
    pub fn for_literal(literal: &LiteralRef, value: &str) -> Replacement {
        Replacement { range: literal.range, text: literal.replacement_text(value) }
    }

    /// The token the new literal is written as: a string in standard quotes, or in escape
    /// quotes when it holds a backslash ([`quote_literal`]); a number as written.
    fn token(&self, string: bool) -> Token {
        match (string, self.text.contains('\\')) {
            (true, false) => Token::SingleQuotedString(self.text.clone()),
            (true, true) => Token::EscapedStringLiteral(self.text.clone()),
            (false, _) => Token::Number(self.text.clone(), false),
        }
    }

    /// The tree's value for the new literal, as [`Replacement::token`].
    fn value(&self, string: bool) -> Value {
        match self.token(string) {
            Token::SingleQuotedString(s) => Value::SingleQuotedString(s),
            Token::EscapedStringLiteral(s) => Value::EscapedStringLiteral(s),
            Token::Number(n, long) => Value::Number(n, long),
            _ => unreachable!("a replacement is a string or a number"),
        }
    }
}

/// Errors of rewriting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    /// The input SQL does not tokenize (or, for [`number_literals`], parse).
    #[error("cannot parse the SQL: {0}")]
    Parse(String),
    /// A range is not a plain single-quoted literal of the SQL.
    #[error("bytes {}..{} of the SQL are not a string literal", .0.start, .0.end)]
    NotALiteral(TextRange),
    /// Two replacements overlap.
    #[error("replacements overlap at byte {0}")]
    Overlap(usize),
    /// The rewritten SQL does not read back as the expected tokens (a bug; never returned
    /// SQL is wrong, it is refused).
    #[error("the rewritten SQL does not keep the query's structure: {0}")]
    StructureChanged(String),
    /// The guard refuses the rewritten statement.
    #[error("the corrected statement is refused: {0}")]
    Refused(String),
}

pub use crate::sqltext::quote_literal;

fn parse(sql: &str) -> Result<Vec<Statement>, RewriteError> {
    #[cfg(test)]
    crate::sqltext::parses::add();
    Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| RewriteError::Parse(e.to_string()))
}

/// Replaces the literals at the given ranges, checking the result as described in the
/// [module documentation](self). Replacements may come in any order; an empty list returns
/// the SQL unchanged.
pub fn rewrite(sql: &str, replacements: &[Replacement]) -> Result<String, RewriteError> {
    if replacements.is_empty() {
        return Ok(sql.to_owned());
    }
    splice(sql, replacements).map(|spliced| spliced.sql)
}

/// [`rewrite`] of a statement the guard checked: the new statement's tree is the checked one
/// with the values swapped in, and the guard's checks run again on it (not its parse). A
/// statement whose tree's locations are not its text's is rewritten as text and checked anew.
pub fn rewrite_checked(checked: &CheckedSql, replacements: &[Replacement]) -> Result<CheckedSql, RewriteError> {
    if replacements.is_empty() {
        return Ok(checked.clone());
    }
    let spliced = splice(&checked.sql, replacements)?;
    let refused = |r: crate::guard::Refusal| RewriteError::Refused(r.to_string());
    let Some(tree) = checked.located() else {
        return crate::guard::check_read_only(&spliced.sql).map_err(refused);
    };
    let mut tree = tree.clone();
    let offsets = line_starts(&checked.sql);
    let mut by_start: HashMap<usize, &Replacement> = replacements.iter().map(|r| (r.range.start, r)).collect();
    let _ = tree.visit(&mut SwapValues { sql: &checked.sql, offsets: &offsets, by_start: &mut by_start });
    if let Some(r) = by_start.values().next() {
        return Err(RewriteError::NotALiteral(r.range));
    }
    crate::guard::recheck_read_only(&spliced.sql, &spliced.tokens, tree).map_err(refused)
}

/// A text with literals spliced in, and its tokens (proved as [`rewrite`] says).
struct Spliced {
    sql: String,
    tokens: Vec<TokenWithSpan>,
}

fn tokens_of(sql: &str) -> Result<Vec<TokenWithSpan>, RewriteError> {
    Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().map_err(|e| RewriteError::Parse(e.to_string()))
}

fn splice(sql: &str, replacements: &[Replacement]) -> Result<Spliced, RewriteError> {
    let mut sorted: Vec<&Replacement> = replacements.iter().collect();
    sorted.sort_by_key(|r| r.range.start);
    for pair in sorted.windows(2) {
        if pair[1].range.start < pair[0].range.end {
            return Err(RewriteError::Overlap(pair[1].range.start));
        }
    }
    // Each range must be exactly one token: a string in standard quotes, or an unsigned
    // number replaced by one.
    let tokens = tokens_of(sql)?;
    let mut cursor = OffsetCursor::new(sql);
    let ranges: Vec<TextRange> =
        tokens.iter().map(|t| TextRange { start: cursor.offset(t.span.start), end: cursor.offset(t.span.end) }).collect();
    let mut expected: Vec<Token> = tokens.iter().map(|t| t.token.clone()).collect();
    for r in &sorted {
        let at = ranges.iter().position(|t| *t == r.range).ok_or(RewriteError::NotALiteral(r.range))?;
        let string = match &tokens[at].token {
            Token::SingleQuotedString(_) if sql[r.range.start..].starts_with('\'') => true,
            Token::Number(n, false) if is_plain_number(n) && is_plain_number(&r.text) => false,
            _ => return Err(RewriteError::NotALiteral(r.range)),
        };
        expected[at] = r.token(string);
    }

    let mut out = String::with_capacity(sql.len() + 16);
    let mut at = 0;
    for r in &sorted {
        out.push_str(&sql[at..r.range.start]);
        if sql[r.range.start..].starts_with('\'') {
            out.push_str(&quote_literal(&r.text));
        } else {
            out.push_str(&r.text);
        }
        at = r.range.end;
    }
    out.push_str(&sql[at..]);

    let actual = tokens_of(&out).map_err(|e| RewriteError::StructureChanged(e.to_string()))?;
    if actual.len() != expected.len() || actual.iter().zip(&expected).any(|(a, e)| a.token != *e) {
        return Err(RewriteError::StructureChanged(out));
    }
    Ok(Spliced { sql: out, tokens: actual })
}

/// Sets the value of each literal whose span starts at a requested byte offset.
struct SwapValues<'a, 'b> {
    sql: &'a str,
    offsets: &'a [usize],
    by_start: &'b mut HashMap<usize, &'a Replacement>,
}

impl VisitorMut for SwapValues<'_, '_> {
    type Break = ();

    fn pre_visit_value(&mut self, value: &mut ValueWithSpan) -> ControlFlow<()> {
        let string = match &value.value {
            Value::SingleQuotedString(_) => true,
            Value::Number(..) => false,
            _ => return ControlFlow::Continue(()),
        };
        let start = byte_offset(self.sql, self.offsets, value.span.start);
        if let Some(r) = start.and_then(|b| self.by_start.remove(&b)) {
            value.value = r.value(string);
        }
        ControlFlow::Continue(())
    }
}

/// Digits with at most one decimal point between digits: a number as a template's slot holds
/// it (a sign is an operator of its own in SQL, not part of the literal).
pub fn is_plain_number(text: &str) -> bool {
    let mut parts = text.split('.');
    let digits = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && parts.next().is_none_or(|p| digits(Some(p))) && parts.next().is_none()
}

/// The unsigned number literals of `sql` (`LIMIT 5`, `age > 30`, `4.5`), with their ranges in
/// the text, in the order they stand.
pub fn number_literals(sql: &str) -> Result<Vec<(TextRange, String)>, RewriteError> {
    struct Numbers<'a> {
        sql: &'a str,
        offsets: Vec<usize>,
        found: Vec<(TextRange, String)>,
    }
    impl sqlparser::ast::Visitor for Numbers<'_> {
        type Break = ();
        fn pre_visit_value(&mut self, value: &ValueWithSpan) -> ControlFlow<()> {
            if let Value::Number(n, _) = &value.value {
                if let Some(start) = byte_offset(self.sql, &self.offsets, value.span.start) {
                    let end = start + n.len();
                    if self.sql.get(start..end) == Some(n.as_str()) && is_plain_number(n) {
                        self.found.push((TextRange { start, end }, n.clone()));
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    use sqlparser::ast::Visit;
    let statements = parse(sql)?;
    let mut v = Numbers { sql, offsets: line_starts(sql), found: Vec::new() };
    let _ = statements.visit(&mut v);
    v.found.sort_by_key(|(r, _)| r.start);
    Ok(v.found)
}

fn line_starts(sql: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
    starts
}

fn byte_offset(sql: &str, starts: &[usize], loc: sqlparser::tokenizer::Location) -> Option<usize> {
    let line_start = *starts.get(usize::try_from(loc.line).ok()?.checked_sub(1)?)?;
    let column = usize::try_from(loc.column).ok()?.checked_sub(1)?;
    sql[line_start..].char_indices().nth(column).map(|(i, _)| line_start + i)
}

/// Replaces every string literal of a tree by `'?'`.
struct MaskStrings;

impl VisitorMut for MaskStrings {
    type Break = ();

    fn pre_visit_value(&mut self, value: &mut ValueWithSpan) -> ControlFlow<()> {
        if matches!(
            value.value,
            Value::SingleQuotedString(_)
                | Value::EscapedStringLiteral(_)
                | Value::NationalStringLiteral(_)
                | Value::DollarQuotedString(_)
                | Value::UnicodeStringLiteral(_)
                | Value::DoubleQuotedString(_)
        ) {
            value.value = Value::SingleQuotedString("?".to_owned());
        }
        ControlFlow::Continue(())
    }
}

fn masked_tree(sql: &str) -> Result<Vec<Statement>, RewriteError> {
    let mut statements = parse(sql)?;
    let _ = statements.visit(&mut MaskStrings);
    Ok(statements)
}

/// The SQL's syntax tree printed with every string literal replaced by `'?'`: two queries that
/// differ only in string values print the same. For traces; compare with [`same_structure`].
pub fn mask_literals(sql: &str) -> Result<String, RewriteError> {
    Ok(masked_tree(sql)?.iter().map(ToString::to_string).collect::<Vec<_>>().join(";\n"))
}

/// Whether `candidate` is `original` with, at most, different string literal values: the
/// acceptance test for SQL an LLM corrected. Numbers, identifiers, operators, layout-independent
/// structure must all be equal. `Err` when `original` does not parse; `Ok(false)` when only the
/// candidate does not.
pub fn same_structure(original: &str, candidate: &str) -> Result<bool, RewriteError> {
    let original = masked_tree(original)?;
    Ok(masked_tree(candidate).is_ok_and(|c| c == original))
}

/// [`same_structure`] of two statements the guard checked, from their trees.
pub fn same_structure_checked(original: &CheckedSql, candidate: &CheckedSql) -> bool {
    let masked = |c: &CheckedSql| {
        let mut tree = c.statement().clone();
        let _ = tree.visit(&mut MaskStrings);
        tree
    };
    masked(original) == masked(candidate)
}
