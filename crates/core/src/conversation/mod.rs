//! Conversations: a question asked in a conversation is read in the light of its earlier turns.
//!
//! Every question after the first goes to the model with the turn before it
//! ([`rewrite_request`]): a question that continues it ("and in San Francisco?", "how many are
//! there?", "only the ones rated above 4") comes back as one standalone question that says
//! everything it asks; a new question comes back as it was asked. The reading follows what the
//! model wrote ([`read_rewrite`]): the question is a follow-up when its rewrite took a word from
//! the turn before that the question did not write; otherwise it is answered as asked, however
//! the model worded it. A follow-up is answered as its standalone question, generation shown the
//! previous turn's SQL as the query to edit. The words that often open a follow-up
//! ([`follow_up_signals`]) decide nothing; the trace keeps them beside the reading (`reading`),
//! and the glue keeps the reading with the turn.

use serde::Serialize;

use crate::llm::ChatRequest;
use crate::text::question_words as words;

mod replaced;
mod subject;

pub use replaced::{replaced_not_added, without_values, Replacement};
pub use subject::names_another_table;

/// Earlier turns shown to the model when it rewrites a follow-up: the turn it follows, whose
/// standalone question already holds what the turns before it said. (Shown more, the default
/// model took its subject or a value from an older turn.)
pub const MAX_TURNS_SHOWN: usize = 1;
/// Characters of a rewritten question at most.
const MAX_STANDALONE: usize = 400;

/// One earlier turn of a conversation, as the glue stored it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Turn {
    /// 1, 2, … in the conversation.
    pub turn: i32,
    /// The question as the user asked it.
    pub question: String,
    /// The question as it was answered (the rewritten follow-up, or the question itself).
    pub standalone: String,
    /// The SQL that answered it, when one ran.
    pub sql: Option<String>,
    /// The result's columns.
    pub columns: Vec<String>,
    /// The result's rows (as many as were read).
    pub rows: Option<i64>,
}

/// How a question was read in its conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reading", rename_all = "snake_case")]
pub enum Reading {
    /// Answered as asked: the first turn, or no sign of a follow-up.
    Standalone,
    /// A follow-up of turn `follows`, answered as `standalone`, generation shown that turn's
    /// SQL to edit.
    Rewritten {
        standalone: String,
        follows: i32,
        signals: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        edits_sql: Option<String>,
    },
}

impl Reading {
    /// The question the pipeline answers for `asked`.
    pub fn question<'a>(&'a self, asked: &'a str) -> &'a str {
        match self {
            Reading::Standalone => asked,
            Reading::Rewritten { standalone, .. } => standalone,
        }
    }

    /// `standalone` or `rewritten`, as the turns table keeps it.
    pub fn name(&self) -> &'static str {
        match self {
            Reading::Standalone => "standalone",
            Reading::Rewritten { .. } => "rewritten",
        }
    }
}

/// Words that open a follow-up ("and in 2020?", "only the French ones", "what about Paris?").
const OPENERS: &[&str] = &[
    "and",
    "but",
    "also",
    "only",
    "just",
    "now",
    "then",
    "instead",
    "same",
    "sort",
    "order",
    "filter",
    "exclude",
    "limit",
    "keep",
    "remove",
    "drop",
    "add",
    "include",
    "plus",
    "or",
    "except",
    "excluding",
    "without",
    "group",
    "break",
    "rank",
    "narrow",
];
/// Two-word openers.
const OPENER_PAIRS: &[&str] = &["what about", "how about", "what if", "show only", "list only", "of those", "of these", "of them"];
/// Words that refer back to an earlier answer.
const REFERRING: &[&str] =
    &["ones", "such", "those", "these", "them", "they", "it", "its", "their", "previous", "same", "instead", "again", "too"];
/// Prepositions that open a short follow-up ("in San Francisco?", "for 2020?").
const PREPOSITIONS: &[&str] =
    &["in", "for", "from", "with", "at", "by", "during", "after", "before", "since", "on", "near", "under", "over"];
/// Words at most of a question that opens with a preposition to read as a follow-up.
const SHORT: usize = 6;

/// Why `question` reads as a follow-up of an earlier turn (empty: it stands alone).
pub fn follow_up_signals(question: &str) -> Vec<String> {
    let ws: Vec<String> = words(question).into_iter().map(|w| w.norm).collect();
    let mut out = Vec::new();
    let Some(first) = ws.first() else { return out };
    let pair = ws.get(1).map(|second| format!("{first} {second}"));
    if let Some(p) = pair.filter(|p| OPENER_PAIRS.contains(&p.as_str())) {
        out.push(format!("opens with {p:?}"));
    } else if OPENERS.contains(&first.as_str()) {
        out.push(format!("opens with {first:?}"));
    } else if PREPOSITIONS.contains(&first.as_str()) && ws.len() <= SHORT {
        out.push(format!("a short phrase opening with {first:?}"));
    }
    for w in &ws {
        if REFERRING.contains(&w.as_str()) {
            out.push(format!("{w:?} refers back"));
        }
    }
    // "sort that by price", "and that in 2020": "that" with no noun after it.
    for (i, w) in ws.iter().enumerate() {
        if w == "that"
            && ws
                .get(i + 1)
                .is_none_or(|n| ["by", "to", "into", "with", "in", "for", "list", "result", "answer", "query"].contains(&n.as_str()))
        {
            out.push("\"that\" refers back".into());
        }
    }
    out.dedup();
    out
}

