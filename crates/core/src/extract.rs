//! Extraction of SQL from an LLM reply.
//!
//! Models answer in many shapes: a bare statement, a Markdown code fence (```` ```sql ````,
//! ```` ```postgresql ````, untagged), `<sql>…</sql>` tags, a JSON object with an `"sql"` field,
//! a statement after a line of prose ("Here is the query:"), with an explanation after it.
//! [`extract_sql`] finds the SQL and returns it trimmed and without its terminating `;`.
//!
//! # Never a silent fix
//!
//! Extraction only decides *where* the SQL is; it never decides what of it is acceptable. The
//! text it returns goes whole to [`crate::guard::check_read_only`], and that is the text that
//! runs. So extraction must not drop or split anything the model gave as statement text: a
//! second statement after a `;` in a fence (`SELECT 1; DROP TABLE t`), a statement after a
//! comment, text after a `/* ; */` all stay in the output, for the guard to see and refuse.
//! Where a rule below is unsure whether text is SQL or prose, it keeps the text: the cost is a
//! refusal and a self-correction round trip, never a hostile statement quietly trimmed into a
//! harmless one.
//!
//! # Rules, in order
//!
//! 1. **`<sql>` tags.** The content of the last `<sql>…</sql>` pair (case-insensitive; an
//!    unclosed tag runs to the end), taken whole, or whole from its last SQL fence if the model
//!    also fenced it.
//! 2. **JSON.** A reply (or a last fenced block) that is a JSON object with a string field
//!    `sql` or `query`: that string, whole.
//! 3. **Code fences.** The body of the **last** fenced block that is SQL: tagged with a SQL
//!    language (`sql`, `postgresql`, `postgres`, `pgsql`, `psql`, …) or untagged and starting
//!    with a SQL keyword. The last one, because models revise ("…or, simpler:") and put the
//!    final answer last; blocks in other languages (result tables, JSON) are skipped. A block
//!    is always taken whole, never split; an unclosed fence runs to the end of the reply.
//! 4. **Prose.** The first line that starts with a SQL statement keyword (possibly after SQL
//!    comments), or the keyword after a label such as `SQL: `. A line in Title case that reads
//!    as a sentence (`With pleasure! Here it is:`) is not a start. From there the SQL runs to
//!    the end of the reply, except that it stops
//!    * at a `;` that is followed by prose (a word that is not a statement keyword, or a
//!      Markdown marker) — a `;` followed by another statement keyword, even after comments,
//!      does not stop it;
//!    * at a blank line followed by an unindented prose line.
//! 5. **Inline code.** The last `` `…` `` span that starts with a SQL keyword.
//!
//! `None` when none of these finds SQL.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};

use crate::guard::OffsetCursor;

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
const QUERY_KEYWORDS: &[&str] = &["SELECT", "WITH", "VALUES", "TABLE"];

/// Words a line inside a statement commonly starts with. After a blank line, a line starting
/// with one of them (not in Title case, which reads as prose) continues the SQL.
#[rustfmt::skip]
const CLAUSE_KEYWORDS: &[&str] = &[
    "FROM", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "OFFSET", "FETCH", "UNION", "INTERSECT",
    "EXCEPT", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "LATERAL", "ON",
    "USING", "AND", "OR", "NOT", "AS", "CASE", "WHEN", "THEN", "ELSE", "END", "WINDOW", "FOR",
    "RETURNING", "INTO", "DISTINCT", "ALL",
];

/// Finds the SQL in an LLM reply; see the [module documentation](self) for the rules.
///
/// The result is trimmed and has no trailing `;`, but is otherwise exactly the text the model
/// gave, including any further statements, which the guard will refuse.
pub fn extract_sql(reply: &str) -> Option<String> {
    let reply = without_echoes(reply);
    let reply = reply.trim();
    if reply.is_empty() {
        return None;
    }
    if let Some(content) = sql_tag_content(reply) {
        let sql = last_sql_block(content).unwrap_or(content);
        return finish(sql);
    }
    if let Some(sql) = json_sql(reply) {
        return finish(&sql);
    }
    if let Some(sql) = last_sql_block(reply) {
        return finish(sql);
    }
    if let Some(sql) = prose_sql(reply) {
        return finish(sql);
    }
    inline_code_spans(reply).filter(|span| starts_like_sql(span)).last().and_then(finish)
}

