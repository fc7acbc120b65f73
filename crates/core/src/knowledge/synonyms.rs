//! Tables a question names by a synonym ("clients" for `customers`): table selection reads
//! their names beside the question's own words, so that a table the question never names by
//! its name is still found.

use crate::text::{question_words, stem};

/// Tables named by a synonym, at most: a question's words cannot pull more than this many
/// tables into selection.
pub const MAX_SYNONYM_TABLES: usize = 4;

/// The words a question's synonyms may begin with, for the lookup: each word lower-cased and
/// its plural stem.
pub fn probe_words(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in question_words(question) {
        for form in [w.norm.clone(), stem(&w.norm)] {
            if !out.contains(&form) {
                out.push(form);
            }
        }
    }
    out
}

/// The tables (as given, first come first) of the `synonyms` (synonym, table) that `question`
/// writes: every word of the synonym in order, each as the question writes it or in its
/// plural or singular form ("client" and "clients"), at most [`MAX_SYNONYM_TABLES`].
pub fn named_tables(question: &str, synonyms: &[(String, String)]) -> Vec<String> {
    let asked: Vec<String> = question_words(question).into_iter().map(|w| stem(&w.norm)).collect();
    let mut out: Vec<String> = Vec::new();
    for (synonym, table) in synonyms {
        let phrase: Vec<String> = question_words(synonym).into_iter().map(|w| stem(&w.norm)).collect();
        if phrase.is_empty() || out.contains(table) {
            continue;
        }
        if asked.windows(phrase.len()).any(|w| w == phrase.as_slice()) {
            out.push(table.clone());
            if out.len() == MAX_SYNONYM_TABLES {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(s, t)| (s.to_string(), t.to_string())).collect()
    }

    #[test]
    fn a_synonym_written_in_the_question_names_its_table() {
        let synonyms = pairs(&[("clients", "shop.customers"), ("Big Apple", "geo.cities"), ("stock keeping unit", "shop.products")]);
        assert_eq!(named_tables("Which client spent the most?", &synonyms), ["shop.customers"]);
        assert_eq!(named_tables("How many CLIENTS are there in the big apple?", &synonyms), ["shop.customers", "geo.cities"]);
        // Every word, in order; a part of a phrase or a word inside another is not it.
        assert!(named_tables("apple pies in big cities", &synonyms).is_empty());
        assert!(named_tables("clientsfoo and units", &synonyms).is_empty());
        assert_eq!(named_tables("per stock keeping units", &synonyms), ["shop.products"]);
        assert!(named_tables("", &synonyms).is_empty());
    }

    #[test]
    fn a_question_pulls_in_few_tables_and_each_once() {
        let many: Vec<(String, String)> = (0..20).map(|i| ("order".to_string(), format!("s.t{i}"))).collect();
        assert_eq!(named_tables("orders", &many).len(), MAX_SYNONYM_TABLES);
        let twice = pairs(&[("clients", "shop.customers"), ("buyers", "shop.customers")]);
        assert_eq!(named_tables("clients and buyers", &twice), ["shop.customers"]);
    }

    #[test]
    fn the_lookup_reads_each_word_and_its_singular() {
        assert_eq!(probe_words("Which Clients?"), ["which", "clients", "client"]);
    }
}
