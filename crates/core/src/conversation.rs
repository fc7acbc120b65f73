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
/// Words a question or a request opens with.
const QUESTION_OPENERS: &[&str] = &[
    "which", "what", "who", "whom", "whose", "how", "when", "where", "list", "show", "give", "name", "count", "find", "tell", "is", "are",
    "do", "does", "did",
];
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

/// The table a later question names as its own subject when the turn before neither read nor
/// named it: "Which chefs are Italian?" after "What is the average rating of restaurants in New
/// York?". The question names a table when it writes every word of the table's name (`chefs`;
/// `payments` and `made` for `payments_made`); the turn before names it when its question, its
/// SQL's identifiers (`city_id` names `cities`) or its result's columns write one of those
/// words. Only a question that opens as a question or a request does ("which", "how", "list",
/// …; a fragment such as "Reviewed in 2023." may name a table's word and still continue the turn
/// before) and has no word that refers back or opens a follow-up (`signals` empty) is read this
/// way: such a question says by itself what it asks and is answered as asked, without the
/// model's reading (which took "How many reviews are there?" after Chicago's Italian
/// restaurants for their reviews). `tables` are the names of the tables the question may read,
/// unqualified.
pub fn names_another_table(question: &str, last: &Turn, signals: &[String], tables: &[String]) -> Option<String> {
    use crate::text::{content_stems, identifier_words, word_stem};
    let opens_a_question = words(question).first().is_some_and(|w| QUESTION_OPENERS.contains(&w.norm.as_str()));
    if !signals.is_empty() || !opens_a_question {
        return None;
    }
    let asked = content_stems(question);
    let mut before = content_stems(&last.standalone);
    before.extend(content_stems(&last.question));
    let identifiers = last.sql.iter().chain(&last.columns).flat_map(|s| identifier_words(s));
    before.extend(identifiers.map(|w| word_stem(&w)));
    tables
        .iter()
        .find(|t| {
            let parts = content_stems(&t.replace('_', " "));
            !parts.is_empty()
                && parts.iter().all(|p| p.chars().count() >= 3 && asked.contains(p))
                && !parts.iter().any(|p| before.contains(p))
        })
        .cloned()
}

/// Words of a follow-up that add a value to the turn before's, set the two side by side or ask
/// for values other than it, rather than put one in its place ("and the Italian ones too?",
/// "also in Paris", "both", "compare with Paris", "and the others?").
const ADDING: &[&str] = &[
    "also",
    "too",
    "both",
    "plus",
    "including",
    "include",
    "add",
    "or",
    "either",
    "together",
    "combined",
    "all",
    "well",
    "compare",
    "compared",
    "comparing",
    "versus",
    "vs",
    "against",
    "each",
    "per",
    "between",
    "other",
    "others",
    "rest",
    "remaining",
    "else",
    "except",
    "excluding",
    "besides",
];

