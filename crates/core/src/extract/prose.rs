//! SQL in a reply without fences or tags (rule 4 of the [module documentation](super)): where
//! the statement starts in the prose, and where the prose after it begins.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::words::{
    first_word, is_statement_keyword, is_title_case, reads_as_sentence, skip_trivia, starts_like_sql, starts_with_markdown,
    CLAUSE_KEYWORDS, QUERY_KEYWORDS,
};
use crate::guard::OffsetCursor;

/// The SQL in a reply without fences or tags (rule 4 of the module documentation).
pub(super) fn prose_sql(reply: &str) -> Option<&str> {
    let start = first_statement_start(reply)?;
    let region = cut_at_prose_paragraph(&reply[start..]);
    let region = cut_at_prose_after_semicolon(region);
    Some(first_of_repeated_queries(region))
}

/// A run of queries, one after another (each after a `;` line end or a blank line), is how a
/// small model repeats itself to its token limit: the first one is the answer. Only when every
/// part starts as a query (SELECT, WITH, VALUES, TABLE): a run with any other statement stays
/// whole, for the guard to refuse.
fn first_of_repeated_queries(region: &str) -> &str {
    let mut starts = vec![0];
    let mut offset = 0;
    let mut previous_ends_statement = false;
    for line in region.split_inclusive('\n') {
        let trimmed = line.trim();
        if offset > 0 && previous_ends_statement && !trimmed.is_empty() && !line.starts_with(char::is_whitespace) {
            starts.push(offset);
        }
        if !trimmed.is_empty() {
            previous_ends_statement = trimmed.ends_with(';');
        } else {
            previous_ends_statement = true;
        }
        offset += line.len();
    }
    if starts.len() < 2 {
        return region;
    }
    let parts: Vec<&str> =
        starts.iter().zip(starts.iter().skip(1).chain(std::iter::once(&region.len()))).map(|(&a, &b)| &region[a..b]).collect();
    let all_queries = parts
        .iter()
        .all(|p| first_word(skip_trivia(p.trim_start())).is_some_and(|w| QUERY_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(w))));
    if all_queries {
        parts[0]
    } else {
        region
    }
}

/// The byte offset where the first statement starts: at the start of a line (before any SQL
/// comments that lead to the keyword), or after a label (`SQL: SELECT …`) or a sentence
/// (`Sure. SELECT …`, upper-case keyword only) within a line.
///
/// Lines inside a leading block comment are not looked at again, and nothing after an
/// unterminated one is a start (it is all comment to PostgreSQL), so this takes linear time.
fn first_statement_start(text: &str) -> Option<usize> {
    let mut line_start = 0;
    while line_start < text.len() {
        let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
        let line = &text[line_start..line_end];
        if line.trim().is_empty() {
            line_start = line_end + 1;
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let rest = &text[line_start + indent..];
        let code = skip_trivia(rest);
        let code_at = text.len() - code.len();
        if code.starts_with("/*") {
            return None;
        }
        if starts_like_sql(code) {
            let code_line_end = text[code_at..].find('\n').map_or(text.len(), |i| code_at + i);
            if !reads_as_sentence(&text[code_at..code_line_end]) {
                return Some(line_start + indent);
            }
        }
        if code_at == line_start + indent {
            if let Some(start) = start_within_line(line) {
                return Some(line_start + start);
            }
        }
        // Go on at the line where the leading comments end, at least one line further.
        let code_line_start = text[..code_at].rfind('\n').map_or(0, |i| i + 1);
        line_start = code_line_start.max(line_end + 1);
    }
    None
}

/// The offset in `line` of a statement keyword after a label (`SQL: `, any case) or a
/// sentence (`. `, `! `, `? `, upper-case keyword only).
fn start_within_line(line: &str) -> Option<usize> {
    line.match_indices([':', '.', '!', '?']).find_map(|(i, mark)| {
        let rest = &line[i + 1..];
        let word_at = i + 1 + (rest.len() - rest.trim_start().len());
        let keyword_ok = match first_word(&line[word_at..]) {
            Some(word) if mark == ":" => is_statement_keyword(word),
            Some(word) => is_statement_keyword(word) && word.bytes().all(|b| !b.is_ascii_lowercase()),
            None => false,
        };
        (rest.starts_with(char::is_whitespace) && keyword_ok).then_some(word_at)
    })
}

/// `(start, end)` byte ranges of the lines of `text`, without their `\n`.
fn line_ranges(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start > text.len() || (start == text.len() && !text.is_empty()) {
            return None;
        }
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let range = (start, end);
        start = end + 1;
        Some(range)
    })
}

/// Cuts `region` before a blank line that is followed by an unindented prose line.
fn cut_at_prose_paragraph(region: &str) -> &str {
    let mut previous_blank = false;
    for (start, end) in line_ranges(region) {
        let line = &region[start..end];
        if line.trim().is_empty() {
            previous_blank = true;
            continue;
        }
        if previous_blank && !line.starts_with(char::is_whitespace) && is_prose_line(line) {
            return &region[..start];
        }
        previous_blank = false;
    }
    region
}

/// Whether an unindented line after a blank line is prose rather than more SQL.
fn is_prose_line(line: &str) -> bool {
    match first_word(line) {
        Some(word) if is_statement_keyword(word) => false,
        Some(word) if CLAUSE_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word)) => is_title_case(word),
        Some(_) => true,
        None => starts_with_markdown(line),
    }
}

/// Cuts `region` just after the first top-level `;` that is followed by prose or by nothing
/// (whitespace and comments only). A `;` followed by anything else (another statement, a
/// symbol, an unterminated comment) does not end the SQL.
fn cut_at_prose_after_semicolon(region: &str) -> &str {
    // Prose after the SQL (an apostrophe, say) may stop the tokenizer; the tokens before that
    // point are the same as in any prefix, so the `;` tokens among them are the top-level ones.
    let mut tokens = Vec::new();
    let _ = Tokenizer::new(&PostgreSqlDialect {}, region).tokenize_with_location_into_buf(&mut tokens);
    let mut cursor = OffsetCursor::new(region);
    for semicolon in tokens.iter().filter(|t| t.token == Token::SemiColon) {
        let after = cursor.offset(semicolon.span.end);
        let rest = skip_trivia(&region[after..]);
        let ends = match first_word(rest) {
            _ if rest.is_empty() => true,
            Some(word) => !is_statement_keyword(word),
            None => starts_with_markdown(rest),
        };
        if ends {
            return &region[..after];
        }
    }
    region
}