/// `reply` without what is not the model's answer: reasoning (`<think>…</think>`, also
/// `<thinking>`; an unclosed one at the start means the model was cut off while thinking, and
/// nothing is left), and an echo of the prompt's `<schema>…</schema>` block or of its
/// description lines (a `TABLE schema.name` line followed by indented column lines, as pg_ask
/// describes tables), which small models copy back and which would read as `TABLE` statements.
fn without_echoes(reply: &str) -> std::borrow::Cow<'_, str> {
    let mut text = std::borrow::Cow::Borrowed(reply);
    // pg_ask's own instructions copied back (Gemma 3 270M echoes its whole prompt): a line of
    // them, or a long enough piece of one, is never the answer. First, since they name the
    // prompt's tags.
    if text.lines().any(is_instruction_echo) {
        text = std::borrow::Cow::Owned(text.lines().filter(|l| !is_instruction_echo(l)).collect::<Vec<_>>().join("\n"));
    }
    for (open, close) in [("<think>", "</think>"), ("<thinking>", "</thinking>"), ("<schema>", "</schema>")] {
        while let Some(a) = find_ci(&text, open) {
            let rest = &text[a + open.len()..];
            let end = find_ci(rest, close).map(|b| a + open.len() + b + close.len());
            // An unclosed reasoning block runs to the end; an unclosed schema echo too.
            let end = end.unwrap_or(text.len());
            text = std::borrow::Cow::Owned(format!("{}{}", &text[..a], &text[end..]));
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    let indented = |i: usize| lines.get(i).is_some_and(|l| l.starts_with(char::is_whitespace) && !l.trim().is_empty());
    let header = |i: usize| is_description_header(lines[i]) && (lines[i].contains("  -- ") || indented(i + 1));
    if (0..lines.len()).any(header) {
        let mut kept: Vec<&str> = Vec::new();
        let mut in_description = false;
        for (i, line) in lines.iter().enumerate() {
            if header(i) {
                in_description = true;
            } else if !(in_description && indented(i)) {
                in_description = false;
                kept.push(line);
            }
        }
        text = std::borrow::Cow::Owned(kept.join("\n"));
    }
    text
}

/// Whether `line` repeats a line of pg_ask's SQL-generation instructions (or at least 24
/// characters of one, as an echo cut at the fence).
fn is_instruction_echo(line: &str) -> bool {
    let line = line.trim().trim_start_matches("```sql").trim_start_matches("```").trim();
    line.len() >= 24 && crate::prompt::SQL_SYSTEM.lines().any(|i| i.contains(line) || (i.trim().len() >= 24 && line.contains(i.trim())))
}

/// Byte offset of `needle` (ASCII) in `hay`, ignoring ASCII case.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    hay.as_bytes().windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// The first line of a table as pg_ask describes it for prompts: `TABLE schema.name`, maybe
/// with `  -- comment`. (It is a description, not a `TABLE` statement, when it carries such a
/// comment or indented column lines follow it.)
fn is_description_header(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("TABLE ") else { return false };
    let name = rest.split("  -- ").next().unwrap_or_default().trim_end();
    name.split('.').count() == 2 && !name.contains(char::is_whitespace) && !name.ends_with(';')
}

/// The body of the last fenced code block of `reply`, trimmed, or the whole reply trimmed when
/// it has none. For stages that expect one payload (a JSON answer, a plan) in any fence.
pub fn strip_fences(reply: &str) -> &str {
    fenced_blocks(reply).last().map_or(reply, |block| block.body).trim()
}

/// A fenced code block of a Markdown reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FencedBlock<'a> {
    /// The info string after the opening fence (`sql`, `postgresql`, empty), trimmed.
    pub info: &'a str,
    /// The text between the fences, untrimmed.
    pub body: &'a str,
    /// Whether a closing fence was found (a truncated reply may lack it).
    pub closed: bool,
}

impl FencedBlock<'_> {
    /// Whether the info string names a SQL language (`sql`, `postgresql`, `pgsql`, `psql`, …).
    pub fn is_tagged_sql(&self) -> bool {
        is_sql_language(self.info.split_whitespace().next().unwrap_or(""))
    }
}

