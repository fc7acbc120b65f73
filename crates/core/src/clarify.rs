//! Clarifying questions: when a question is ambiguous in a way pg_ask can see, and
//! `ask.clarify` is on, `ask()` asks back instead of guessing.
//!
//! What pg_ask can see is the value memory: a word of the question that the memory holds
//! exactly in two columns that are not the same thing (not joined by a foreign key), such as
//! "New York" as a city and as a state; or an abbreviation held as written in one column that
//! the memory's rules would also read, with clear lexical evidence, as a value of another
//! ("LA": the state code of Louisiana, or Los Angeles). The glue finds these
//! ([`Ambiguity`]); [`resolve`] reads the context the user gave (or the rest of the question)
//! for which one was meant, and [`question_back`] writes the question to ask.

use serde::Serialize;

use crate::text::{question_words as words, stem};

/// One reading of an ambiguous word: a value stored in a column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reading {
    /// The value as stored.
    pub value: String,
    /// The table, as the catalog names it (`public.cities`).
    pub table: String,
    /// The column.
    pub column: String,
    /// Every column of the table: a question that names one of them (and none of another
    /// reading's table) means this reading ("the population of New York": the city).
    #[serde(skip)]
    pub table_columns: Vec<String>,
}

impl Reading {
    /// `Los Angeles (cities.name)`: the table without its schema, for a person.
    pub fn label(&self) -> String {
        let table = self.table.rsplit('.').next().unwrap_or(&self.table).trim_matches('"');
        format!("{} ({}.{})", self.value, table, self.column)
    }
}

/// A phrase of a question the value memory holds exactly, any case, with the columns that
/// hold it (one reading each).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Named {
    /// The words as the question writes them.
    pub phrase: String,
    /// Each column that holds them, with the value as stored there.
    pub readings: Vec<Reading>,
}

/// A word of the question with several readings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ambiguity {
    /// The words as the question writes them.
    pub phrase: String,
    /// Two or more readings, in the order they are offered.
    pub readings: Vec<Reading>,
    /// Why pg_ask sees two readings: `same_value_in_two_columns` or `abbreviation`.
    pub why: &'static str,
}

/// Longest phrase of a question looked up in the value memory, in words.
pub const MAX_PHRASE_WORDS: usize = 3;
/// Phrases looked up per question at most.
pub const MAX_PHRASES: usize = 64;

/// Words that are never a value on their own.
const STOP: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "not", "is", "are", "was", "were", "be",
    "been", "has", "have", "had", "do", "does", "did", "how", "many", "much", "what", "which", "who", "whom", "whose", "where", "when",
    "why", "there", "their", "them", "they", "it", "its", "this", "that", "these", "those", "all", "any", "each", "every", "some", "me",
    "my", "i", "you", "your", "we", "our", "list", "show", "give", "find", "count", "number",
];

/// The phrases of `question` worth looking up in the value memory: runs of one to
/// [`MAX_PHRASE_WORDS`] words that neither start nor end with a stop word and hold no number,
/// as written, longest first.
pub fn phrases(question: &str) -> Vec<String> {
    let ws = words(question);
    let mut out: Vec<String> = Vec::new();
    for len in (1..=MAX_PHRASE_WORDS).rev() {
        for start in 0..ws.len().saturating_sub(len - 1) {
            let span = &ws[start..start + len];
            let edge_stop = STOP.contains(&span[0].norm.as_str()) || STOP.contains(&span[len - 1].norm.as_str());
            if edge_stop || span.iter().any(|w| w.norm.chars().any(|c| c.is_ascii_digit())) {
                continue;
            }
            let p = question[span[0].start..span[len - 1].end].to_string();
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out.truncate(MAX_PHRASES);
    out
}

/// An abbreviation as people write one: two to four capital letters ("LA", "NYC").
pub fn is_abbreviation(phrase: &str) -> bool {
    (2..=4).contains(&phrase.chars().count()) && phrase.chars().all(|c| c.is_ascii_uppercase())
}

/// The words that name a reading: its value's, its table's and its column's, singular.
fn reading_words(r: &Reading) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for text in [r.value.as_str(), r.table.rsplit('.').next().unwrap_or(&r.table), r.column.as_str()] {
        for w in words(&text.replace('_', " ")) {
            out.push(stem(&w.norm));
        }
    }
    out.retain(|w| w.len() > 1 && !GENERIC.contains(&w.as_str()));
    out.sort();
    out.dedup();
    out
}

/// Column and table words that tell nothing apart.
const GENERIC: &[&str] = &["name", "id", "code", "value", "label", "title", "type", "description", "the", "of"];

/// Which reading the user meant: the one whose value, table or column words the `context`
/// (all of it) or the question right around the phrase ("the city of LA", "LA state") names,
/// when no other reading's are named. `None`: no hint, or hints for several. (The question's
/// other words are no hint: "which cities are in LA?" asks about a state.)
pub fn resolve(amb: &Ambiguity, context: &str, question: &str) -> Option<usize> {
    let phrase: Vec<String> = words(&amb.phrase).into_iter().map(|w| stem(&w.norm)).collect();
    let mut said: Vec<String> = words(context).into_iter().map(|w| stem(&w.norm)).collect();
    let q: Vec<String> = words(question).into_iter().map(|w| stem(&w.norm)).collect();
    if let Some(at) = (0..q.len()).find(|&i| !phrase.is_empty() && q[i..].starts_with(&phrase)) {
        if let Some(next) = q.get(at + phrase.len()) {
            said.push(next.clone());
        }
        if at >= 2 && q[at - 1] == "of" {
            said.push(q[at - 2].clone());
        }
    }
    said.retain(|w| !phrase.contains(w));
    // Columns of only one reading's table named in the question.
    let asked: Vec<String> = q.iter().filter(|w| !phrase.contains(w)).cloned().collect();
    let by_column: Vec<usize> = amb
        .readings
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.table_columns.iter().any(|c| {
                let cw: Vec<String> = words(&c.replace('_', " ")).into_iter().map(|w| stem(&w.norm)).collect();
                !cw.is_empty() && cw.iter().all(|w| !GENERIC.contains(&w.as_str())) && asked.windows(cw.len()).any(|win| win == &cw[..])
            })
        })
        .map(|(i, _)| i)
        .collect();
    let hit: Vec<usize> = amb
        .readings
        .iter()
        .enumerate()
        .filter(|(_, r)| reading_words(r).iter().any(|w| !phrase.contains(w) && said.contains(w)))
        .map(|(i, _)| i)
        .collect();
    match (&hit[..], &by_column[..]) {
        ([one], _) | ([], [one]) => Some(*one),
        _ => None,
    }
}

