//! A follow-up that names a value in place of the turn before's, answered by the model with
//! both: the list written as the one value, and the turn's question as its SQL asked it.

use serde::Serialize;

use super::words;
use crate::sqledit::{apply, string_literals, Tokens};

/// Words of a follow-up that add a value to the turn before's, set the two side by side or ask
/// for values other than it, rather than put one in its place ("and the Italian ones too?",
/// "also in Paris", "both", "compare with Paris", "and the others?").
const ADDING: &[&str] = &[
    "also",
    "too",
    "both",
    "plus",
    "including",
    "include",
    "add",
    "or",
    "either",
    "together",
    "combined",
    "all",
    "well",
    "compare",
    "compared",
    "comparing",
    "versus",
    "vs",
    "against",
    "each",
    "per",
    "between",
    "other",
    "others",
    "rest",
    "remaining",
    "else",
    "except",
    "excluding",
    "besides",
];

/// A follow-up that names another value of the same kind answered with both: after `WHERE
/// nationality = 'French'`, "and the Italian ones?" written `nationality IN ('French',
/// 'Italian')`. The follow-up (`asked`, as the user wrote it) replaces the value ([the reading's
/// rule](rewrite_request)), so the list is written as the one value it names: `nationality =
/// 'Italian'`. Only a list (`column IN ('a', 'b', ...)`, in a condition of its own) of which the
/// follow-up writes exactly one value, every other value being a literal of `previous_sql` that
/// the follow-up does not write; or of which it writes none and `previous_sql` has exactly one,
/// the others written by neither ("How many of them are there?" after that turn, its question
/// still saying both: a follow-up edits the turn before, and a value neither gives comes from
/// nowhere). Only when the follow-up has no word that adds ("also", "too", "both", "or", ...).
/// The text replaced and written, for the trace; `None` when nothing is.
pub fn replaced_not_added(asked: &str, previous_sql: &str, sql: &str) -> Option<(String, Vec<Replacement>)> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::Token;
    let asked_words: Vec<String> = words(asked).into_iter().map(|w| w.norm).collect();
    if asked_words.iter().any(|w| ADDING.contains(&w.as_str())) {
        return None;
    }
    let written = |value: &str| {
        let v: Vec<String> = words(value).into_iter().map(|w| w.norm).collect();
        !v.is_empty() && asked_words.windows(v.len()).any(|w| w == v.as_slice())
    };
    let before = string_literals(previous_sql)?;
    let mut t = Tokens::read(sql)?;
    let mut edits: Vec<(usize, usize, Replacement)> = Vec::new();
    for k in 1..t.len() {
        if !matches!(t.at(k), Some(Token::Word(w)) if w.keyword == Keyword::IN) || !matches!(t.at(k + 1), Some(Token::LParen)) {
            continue;
        }
        let Some(s) = t.condition_column(k, &[Keyword::WHERE, Keyword::AND, Keyword::ON]) else { continue };
        // The list: strings and commas up to the closing parenthesis.
        let mut values = Vec::new();
        let mut e = k + 2;
        while let Some(Token::SingleQuotedString(v)) = t.at(e) {
            values.push((v.clone(), e));
            match t.at(e + 1) {
                Some(Token::Comma) => e += 2,
                Some(Token::RParen) => {
                    e += 1;
                    break;
                }
                _ => break,
            }
        }
        if !matches!(t.at(e), Some(Token::RParen)) || values.len() < 2 {
            continue;
        }
        let named: Vec<&(String, usize)> = values.iter().filter(|(v, _)| written(v)).collect();
        let (kept, kept_at) = match named.as_slice() {
            // The value the follow-up names, the others the turn before's.
            [(new, at)] if values.iter().filter(|(v, _)| v != new).all(|(v, _)| before.contains(v) && !written(v)) => (new, *at),
            // None named: the one value of the turn before's SQL, the others from neither.
            [] => match values.iter().filter(|(v, _)| before.contains(v)).collect::<Vec<_>>().as_slice() {
                [(kept, at)] => (kept, *at),
                _ => continue,
            },
            _ => continue,
        };
        let (_, _, column) = t.text(s, k - 1);
        let (_, _, value) = t.text(kept_at, kept_at);
        let to = format!("{column} = {value}");
        let (start, end, from) = t.text(s, e);
        let dropped = values.iter().filter(|(v, _)| v != kept).map(|(v, _)| v.clone()).collect();
        edits.push((start, end, Replacement { from: from.to_string(), to, kept: kept.clone(), dropped }));
    }
    if edits.is_empty() {
        return None;
    }
    let out = apply(sql, &edits.iter().map(|(start, end, r)| (*start, *end, r.to.as_str())).collect::<Vec<_>>());
    Some((out, edits.into_iter().map(|(_, _, r)| r).collect()))
}

/// One list [`replaced_not_added`] wrote as one value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replacement {
    /// The text replaced (`nationality IN ('French', 'Italian')`).
    pub from: String,
    /// The text written (`nationality = 'Italian'`).
    pub to: String,
    /// The value the follow-up names.
    pub kept: String,
    /// The turn before's values left out.
    pub dropped: Vec<String>,
}

/// `standalone` (a follow-up's rewrite) with the values `dropped` left out where it joins them to
/// `kept` ("French and Italian", "Italian or French", "both French and Italian", "French,
/// Italian" → "Italian"), so that the turn says what its SQL asked after
/// [`replaced_not_added`]; `None` when it joins them in no such way.
pub fn without_values(standalone: &str, dropped: &[String], kept: &str) -> Option<String> {
    let mut out = standalone.to_string();
    let mut changed = false;
    for old in dropped {
        let joined = [
            format!("both {old} and {kept}"),
            format!("both {kept} and {old}"),
            format!("{old} and {kept}"),
            format!("{kept} and {old}"),
            format!("{old} or {kept}"),
            format!("{kept} or {old}"),
            format!("{old}, {kept}"),
            format!("{kept}, {old}"),
        ];
        let lower = out.to_lowercase();
        if let Some(at) = joined.iter().find_map(|j| lower.find(&j.to_lowercase()).map(|i| (i, j.len()))) {
            let (i, n) = at;
            out.replace_range(i..i + n, kept);
            changed = true;
        }
    }
    changed.then_some(out)
}