/// The fenced code blocks of `text`, in order. A fence is a run of three or more backticks or
/// tildes; it closes at the next run of the same character at least as long. Models are less
/// tidy than CommonMark, so fences are also recognised in mid-line and on a single line
/// (```` ```sql SELECT 1``` ````), and an unclosed fence runs to the end.
pub fn fenced_blocks(text: &str) -> Vec<FencedBlock<'_>> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(open) = find_fence(text, from, None) {
        let after_open = open.end;
        let line_end = text[after_open..].find('\n').map_or(text.len(), |i| after_open + i);
        let first_line = &text[after_open..line_end];
        if let Some(close) = find_fence(first_line, 0, Some(open.clone())) {
            // A block on a single line: an optional language word, then the body.
            let inner = &first_line[..close.start];
            let (info, body) = match inner.split_once(char::is_whitespace) {
                Some((word, rest)) if is_sql_language(word) => (word, rest),
                _ => ("", inner),
            };
            blocks.push(FencedBlock { info, body, closed: true });
            from = after_open + close.end;
            continue;
        }
        let info = first_line.trim();
        let body_start = (line_end + 1).min(text.len());
        match find_fence(text, body_start, Some(open)) {
            Some(close) => {
                blocks.push(FencedBlock { info, body: &text[body_start..close.start], closed: true });
                from = close.end;
            }
            None => {
                blocks.push(FencedBlock { info, body: &text[body_start..], closed: false });
                break;
            }
        }
    }
    blocks
}

/// A fence run: its character and its byte range.
#[derive(Debug, Clone)]
struct Fence {
    marker: char,
    start: usize,
    end: usize,
}

