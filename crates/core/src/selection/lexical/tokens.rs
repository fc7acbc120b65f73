//! Words of a text for lexical scoring: [`words`] splits text and identifiers, [`stem`]
//! takes plural endings off, [`tokenize`] keeps the words that carry information, and
//! [`partial_matches`] and [`probe_terms`] find the identifiers' terms a question's words
//! abbreviate or are part of (see the parent module's documentation).

use std::collections::BTreeMap;

use super::{MIN_ABBREVIATION, MIN_CONTAINED};

/// English stop words, and the verbs and fillers questions are phrased with. They carry no
/// information about which table holds the answer.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "down", "during", "each", "either", "else",
    "ever", "every", "few", "for", "from", "further", "get", "give", "had", "has", "have",
    "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "itself", "just", "let", "like", "list", "many", "me", "more", "most", "much",
    "must", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other",
    "our", "ours", "out", "over", "own", "please", "provide", "return", "same", "she", "should",
    "show", "so", "some", "such", "tell", "than", "that", "the", "their", "theirs", "them",
    "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until",
    "up", "us", "very", "want", "was", "we", "were", "what", "whats", "when", "where", "whether",
    "which", "while", "who", "whom", "whose", "why", "will", "with", "within", "would", "you",
    "your", "yours", "display", "find", "known", "use", "used", "using", "s", "t",
];

fn is_stop_word(w: &str) -> bool {
    static SET: std::sync::OnceLock<std::collections::HashSet<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect()).contains(w)
}

/// Numbers of one or two digits (`01` of a date, `2` of "top 2") say nothing about tables.
fn is_short_number(w: &str) -> bool {
    w.len() <= 2 && w.chars().all(|c| c.is_ascii_digit())
}

/// Text and identifiers split into lower-case words (see the [module documentation](self)).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        let before = prev.replace(c);
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        if let Some(prev) = before {
            let next = chars.peek().copied();
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic());
            if boundary && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Light stemming of English plurals: `-ies` → `-y`, `-sses`/`-xes`/`-ches`/`-shes` lose `es`,
/// a final `s` goes unless the word ends in `ss`, `us` or `is`. Words of three letters or
/// fewer, and words with digits, stay as they are.
pub fn stem(word: &str) -> String {
    if word.chars().count() <= 3 || !word.chars().all(char::is_alphabetic) {
        return word.to_string();
    }
    if let Some(base) = word.strip_suffix("ies") {
        if base.chars().count() >= 2 {
            return format!("{base}y");
        }
    }
    for suffix in ["sses", "xes", "ches", "shes"] {
        if word.ends_with(suffix) {
            return word[..word.len() - 2].to_string();
        }
    }
    if word.ends_with('s') && !(word.ends_with("ss") || word.ends_with("us") || word.ends_with("is")) {
        return word[..word.len() - 1].to_string();
    }
    word.to_string()
}

/// The scoring tokens of `text`: [`words`] without one-letter words, short numbers and stop
/// words, stemmed.
pub fn tokenize(text: &str) -> Vec<String> {
    words(text).into_iter().filter(|w| w.chars().count() > 1 && !is_stop_word(w) && !is_short_number(w)).map(|w| stem(&w)).collect()
}

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
    for pair in words(question).windows(2) {
        add(stem(&format!("{}{}", pair[0], pair[1])), &mut out);
    }
    out
}
