//! The identifiers' terms a question's words abbreviate or are part of: [`partial_matches`]
//! and [`probe_terms`] (see the parent module's documentation; the words themselves are
//! [`crate::text`]'s).

use std::collections::BTreeMap;

use super::{MIN_ABBREVIATION, MIN_CONTAINED};
use crate::text::{identifier_words, stem, tokenize};

/// The terms of `identifiers` (sorted) that partially match `term`: abbreviations of it
/// (proper prefixes of at least [`MIN_ABBREVIATION`] letters) and compounds that start or end
/// with it (when it has at least [`MIN_CONTAINED`] letters).
pub fn partial_matches<'a, V>(term: &str, identifiers: &'a BTreeMap<String, V>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    if !term.chars().all(char::is_alphabetic) {
        return out;
    }
    let chars: Vec<(usize, char)> = term.char_indices().collect();
    for (n, _) in chars.iter().enumerate().skip(MIN_ABBREVIATION) {
        let prefix = &term[..chars[n].0];
        if let Some((v, _)) = identifiers.get_key_value(prefix) {
            out.push(v.as_str());
        }
    }
    if chars.len() >= MIN_CONTAINED {
        for v in identifiers.keys() {
            if v.len() > term.len() && (v.starts_with(term) || v.ends_with(term)) {
                out.push(v.as_str());
            }
        }
    }
    out
}

/// The terms a question may match in a collection whose name terms are `identifiers`: its
/// tokens, each pair of adjacent words written together (`check ins` → `checkin`), and the
/// identifier terms that partially match a token. What to look up before reading any
/// document of a stored index.
pub fn probe_terms<V>(question: &str, identifiers: &BTreeMap<String, V>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let add = |t: String, out: &mut Vec<String>| {
        if !out.contains(&t) {
            out.push(t);
        }
    };
    for t in tokenize(question) {
        for v in partial_matches(&t, identifiers) {
            add(v.to_string(), &mut out);
        }
        add(t, &mut out);
    }
    for pair in identifier_words(question).windows(2) {
        add(stem(&format!("{}{}", pair[0], pair[1])), &mut out);
    }
    out
}
