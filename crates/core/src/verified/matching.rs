//! Is a new question the same as a verified one? Two ways to say yes, both conservative:
//!
//! - **Template.** The verified question with the SQL's string literals that it names (as
//!   written in the question) cut out as slots: "Which cities are in ⟨'Japan'⟩?". The new
//!   question matches when every other word is the same, in order (case and punctuation aside),
//!   and each slot is filled by one to [`MAX_SLOT_WORDS`] words without a word that changes
//!   the question's logic ("Japan or France" is not a value). The fillers then replace the
//!   literals, once the glue has resolved each to a value stored in the literal's column.
//! - **Paraphrase.** Other words, same meaning: the questions' embeddings are at least
//!   [`PARAPHRASE_MIN_COSINE`] alike, and their [`Signature`]s (numbers, negations, the
//!   direction and kind of aggregation, names written with capitals, the literal words of the
//!   stored SQL) are equal. Nothing is substituted: a paraphrase reuses the SQL as it is.
//!
//! Anything else is not the same question: the verified query is at most shown to the LLM as
//! an example. A wrong answer from the store is worse than an LLM call, so every rule here
//! errs towards "not the same".

use std::collections::BTreeSet;

use serde::Serialize;

pub use crate::text::{question_words as words, word_stem, Word};

/// Most words one slot may take ("San Francisco Bay Area" is four).
pub const MAX_SLOT_WORDS: usize = 4;
/// Least cosine between two questions' embeddings for a paraphrase (all-MiniLM-L6-v2): the
/// highest threshold whose recall on the tuning part of the twin-question fixtures is within
/// 0.02 of the best (BENCHMARKS.md, "Verified queries").
pub const PARAPHRASE_MIN_COSINE: f64 = 0.92;

/// Words that change what a question asks; a slot filler may hold none of them.
#[rustfmt::skip]
const LOGIC_WORDS: &[&str] = &[
    "and", "or", "not", "no", "nor", "non", "without", "except", "excluding", "outside", "besides", "but", "than", "with",
    "more", "less", "fewer", "most", "least", "over", "under", "above", "below", "before", "after", "between", "per", "each",
    "every", "all", "any", "only", "top", "first", "last", "where", "which", "who", "that", "whose", "in", "of", "from", "by",
    "for", "to", "at", "on",
];

/// One piece of a verified question's template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Word(String),
    /// The literal with this index in the stored SQL's literal list.
    Slot(usize),
}

/// A verified question cut into words and slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// The template of `question`, whose SQL holds the string literals `literals` (their
    /// values, in the SQL's order). A literal becomes a slot where its words stand exactly
    /// once in the question; a literal the question does not name as written (the SQL says
    /// 'Los Angeles', the question "LA"), or names twice, is no slot: the new question must
    /// then say the same.
    pub fn new(question: &str, literals: &[String]) -> Template {
        let qw: Vec<String> = words(question).into_iter().map(|w| w.norm).collect();
        let mut slot_at: Vec<Option<(usize, usize)>> = vec![None; qw.len()]; // (literal, length)
        for (li, lit) in literals.iter().enumerate() {
            let lw: Vec<String> = words(lit).into_iter().map(|w| w.norm).collect();
            if lw.is_empty() || lw.len() > MAX_SLOT_WORDS {
                continue;
            }
            let hits: Vec<usize> = (0..qw.len().saturating_sub(lw.len() - 1)).filter(|&i| qw[i..i + lw.len()] == lw[..]).collect();
            if let [i] = hits[..] {
                if (i..i + lw.len()).all(|j| slot_at[j].is_none() && !covered(&slot_at, j)) {
                    slot_at[i] = Some((li, lw.len()));
                }
            }
        }
        let mut pieces = Vec::new();
        let mut i = 0;
        while i < qw.len() {
            match slot_at[i] {
                Some((li, len)) => {
                    pieces.push(Piece::Slot(li));
                    i += len;
                }
                None => {
                    pieces.push(Piece::Word(qw[i].clone()));
                    i += 1;
                }
            }
        }
        Template { pieces }
    }

    /// How many slots the template has.
    pub fn slots(&self) -> usize {
        self.pieces.iter().filter(|p| matches!(p, Piece::Slot(_))).count()
    }

    /// Match `question` against the template: for each slot, in template order, the literal's
    /// index and the text that fills it (as the question writes it). `None`: not the same
    /// question.
    pub fn fill(&self, question: &str) -> Option<Vec<(usize, String)>> {
        let qw = words(question);
        let mut fills = Vec::new();
        if self.match_from(0, &qw, 0, question, &mut fills) {
            Some(fills)
        } else {
            None
        }
    }

    fn match_from(&self, p: usize, qw: &[Word], i: usize, text: &str, fills: &mut Vec<(usize, String)>) -> bool {
        let Some(piece) = self.pieces.get(p) else {
            return i == qw.len();
        };
        match piece {
            Piece::Word(w) => qw.get(i).is_some_and(|q| &q.norm == w) && self.match_from(p + 1, qw, i + 1, text, fills),
            Piece::Slot(li) => {
                for len in 1..=MAX_SLOT_WORDS.min(qw.len().saturating_sub(i)) {
                    let span = &qw[i..i + len];
                    if span.iter().any(|w| LOGIC_WORDS.contains(&w.norm.as_str()) || is_number(&w.norm)) {
                        break;
                    }
                    fills.push((*li, text[span[0].start..span[len - 1].end].to_string()));
                    if self.match_from(p + 1, qw, i + len, text, fills) {
                        return true;
                    }
                    fills.pop();
                }
                false
            }
        }
    }
}

