//! Gold SQL as the defog suite writes it, expanded into the plain queries it accepts.
//!
//! defog's `questions_gen_postgres.csv` packs several acceptable answers into one `query`
//! field, in two ways, and [`gold_alternatives`] undoes both:
//!
//! * **`;`-separated queries.** `SELECT …; SELECT …;` lists queries that are each acceptable
//!   (typically the same answer through different joins). Each becomes an alternative.
//! * **Column choices in braces.** `SELECT {author.name, author.aid}, count(*) … GROUP BY {}`
//!   means the answer may identify the author by either column, or by both. As defog's
//!   `sql-eval` does (`get_all_minimal_queries`), a group of `k` options expands into its
//!   `2^k − 1` non-empty subsets, options kept in their written order (`name`, `aid`,
//!   `name, aid`), and an empty `{}` takes the choice of the nearest non-empty group before it
//!   (after it, when none is before), which is how `GROUP BY {}` follows the select list.
//!   Several non-empty groups in one query (not in the defog file, but cheap to support)
//!   expand to every combination of their choices.
//!
//! Alternatives keep their order of appearance and are de-duplicated (the file repeats some
//! queries). The scan uses `sqlparser`'s tokenizer, so a `;`, `{` or `}` inside a string
//! literal, quoted identifier or comment (`'{1,2}'::int[]`) is left alone.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::guard::OffsetCursor;

/// The most alternatives one gold field may expand into; beyond it the field is refused rather
/// than silently cut (the defog file needs at most 7 per query).
pub const MAX_ALTERNATIVES: usize = 256;

/// Why a gold field yields no usable alternatives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoldError {
    /// Nothing but whitespace, comments and semicolons.
    #[error("the gold SQL is empty")]
    Empty,
    /// The tokenizer stopped (an unterminated string or quoted identifier, say).
    #[error("the gold SQL could not be read: {0}")]
    Unreadable(String),
    /// A `{` without its `}`, a `}` without its `{`, or a `{` inside another.
    #[error("unbalanced braces in the gold SQL at query {query}")]
    UnbalancedBraces {
        /// 1-based number of the `;`-separated query.
        query: usize,
    },
    /// A `{}` with no non-empty group in the same query to take its choice from.
    #[error("an empty {{}} has no column choice to follow in query {query}")]
    EmptyGroupAlone {
        /// 1-based number of the `;`-separated query.
        query: usize,
    },
    /// More than [`MAX_ALTERNATIVES`] alternatives.
    #[error("the gold SQL expands into {0} alternatives, more than the {MAX_ALTERNATIVES} accepted")]
    TooManyAlternatives(usize),
}

/// The plain queries a gold field accepts, in order of appearance, without duplicates, each
/// trimmed and without a terminating `;`. See the [module documentation](self) for the rules.
///
/// A field without braces or semicolons gives itself back as the only alternative.
pub fn gold_alternatives(gold: &str) -> Result<Vec<String>, GoldError> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, gold).tokenize_with_location().map_err(|e| GoldError::Unreadable(e.to_string()))?;
    let mut cursor = OffsetCursor::new(gold);
    // Byte ranges of the tokens, in order, so that text between them is copied verbatim.
    let spans: Vec<(usize, usize, &Token)> = tokens
        .iter()
        .map(|TokenWithSpan { token, span }| {
            let start = cursor.offset(span.start);
            let end = cursor.offset(span.end);
            (start, end, token)
        })
        .collect();

    let mut alternatives: Vec<String> = Vec::new();
    let push = |query: String, alternatives: &mut Vec<String>| {
        if !alternatives.contains(&query) {
            alternatives.push(query);
        }
    };
    for (number, query_tokens) in spans.split(|(_, _, token)| **token == Token::SemiColon).enumerate() {
        let significant = query_tokens.iter().any(|(_, _, t)| !matches!(t, Token::Whitespace(_) | Token::EOF));
        if !significant {
            continue;
        }
        for query in expand_query(gold, query_tokens, number + 1)? {
            push(query, &mut alternatives);
            if alternatives.len() > MAX_ALTERNATIVES {
                return Err(GoldError::TooManyAlternatives(alternatives.len()));
            }
        }
    }
    if alternatives.is_empty() {
        return Err(GoldError::Empty);
    }
    Ok(alternatives)
}

/// A piece of one query: verbatim text, or a brace group (its options; empty for `{}`).
enum Piece {
    Text(String),
    Group(Vec<String>),
}

