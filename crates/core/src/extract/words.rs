//! The words the rules read: the keywords that start a statement, a query or a clause, SQL
//! comments to skip, and what reads as prose or Markdown rather than SQL.

/// Keywords that start a PostgreSQL statement. Every one counts, the harmful included: the
/// point is to find what the model wrote, so that the guard can refuse it.
#[rustfmt::skip]
const STATEMENT_KEYWORDS: &[&str] = &[
    "SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "INSERT", "UPDATE", "DELETE", "MERGE",
    "TRUNCATE", "DROP", "ALTER", "CREATE", "GRANT", "REVOKE", "COPY", "CALL", "DO", "SET", "RESET",
    "SHOW", "PREPARE", "EXECUTE", "DEALLOCATE", "LISTEN", "NOTIFY", "UNLISTEN", "LOCK", "VACUUM",
    "ANALYZE", "ANALYSE", "BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT",
    "RELEASE", "REFRESH", "CLUSTER", "REINDEX", "COMMENT", "SECURITY", "DISCARD", "LOAD",
    "CHECKPOINT", "IMPORT", "REASSIGN", "DECLARE", "FETCH", "MOVE", "CLOSE",
];

/// Keywords that start a query, the only statements that may follow an opening parenthesis.
pub(super) const QUERY_KEYWORDS: &[&str] = &["SELECT", "WITH", "VALUES", "TABLE"];

/// Words a line inside a statement commonly starts with. After a blank line, a line starting
/// with one of them (not in Title case, which reads as prose) continues the SQL.
#[rustfmt::skip]
pub(super) const CLAUSE_KEYWORDS: &[&str] = &[
    "FROM", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "OFFSET", "FETCH", "UNION", "INTERSECT",
    "EXCEPT", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "LATERAL", "ON",
    "USING", "AND", "OR", "NOT", "AS", "CASE", "WHEN", "THEN", "ELSE", "END", "WINDOW", "FOR",
    "RETURNING", "INTO", "DISTINCT", "ALL",
];

/// Whether a line starting with a statement keyword is really a sentence: the keyword in Title
/// case (`With`, `Select`) and the line ending like a sentence or containing a sentence break.
pub(super) fn reads_as_sentence(line: &str) -> bool {
    let line = line.trim();
    let title_case = first_word(line).is_some_and(is_title_case);
    let sentence_like = line.ends_with([':', '.', '!', '?']) || [". ", "! ", "? "].iter().any(|brk| line.contains(brk));
    title_case && sentence_like
}

/// Whether `text` starts (after whitespace and SQL comments) with a statement keyword, or with
/// parentheses around a query keyword.
pub(super) fn starts_like_sql(text: &str) -> bool {
    let text = skip_trivia(text);
    let unparenthesized = text.trim_start_matches(|c: char| c == '(' || c.is_whitespace());
    match first_word(unparenthesized) {
        Some(word) if unparenthesized.len() == text.len() => is_statement_keyword(word),
        Some(word) => QUERY_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word)),
        None => false,
    }
}

/// Skips leading whitespace and complete SQL comments (`-- …` lines, nested `/* … */`). An
/// unterminated block comment is not skipped.
pub(super) fn skip_trivia(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        if let Some(comment) = text.strip_prefix("--") {
            text = comment.find(['\n', '\r']).map_or("", |i| &comment[i..]);
        } else if text.starts_with("/*") {
            match block_comment_end(text) {
                Some(end) => text = &text[end..],
                None => return text,
            }
        } else {
            return text;
        }
    }
}

/// The byte offset just after the block comment that `text` starts with, honouring nesting as
/// PostgreSQL does; `None` when it is not terminated.
fn block_comment_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i + 1 < bytes.len() {
        match (bytes[i], bytes[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether `text` starts with Markdown rather than SQL: a heading, emphasis, quote, table,
/// code span or list marker.
pub(super) fn starts_with_markdown(text: &str) -> bool {
    let text = text.trim_start();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    text.starts_with(['#', '*', '>', '|', '`', '_']) || text.starts_with("- ") || (digits > 0 && text[digits..].starts_with(". "))
}

/// The leading word of `text` (ASCII letters and underscores), if it starts with one.
pub(super) fn first_word(text: &str) -> Option<&str> {
    let len = text.bytes().take_while(|b| b.is_ascii_alphabetic() || *b == b'_').count();
    let next = text[len..].chars().next();
    let whole_word = !next.is_some_and(|c| c.is_alphanumeric() || c == '$');
    (len > 0 && whole_word).then(|| &text[..len])
}

pub(super) fn is_statement_keyword(word: &str) -> bool {
    STATEMENT_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// `With`, `Select`: an upper-case letter followed by lower-case ones only.
pub(super) fn is_title_case(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase()) && word.len() > 1 && chars.all(|c| !c.is_ascii_uppercase())
}