/// Whether position `j` lies inside a slot that starts before it.
fn covered(slot_at: &[Option<(usize, usize)>], j: usize) -> bool {
    (0..j).any(|s| slot_at[s].is_some_and(|(_, len)| s + len > j))
}

fn is_number(w: &str) -> bool {
    w.chars().next().is_some_and(|c| c.is_ascii_digit()) || NUMBER_WORDS.contains(&w)
}

const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "twenty", "hundred",
    "thousand", "million", "dozen", "half", "once", "twice", "single", "both",
];

/// Two-word phrases read as one word before classes and content are compared ("at least 4"
/// is not "least"; "4 or more" is not a choice between two things).
#[rustfmt::skip]
const PHRASES: &[(&str, &str)] = &[
    ("at least", "atleast"), ("at most", "atmost"), ("or more", "ormore"), ("or higher", "ormore"),
    ("or greater", "ormore"), ("or above", "ormore"), ("or over", "ormore"), ("or less", "orless"),
    ("or fewer", "orless"), ("or lower", "orless"), ("or below", "orless"), ("or under", "orless"),
    ("how many", "many"), ("other than", "otherthan"), ("apart from", "apartfrom"), ("aside from", "asidefrom"),
    ("in total", "intotal"), ("total number", "number"), ("as well as", "aswellas"), ("no longer", "nolonger"),
    ("for every", "each"), ("total count", "count"), ("in business", "open"),
    // "the largest number of restaurants" asks what "the most restaurants" asks.
    ("largest number", "most"), ("greatest number", "most"), ("highest number", "most"), ("biggest number", "most"),
    ("smallest number", "fewest"), ("lowest number", "fewest"),
];

/// Past participles not ending in "-ed" or "-en" after which "by" names an agent.
const AGENT_VERBS: &[&str] = &["made", "run", "held", "led", "kept", "paid", "sold", "bought", "built", "taught", "said", "told", "won"];

/// Number words as digits, so that "one" and "1" are one number.
#[rustfmt::skip]
const NUMBER_DIGITS: &[(&str, &str)] = &[
    ("zero", "0"), ("one", "1"), ("two", "2"), ("three", "3"), ("four", "4"), ("five", "5"), ("six", "6"), ("seven", "7"),
    ("eight", "8"), ("nine", "9"), ("ten", "10"), ("eleven", "11"), ("twelve", "12"), ("twenty", "20"), ("hundred", "100"),
    ("thousand", "1000"), ("million", "1000000"), ("dozen", "12"),
];

/// A word as a number in digits when it is a number word ("three" → "3"), else itself.
pub(crate) fn as_digits(w: &str) -> &str {
    NUMBER_DIGITS.iter().find(|(n, _)| *n == w).map_or(w, |(_, d)| d)
}

