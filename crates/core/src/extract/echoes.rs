//! What of a reply is not the model's answer: its reasoning, and echoes of the prompt.

/// `reply` without what is not the model's answer: reasoning (`<think>…</think>`, also
/// `<thinking>`; an unclosed one at the start means the model was cut off while thinking, and
/// nothing is left), and an echo of the prompt's `<schema>…</schema>` block or of its
/// description lines (a `TABLE schema.name` line followed by indented column lines, as pg_ask
/// describes tables), which small models copy back and which would read as `TABLE` statements.
pub(super) fn without_echoes(reply: &str) -> std::borrow::Cow<'_, str> {
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
            } else if in_description && line.trim_end() == ");" {
                // The end of a description written as a statement.
                in_description = false;
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
    line.len() >= 24
        && crate::prompt::SQL_SYSTEM
            .lines()
            .chain(FORMER_RULES.iter().copied())
            .any(|i| i.contains(line) || (i.trim().len() >= 24 && line.contains(i.trim())))
}

/// Lines of earlier versions of the instructions, which a model may still echo from a cached
/// prompt (and which recorded replies hold): one that begins with `Select` reads as SQL.
const FORMER_RULES: &[&str] = &["- Select only the columns the question needs, with readable names; join only the tables it \
     needs, and add no condition it does not ask for."];

/// Byte offset of `needle` (ASCII) in `hay`, ignoring ASCII case.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    hay.as_bytes().windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// The first line of a table as pg_ask describes it for prompts: `TABLE schema.name` (or
/// `CREATE TABLE schema.name (`), maybe with `  -- comment`. (It is a description, not a `TABLE` statement, when it carries such a
/// comment or indented column lines follow it.)
fn is_description_header(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("TABLE ").or_else(|| line.strip_prefix("CREATE TABLE ")) else { return false };
    let name = rest.split("  -- ").next().unwrap_or_default().trim_end();
    let name = if line.starts_with("CREATE ") {
        match name.strip_suffix(" (") {
            Some(n) => n,
            None => return false,
        }
    } else {
        name
    };
    name.split('.').count() == 2 && !name.contains(char::is_whitespace) && !name.ends_with(';')
}
