//! What a question asks, and whether another question asks the same. Two readers of it,
//! both conservative (a wrong answer from the verified store is worse than an LLM call):
//!
//! - **Paraphrase** ([`paraphrase_conflict`]): other words, the same meaning: the questions'
//!   embeddings are at least [`PARAPHRASE_MIN_COSINE`] alike, and their [`Signature`]s
//!   (numbers, negations, the direction and kind of aggregation, names written with capitals,
//!   the literal words of the stored SQL) are equal. Nothing is substituted: a paraphrase
//!   reuses the SQL as it is.
//! - **A template the model chose** ([`doubt`], see [`super::choose`]): any doubt ends in
//!   "none" (normal generation, the templates shown as examples):
//!   - every slot's value must be written in the question (a text value as words of it, a
//!     number as a number of it, a date as written), and a text value must be one the value
//!     memory knows in the slot's column;
//!   - what the two questions ask must agree once the slots' values are taken out of both:
//!     negations, comparisons and their direction, aggregates, grouping, numbers and names
//!     ([`signature`]);
//!   - a word of the question that the template does not hold is another column or table
//!     when it names one ("average weight" is not "average age", "cities" not "states"), and
//!     another condition when it is a word of a value stored in a column of the template's
//!     tables ("How many pastry chefs" is not "How many chefs": 'pastry chef' is a stored
//!     role);
//!   - the two questions group by the same noun when both group ("per restaurant" is not "per
//!     city");
//!   - a name the question writes that the filled SQL does not hold, and that the value memory
//!     holds in a column, is a condition the template does not have ("chefs who work in
//!     France" is not "chefs who come from France", read `nationality = 'French'`).
//!
//! One file, so that a question is read in one place: its words, classes and signature, and
//! where it writes a value.

use std::collections::BTreeSet;

use serde::Serialize;

use super::offer::{Offer, Slot, SlotKind};
pub use crate::text::{question_words as words, word_stem, Word};
use crate::values::rewrite::is_plain_number;

/// Least cosine between two questions' embeddings for a paraphrase (the default of
/// `ask.verified_min_cosine`).
pub use crate::config::PARAPHRASE_MIN_COSINE;

pub(crate) fn is_number(w: &str) -> bool {
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

/// Characters a text slot's value may have.
pub(crate) const MAX_TEXT_SLOT: usize = 80;

/// Where `value`'s words stand, in order, among `text`'s: (start, end) byte offsets of each
/// place in `text`.
/// A number word stands for its digits ("three" writes 3).
pub(crate) fn places(text: &str, value: &str) -> Vec<(usize, usize)> {
    let tw = words(text);
    let vw: Vec<String> = words(value).into_iter().map(|w| as_digits(&w.norm).to_string()).collect();
    if vw.is_empty() || vw.len() > tw.len() {
        return Vec::new();
    }
    (0..=tw.len() - vw.len())
        // A possessive is its word: "LA's" writes "LA".
        .filter(|&i| tw[i..i + vw.len()].iter().map(|w| as_digits(w.norm.trim_end_matches("'s"))).eq(vw.iter().map(String::as_str)))
        .map(|i| (tw[i].start, tw[i + vw.len() - 1].end))
        .collect()
}

/// Where `asked` writes the value `value` chosen for `slot`: the value's words; or, for a text
/// value, the verified question's own spelling of it when the value is the one verified ("LA"
/// for 'Los Angeles' where the template's question says "LA"), or a word that is its
/// initialism ("SF" for 'San Francisco'). `None`: the question does not write it.
fn written_in(asked: &str, slot: &Slot, value: &str) -> Option<(usize, usize)> {
    if let Some(&at) = places(asked, value).first() {
        return Some(at);
    }
    if !matches!(slot.kind, SlotKind::Text) {
        return None;
    }
    if value.eq_ignore_ascii_case(&slot.original) {
        if let Some(&at) = places(asked, &slot.written).first() {
            return Some(at);
        }
    }
    words(asked)
        .into_iter()
        .find(|w| {
            let text = w.text_in(asked);
            in_capitals(text) && crate::values::decide::lexical_evidence(text, value) == Some(crate::values::decide::Lexical::Initialism)
        })
        .map(|w| (w.start, w.end))
}

pub(crate) fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10 && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
}

/// Whether `word` is written as an initialism is: two or more letters, all capitals ("LA",
/// "USA"; not "us" or "of", which are words).
pub(crate) fn in_capitals(word: &str) -> bool {
    word.chars().filter(|c| c.is_alphabetic()).count() >= 2 && word.chars().all(|c| c.is_uppercase() || !c.is_alphabetic())
}

