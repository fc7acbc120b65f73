//! Is a new question a verified one with other values? The **template** rule: the verified
//! question with the SQL's string literals that it names (as written in the question) cut out
//! as slots: "Which cities are in ⟨'Japan'⟩?". The new question matches when every other word
//! is the same, in order (case and punctuation aside), and each slot is filled by one to
//! [`MAX_SLOT_WORDS`] words without a word that changes the question's logic ("Japan or
//! France" is not a value). The fillers then replace the literals, once the glue has resolved
//! each to a value stored in the literal's column.
//!
//! The other rule, a paraphrase (other words, the same meaning), is read in [`super::asks`].
//! Anything else is not the same question: the verified query is at most shown to the LLM as
//! an example. A wrong answer from the store is worse than an LLM call, so every rule here
//! errs towards "not the same".

use super::asks::is_number;
pub use crate::text::{question_words as words, word_stem, Word};

/// Most words one slot may take ("San Francisco Bay Area" is four).
pub const MAX_SLOT_WORDS: usize = 4;

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

#[cfg(test)]
mod tests;