/// The question to ask back for the unresolved ambiguities.
pub fn question_back(ambiguities: &[Ambiguity]) -> String {
    let parts: Vec<String> = ambiguities
        .iter()
        .map(|a| {
            let labels: Vec<String> = a.readings.iter().map(Reading::label).collect();
            let options = match labels.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} or {}", rest.join(", "), last),
                _ => labels.join(""),
            };
            format!("by \"{}\", did you mean {options}?", a.phrase)
        })
        .collect();
    let mut text = parts.join(" And ");
    if let Some(first) = text.get(..1) {
        text = format!("{}{}", first.to_uppercase(), &text[1..]);
    }
    format!("{text} Ask again with the one you mean, or with context => '...'.")
}

/// The question with what the user chose written in, for SQL generation.
pub fn with_choices(question: &str, chosen: &[(&Ambiguity, usize)]) -> String {
    let notes: Vec<String> = chosen
        .iter()
        .map(|(a, i)| {
            let r = &a.readings[*i];
            format!("\"{}\" means {} in {}.{}", a.phrase, crate::sqltext::quote_literal(&r.value), r.table, r.column)
        })
        .collect();
    format!("{} ({})", question.trim(), notes.join("; "))
}

/// "LA": Los Angeles or the state code of Louisiana, for the tests here and the pipeline's.
#[cfg(test)]
pub(crate) fn la() -> Ambiguity {
    Ambiguity {
        phrase: "LA".into(),
        readings: vec![
            Reading {
                value: "Los Angeles".into(),
                table: "public.cities".into(),
                column: "name".into(),
                table_columns: vec!["name".into(), "population".into(), "state_code".into()],
            },
            Reading { value: "LA".into(), table: "public.states".into(), column: "code".into(), table_columns: vec![] },
        ],
        why: "abbreviation",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_skip_stop_words_and_numbers() {
        let p = phrases("How many restaurants are in New York in 2023?");
        assert!(p.contains(&"New York".to_string()) && p.contains(&"restaurants".to_string()), "{p:?}");
        assert!(!p.iter().any(|x| x.contains("2023") || x == "How" || x.starts_with("in ")), "{p:?}");
        assert!(is_abbreviation("LA") && !is_abbreviation("La") && !is_abbreviation("A"));
    }

    #[test]
    fn the_question_back_names_every_reading() {
        assert_eq!(
            question_back(&[la()]),
            "By \"LA\", did you mean Los Angeles (cities.name) or LA (states.code)? Ask again with the one you mean, or with context => '...'."
        );
    }

    #[test]
    fn a_hint_for_one_reading_resolves_it() {
        let q = "how many restaurants are in LA?";
        assert_eq!(resolve(&la(), "the city, not the state", q), None, "both named");
        assert_eq!(resolve(&la(), "I mean the city", q), Some(0));
        assert_eq!(resolve(&la(), "Los Angeles", q), Some(0));
        assert_eq!(resolve(&la(), "states only", q), Some(1));
        assert_eq!(resolve(&la(), "", q), None);
        // Around the phrase in the question, not elsewhere in it.
        assert_eq!(resolve(&la(), "", "restaurants in the city of LA"), Some(0));
        assert_eq!(resolve(&la(), "", "restaurants in LA state"), Some(1));
        assert_eq!(resolve(&la(), "", "which cities are in LA?"), None);
        // A column of one reading's table.
        assert_eq!(resolve(&la(), "", "what is the population of LA?"), Some(0));
        assert_eq!(
            with_choices("restaurants in LA?", &[(&la(), 0)]),
            "restaurants in LA? (\"LA\" means 'Los Angeles' in public.cities.name)"
        );
    }
}