/// A follow-up that names another value of the same kind answered with both: after `WHERE
/// nationality = 'French'`, "and the Italian ones?" written `nationality IN ('French',
/// 'Italian')`. The follow-up (`asked`, as the user wrote it) replaces the value ([the reading's
/// rule](rewrite_request)), so the list is written as the one value it names: `nationality =
/// 'Italian'`. Only a list (`column IN ('a', 'b', ...)`, in a condition of its own) of which the
/// follow-up writes exactly one value, every other value being a literal of `previous_sql` that
/// the follow-up does not write; or of which it writes none and `previous_sql` has exactly one,
/// the others written by neither ("How many of them are there?" after that turn, its question
/// still saying both: a follow-up edits the turn before, and a value neither gives comes from
/// nowhere). Only when the follow-up has no word that adds ("also", "too", "both", "or", ...).
/// The text replaced and written, for the trace; `None` when nothing is.
pub fn replaced_not_added(asked: &str, previous_sql: &str, sql: &str) -> Option<(String, Vec<Replacement>)> {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let asked_words: Vec<String> = words(asked).into_iter().map(|w| w.norm).collect();
    if asked_words.iter().any(|w| ADDING.contains(&w.as_str())) {
        return None;
    }
    let written = |value: &str| {
        let v: Vec<String> = words(value).into_iter().map(|w| w.norm).collect();
        !v.is_empty() && asked_words.windows(v.len()).any(|w| w == v.as_slice())
    };
    let strings = |text: &str| -> Option<Vec<String>> {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize().ok()?;
        Some(tokens.into_iter().filter_map(|t| if let Token::SingleQuotedString(s) = t { Some(s) } else { None }).collect())
    };
    let before = strings(previous_sql)?;
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().ok()?;
    let sig: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let at = |k: usize| sig.get(k).map(|&i| &tokens[i].token);
    let mut cursor = crate::guard::OffsetCursor::new(sql);
    let mut edits: Vec<(usize, usize, Replacement)> = Vec::new();
    for k in 1..sig.len() {
        if !matches!(at(k), Some(Token::Word(w)) if w.keyword == Keyword::IN) || !matches!(at(k + 1), Some(Token::LParen)) {
            continue;
        }
        // The column: a name, qualified or not, that opens a condition.
        let mut s = k - 1;
        if !matches!(at(s), Some(Token::Word(w)) if w.keyword != Keyword::NOT || w.quote_style.is_some()) {
            continue;
        }
        while s >= 2 && matches!(at(s - 1), Some(Token::Period)) && matches!(at(s - 2), Some(Token::Word(_))) {
            s -= 2;
        }
        let opens = match s.checked_sub(1).and_then(at) {
            Some(Token::LParen) => true,
            Some(Token::Word(w)) => matches!(w.keyword, Keyword::WHERE | Keyword::AND | Keyword::ON),
            _ => false,
        };
        if !opens {
            continue;
        }
        // The list: strings and commas up to the closing parenthesis.
        let mut values = Vec::new();
        let mut e = k + 2;
        while let Some(Token::SingleQuotedString(v)) = at(e) {
            values.push((v.clone(), e));
            match at(e + 1) {
                Some(Token::Comma) => e += 2,
                Some(Token::RParen) => {
                    e += 1;
                    break;
                }
                _ => break,
            }
        }
        if !matches!(at(e), Some(Token::RParen)) || values.len() < 2 {
            continue;
        }
        let named: Vec<&(String, usize)> = values.iter().filter(|(v, _)| written(v)).collect();
        let (new, new_at) = match named.as_slice() {
            // The value the follow-up names, the others the turn before's.
            [(new, at)] if values.iter().filter(|(v, _)| v != new).all(|(v, _)| before.contains(v) && !written(v)) => (new, at),
            // None named: the one value of the turn before's SQL, the others from neither.
            [] => match values.iter().filter(|(v, _)| before.contains(v)).collect::<Vec<_>>().as_slice() {
                [(kept, at)] => (kept, at),
                _ => continue,
            },
            _ => continue,
        };
        let start = cursor.offset(tokens[sig[s]].span.start);
        let column_end = cursor.offset(tokens[sig[k - 1]].span.end);
        let value_start = cursor.offset(tokens[sig[*new_at]].span.start);
        let value_end = cursor.offset(tokens[sig[*new_at]].span.end);
        let end = cursor.offset(tokens[sig[e]].span.end);
        let to = format!("{} = {}", &sql[start..column_end], &sql[value_start..value_end]);
        let dropped = values.iter().filter(|(v, _)| v != new).map(|(v, _)| v.clone()).collect();
        edits.push((start, end, Replacement { from: sql[start..end].to_string(), to, kept: new.clone(), dropped }));
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = sql.to_string();
    for (start, end, r) in edits.iter().rev() {
        out.replace_range(*start..*end, &r.to);
    }
    Some((out, edits.into_iter().map(|(_, _, r)| r).collect()))
}

/// One list [`replaced_not_added`] wrote as one value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replacement {
    /// The text replaced (`nationality IN ('French', 'Italian')`).
    pub from: String,
    /// The text written (`nationality = 'Italian'`).
    pub to: String,
    /// The value the follow-up names.
    pub kept: String,
    /// The turn before's values left out.
    pub dropped: Vec<String>,
}