/// The words of `question`, lower case, with [`PHRASES`] joined and number words as digits.
fn tokens(question: &str) -> Vec<String> {
    let mut ws: Vec<String> = words(question).into_iter().map(|w| w.norm).collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        if let Some(next) = ws.get(i + 1) {
            let pair = format!("{} {next}", ws[i]);
            // "What is the largest number of restaurants …?" asks for the number.
            let asks_number =
                out.len() >= 2 && out[out.len() - 1] == "the" && ["is", "was", "what's"].contains(&out[out.len() - 2].as_str());
            if let Some((_, joined)) = PHRASES.iter().find(|(p, j)| *p == pair && !(asks_number && (*j == "most" || *j == "fewest"))) {
                out.push(joined.to_string());
                i += 2;
                continue;
            }
        }
        // "best-rated" and "worst-rated" order by a rating, as "highest rated" and "lowest
        // rated" do: judged by the rating, not a judgement of its own ("best reviews").
        let hyphen = usize::from(ws.get(i + 1).is_some_and(|n| n == "-"));
        if let Some(next) = ws.get(i + 1 + hyphen).filter(|n| ["rated", "rating", "ranked", "scored"].contains(&n.as_str())) {
            let by = match ws[i].as_str() {
                "best" => Some("highest"),
                "worst" => Some("lowest"),
                _ => None,
            };
            if let Some(by) = by {
                out.push(by.to_string());
                out.push(next.clone());
                i += 2 + hyphen;
                continue;
            }
        }
        let w = std::mem::take(&mut ws[i]);
        out.push(NUMBER_DIGITS.iter().find(|(n, _)| *n == w).map_or(w, |(_, d)| d.to_string()));
        i += 1;
    }
    out
}

/// Classes of words whose presence changes what a question asks; two questions with other
/// classes are not paraphrases, however alike their embeddings.
#[rustfmt::skip]
const CLASSES: &[(&str, &[&str])] = &[
    ("negation", &["not", "no", "nor", "never", "without", "except", "excluding", "exclude", "none", "neither", "non",
                   "outside", "besides", "otherthan", "apartfrom", "asidefrom", "instead", "nolonger"]),
    ("count", &["count", "many", "number"]),
    ("sum", &["sum", "total", "combined"]),
    ("average", &["average", "mean", "avg", "typical"]),
    ("high", &["most", "highest", "largest", "biggest", "maximum", "max", "top", "best", "greatest", "longest", "more",
               "higher", "larger", "bigger", "greater", "above", "over", "exceed", "exceeds", "exceeding", "atleast",
               "ormore", "heaviest", "richest", "expensive", "priciest"]),
    ("low", &["least", "lowest", "smallest", "minimum", "min", "bottom", "worst", "fewest", "shortest", "less", "fewer",
              "lower", "smaller", "below", "under", "atmost", "orless", "cheapest", "lightest", "cheap", "inexpensive",
              "budget", "affordable"]),
    ("earlier", &["before", "earlier", "earliest", "first", "oldest", "prior", "since"]),
    ("later", &["after", "later", "latest", "last", "newest", "recent", "recently", "until"]),
    ("distinct", &["distinct", "unique", "different"]),
    ("group", &["each", "per", "breakdown", "grouped"]),
    // Judged better or worse, not counted or measured: "best reviews" is not "most reviews".
    ("quality", &["best", "worst", "better", "worse", "finest", "favorite", "favourite", "poorest"]),
    ("ratio", &["percentage", "percent", "proportion", "ratio", "fraction", "share", "rate"]),
    ("or", &["or", "either"]),
    ("both", &["both", "also", "aswellas"]),
    ("range", &["between", "range", "within"]),
    ("open", &["open", "opened", "active", "current", "operating", "operational"]),
    ("closed", &["closed", "inactive", "shut", "former"]),
];

/// The words of `question` that are words of the [`CLASSES`] as written (compared by the
/// signature), stemmed.
pub(crate) fn class_tokens(question: &str) -> Vec<String> {
    tokens(question)
        .into_iter()
        .filter(|t| CLASSES.iter().any(|(_, members)| members.contains(&t.as_str())))
        .map(|t| word_stem(&t))
        .collect()
}

