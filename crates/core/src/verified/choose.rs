//! Verified templates chosen by the model: when no rule of [`super::decide`] finds a verified
//! question to be the one asked, but trusted verified questions are near it, the model is
//! shown them as templates (the verified question and SQL with their values cut out as typed
//! slots) and chooses one, with its slot values, or none. The reply is constrained: a grammar
//! allows exactly the templates offered, each slot of its type, and "none" (a JSON schema of
//! the same choice where the provider takes no grammar).
//!
//! The model's choice is then checked, and any doubt ends in "none" (normal generation, the
//! templates shown as examples):
//! - every slot's value must be written in the question (a text value as words of it, a number
//!   as a number of it, a date as written), and a text value must be one the value memory
//!   knows in the slot's column;
//! - what the two questions ask must agree once the slots' values are taken out of both:
//!   negations, comparisons and their direction, aggregates, grouping, numbers and names
//!   ([`super::matching::signature`]);
//! - a word of the question that the template does not hold is another column or table when
//!   it names one ("average weight" is not "average age", "cities" not "states"), and another
//!   condition when it is a word of a value stored in a column of the template's tables ("How
//!   many pastry chefs" is not "How many chefs": 'pastry chef' is a stored role);
//! - the two questions group by the same noun when both group ("per restaurant" is not "per
//!   city");
//! - a name the question writes that the filled SQL does not hold, and that the value memory
//!   holds in a column, is a condition the template does not have ("chefs who work in France"
//!   is not "chefs who come from France", read `nationality = 'French'`).

use serde::Serialize;

use super::matching::{as_digits, class_tokens, content_words, signature_conflict, word_stem, words};
use super::Candidate;
use crate::values::literals::{LiteralKind, LiteralRef, TextRange};
use crate::values::rewrite::{is_plain_number, number_literals, rewrite, Replacement};

mod reply;
pub use reply::{gbnf, parse, request, schema, Choice};

/// Templates offered to the model at most.
pub const MAX_TEMPLATES: usize = 3;
/// Least cosine (or, without embeddings, trigram similarity) of a verified question for its
/// template to be offered.
pub const TEMPLATE_MIN_COSINE: f64 = 0.6;
pub const TEMPLATE_MIN_TRIGRAM: f64 = 0.35;
/// Characters a text slot's value may have.
const MAX_TEXT_SLOT: usize = 80;

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotKind {
    /// A value compared with a text column.
    Text,
    /// The words inside a LIKE pattern.
    Pattern,
    /// An unsigned number.
    Number,
    /// A date, `YYYY-MM-DD`.
    Date,
}

/// One value of a verified query that a question may change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slot {
    /// `s1`, `s2`, … in the order the values stand in the SQL.
    pub name: String,
    pub kind: SlotKind,
    /// The value the verified query has.
    pub original: String,
    /// How the verified question writes it: the value, an initialism of it ("LA" for 'Los
    /// Angeles'), or a short form beginning with its initials ("USA" for 'United States').
    pub written: String,
    /// The verified question writes the value by a name that the database holds beside it in
    /// another column ("Louisiana" for 'LA'): the slot takes that name only, standing for the
    /// verified value; another name would need the row's column, not the value memory.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub name_for_value: bool,
    /// The column it is compared with (text slots).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// The index of its literal among the SQL's string literals (text and pattern slots).
    #[serde(skip)]
    pub literal: Option<usize>,
    #[serde(skip)]
    pub range: TextRange,
}

/// A verified query as a template: its question and SQL with slots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Offer {
    pub id: i64,
    /// The verified question with each slot's value written `{sN}`.
    pub question: String,
    /// The verified SQL with each slot's value written `{sN}`.
    pub sql: String,
    pub slots: Vec<Slot>,
}

/// Whether a verified query may be offered as a template for a question: trusted, near it,
/// and showable.
pub fn worth_offering(cand: &Candidate) -> bool {
    cand.trusted
        && cand.worth_showing()
        && match cand.cosine {
            Some(c) => c >= TEMPLATE_MIN_COSINE || cand.trigram >= TEMPLATE_MIN_TRIGRAM,
            None => cand.trigram >= TEMPLATE_MIN_TRIGRAM,
        }
}

/// Where `value`'s words stand, in order, among `text`'s: (start, end) byte offsets of each
/// place in `text`.
/// A number word stands for its digits ("three" writes 3).
fn places(text: &str, value: &str) -> Vec<(usize, usize)> {
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

/// The place of `value`'s words in `question`, when they stand there exactly once.
fn stands_once(question: &str, value: &str) -> Option<(usize, usize)> {
    match places(question, value)[..] {
        [one] => Some(one),
        _ => None,
    }
}

fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10 && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
}

/// A value found for a slot: its range in the SQL, its range in the question, its kind, the
/// value, its column and the index of its string literal.
type Found = (TextRange, (usize, usize), SlotKind, String, Option<String>, Option<usize>);

