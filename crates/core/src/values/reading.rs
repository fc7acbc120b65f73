//! Which stored value a text stands for, decided from the evidence on the text as a value of
//! one column (looked up by the glue): the verified queries' rules and templates write a value
//! in only when the evidence leaves no other reading.

use super::decide::{decide, lexical_evidence, Comparison, Decision, Evidence, Lexical, Rule};

/// The value stored in the column that `text` stands for: `text` itself when the column holds
/// it, its stored spelling when it does ignoring case, or the value the memory's lexical rule
/// picks on evidence that leaves no other reading (the same letters, a plural, an initialism,
/// or prefixes of two or more words: 'san fran'), or the one stored code a code of one letter
/// fewer stands for ('DE' where the column writes 'DEU'). One word that begins another ('Java' /
/// 'JavaScript') or a small edit ('Niger' / 'Nigeria') may be a value with no rows, and only
/// the embedding speaking for a value ('Illinois' is near 'Chicago') is no reading: `None`.
pub fn stored_reading(ev: &Evidence, text: &str) -> Option<String> {
    if ev.exact {
        return Some(text.to_string());
    }
    if let Some(stored) = ev.case_insensitive.clone() {
        return Some(stored);
    }
    let lexical = lexical_choice(ev, text).filter(|value| match lexical_evidence(text, value) {
        Some(Lexical::SameLettersAndDigits | Lexical::SingularPlural | Lexical::Initialism) => true,
        Some(Lexical::WordPrefixes) => text.split_whitespace().count() >= 2,
        _ => false,
    });
    lexical.or_else(|| longer_code(ev, text))
}

/// The one stored code a code of one letter fewer stands for: 'DE' for 'DEU', 'DK' for 'DNK'
/// (a two-letter country code where the column writes three letters). `text` is two or
/// three letters of one case; the value, among the candidates, is one letter longer, in the
/// same case, begins with the same letter and holds `text`'s letters in order. Two such
/// values ('DE': 'DEU' and 'DEN') are no reading.
fn longer_code(ev: &Evidence, text: &str) -> Option<String> {
    // Letters all of one case: which one (upper: true), or `None` for any other text.
    let case = |s: &str| {
        if s.bytes().all(|b| b.is_ascii_uppercase()) {
            Some(true)
        } else if s.bytes().all(|b| b.is_ascii_lowercase()) {
            Some(false)
        } else {
            None
        }
    };
    let upper = case(text).filter(|_| matches!(text.len(), 2 | 3))?;
    let in_order = |value: &str| {
        let mut rest = value.bytes();
        text.bytes().all(|t| rest.any(|v| v == t))
    };
    let mut found = ev
        .candidates
        .iter()
        .map(|c| c.value.as_str())
        .filter(|v| v.len() == text.len() + 1 && case(v) == Some(upper) && v.as_bytes()[0] == text.as_bytes()[0] && in_order(v));
    let one = found.next()?;
    found.next().is_none().then(|| one.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::decide::Candidate;

    fn evidence(text: &str, values: &[&str]) -> Evidence {
        Evidence {
            literal: text.to_string(),
            exact: false,
            case_insensitive: None,
            candidates: values
                .iter()
                .map(|v| Candidate { value: v.to_string(), frequency: 1, cosine: Some(0.3), trigram: Some(0.2) })
                .collect(),
            distinct_values: values.len() as u64,
            closed_set: false,
            all_values: true,
        }
    }

    #[test]
    fn a_code_one_letter_short_reads_as_the_one_stored_code_it_abbreviates() {
        let codes = ["DNK", "DEU", "JPN", "FRA", "DZA"];
        assert_eq!(stored_reading(&evidence("DE", &codes), "DE"), Some("DEU".into()));
        assert_eq!(stored_reading(&evidence("DK", &codes), "DK"), Some("DNK".into()));
        assert_eq!(stored_reading(&evidence("JP", &codes), "JP"), Some("JPN".into()));
        // Two codes it could shorten, another case, another first letter, a word: no reading.
        assert_eq!(stored_reading(&evidence("DE", &["DEU", "DEN"]), "DE"), None);
        assert_eq!(stored_reading(&evidence("de", &codes), "de"), None);
        assert_eq!(stored_reading(&evidence("DE", &["Deu", "DEU"]), "DE"), Some("DEU".into()), "a value of mixed case is no code");
        assert_eq!(stored_reading(&evidence("NK", &codes), "NK"), None);
        assert_eq!(stored_reading(&evidence("Japan", &codes), "Japan"), None);
        assert_eq!(stored_reading(&evidence("sp", &["spa", "ger", "span"]), "sp"), Some("spa".into()), "one letter longer only");
        assert_eq!(stored_reading(&evidence("SPAIN", &["SPAN"]), "SPAIN"), None);
    }
}