/// How to read a question after `history` (oldest first) without asking the model: standalone
/// when there is no earlier turn; `None` when the model must read it.
pub fn read_without_llm(history: &[Turn]) -> Option<Reading> {
    history.is_empty().then_some(Reading::Standalone)
}

/// How `question` reads after the turn `last`, from the model's rewrite of it (`rewrite`, read
/// by [`parse_rewrite`]): a follow-up of `last`, answered as `rewrite`, when the rewrite took a
/// content word from `last`'s question that `question` does not write ("How many are there?" →
/// "How many restaurants are in Chicago?"); otherwise standalone, answered as asked (a new
/// question the model wrote back unchanged or reworded).
pub fn read_rewrite(question: &str, last: &Turn, rewrite: String, signals: Vec<String>) -> Reading {
    let asked = crate::text::content_stems(question);
    let before = crate::text::content_stems(&last.standalone);
    let taken = crate::text::content_stems(&rewrite).into_iter().any(|w| !asked.contains(&w) && before.contains(&w));
    if taken {
        Reading::Rewritten { standalone: rewrite, follows: last.turn, signals, edits_sql: last.sql.clone() }
    } else {
        Reading::Standalone
    }
}

/// The request that has the model read a later question: a follow-up rewritten into a standalone
/// question, a new question written back as it is; from the last [`MAX_TURNS_SHOWN`] turns of
/// `history`.
pub fn rewrite_request(question: &str, history: &[Turn]) -> ChatRequest {
    let system = "You read the latest question of a conversation about a database. \
If it continues the most recent question (the last turn shown) and leaves unsaid what that question said \
(\"and in Paris?\", \"how many are there?\", \"only the cheap ones\", \"what is the average rating?\"), rewrite it \
into one standalone question that says everything it asks, taking from the most recent question the subject and \
every condition it keeps, with the values it replaces or adds. A question that names another value of the same \
kind (\"and in Paris?\", \"what about Indian ones?\") replaces that value: it asks about the new value instead, \
not both. If it is a new question that says by itself all it asks, write it back unchanged. \
Keep the values as the user wrote them. \
Do not answer it and do not write SQL. Reply with the question only, on one line.";
    let mut user = String::from("<conversation>\n");
    let from = history.len().saturating_sub(MAX_TURNS_SHOWN);
    for (i, t) in history[from..].iter().enumerate() {
        let label = if from + i + 1 == history.len() { " (most recent)" } else { "" };
        user.push_str(&format!("<turn{label}>\nQuestion: {}\n", one_line(&t.standalone)));
        if let Some(sql) = &t.sql {
            user.push_str(&format!("SQL: {}\n", one_line(sql)));
        }
        if !t.columns.is_empty() {
            user.push_str(&format!("Result: columns {}", crate::prompt::data(&t.columns.join(", "))));
            if let Some(n) = t.rows {
                user.push_str(&format!(", {n} rows"));
            }
            user.push('\n');
        }
        user.push_str("</turn>\n");
    }
    user.push_str("</conversation>\n");
    user.push_str(&format!("<latest_question>{}</latest_question>\nStandalone question:", one_line(question)));
    ChatRequest::new(system, user).limit(120)
}

/// A turn's text on one line, escaped ([`crate::prompt::data`]): a question, SQL or column
/// name cannot close a turn or the conversation.
fn one_line(s: &str) -> String {
    crate::prompt::data(&s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The standalone question in the model's reply: its first line that is not empty, without a
/// label or quotes; `Err` when that is no question (empty, SQL, or too long).
pub fn parse_rewrite(reply: &str) -> Result<String, String> {
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut q = line;
    for label in ["Standalone question:", "Question:", "Rewritten:"] {
        if let Some(rest) = q.strip_prefix(label) {
            q = rest.trim();
        }
    }
    let q = crate::text::unquoted(q);
    if q.is_empty() {
        return Err("the rewrite is empty".into());
    }
    if q.chars().count() > MAX_STANDALONE {
        return Err(format!("the rewrite is longer than {MAX_STANDALONE} characters"));
    }
    let lower = q.to_lowercase();
    if ["select ", "with ", "insert ", "update ", "delete "].iter().any(|k| lower.starts_with(k)) || q.contains("```") {
        return Err("the rewrite is SQL, not a question".into());
    }
    Ok(q.to_string())
}

#[cfg(test)]
mod tests;