/// Why a choice is not taken, or `None` when it holds: see the [module documentation](self).
/// `verified_question` is the template's question as verified, `names` the names of the
/// tables the caller may read and of their columns.
pub fn doubt(asked: &str, verified_question: &str, offer: &Offer, values: &[String], names: &[String]) -> Option<String> {
    for (s, v) in offer.slots.iter().zip(values) {
        if v.is_empty() {
            return Some(format!("{} is empty", s.name));
        }
        if s.name_for_value && !v.eq_ignore_ascii_case(&s.written) {
            return Some(format!("{} takes only {:?}, the verified question's name for {:?}", s.name, s.written, s.original));
        }
        let written = match s.kind {
            SlotKind::Number => is_plain_number(v) && words(asked).iter().any(|w| as_digits(&w.norm) == v),
            SlotKind::Date => is_date(v) && asked.contains(v.as_str()),
            SlotKind::Text | SlotKind::Pattern => v.chars().count() <= MAX_TEXT_SLOT && written_in(asked, s, v).is_some(),
        };
        if !written {
            return Some(format!("{} = {v:?} is not written in the question", s.name));
        }
    }
    // What is asked, with the slots' values out of both questions (as each writes them).
    let originals: Vec<&str> = offer.slots.iter().map(|s| s.written.as_str()).collect();
    let forms = written_forms(asked, offer, values);
    let news: Vec<&str> = forms.iter().map(String::as_str).collect();
    if let Some(why) = signature_conflict(&without(verified_question, &originals), &without(asked, &news)) {
        return Some(why);
    }
    // Another grouping: "per restaurant" is not "per city".
    let (by_verified, by_asked) = (grouped_by(&without(verified_question, &originals)), grouped_by(&without(asked, &news)));
    if !by_verified.is_empty() && !by_asked.is_empty() && by_asked != by_verified {
        return Some(format!("grouped by {by_asked:?}, the template by {by_verified:?}"));
    }
    // A table or column named in the question that the template does not use.
    // Words of the classes that say what is asked, as the question writes them, were compared
    // above ("not closed" is "open", whatever column "notes" or "opened_on" there is); a word
    // whose stem only meets a class word's ("rating", "rate") was not.
    let compared = class_tokens(asked);
    for w in new_words(asked, verified_question, offer, values).into_iter().filter(|w| !compared.contains(w)) {
        if names.iter().any(|n| n.split('_').map(|p| word_stem(&p.to_lowercase())).any(|p| p == w)) {
            return Some(format!("{w:?} names a table or column the template does not use"));
        }
    }
    None
}

/// The content words of `asked` (stemmed; phrasing, counting words and numbers aside) that
/// neither the verified question, nor the template's SQL, nor a slot's new value holds: what
/// the question says that the template does not. Each is a doubt when it names a table or
/// column ([`doubt`]) or is a word of a value stored in a column of the template's tables
/// (looked up by the caller).
pub fn new_words(asked: &str, verified_question: &str, offer: &Offer, values: &[String]) -> Vec<String> {
    let news: Vec<&str> = values.iter().map(String::as_str).collect();
    let known: Vec<String> = content_words(verified_question)
        .into_iter()
        .chain(words(verified_question).into_iter().map(|w| word_stem(&w.norm)))
        .chain(words(&offer.sql).into_iter().map(|w| word_stem(&w.norm)))
        .collect();
    let mut out: Vec<String> = content_words(&without(asked, &news)).into_iter().filter(|w| w.len() >= 3 && !known.contains(w)).collect();
    out.sort();
    out.dedup();
    out
}

/// Words that a grouping's noun follows ("per city", "for each city", "by cuisine").
const GROUP_WORDS: &[&str] = &["per", "each", "every", "by"];

/// Words between a grouping word and its noun.
const GROUP_FILLERS: &[&str] = &["single", "one", "of", "the", "a", "an", "individual", "separate", "their", "its", "given"];

/// The nouns `text` groups by (stemmed): the word after each of [`GROUP_WORDS`].
pub fn grouped_by(text: &str) -> Vec<String> {
    let ws: Vec<String> = words(text).into_iter().map(|w| w.norm).collect();
    let mut out = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        if GROUP_WORDS.contains(&w.as_str()) {
            if let Some(noun) = ws[i + 1..].iter().find(|n| !GROUP_FILLERS.contains(&n.as_str())) {
                out.push(word_stem(noun));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The names written in `asked` (words with a capital inside the sentence) that neither a
/// slot's new value nor the filled SQL holds: a name the template answers without saying it
/// ("Which chefs work in France?" against a template that reads France as `nationality =
/// 'French'`). Each is a doubt when the value memory holds it in a column (looked up by the
/// caller).
pub fn unheld_names(asked: &str, values: &[String], filled_sql: &str) -> Vec<String> {
    let held: Vec<String> = values.iter().flat_map(|v| words(v)).chain(words(filled_sql)).map(|w| w.norm).collect();
    let mut out: Vec<String> = signature(asked)
        .names
        .into_iter()
        .filter(|n| n.chars().all(char::is_alphabetic) && n.chars().count() >= 3 && !held.contains(n))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How `asked` writes each chosen value (see [`doubt`]): the value's words, the verified
/// question's spelling of it, or an initialism; the value itself where none stands there.
pub fn written_forms(asked: &str, offer: &Offer, values: &[String]) -> Vec<String> {
    let form = |s: &Slot, v: &String| match written_in(asked, s, v) {
        Some((a, b)) if places(asked, v).is_empty() => asked[a..b].to_string(),
        _ => v.clone(),
    };
    offer.slots.iter().zip(values).map(|(s, v)| form(s, v)).collect()
}

/// `text` with the first place of each of `values`' word sequences taken out.
fn without(text: &str, values: &[&str]) -> String {
    let mut out = text.to_string();
    for v in values {
        if let Some(&(start, end)) = places(&out, v).first() {
            out.replace_range(start..end, " ");
        }
    }
    out
}