/// Expands one `;`-free query (given as its tokens with byte ranges into `source`).
fn expand_query(source: &str, tokens: &[(usize, usize, &Token)], number: usize) -> Result<Vec<String>, GoldError> {
    let unbalanced = || GoldError::UnbalancedBraces { query: number };
    let mut pieces: Vec<Piece> = Vec::new();
    let mut text_start = tokens.first().map_or(0, |t| t.0);
    let mut i = 0;
    while i < tokens.len() {
        let (start, end, token) = tokens[i];
        match token {
            Token::LBrace => {
                pieces.push(Piece::Text(source[text_start..start].to_string()));
                let mut options = Vec::new();
                let mut option_start = end;
                let mut depth = 0usize;
                let mut j = i + 1;
                loop {
                    let Some(&(s, e, t)) = tokens.get(j) else {
                        return Err(unbalanced());
                    };
                    match t {
                        Token::LBrace => return Err(unbalanced()),
                        Token::LParen | Token::LBracket => depth += 1,
                        Token::RParen | Token::RBracket => depth = depth.saturating_sub(1),
                        Token::Comma if depth == 0 => {
                            options.push(source[option_start..s].trim().to_string());
                            option_start = e;
                        }
                        Token::RBrace => {
                            options.push(source[option_start..s].trim().to_string());
                            text_start = e;
                            break;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                options.retain(|o| !o.is_empty());
                pieces.push(Piece::Group(options));
                i = j + 1;
                continue;
            }
            Token::RBrace => return Err(unbalanced()),
            _ => {}
        }
        i += 1;
    }
    let text_end = tokens.last().map_or(text_start, |t| t.1);
    pieces.push(Piece::Text(source[text_start..text_end.max(text_start)].to_string()));

    // Each non-empty group contributes its subsets; every `{}` follows a non-empty group.
    let groups: Vec<usize> =
        pieces.iter().enumerate().filter_map(|(i, p)| matches!(p, Piece::Group(o) if !o.is_empty()).then_some(i)).collect();
    let followed: Vec<Option<usize>> = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| match piece {
            Piece::Group(options) if options.is_empty() => groups
                .iter()
                .rev()
                .find(|&&g| g < i)
                .or_else(|| groups.first())
                .copied()
                .ok_or(GoldError::EmptyGroupAlone { query: number })
                .map(Some),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    let choices: Vec<Vec<String>> = groups
        .iter()
        .map(|&g| match &pieces[g] {
            Piece::Group(options) => subsets(options),
            Piece::Text(_) => unreachable!("groups index brace groups"),
        })
        .collect();
    let combinations: usize = choices.iter().map(Vec::len).product();
    if combinations > MAX_ALTERNATIVES {
        return Err(GoldError::TooManyAlternatives(combinations));
    }

    let mut out = Vec::with_capacity(combinations);
    let mut selection = vec![0usize; groups.len()];
    loop {
        let chosen = |group_piece: usize| -> &str {
            let k = groups.iter().position(|&g| g == group_piece).expect("a group");
            &choices[k][selection[k]]
        };
        let mut query = String::new();
        for (i, piece) in pieces.iter().enumerate() {
            match piece {
                Piece::Text(text) => query.push_str(text),
                Piece::Group(_) => query.push_str(chosen(followed[i].unwrap_or(i))),
            }
        }
        out.push(query.trim().to_string());
        // The next combination, the last group changing fastest.
        let mut k = groups.len();
        loop {
            if k == 0 {
                return Ok(out);
            }
            k -= 1;
            selection[k] += 1;
            if selection[k] < choices[k].len() {
                break;
            }
            selection[k] = 0;
        }
    }
}

/// The non-empty subsets of `options` joined by `", "`, in written order, smallest first
/// (`a`, `b`, `a, b`), as Python's `itertools.combinations` lists them.
fn subsets(options: &[String]) -> Vec<String> {
    let n = options.len();
    let mut out = Vec::with_capacity((1 << n) - 1);
    for size in 1..=n {
        let mut index: Vec<usize> = (0..size).collect();
        loop {
            out.push(index.iter().map(|&i| options[i].as_str()).collect::<Vec<_>>().join(", "));
            // Advance to the next combination of `size` indices in lexicographic order.
            let Some(pos) = (0..size).rev().find(|&p| index[p] != p + n - size) else {
                break;
            };
            index[pos] += 1;
            for q in pos + 1..size {
                index[q] = index[q - 1] + 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_query_is_its_own_alternative() {
        assert_eq!(gold_alternatives("  SELECT 1 ;  ").unwrap(), ["SELECT 1"]);
    }

    #[test]
    fn subsets_follow_itertools_order() {
        let o: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(subsets(&o), ["a", "b", "c", "a, b", "a, c", "b, c", "a, b, c"]);
    }
}
