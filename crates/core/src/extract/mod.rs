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

mod echoes;
mod fences;
mod finish;
mod prose;
mod words;

use echoes::without_echoes;
use finish::finish;
use prose::prose_sql;
use words::starts_like_sql;

pub use fences::{fenced_blocks, strip_fences, FencedBlock};
pub use finish::without_mysql_habits;

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

#[cfg(test)]
mod tests;