/// Words that phrase a question without saying what it is about: a paraphrase may add or
/// drop them ("How many chefs are listed?" / "Count the chefs."). Every other word of one
/// question must stand in the other, in the same order (as [`word_stem`] reads it).
#[rustfmt::skip]
const PHRASING: &[&str] = &[
    "how", "what", "which", "is", "are", "be", "there", "here", "the", "a", "an", "of", "on", "at", "for", "by", "with",
    "do", "does", "have", "has", "list", "listed", "show", "shown", "give", "tell", "find", "display", "return", "get",
    "me", "us", "name", "names", "please", "could", "would", "can", "you", "i", "we", "our", "my", "that", "this", "these",
    "those", "it", "its", "their", "them", "they", "exist", "exists", "existing", "recorded", "stored", "database", "guide",
    "data", "entries", "entry", "records", "record", "available", "known", "also", "just", "so", "as", "about", "than",
    "s", "and", "what's", "there's", "let", "see", "know", "want", "like", "kindly", "currently", "altogether", "present",
    "appear", "appears", "included", "include", "includes", "contained", "cover", "covered", "covers", "located",
    "situated", "intotal", "during", "still", "overall", "if",
];

/// Ways of asking for a count, which say the same (the class compares them).
const COUNTING: &[&str] = &["count", "many", "number"];
/// Ways of asking for each group, which say the same (the class compares them).
const GROUPING: &[&str] = &["each", "per"];

/// The words of `question` that say what it is about: neither phrasing nor a way of asking
/// for a count or a group nor a number (those are compared apart), stemmed. The words of the
/// other classes stay: "most" and "best" are of one class, not of one meaning.
pub(crate) fn content_words(question: &str) -> Vec<String> {
    let mut out: Vec<String> = tokens(question)
        .into_iter()
        .filter(|w| !PHRASING.contains(&w.as_str()) && !COUNTING.contains(&w.as_str()) && !GROUPING.contains(&w.as_str()) && !is_number(w))
        .map(|w| word_stem(&w))
        .collect();
    out.dedup();
    out
}

/// What must be equal between two questions for one to be a paraphrase of the other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Signature {
    /// Numbers, written in digits or words.
    pub numbers: BTreeSet<String>,
    /// The [`CLASSES`] present.
    pub classes: BTreeSet<&'static str>,
    /// Words written with a capital inside the sentence (names: "Chicago", "Paris"), and
    /// words with digits, lower-cased.
    pub names: BTreeSet<String>,
    /// It asks "when": its answer is a time ("When did it close?" is not "Which have closed?"
    /// nor "Is it still open?").
    pub asks_when: bool,
    /// It names a date, a day or a time ("What is the opening date?" asks what "When did it
    /// open?" asks).
    pub dated: bool,
}

