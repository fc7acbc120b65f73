//! Verified templates chosen by the model: when no rule of [`super::decide`] finds a verified
//! question to be the one asked, but trusted verified questions are near it, the model is
//! shown them as templates (the verified question and SQL with their values cut out as typed
//! slots, an [`Offer`]) and chooses one, with its slot values, or none. The reply is
//! constrained: a grammar allows exactly the templates offered, each slot of its type, and
//! "none" (a JSON schema of the same choice where the provider takes no grammar). The choice is
//! then checked against the question ([`super::asks::doubt`]) and filled in ([`fill`]).

use super::asks::{in_capitals, is_date, places, words};
pub use super::offer::{Offer, Slot, SlotKind};
use super::Candidate;
use crate::values::literals::{LiteralKind, LiteralRef, TextRange};
use crate::values::rewrite::{number_literals, rewrite, Replacement};

mod reply;
pub use reply::{gbnf, parse, request, schema, Choice};

/// Templates offered to the model at most.
pub const MAX_TEMPLATES: usize = 3;
/// Least cosine (or, without embeddings, trigram similarity) of a verified question for its
/// template to be offered.
pub const TEMPLATE_MIN_COSINE: f64 = 0.6;
pub const TEMPLATE_MIN_TRIGRAM: f64 = 0.35;
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

/// The place of `value`'s words in `question`, when they stand there exactly once.
fn stands_once(question: &str, value: &str) -> Option<(usize, usize)> {
    match places(question, value)[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// A value found for a slot: its range in the SQL, its range in the question, its kind, the
/// value, its column and the index of its string literal.
type Found = (TextRange, (usize, usize), SlotKind, String, Option<String>, Option<usize>);

/// Where the verified question writes a text value as an initialism of it ("LA" for 'Los
/// Angeles'), when one word there is, once.
fn initialism_once(question: &str, value: &str) -> Option<(usize, usize)> {
    spelled_once(question, value, crate::values::decide::Lexical::Initialism)
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
    let inside = |w: &super::asks::Word| placed.iter().flatten().any(|&(a, b)| w.start < b && a < w.end);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut last_end: Option<usize> = None;
    for w in words(q) {
        let capital =
            q[w.start..].chars().next().is_some_and(char::is_uppercase) && !super::asks::is_sentence_start(q, w.start) && w.norm != "i";
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

/// The value a text slot's chosen `value` stands for without asking the value memory: the
/// verified value, when the value is the verified question's own spelling of it ("USA" for
/// 'United States' where the template's question says "USA").
pub fn verified_spelling(slot: &Slot, value: &str) -> Option<String> {
    (slot.kind == SlotKind::Text && value.eq_ignore_ascii_case(&slot.written) && !slot.written.eq_ignore_ascii_case(&slot.original))
        .then(|| slot.original.clone())
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
