//! A later question that names a table of its own: answered as asked, without the model's
//! reading.

use super::{words, Turn};

/// Words a question or a request opens with.
const QUESTION_OPENERS: &[&str] = &[
    "which", "what", "who", "whom", "whose", "how", "when", "where", "list", "show", "give", "name", "count", "find", "tell", "is", "are",
    "do", "does", "did",
];

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
