//! The extracted text made ready for the guard: trimmed, without its terminating `;`, and
//! without two MySQL habits.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};

use crate::guard::OffsetCursor;

/// Trims `sql`, removes terminating semicolons, and gives `None` when nothing is left.
///
/// A final `;` is removed only when it is a token of its own, so that one inside a trailing
/// `--` comment stays; text that does not tokenize is left for the guard to refuse.
pub(super) fn finish(sql: &str) -> Option<String> {
    let mut sql = sql.trim();
    if sql.ends_with(';') {
        if let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() {
            let is_padding = |t: &TokenWithSpan| {
                matches!(t.token, Token::SemiColon | Token::Whitespace(Whitespace::Space | Whitespace::Newline | Whitespace::Tab))
            };
            let end = match tokens.iter().rposition(|t| !is_padding(t)) {
                Some(last) => OffsetCursor::new(sql).offset(tokens[last].span.end),
                None => 0,
            };
            sql = &sql[..end];
        }
    }
    (!sql.is_empty()).then(|| without_mysql_habits(sql))
}

/// `sql` with two MySQL habits of models written the PostgreSQL way: backquoted identifiers
/// (`` `name` `` becomes `name`, `` `Name` `` becomes `"Name"`, as `quote_ident` writes them) and
/// `LIMIT offset, count` (becomes `LIMIT count OFFSET offset`). Read from PostgreSQL's tokens,
/// so nothing inside a string literal or a comment changes.
pub fn without_mysql_habits(sql: &str) -> String {
    if !sql.contains('`') && !sql.to_ascii_uppercase().contains("LIMIT") {
        return sql.to_string();
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() else { return sql.to_string() };
    let mut cursor = OffsetCursor::new(sql);
    let spans: Vec<(usize, usize)> = tokens.iter().map(|t| (cursor.offset(t.span.start), cursor.offset(t.span.end))).collect();
    let significant: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut k = 0;
    while k < significant.len() {
        let i = significant[k];
        match &tokens[i].token {
            Token::Char('`') => {
                // The matching backquote, with nothing but word characters and spaces between.
                let close = significant[k + 1..].iter().position(|&j| tokens[j].token == Token::Char('`')).map(|p| k + 1 + p);
                if let Some(c) = close {
                    let (start, end) = (spans[i].0, spans[significant[c]].1);
                    let inner = &sql[spans[i].1..spans[significant[c]].0];
                    if !inner.is_empty() && !inner.contains('\n') {
                        edits.push((start, end, crate::sqltext::quote_ident(inner)));
                        k = c + 1;
                        continue;
                    }
                }
            }
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("limit") => {
                if let [a, comma, b] = significant.get(k + 1..k + 4).unwrap_or(&[]) {
                    if let (Token::Number(x, _), Token::Comma, Token::Number(y, _)) =
                        (&tokens[*a].token, &tokens[*comma].token, &tokens[*b].token)
                    {
                        edits.push((spans[*a].0, spans[*b].1, format!("{y} OFFSET {x}")));
                        k += 4;
                        continue;
                    }
                }
            }
            _ => {}
        }
        k += 1;
    }
    let mut out = sql.to_string();
    for (start, end, text) in edits.into_iter().rev() {
        out.replace_range(start..end, &text);
    }
    out
}