/// Where the verified question writes a text value as an initialism of it ("LA" for 'Los
/// Angeles'), when one word there is, once.
fn initialism_once(question: &str, value: &str) -> Option<(usize, usize)> {
    spelled_once(question, value, crate::values::decide::Lexical::Initialism)
}

/// Whether `word` is written as an initialism is: two or more letters, all capitals ("LA",
/// "USA"; not "us" or "of", which are words).
fn in_capitals(word: &str) -> bool {
    word.chars().filter(|c| c.is_alphabetic()).count() >= 2 && word.chars().all(|c| c.is_uppercase() || !c.is_alphabetic())
}

/// The one word of `question`, written in capitals, that is a spelling of `value` by the
/// lexical evidence `how`.
fn spelled_once(question: &str, value: &str, how: crate::values::decide::Lexical) -> Option<(usize, usize)> {
    let found: Vec<(usize, usize)> = words(question)
        .into_iter()
        .filter(|w| in_capitals(w.text_in(question)) && crate::values::decide::lexical_evidence(w.text_in(question), value) == Some(how))
        .map(|w| (w.start, w.end))
        .collect();
    match found[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// Where the verified question writes a text value by a short form that begins with the
/// value's initials ("USA" for 'United States', "NYC" for 'New York'), when one word there is,
/// once, and the SQL does not hold it: the DBA verified that the question's word means the
/// SQL's value.
fn short_form_once(question: &str, sql: &str, value: &str) -> Option<(usize, usize)> {
    let at = spelled_once(question, value, crate::values::decide::Lexical::InitialismPrefix)?;
    let word = question[at.0..at.1].to_lowercase();
    (!words(sql).iter().any(|w| w.norm == word)).then_some(at)
}

fn slot_kind(lit: &LiteralRef) -> SlotKind {
    match lit.kind {
        LiteralKind::Like { .. } => SlotKind::Pattern,
        _ if is_date(&lit.value) => SlotKind::Date,
        _ => SlotKind::Text,
    }
}

/// Where the verified question writes a string literal of its SQL: its words, its initialism,
/// or a short form of it (each once).
fn place_of(cand: &Candidate, lit: &LiteralRef) -> Option<(usize, usize)> {
    stands_once(&cand.question, &lit.value).or_else(|| {
        (slot_kind(lit) == SlotKind::Text)
            .then(|| initialism_once(&cand.question, &lit.value).or_else(|| short_form_once(&cand.question, &cand.sql, &lit.value)))
            .flatten()
    })
}

/// A name the verified question writes for a text value its SQL holds under another name
/// ("Which cities are in Louisiana?" where the SQL says `state_code = 'LA'`): when exactly one
/// text literal has no place in the question and exactly one name of the question (words with
/// a capital inside the sentence) is neither a literal's place nor a word of the SQL, the
/// literal's index, the name's place and the name. The pair is a slot only when the database
/// holds both in one row (looked up by the caller), as `states` holds ('LA', 'Louisiana').
pub fn alias_candidate(cand: &Candidate, literals: &[LiteralRef]) -> Option<(usize, (usize, usize), String)> {
    let placed: Vec<Option<(usize, usize)>> = literals.iter().map(|l| place_of(cand, l)).collect();
    let unplaced: Vec<usize> =
        literals.iter().enumerate().filter(|(i, l)| placed[*i].is_none() && slot_kind(l) == SlotKind::Text).map(|(i, _)| i).collect();
    let [literal] = unplaced[..] else { return None };
    let sql_words: Vec<String> = words(&cand.sql).into_iter().map(|w| w.norm).collect();
    let q = &cand.question;
    let inside = |w: &super::matching::Word| placed.iter().flatten().any(|&(a, b)| w.start < b && a < w.end);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut last_end: Option<usize> = None;
    for w in words(q) {
        let capital =
            q[w.start..].chars().next().is_some_and(char::is_uppercase) && !super::matching::is_sentence_start(q, w.start) && w.norm != "i";
        let name = capital && !inside(&w) && !sql_words.contains(&w.norm) && w.norm.chars().all(char::is_alphabetic);
        match (name, spans.last_mut()) {
            // Words of one name stand next to each other ("New Orleans").
            (true, Some(span)) if last_end == Some(span.1) && q[span.1..w.start].trim().is_empty() => span.1 = w.end,
            (true, _) => spans.push((w.start, w.end)),
            (false, _) => {}
        }
        last_end = name.then_some(w.end);
    }
    let [span] = spans[..] else { return None };
    Some((literal, span, q[span.0..span.1].to_string()))
}

/// The template of a verified query: each of its values that the verified question names
/// exactly once becomes a slot; a value the question does not name (a condition the question
/// implies) stays as it is. `literals` are the SQL's string literals with their columns;
/// `alias` a literal the question writes by another name the database holds beside it
/// ([`alias_candidate`], confirmed): the literal's index and the name's place.
pub fn offer(cand: &Candidate, literals: &[LiteralRef], alias: Option<(usize, (usize, usize))>) -> Offer {
    let mut found: Vec<Found> = Vec::new();
    for (i, lit) in literals.iter().enumerate() {
        let kind = slot_kind(lit);
        let at = place_of(cand, lit).or_else(|| alias.filter(|(li, _)| *li == i && kind == SlotKind::Text).map(|(_, at)| at));
        if let Some(at) = at {
            found.push((lit.range, at, kind, lit.value.clone(), Some(format!("{}.{}", lit.table, lit.column)), Some(i)));
        }
    }
    for (range, n) in number_literals(&cand.sql).unwrap_or_default() {
        if let Some(at) = stands_once(&cand.question, &n) {
            found.push((range, at, SlotKind::Number, n, None, None));
        }
    }
    // Date literals compared with date columns are no text literal: found by their shape.
    for (range, d) in quoted_dates(&cand.sql) {
        if found.iter().any(|f| f.0 == range) {
            continue;
        }
        if let Some(at) = stands_once(&cand.question, &d) {
            found.push((range, at, SlotKind::Date, d, None, None));
        }
    }
    found.sort_by_key(|f| f.0.start);
    // Two values at one place of the question (a number inside a date): neither is a slot.
    let overlaps = |a: (usize, usize), b: (usize, usize)| a.0 < b.1 && b.0 < a.1;
    let keep: Vec<bool> = (0..found.len())
        .map(|i| {
            !(0..found.len()).any(|j| {
                j != i
                    && (overlaps(found[i].1, found[j].1)
                        || overlaps((found[i].0.start, found[i].0.end), (found[j].0.start, found[j].0.end)))
            })
        })
        .collect();
    let found: Vec<_> = found.into_iter().zip(keep).filter(|(_, k)| *k).map(|(f, _)| f).collect();
    let slots: Vec<Slot> = found
        .iter()
        .enumerate()
        .map(|(i, (range, at, kind, original, column, literal))| Slot {
            name: format!("s{}", i + 1),
            kind: *kind,
            original: original.clone(),
            written: cand.question[at.0..at.1].to_string(),
            name_for_value: alias.is_some_and(|(li, a)| Some(li) == *literal && a == *at),
            column: column.clone(),
            literal: *literal,
            range: *range,
        })
        .collect();
    let mut sql = String::new();
    let mut at = 0;
    for s in &slots {
        sql.push_str(&cand.sql[at..s.range.start]);
        sql.push_str(&format!("{{{}}}", s.name));
        at = s.range.end;
    }
    sql.push_str(&cand.sql[at..]);
    let mut by_question: Vec<(&(usize, usize), &str)> = found.iter().zip(&slots).map(|(f, s)| (&f.1, s.name.as_str())).collect();
    by_question.sort_by_key(|(r, _)| r.0);
    let mut question = String::new();
    let mut at = 0;
    for ((start, end), name) in by_question {
        question.push_str(&cand.question[at..*start]);
        question.push_str(&format!("{{{name}}}"));
        at = *end;
    }
    question.push_str(&cand.question[at..]);
    Offer { id: cand.id, question, sql, slots }
}

/// Single-quoted dates of `sql` (`'2023-04-01'`), with their ranges (quotes included).
fn quoted_dates(sql: &str) -> Vec<(TextRange, String)> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 12 <= b.len() {
        if b[i] == b'\'' && b[i + 11] == b'\'' && (i == 0 || b[i - 1] != b'\'') && is_date(&sql[i + 1..i + 11]) {
            out.push((TextRange { start: i, end: i + 12 }, sql[i + 1..i + 11].to_string()));
            i += 12;
        } else {
            i += 1;
        }
    }
    out
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
    let mut out: Vec<String> = super::matching::signature(asked)
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

/// The value a text slot's chosen `value` stands for without asking the value memory: the
/// verified value, when the value is the verified question's own spelling of it ("USA" for
/// 'United States' where the template's question says "USA").
pub fn verified_spelling(slot: &Slot, value: &str) -> Option<String> {
    (slot.kind == SlotKind::Text && value.eq_ignore_ascii_case(&slot.written) && !slot.written.eq_ignore_ascii_case(&slot.original))
        .then(|| slot.original.clone())
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

/// The verified SQL with the chosen values written in; `stored` are the text slots' values as
/// the value memory holds them (in slot order, `None` for other kinds).
pub fn fill(sql: &str, offer: &Offer, literals: &[LiteralRef], values: &[String], stored: &[Option<String>]) -> Result<String, String> {
    let mut replacements = Vec::new();
    for ((s, v), st) in offer.slots.iter().zip(values).zip(stored) {
        let r = match (s.kind, s.literal.and_then(|i| literals.get(i))) {
            (SlotKind::Text, Some(lit)) => Replacement::for_literal(lit, st.as_deref().unwrap_or(v)),
            (SlotKind::Pattern, Some(lit)) => Replacement::for_literal(lit, v),
            _ => Replacement { range: s.range, text: v.clone() },
        };
        replacements.push(r);
    }
    rewrite(sql, &replacements).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