/// The next run of at least three backticks or tildes in `text` from `from`; when `opening`
/// is given, only a run that can close it (same character, at least as long).
fn find_fence(text: &str, from: usize, opening: Option<Fence>) -> Option<Fence> {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'`' || b == b'~' {
            let run = bytes[i..].iter().take_while(|&&c| c == b).count();
            let fits = match &opening {
                Some(open) => open.marker == char::from(b) && run >= open.end - open.start,
                None => run >= 3,
            };
            if fits {
                return Some(Fence { marker: char::from(b), start: i, end: i + run });
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

fn is_sql_language(word: &str) -> bool {
    let word = word.to_ascii_lowercase();
    word.contains("sql") || word.starts_with("postgres") || word == "pg"
}

/// The body of the last fenced block in `text` that is SQL (tagged so, or starting with a SQL
/// keyword) and not empty.
fn last_sql_block(text: &str) -> Option<&str> {
    fenced_blocks(text)
        .into_iter()
        .rev()
        .find(|block| !block.body.trim().is_empty() && (block.is_tagged_sql() || starts_like_sql(block.body)))
        .map(|block| block.body)
}

/// The content of the last `<sql>` tag, up to its `</sql>` or the end of the text.
fn sql_tag_content(text: &str) -> Option<&str> {
    let lower = text.to_ascii_lowercase();
    // `<query>` too: models copy the tag style of the answer prompt.
    let (open, close) = [("<sql>", "</sql>"), ("<query>", "</query>")].into_iter().find(|(open, _)| lower.contains(open))?;
    let start = lower.rfind(open)? + open.len();
    let end = lower[start..].find(close).map_or(text.len(), |i| start + i);
    Some(&text[start..end])
}

/// The `sql` (or `query`) string of a JSON object reply, bare or in the last fenced block.
fn json_sql(reply: &str) -> Option<String> {
    let candidate = strip_fences(reply);
    if !candidate.starts_with('{') {
        return None;
    }
    let value = crate::json::lenient(candidate)?;
    ["sql", "query", "SQL"].iter().find_map(|key| value.get(key)?.as_str().map(str::to_owned))
}

/// The SQL in a reply without fences or tags (rule 4 of the module documentation).
fn prose_sql(reply: &str) -> Option<&str> {
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

/// Whether a line starting with a statement keyword is really a sentence: the keyword in Title
/// case (`With`, `Select`) and the line ending like a sentence or containing a sentence break.
fn reads_as_sentence(line: &str) -> bool {
    let line = line.trim();
    let title_case = first_word(line).is_some_and(is_title_case);
    let sentence_like = line.ends_with([':', '.', '!', '?']) || [". ", "! ", "? "].iter().any(|brk| line.contains(brk));
    title_case && sentence_like
}

/// Whether `text` starts (after whitespace and SQL comments) with a statement keyword, or with
/// parentheses around a query keyword.
fn starts_like_sql(text: &str) -> bool {
    let text = skip_trivia(text);
    let unparenthesized = text.trim_start_matches(|c: char| c == '(' || c.is_whitespace());
    match first_word(unparenthesized) {
        Some(word) if unparenthesized.len() == text.len() => is_statement_keyword(word),
        Some(word) => QUERY_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word)),
        None => false,
    }
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

/// Skips leading whitespace and complete SQL comments (`-- …` lines, nested `/* … */`). An
/// unterminated block comment is not skipped.
fn skip_trivia(mut text: &str) -> &str {
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
fn starts_with_markdown(text: &str) -> bool {
    let text = text.trim_start();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    text.starts_with(['#', '*', '>', '|', '`', '_']) || text.starts_with("- ") || (digits > 0 && text[digits..].starts_with(". "))
}

/// The leading word of `text` (ASCII letters and underscores), if it starts with one.
fn first_word(text: &str) -> Option<&str> {
    let len = text.bytes().take_while(|b| b.is_ascii_alphabetic() || *b == b'_').count();
    let next = text[len..].chars().next();
    let whole_word = !next.is_some_and(|c| c.is_alphanumeric() || c == '$');
    (len > 0 && whole_word).then(|| &text[..len])
}

fn is_statement_keyword(word: &str) -> bool {
    STATEMENT_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// `With`, `Select`: an upper-case letter followed by lower-case ones only.
fn is_title_case(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase()) && word.len() > 1 && chars.all(|c| !c.is_ascii_uppercase())
}

/// The contents of single-backtick code spans, in order.
fn inline_code_spans(text: &str) -> impl Iterator<Item = &str> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || loop {
        let open = rest.find('`')?;
        let after = &rest[open + 1..];
        if after.starts_with('`') {
            // Part of a fence or an empty span: skip the whole run.
            let run = after.bytes().take_while(|&b| b == b'`').count();
            rest = &after[run..];
            continue;
        }
        let close = after.find('`')?;
        rest = &after[close + 1..];
        return Some(&after[..close]);
    })
}

/// Trims `sql`, removes terminating semicolons, and gives `None` when nothing is left.
///
/// A final `;` is removed only when it is a token of its own, so that one inside a trailing
/// `--` comment stays; text that does not tokenize is left for the guard to refuse.
fn finish(sql: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_habits_are_written_the_postgresql_way() {
        assert_eq!(
            without_mysql_habits("SELECT `name`, `First Name` FROM `cities` LIMIT 10, 5"),
            "SELECT name, \"First Name\" FROM cities LIMIT 5 OFFSET 10"
        );
        assert_eq!(without_mysql_habits("SELECT `Name` FROM t LIMIT 3"), "SELECT \"Name\" FROM t LIMIT 3");
        // Inside strings and comments nothing changes.
        let s = "SELECT 'a `b` LIMIT 1, 2' FROM t -- `c`\n";
        assert_eq!(without_mysql_habits(s), s);
        assert_eq!(extract_sql("```sql\nSELECT `x` FROM t LIMIT 0,20;\n```").as_deref(), Some("SELECT x FROM t LIMIT 20 OFFSET 0"));
    }

    fn extracted(reply: &str) -> String {
        extract_sql(reply).unwrap_or_else(|| panic!("no SQL found in {reply:?}"))
    }

    #[test]
    fn bare_statements() {
        assert_eq!(extracted("SELECT * FROM canary;"), "SELECT * FROM canary");
        assert_eq!(extracted("  select 1  \n"), "select 1");
        assert_eq!(extracted("SELECT id\nFROM canary\nWHERE id > 1\nORDER BY id;\n"), "SELECT id\nFROM canary\nWHERE id > 1\nORDER BY id");
        assert_eq!(extracted("(SELECT 1) UNION (SELECT 2)"), "(SELECT 1) UNION (SELECT 2)");
        assert_eq!(extracted("SELECT 1;;"), "SELECT 1");
    }

    #[test]
    fn reasoning_is_not_the_answer() {
        let reply = "<think>Maybe SELECT * FROM people? No, count them.</think>\n```sql\nSELECT count(*) FROM people\n```";
        assert_eq!(extracted(reply), "SELECT count(*) FROM people");
        assert_eq!(extracted("<THINKING>\nSELECT draft\n</THINKING>SELECT final"), "SELECT final");
        // Cut off while thinking: no answer, not the draft.
        assert_eq!(extract_sql("<think>\nSELECT * FROM people WHERE"), None);
    }

    #[test]
    fn a_run_of_repeated_queries_is_read_as_its_first() {
        // SmolLM2-135M, to its token limit.
        let runaway = "SELECT * FROM public.restaurants WHERE id NOT IN (1,1)\n\nSELECT * FROM public.cities WHERE city_id NOT IN (1,1)\n\nSELECT * FROM";
        assert_eq!(extracted(runaway), "SELECT * FROM public.restaurants WHERE id NOT IN (1,1)");
        let with_semicolons = "SELECT max(x) FROM t WHERE s = 'USA';\nSELECT max(x) FROM t WHERE s = 'USA';\nSELECT max(x)";
        assert_eq!(extracted(with_semicolons), "SELECT max(x) FROM t WHERE s = 'USA'");
        // Any other statement in the run keeps it whole, for the guard to refuse.
        assert_eq!(extracted("SELECT 1;\nDELETE FROM t;\nSELECT 2"), "SELECT 1;\nDELETE FROM t;\nSELECT 2");
        assert_eq!(extracted("SELECT 1\n\nDROP TABLE t"), "SELECT 1\n\nDROP TABLE t");
        // One statement over several lines, with a blank line inside, stays one.
        assert_eq!(extracted("SELECT a,\n\n  b FROM t"), "SELECT a,\n\n  b FROM t");
        // <query> tags, as in the answer prompt.
        assert_eq!(extracted("<query>\nSELECT 1\n</query>\n\nResult:\n<id>1</id>"), "SELECT 1");
    }

    #[test]
    fn echoed_instructions_are_not_sql() {
        let echo = format!("{}\n\n<question>how many?</question>", crate::prompt::SQL_SYSTEM);
        assert_eq!(extract_sql(&echo), None);
        assert_eq!(
            extract_sql(
                "```sql\nSELECT) statement, PostgreSQL dialect. Never write INSERT, UPDATE, DELETE, DDL, or more than one statement.\n```"
            ),
            None
        );
        assert_eq!(extracted(&format!("{}\n```sql\nSELECT count(*) FROM t\n```", crate::prompt::SQL_SYSTEM)), "SELECT count(*) FROM t");
        // A short line that happens to be in the instructions is kept.
        assert_eq!(extracted("SELECT 1"), "SELECT 1");
    }

    #[test]
    fn an_echoed_schema_is_not_sql() {
        // Gemma 3 270M copied the prompt's description back; its lines read as TABLE statements.
        let echo = "TABLE public.cities  -- Cities covered by the restaurant guide.\n  id integer NOT NULL PRIMARY KEY\n  name text NOT NULL\nTABLE public.states\n  code text NOT NULL PRIMARY KEY";
        assert_eq!(extract_sql(echo), None);
        assert_eq!(extracted(&format!("{echo}\n\nSELECT name FROM public.cities")), "SELECT name FROM public.cities");
        assert_eq!(extracted(&format!("<schema>\n{echo}\n</schema>\nSELECT 1")), "SELECT 1");
        // A TABLE statement stays one.
        assert_eq!(extracted("TABLE public.cities"), "TABLE public.cities");
        assert_eq!(extracted("TABLE public.cities;\n"), "TABLE public.cities");
        assert_eq!(extracted("```sql\nTABLE cities\n```"), "TABLE cities");
    }

    #[test]
    fn fenced_blocks_of_every_flavour() {
        for reply in [
            "```sql\nSELECT 1;\n```",
            "```SQL\nSELECT 1\n```",
            "```postgresql\nSELECT 1\n```",
            "```postgres\nSELECT 1;\n```\n",
            "```pgsql\nSELECT 1\n```",
            "```\nSELECT 1\n```",
            "~~~sql\nSELECT 1\n~~~",
            "````sql\nSELECT 1\n````",
            "```sql SELECT 1```",
            "```SELECT 1;```",
            "Here you go: ```sql\nSELECT 1\n```",
            "```sql\nSELECT 1",
            "```sql\nSELECT 1;```",
        ] {
            assert_eq!(extracted(reply), "SELECT 1", "{reply:?}");
        }
    }

    #[test]
    fn prose_around_a_fence_is_dropped() {
        let reply = "Sure! Here is the query you asked for:\n\n```sql\nSELECT count(*)\nFROM canary;\n```\n\nThis counts the rows of `canary`. Let me know if you need more.";
        assert_eq!(extracted(reply), "SELECT count(*)\nFROM canary");
    }

    #[test]
    fn the_last_sql_block_wins() {
        let reply = "First attempt:\n```sql\nSELECT id FROM canary\n```\nBetter:\n```sql\nSELECT id, note FROM canary\n```\nResult:\n```\n id | note\n----+------\n```";
        assert_eq!(extracted(reply), "SELECT id, note FROM canary");
        let reply = "```python\nprint(1)\n```\n```sql\nSELECT 2\n```\n```json\n{\"rows\": 1}\n```";
        assert_eq!(extracted(reply), "SELECT 2");
    }

    #[test]
    fn a_block_is_never_split() {
        let reply = "```sql\nSELECT 1;\nDROP TABLE canary;\n```";
        assert_eq!(extracted(reply), "SELECT 1;\nDROP TABLE canary");
        let reply = "```sql\nSELECT 1; -- harmless\nDELETE FROM canary\n```";
        assert_eq!(extracted(reply), "SELECT 1; -- harmless\nDELETE FROM canary");
        let reply = "```sql\nSELECT 1 /* ; */; UPDATE canary SET note = 'x';\n```";
        assert_eq!(extracted(reply), "SELECT 1 /* ; */; UPDATE canary SET note = 'x'");
    }

    #[test]
    fn a_trailing_semicolon_in_a_comment_stays() {
        assert_eq!(extracted("SELECT 1 -- done;"), "SELECT 1 -- done;");
        assert_eq!(extracted("```sql\nSELECT 1; -- done;\n```"), "SELECT 1; -- done;");
    }

    #[test]
    fn sql_tags() {
        assert_eq!(extracted("<sql>SELECT 1;</sql>"), "SELECT 1");
        assert_eq!(extracted("I think this works.\n<SQL>\nSELECT note\nFROM canary\n</SQL>\nDone."), "SELECT note\nFROM canary");
        assert_eq!(extracted("<sql>\n```sql\nSELECT 1\n```\n</sql>"), "SELECT 1");
        assert_eq!(extracted("<sql>SELECT 1; DELETE FROM canary</sql>"), "SELECT 1; DELETE FROM canary");
        assert_eq!(extracted("<sql>SELECT 3"), "SELECT 3");
    }

    #[test]
    fn json_replies() {
        assert_eq!(extracted(r#"{"sql": "SELECT 1;", "explanation": "one"}"#), "SELECT 1");
        assert_eq!(extracted("```json\n{\"query\": \"SELECT 2\"}\n```"), "SELECT 2");
    }

    #[test]
    fn prose_before_and_after() {
        let reply = "Here is the query:\n SELECT * FROM canary WHERE id = 1;\n\nThis returns the first canary.";
        assert_eq!(extracted(reply), "SELECT * FROM canary WHERE id = 1");
        let reply = "Here is the query:\nSELECT *\nFROM canary\n\nThis query lists every canary.";
        assert_eq!(extracted(reply), "SELECT *\nFROM canary");
        let reply = "SQL: SELECT note FROM canary ORDER BY id";
        assert_eq!(extracted(reply), "SELECT note FROM canary ORDER BY id");
        let reply = "Sure. SELECT 1; It's that simple.";
        assert_eq!(extracted(reply), "SELECT 1");
        let reply = "With pleasure! Here is the SQL:\nWITH t AS (SELECT 1 AS x)\nSELECT x FROM t;";
        assert_eq!(extracted(reply), "WITH t AS (SELECT 1 AS x)\nSELECT x FROM t");
        let reply = "sql\nSELECT 1";
        assert_eq!(extracted(reply), "SELECT 1");
    }

    #[test]
    fn prose_mode_keeps_later_statements() {
        let reply = "Here you go:\nSELECT 1; -- harmless\nDROP TABLE canary;\n\nThis cleans up.";
        assert_eq!(extracted(reply), "SELECT 1; -- harmless\nDROP TABLE canary");
        let reply = "SELECT 1;\n\nDELETE FROM canary;";
        assert_eq!(extracted(reply), "SELECT 1;\n\nDELETE FROM canary");
        let reply = "SELECT 1; /* ; */ DELETE FROM canary";
        assert_eq!(extracted(reply), "SELECT 1; /* ; */ DELETE FROM canary");
        let reply = "SELECT 1; /* unterminated DELETE FROM canary";
        assert_eq!(extracted(reply), reply);
        let reply = "SELECT 'a;b', 1; delete from canary";
        assert_eq!(extracted(reply), reply);
    }

    #[test]
    fn prose_mode_keeps_blank_lines_inside_sql() {
        let reply = "SELECT id\n\nFROM canary\n\n  WHERE id > 1\n\nORDER BY id";
        assert_eq!(extracted(reply), reply);
    }

    #[test]
    fn leading_comments_start_the_statement() {
        let reply = "-- count the canaries\nSELECT count(*) FROM canary;";
        assert_eq!(extracted(reply), "-- count the canaries\nSELECT count(*) FROM canary");
        let reply = "/* harmless */ DELETE FROM canary";
        assert_eq!(extracted(reply), reply);
    }

    #[test]
    fn comments_before_prose_do_not_hide_a_label() {
        assert_eq!(extracted("/* note */\nHere: SELECT 1"), "SELECT 1");
        assert_eq!(extracted("/* a\n b */ Answer:\nSELECT 2"), "SELECT 2");
        assert_eq!(extract_sql("/* unterminated\nSELECT 1"), None);
    }

    #[test]
    fn adversarial_replies_take_linear_time() {
        let started = std::time::Instant::now();
        let many_statements = format!("SELECT 1{}", "; SELECT 1".repeat(20_000));
        assert_eq!(extracted(&many_statements).len(), many_statements.len());
        let many_semicolons = format!("SELECT 1{}", ";".repeat(20_000));
        assert_eq!(extracted(&many_semicolons), "SELECT 1");
        let many_comments = format!("{}x", "/*\n".repeat(20_000));
        assert_eq!(extract_sql(&many_comments), None);
        let nested_comments = format!("{}{}x", "/*\n".repeat(10_000), "*/\n".repeat(10_000));
        assert_eq!(extract_sql(&nested_comments), None);
        let fences = "```\n".repeat(20_000);
        assert_eq!(extract_sql(&fences), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn inline_code() {
        assert_eq!(extracted("Run `SELECT count(*) FROM canary` to count."), "SELECT count(*) FROM canary");
        assert_eq!(extracted("The table `canary` has it: `select note from canary`."), "select note from canary");
    }

    #[test]
    fn no_sql_at_all() {
        for reply in [
            "",
            "   ",
            "I'm sorry, I cannot answer that from this database.",
            "```text\nno idea\n```",
            "```sql\n```",
            "Select the table you want to query and ask again.",
            "The `canary` table holds notes.",
        ] {
            assert_eq!(extract_sql(reply), None, "{reply:?}");
        }
    }

    #[test]
    fn strip_fences_takes_the_last_block() {
        assert_eq!(strip_fences("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_fences("  plain  "), "plain");
        assert_eq!(strip_fences("```\na\n```\n```\nb\n```"), "b");
    }

    #[test]
    fn fenced_block_details() {
        let blocks = fenced_blocks("x\n```sql\nSELECT 1\n```\ny\n```\nz");
        assert_eq!(
            blocks,
            [FencedBlock { info: "sql", body: "SELECT 1\n", closed: true }, FencedBlock { info: "", body: "z", closed: false },]
        );
        assert!(blocks[0].is_tagged_sql());
        assert!(!blocks[1].is_tagged_sql());
    }
}
