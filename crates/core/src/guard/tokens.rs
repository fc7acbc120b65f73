//! The checks on a statement's tokens before it is parsed (its bounds, its size, text that
//! `sqlparser` and PostgreSQL could read differently), and the map from token locations to
//! byte offsets.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use super::refusal::{Refusal, MAX_SET_OPERATIONS, MAX_TOKENS};

/// The start of the first and the end of the last token that belong to a statement, that is,
/// that are neither whitespace, comments nor semicolons; `None` when there is no such token.
pub(super) fn statement_bounds(tokens: &[TokenWithSpan]) -> Option<(Location, Location)> {
    let belongs = |t: &&TokenWithSpan| !matches!(t.token, Token::Whitespace(_) | Token::SemiColon | Token::EOF);
    let first = tokens.iter().find(belongs)?;
    let last = tokens.iter().rev().find(belongs)?;
    Some((first.span.start, last.span.end))
}

/// Refuses statements beyond [`MAX_TOKENS`] or [`MAX_SET_OPERATIONS`], before they are parsed.
pub(super) fn check_size(tokens: &[TokenWithSpan]) -> Result<(), Refusal> {
    let significant = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_)));
    let (mut count, mut set_operations) = (0, 0);
    for t in significant {
        count += 1;
        if matches!(&t.token, Token::Word(w) if w.quote_style.is_none()
            && matches!(w.keyword, Keyword::UNION | Keyword::INTERSECT | Keyword::EXCEPT))
        {
            set_operations += 1;
        }
    }
    let too_large = |what, found, limit| Err(Refusal::TooLarge { what, found, limit });
    if count > MAX_TOKENS {
        return too_large("tokens", count, MAX_TOKENS);
    }
    if set_operations > MAX_SET_OPERATIONS {
        return too_large("set operations", set_operations, MAX_SET_OPERATIONS);
    }
    Ok(())
}

/// The token-level checks for text that `sqlparser` and PostgreSQL could read differently.
pub(super) fn check_lexical(tokens: &[TokenWithSpan]) -> Result<(), Refusal> {
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) if s.contains("\\'") || s.ends_with('\\') => {
                return Err(Refusal::AmbiguousStringLiteral);
            }
            Token::DollarQuotedString(quoted) if quoted.tag.as_deref().is_some_and(|tag| tag.starts_with(|c: char| c.is_ascii_digit())) => {
                return Err(Refusal::AmbiguousStringLiteral);
            }
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("u") => {
                let next = tokens.get(i + 1).map(|t| &t.token);
                let after = tokens.get(i + 2).map(|t| &t.token);
                if matches!(next, Some(Token::Ampersand)) && matches!(after, Some(Token::Word(w)) if w.quote_style == Some('"')) {
                    return Err(Refusal::UnicodeEscapeIdentifier);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Maps the tokenizer's locations (1-based line and character column, lines split at `\n`
/// only, as `sqlparser` counts them) to byte offsets in the source. Locations asked for in
/// increasing order cost linear time in all; an earlier one restarts from the beginning.
pub(crate) struct OffsetCursor<'a> {
    text: &'a str,
    line: u64,
    column: u64,
    byte: usize,
}

impl<'a> OffsetCursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        OffsetCursor { text, line: 1, column: 1, byte: 0 }
    }

    /// The byte offset of `location`, or the end of the text when it lies beyond.
    pub(crate) fn offset(&mut self, location: Location) -> usize {
        let target = (location.line, location.column);
        if target < (self.line, self.column) {
            *self = OffsetCursor::new(self.text);
        }
        while (self.line, self.column) < target {
            let Some(c) = self.text[self.byte..].chars().next() else {
                break;
            };
            self.byte += c.len_utf8();
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.byte
    }
}