/// The signature of `question`.
pub fn signature(question: &str) -> Signature {
    let ws = words(question);
    let toks = tokens(question);
    let mut classes = BTreeSet::new();
    for (class, members) in CLASSES {
        if toks.iter().any(|t| members.contains(&t.as_str())) {
            classes.insert(*class);
        }
    }
    if question.to_lowercase().contains("n't") {
        classes.insert("negation");
    }
    // "On average, how many stars …" asks an average of stars, not a count; "How many
    // restaurants have an average rating above 4?" and "the average …, and how many …" count.
    let averaging = CLASSES.iter().find(|(c, _)| *c == "average").map_or(&[][..], |(_, m)| *m);
    let average_at = toks.iter().position(|t| averaging.contains(&t.as_str()));
    let many_at = toks.iter().position(|t| t == "many");
    if let (Some(a), Some(m)) = (average_at, many_at) {
        if m == a + 1 && !toks.iter().any(|t| t == "count" || t == "number") {
            classes.remove("count");
        }
    }
    // In a question that aggregates without ranking, "by city" after a noun groups as "per
    // city" does ("the number of restaurants by cuisine"); after a verb it names an agent
    // ("written by guests"), and in a ranking it orders ("the largest cities by population").
    let aggregates = ["count", "sum", "average"].iter().any(|c| classes.contains(c));
    let ranks = classes.contains("high") || classes.contains("low");
    let groups_by = toks.iter().enumerate().any(|(i, t)| {
        t == "by" && i > 0 && {
            let before = toks[i - 1].as_str();
            !(before.ends_with("ed") || before.ends_with("en") || AGENT_VERBS.contains(&before))
        }
    });
    if aggregates && !ranks && groups_by {
        classes.insert("group");
    }
    // "not closed" is "open", "no longer open" is "closed".
    if classes.contains("negation") && (classes.contains("open") != classes.contains("closed")) {
        let (from, to) = if classes.contains("open") { ("open", "closed") } else { ("closed", "open") };
        classes.remove("negation");
        classes.remove(from);
        classes.insert(to);
    }
    let numbers = toks.iter().filter(|w| is_number(w)).cloned().collect();
    let names = ws
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            let first = question[w.start..].chars().next().is_some_and(char::is_uppercase);
            // A number is compared as a number ("3" and "three" are one), the pronoun "I" is
            // no name.
            let number = is_number(&w.norm) && w.norm.chars().all(|c| c.is_ascii_digit() || c == '.');
            ((first && *i > 0 && !is_sentence_start(question, w.start)) || w.norm.chars().any(|c| c.is_ascii_digit()))
                && !number
                && w.norm != "i"
        })
        .map(|(_, w)| w.norm.trim_end_matches("'s").to_string())
        .collect();
    let asks_when = toks.iter().any(|t| t == "when");
    let dated = toks.iter().any(|t| ["date", "dates", "day", "days", "time", "times"].contains(&t.as_str()));
    Signature { numbers, classes, names, asks_when, dated }
}

/// Whether the word at `at` starts a sentence (after '.', '?', '!' or ':').
pub(crate) fn is_sentence_start(text: &str, at: usize) -> bool {
    text[..at].trim_end().chars().last().is_none_or(|c| matches!(c, '.' | '?' | '!' | ':'))
}

/// Why two questions do not ask the same, as far as their [`Signature`]s tell (numbers, what
/// is asked, names), or `None` when the signatures are equal.
pub fn signature_conflict(a: &str, b: &str) -> Option<String> {
    let (a, b) = (signature(a), signature(b));
    if a.numbers != b.numbers {
        return Some(format!("numbers differ: {:?} and {:?}", a.numbers, b.numbers));
    }
    if a.classes != b.classes {
        let only_a: Vec<_> = a.classes.difference(&b.classes).collect();
        let only_b: Vec<_> = b.classes.difference(&a.classes).collect();
        return Some(format!("what is asked differs: {only_a:?} against {only_b:?}"));
    }
    if a.names != b.names {
        return Some(format!("names differ: {:?} and {:?}", a.names, b.names));
    }
    if a.asks_when != b.asks_when && !(a.asks_when && b.dated || b.asks_when && a.dated) {
        return Some("one asks when, the other neither asks when nor names a date".to_string());
    }
    None
}

/// Why two questions are not paraphrases, or `None` when they may be: their signatures are
/// equal and `asked` names every literal of the stored SQL that `stored` names.
pub fn paraphrase_conflict(stored: &str, asked: &str, literals: &[String]) -> Option<String> {
    if let Some(why) = signature_conflict(stored, asked) {
        return Some(why);
    }
    // The same words in the same order: "who manages Alice" is not "who does Alice manage".
    let (ca, cb) = (content_words(stored), content_words(asked));
    if ca != cb {
        return Some(format!("other words: {ca:?} against {cb:?}"));
    }
    let asked_text = format!(" {} ", words(asked).into_iter().map(|w| w.norm).collect::<Vec<_>>().join(" "));
    let stored_text = format!(" {} ", words(stored).into_iter().map(|w| w.norm).collect::<Vec<_>>().join(" "));
    for lit in literals {
        let l = format!(" {} ", words(lit).into_iter().map(|w| w.norm).collect::<Vec<_>>().join(" "));
        if l.trim().is_empty() {
            continue;
        }
        if stored_text.contains(&l) && !asked_text.contains(&l) {
            return Some(format!("the question does not name {lit:?}"));
        }
    }
    None
}

#[cfg(test)]
mod tests;