/// `standalone` (a follow-up's rewrite) with the values `dropped` left out where it joins them to
/// `kept` ("French and Italian", "Italian or French", "both French and Italian", "French,
/// Italian" → "Italian"), so that the turn says what its SQL asked after
/// [`replaced_not_added`]; `None` when it joins them in no such way.
pub fn without_values(standalone: &str, dropped: &[String], kept: &str) -> Option<String> {
    let mut out = standalone.to_string();
    let mut changed = false;
    for old in dropped {
        let joined = [
            format!("both {old} and {kept}"),
            format!("both {kept} and {old}"),
            format!("{old} and {kept}"),
            format!("{kept} and {old}"),
            format!("{old} or {kept}"),
            format!("{kept} or {old}"),
            format!("{old}, {kept}"),
            format!("{kept}, {old}"),
        ];
        let lower = out.to_lowercase();
        if let Some(at) = joined.iter().find_map(|j| lower.find(&j.to_lowercase()).map(|i| (i, j.len()))) {
            let (i, n) = at;
            out.replace_range(i..i + n, kept);
            changed = true;
        }
    }
    changed.then_some(out)
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
mod tests {
    use super::*;

    fn turn(n: i32, q: &str, sql: &str) -> Turn {
        Turn { turn: n, question: q.into(), standalone: q.into(), sql: Some(sql.into()), columns: vec!["name".into()], rows: Some(3) }
    }

    #[test]
    fn follow_ups_are_told_from_questions_that_stand_alone() {
        for q in [
            "and in San Francisco?",
            "only the ones rated above 4",
            "sort that by price",
            "What about Paris?",
            "in 2020?",
            "How many of them are open?",
            "Show only those with a rating above 4",
        ] {
            assert!(!follow_up_signals(q).is_empty(), "{q}");
        }
        for q in [
            "Which Italian restaurants are in LA?",
            "How many restaurants are there per city?",
            "List the restaurants that serve pizza.",
            "What is the average rating of restaurants in Chicago?",
            "Which chefs come from France?",
            "In which city is the restaurant Nopa located?",
        ] {
            assert!(follow_up_signals(q).is_empty(), "{q}: {:?}", follow_up_signals(q));
        }
        // The signs decide nothing: the first question stands alone, every later one is read
        // by the model.
        let h = [turn(1, "Which Italian restaurants are in LA?", "SELECT 1")];
        assert_eq!(read_without_llm(&[]), Some(Reading::Standalone));
        assert_eq!(read_without_llm(&h), None);
    }

    #[test]
    fn a_question_is_a_follow_up_when_its_rewrite_takes_from_the_turn_before() {
        let last = turn(2, "How many restaurants are in Chicago?", "SELECT count(*) FROM restaurants");
        let read = |q: &str, rewrite: &str| read_rewrite(q, &last, rewrite.to_string(), follow_up_signals(q));
        // No sign of a follow-up, yet it leaves its subject unsaid: a follow-up of turn 2,
        // answered as the rewrite and editing that turn's SQL.
        match read("How many are there?", "How many restaurants are in Chicago?") {
            Reading::Rewritten { standalone, follows, signals, edits_sql } => {
                assert_eq!(standalone, "How many restaurants are in Chicago?");
                assert_eq!(follows, 2);
                assert!(signals.is_empty());
                assert_eq!(edits_sql.as_deref(), Some("SELECT count(*) FROM restaurants"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(read("What about Paris?", "How many restaurants are in Paris?"), Reading::Rewritten { .. }));
        // A new question written back unchanged, or reworded with words of its own, stands
        // alone, whatever word it opens with.
        assert_eq!(read("How many chefs are there?", "How many chefs are there?"), Reading::Standalone);
        assert_eq!(read("How many chefs are there?", "What is the total number of chefs?"), Reading::Standalone);
        assert_eq!(read("And how many chefs are there?", "How many chefs are there?"), Reading::Standalone);
        // Words the question itself wrote are not taken from the turn before.
        assert_eq!(read("How many restaurants are in Paris?", "How many restaurants are there in Paris?"), Reading::Standalone);
        // A follow-up the model wrote back unchanged is answered as asked (its words say all
        // pg_ask knows of it).
        assert_eq!(read("and in San Francisco?", "and in San Francisco?"), Reading::Standalone);
    }

    #[test]
    fn a_question_naming_a_table_the_turn_before_did_not_read_stands_alone() {
        let tables: Vec<String> = ["restaurants", "cities", "chefs", "reviews", "payments_made"].map(String::from).to_vec();
        let last = Turn {
            turn: 2,
            question: "The Italian ones.".into(),
            standalone: "Which Italian restaurants are in Chicago?".into(),
            sql: Some("SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'Chicago'".into()),
            columns: vec!["name".into()],
            rows: Some(2),
        };
        let named = |q: &str| names_another_table(q, &last, &follow_up_signals(q), &tables);
        assert_eq!(named("How many reviews are there?").as_deref(), Some("reviews"));
        assert_eq!(named("Which chefs are Italian?").as_deref(), Some("chefs"));
        // Every word of a table's name written, none of them before.
        assert_eq!(named("How many payments were made by check?").as_deref(), Some("payments_made"));
        assert_eq!(named("How many payments are there?"), None);
        // A table the turn before read, or whose word its SQL wrote (`city_id`), is no new subject.
        assert_eq!(named("Which city has the most?"), None);
        assert_eq!(named("How many restaurants are there?"), None);
        // A word that refers back or opens a follow-up leaves the reading to the model.
        assert_eq!(named("How many reviews do they have?"), None);
        assert_eq!(named("and their chefs?"), None);
        // A fragment may name a table's word and still continue the turn before.
        assert_eq!(named("Reviewed in 2023."), None);
        assert_eq!(named("Reviews from 2023."), None);
        // No table named: the model reads it.
        assert_eq!(named("How many are there?"), None);
        assert_eq!(named("What is the average rating?"), None);
    }

    #[test]
    fn a_value_named_in_place_of_the_turn_befores_is_not_added_to_it() {
        let before = "SELECT full_name FROM chefs WHERE role = 'head chef' AND nationality = 'French'";
        let replaced = |asked: &str, sql: &str| replaced_not_added(asked, before, sql).map(|(s, _)| s);
        assert_eq!(
            replaced(
                "and the Italian ones?",
                "SELECT full_name FROM chefs WHERE role = 'head chef' AND nationality IN ('French', 'Italian')"
            )
            .as_deref(),
            Some("SELECT full_name FROM chefs WHERE role = 'head chef' AND nationality = 'Italian'")
        );
        let (sql, edits) = replaced_not_added(
            "How many are Italian?",
            before,
            "SELECT count(*) FROM chefs c WHERE (c.nationality IN ('Italian','French'))",
        )
        .unwrap();
        assert_eq!(sql, "SELECT count(*) FROM chefs c WHERE (c.nationality = 'Italian')");
        assert_eq!(
            edits,
            vec![Replacement {
                from: "c.nationality IN ('Italian','French')".into(),
                to: "c.nationality = 'Italian'".into(),
                kept: "Italian".into(),
                dropped: vec!["French".into()]
            }]
        );
        // Words that add, a value the follow-up writes too, one the turn before did not have,
        // no value named, a negated list: as written.
        let both = "SELECT full_name FROM chefs WHERE nationality IN ('French', 'Italian')";
        for asked in [
            "and the Italian ones too?",
            "French or Italian?",
            "also Italian",
            "both French and Italian ones",
            "and the others?",
            "compare with Italian",
        ] {
            assert_eq!(replaced(asked, both), None, "{asked}");
        }
        assert_eq!(replaced("and Italian?", "SELECT full_name FROM chefs WHERE nationality IN ('Spanish', 'Italian')"), None);
        assert_eq!(replaced("and Italian?", "SELECT full_name FROM chefs WHERE nationality NOT IN ('French', 'Italian')"), None);
        assert_eq!(replaced("and Italian?", "SELECT full_name FROM chefs WHERE nationality = 'Italian'"), None);
        // No value named: the turn before's one value is kept, one from neither dropped.
        let italian = "SELECT count(*) FROM chefs WHERE nationality = 'Italian'";
        let (sql, edits) = replaced_not_added(
            "How many of them are there?",
            italian,
            "SELECT count(*) FROM chefs WHERE nationality IN ('French', 'Italian')",
        )
        .unwrap();
        assert_eq!(sql, "SELECT count(*) FROM chefs WHERE nationality = 'Italian'");
        assert_eq!((edits[0].kept.as_str(), edits[0].dropped.as_slice()), ("Italian", ["French".to_string()].as_slice()));
        let both_before = "SELECT count(*) FROM chefs WHERE nationality IN ('French', 'Italian')";
        assert_eq!(replaced_not_added("How many of them are there?", both_before, both_before), None);
        assert_eq!(
            replaced_not_added(
                "How many of them are there?",
                italian,
                "SELECT count(*) FROM chefs WHERE nationality IN ('French', 'Spanish')"
            ),
            None
        );
        // The turn's question says what its SQL asked.
        let kept = "Italian";
        let dropped = ["French".to_string()];
        assert_eq!(
            without_values("Which head chefs are French and Italian?", &dropped, kept).as_deref(),
            Some("Which head chefs are Italian?")
        );
        assert_eq!(without_values("Which chefs are both Italian and French?", &dropped, kept).as_deref(), Some("Which chefs are Italian?"));
        assert_eq!(without_values("How many chefs are french or italian?", &dropped, kept).as_deref(), Some("How many chefs are Italian?"));
        assert_eq!(without_values("Which chefs are Italian?", &dropped, kept), None);
        // Values of more than one word are read as words of the follow-up.
        let before = "SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'Los Angeles'";
        assert_eq!(
            replaced_not_added(
                "and in San Francisco?",
                before,
                "SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name IN ('Los Angeles', 'San Francisco')"
            )
            .map(|(s, _)| s)
            .as_deref(),
            Some("SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'San Francisco'")
        );
    }

    #[test]
    fn the_rewrite_request_shows_the_last_turns_and_the_reply_is_one_question() {
        let h: Vec<Turn> = (1..=6).map(|i| turn(i, &format!("question {i}"), &format!("SELECT {i}"))).collect();
        let req = rewrite_request("and in San Francisco?", &h);
        let text = req.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        assert!(!text.contains("question 5\n") && text.contains("<turn (most recent)>\nQuestion: question 6"), "{text}");
        assert!(text.ends_with("<latest_question>and in San Francisco?</latest_question>\nStandalone question:"));
        assert_eq!(
            parse_rewrite("\n Standalone question: \"Which Italian restaurants are in San Francisco?\"\nmore").unwrap(),
            "Which Italian restaurants are in San Francisco?"
        );
        assert!(parse_rewrite("SELECT name FROM restaurants").is_err());
        assert!(parse_rewrite("  \n").is_err());
        assert!(parse_rewrite(&"x".repeat(500)).is_err());
    }
}
