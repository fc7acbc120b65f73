//! Words of text, in one place: one scanner ([`question_words`], [`plain_words`] and
//! [`identifier_words`] are its three readings), the plural stem ([`stem`]) and the stem that
//! also takes verb endings off ([`word_stem`]), stop words, and the scoring tokens of
//! selection ([`tokenize`]). Selection, value correction, verified queries, clarification and
//! conversations all read words through here, so that a word is the same word everywhere.

/// The one scanner: the byte ranges of the words of `text`, in order. A word is a run of
/// letters and digits; read as a question (`question`), an apostrophe inside a word
/// (`O'Hare`) and a decimal point (`4.7`) stay in it, and each of [`SYMBOLS`] is a word of
/// its own.
fn scan(text: &str, question: bool, mut each: impl FnMut(usize, usize)) {
    let mut start: Option<usize> = None;
    let mut chars = text.char_indices().peekable();
    let mut prev: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|(_, n)| *n);
        let inside = question
            && start.is_some()
            && (((c == '\'' || c == '’') && next.is_some_and(char::is_alphanumeric))
                || (c == '.' && prev.is_some_and(|p| p.is_ascii_digit()) && next.is_some_and(|n| n.is_ascii_digit())));
        let part = c.is_alphanumeric() || inside;
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                each(s, i);
                start = None;
            }
            _ => {}
        }
        if question && SYMBOLS.contains(&c) {
            each(i, i + c.len_utf8());
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        each(s, text.len());
    }
}

/// A word of a question with where it stands in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// Lower case.
    pub norm: String,
    /// Byte offsets in the question.
    pub start: usize,
    pub end: usize,
}

impl Word {
    /// The word as `text` (the text it was read from) writes it.
    pub fn text_in<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.end]
    }
}

/// The words of a question, lower-cased, with their byte offsets: runs of letters and digits
/// (an apostrophe inside a word stays in it, "editors'" loses its trailing one; a decimal
/// point stays in a number), and comparisons, signs and units as words of their own.
pub fn question_words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    scan(text, true, |start, end| out.push(Word { norm: text[start..end].to_lowercase(), start, end }));
    out
}

/// Characters that are words of their own: comparisons, signs, units.
const SYMBOLS: &[char] = &['<', '>', '=', '!', '+', '-', '*', '/', '%', '$', '€', '£', '#', '&', '|', '^', '~'];

/// The words of a text: lower-cased runs of letters and digits.
pub fn plain_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    scan(text, false, |start, end| out.push(text[start..end].to_lowercase()));
    out
}

/// Text and identifiers split into lower-case words: [`plain_words`], each split again where
/// case changes (`sbCustJoinDate` → `sb cust join date`, `HTTPServer` → `http server`) and
/// where letters meet digits (`day30` → `day 30`).
pub fn identifier_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    scan(text, false, |start, end| {
        let run = &text[start..end];
        let mut current = String::new();
        let mut chars = run.chars().peekable();
        let mut prev: Option<char> = None;
        while let Some(c) = chars.next() {
            if let Some(prev) = prev {
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
            prev = Some(c);
        }
        if !current.is_empty() {
            out.push(current);
        }
    });
    out
}

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

/// Whether `w` (lower case) is a stop word: it says nothing about which data a question means.
pub fn is_stop_word(w: &str) -> bool {
    static SET: std::sync::OnceLock<std::collections::HashSet<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect()).contains(w)
}

/// Numbers of one or two digits (`01` of a date, `2` of "top 2") say nothing about tables.
fn is_short_number(w: &str) -> bool {
    w.len() <= 2 && w.chars().all(|c| c.is_ascii_digit())
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

/// A word's stem for comparing content words: a plural, past or gerund ending and a final 'e'
/// off ("rated", "rating", "rate"; "graded", "grade"; "reviews", "reviewed"), so that the
/// forms of one word meet; never shorter than three letters.
pub fn word_stem(w: &str) -> String {
    let w = w.trim_end_matches("'s").trim_end_matches('\'');
    let base = stem(w);
    for suffix in ["ing", "ed", "es", "e"] {
        if let Some(b) = base.strip_suffix(suffix) {
            if b.chars().count() >= 3 {
                return b.to_string();
            }
        }
    }
    base
}

/// `reply` without the quotes or backticks a model puts around a one-line answer (`"Germany"`,
/// `` `ON` ``), and the spaces inside them.
pub fn unquoted(reply: &str) -> &str {
    reply.trim_matches(|c| c == '"' || c == '\'' || c == '`').trim()
}

/// The stems ([`word_stem`]) of `text`'s content words, in order: what two texts share when they
/// speak of the same data (a question and a knowledge note; a question and its rewrite).
pub fn content_stems(text: &str) -> Vec<String> {
    plain_words(text).iter().filter(|w| !is_stop_word(w)).map(|w| word_stem(w)).collect()
}

/// The identifiers of `text` that mix letters and digits (`t3_9`, `q2_2024`), whole and in
/// lower case: split into words they are one letter and short numbers, which say nothing, and
/// among tables named alike (`t1_1` … `t50_200`) only the whole identifier tells one from the
/// others.
pub fn digit_identifiers(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(|w| w.trim_matches('_'))
        .filter(|w| w.chars().any(char::is_alphabetic) && w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect()
}

/// The scoring tokens of `text`: [`words`] without one-letter words, short numbers and stop
/// words, stemmed; then its [`digit_identifiers`] whole.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out: Vec<String> = identifier_words(text)
        .into_iter()
        .filter(|w| w.chars().count() > 1 && !is_stop_word(w) && !is_short_number(w))
        .map(|w| stem(&w))
        .collect();
    for id in digit_identifiers(text) {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
