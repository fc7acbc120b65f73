//! Which stored value a text stands for, decided from the evidence on the text as a value of
//! one column (looked up by the glue): the verified queries' rules and templates write a value
//! in only when the evidence leaves no other reading.

use super::decide::{decide, lexical_evidence, Comparison, Decision, Evidence, Lexical, Rule};

/// The value stored in the column that `text` stands for: `text` itself when the column holds
/// it, its stored spelling when it does ignoring case, or the value the memory's lexical rule
/// picks on evidence that leaves no other reading (the same letters, a plural, an initialism,
/// or prefixes of two or more words: 'san fran'). One word that begins another ('Java' /
/// 'JavaScript') or a small edit ('Niger' / 'Nigeria') may be a value with no rows, and only
/// the embedding speaking for a value ('Illinois' is near 'Chicago') is no reading: `None`.
pub fn stored_reading(ev: &Evidence, text: &str) -> Option<String> {
    if ev.exact {
        return Some(text.to_string());
    }
    if let Some(stored) = ev.case_insensitive.clone() {
        return Some(stored);
    }
    let value = lexical_choice(ev, text)?;
    match lexical_evidence(text, &value)? {
        Lexical::SameLettersAndDigits | Lexical::SingularPlural | Lexical::Initialism => Some(value),
        Lexical::WordPrefixes if text.split_whitespace().count() >= 2 => Some(value),
        _ => None,
    }
}

/// The value `text` is a spelling of on lexical evidence alone (an initialism, a plural, a
/// word prefix, a small typo: the memory's `lexical` rule), other than `text` itself; a text
/// of more than three words is no spelling of a value.
pub fn lexical_reading(ev: &Evidence, text: &str) -> Option<String> {
    if ev.exact || ev.case_insensitive.is_some() {
        return None;
    }
    lexical_choice(ev, text)
}

fn lexical_choice(ev: &Evidence, text: &str) -> Option<String> {
    if text.split_whitespace().count() > 3 {
        return None;
    }
    match decide(ev, Comparison::CaseSensitive).decision {
        Decision::Replace { value, reason: Rule::Lexical, .. } => Some(value),
        _ => None,
    }
}
