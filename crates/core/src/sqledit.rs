//! Edits of a statement's text at its tokens: the significant tokens of a statement with their
//! byte offsets, the column a comparison opens a condition with, and the edits written in.
//! Checks that rewrite one comparison of a generated query ([`crate::ask`]'s whole year, a
//! conversation's replaced list) read and write the statement through this, so that text
//! outside the comparison is kept byte for byte.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::guard::OffsetCursor;

/// A statement's tokens, white space and comments left out of the counting.
pub(crate) struct Tokens<'a> {
    sql: &'a str,
    tokens: Vec<TokenWithSpan>,
    significant: Vec<usize>,
    cursor: OffsetCursor<'a>,
}

impl<'a> Tokens<'a> {
    /// `None` when the tokenizer cannot read `sql`.
    pub(crate) fn read(sql: &'a str) -> Option<Tokens<'a>> {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().ok()?;
        let significant = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
        Some(Tokens { sql, tokens, significant, cursor: OffsetCursor::new(sql) })
    }

    /// How many significant tokens there are.
    pub(crate) fn len(&self) -> usize {
        self.significant.len()
    }

    /// The `k`th significant token.
    pub(crate) fn at(&self, k: usize) -> Option<&Token> {
        self.significant.get(k).map(|&i| &self.tokens[i].token)
    }

    /// The first significant token that starts at or after `location` (a source location of
    /// the parse tree of the same text).
    pub(crate) fn first_from(&self, location: Location) -> Option<usize> {
        let at = (location.line, location.column);
        (0..self.len()).find(|&k| {
            let start = self.tokens[self.significant[k]].span.start;
            (start.line, start.column) >= at
        })
    }

    /// The text from the start of token `from` to the end of token `to`, with its byte range.
    pub(crate) fn text(&mut self, from: usize, to: usize) -> (usize, usize, &'a str) {
        let start = self.cursor.offset(self.tokens[self.significant[from]].span.start);
        let end = self.cursor.offset(self.tokens[self.significant[to]].span.end);
        (start, end, &self.sql[start..end])
    }

    /// The first token of the column a comparison at token `op` compares, when that column is a
    /// name (qualified or not, not `NOT`) and opens a condition: the token before it is `(` or a
    /// keyword of `opens` (`WHERE`, `AND`, ...).
    pub(crate) fn condition_column(&self, op: usize, opens: &[Keyword]) -> Option<usize> {
        let mut s = op.checked_sub(1)?;
        if !matches!(self.at(s), Some(Token::Word(w)) if w.keyword != Keyword::NOT || w.quote_style.is_some()) {
            return None;
        }
        while s >= 2 && matches!(self.at(s - 1), Some(Token::Period)) && matches!(self.at(s - 2), Some(Token::Word(_))) {
            s -= 2;
        }
        match s.checked_sub(1).and_then(|b| self.at(b)) {
            Some(Token::LParen) => Some(s),
            Some(Token::Word(w)) if w.quote_style.is_none() && opens.contains(&w.keyword) => Some(s),
            _ => None,
        }
    }
}

/// `sql` with each `(start, end, text)` written over its byte range (ranges in order, apart).
pub(crate) fn apply<T: AsRef<str>>(sql: &str, edits: &[(usize, usize, T)]) -> String {
    let mut out = sql.to_string();
    for (start, end, text) in edits.iter().rev() {
        out.replace_range(*start..*end, text.as_ref());
    }
    out
}

/// The string literals of `sql`, in order; `None` when the tokenizer cannot read it.
pub(crate) fn string_literals(sql: &str) -> Option<Vec<String>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    Some(tokens.into_iter().filter_map(|t| if let Token::SingleQuotedString(s) = t { Some(s) } else { None }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_column_of_a_condition_and_edits_at_its_bytes() {
        let sql = "SELECT 1 FROM t WHERE (s.t.d = 1) AND x + y = 2 AND NOT IN (1) OR é = 3";
        let mut t = Tokens::read(sql).unwrap();
        let eqs: Vec<usize> = (0..t.len()).filter(|&k| matches!(t.at(k), Some(Token::Eq))).collect();
        let opens = [Keyword::WHERE, Keyword::AND, Keyword::OR];
        // `(s.t.d`: the whole qualified name; `y` follows `+`, no condition opens there.
        let first = t.condition_column(eqs[0], &opens).unwrap();
        assert_eq!(t.text(first, eqs[0] - 1).2, "s.t.d");
        assert_eq!(t.condition_column(eqs[1], &opens), None);
        // Offsets are bytes, past a character of two.
        let last = t.condition_column(eqs[2], &opens).unwrap();
        let (start, end, text) = t.text(last, eqs[2] + 1);
        assert_eq!(text, "é = 3");
        assert_eq!(apply(sql, &[(start, end, "é = 4")]), sql.replace("é = 3", "é = 4"));
        // `NOT` is no column; a keyword not listed opens nothing.
        let not_in = (0..t.len()).find(|&k| matches!(t.at(k), Some(Token::Word(w)) if w.keyword == Keyword::IN)).unwrap();
        assert_eq!(t.condition_column(not_in, &opens), None);
        assert_eq!(t.condition_column(eqs[0], &[Keyword::HAVING]), Some(first), "( opens a condition whatever is listed");
        assert_eq!(string_literals("SELECT 'a', $$b$$, 'c''d'").unwrap(), ["a", "c'd"]);
        assert!(Tokens::read("SELECT 'unclosed").is_none());
    }
}
