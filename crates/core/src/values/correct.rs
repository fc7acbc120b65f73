//! Value correction of one statement, decided here from what the host looked up: for each
//! literal the evidence of its column (an enum's labels, the value memory's candidates), then
//! the rules of [`decide`], the replacements they make, and for the literals the rules leave
//! open one LLM call with the value-correction prompt, whose answer is taken only as stored
//! values written in by [`rewrite_checked`] or as SQL of the same structure ([`parse_correction_checked`]).
//!
//! The host ([`crate::ask::Memory::literal_evidence`]) only looks things up; the LLM call goes
//! through [`crate::ask::Llm::chat`], so it is in the trace and its call count.

use serde_json::{json, Value};

use super::decide::{decide, Comparison, Decision, Evidence};
use super::literals::LiteralRef;
use super::prompt::{correction_request, parse_correction_checked, read_value, CorrectionError, LiteralQuestion};
use super::rewrite::{rewrite_checked, Replacement};
use crate::guard::CheckedSql;
use crate::llm::ChatRequest;

/// Literals of one statement put to the LLM at most (one call each).
pub const MAX_ASKED: usize = 4;

/// What the host found for the column of one literal.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnEvidence {
    /// A `LIKE` pattern compared with an enum: left as written.
    EnumPattern,
    /// The column is neither an enum nor in the value memory (or the caller may not use it).
    NotIndexed,
    /// What the enum's labels (`from_enum`) or the value memory hold like the literal;
    /// `embeddings_unused` says why the literal was matched by trigrams only, when it was.
    Found { evidence: Evidence, from_enum: bool, embeddings_unused: Option<String> },
}

/// One literal of the statement, with its column's evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Looked {
    pub literal: LiteralRef,
    pub column: ColumnEvidence,
}

/// A stored value the LLM wrote for one of the literals it was asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The literal's place among those asked.
    asked: usize,
    /// The stored value.
    pub value: String,
}

/// The rules' decisions on a statement's literals, before the LLM.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The statement with the rules' replacements made, checked by the guard.
    pub statement: CheckedSql,
    /// The replacements the rules made, for writing the LLM's choices in beside them.
    replacements: Vec<Replacement>,
    /// The literals the rules leave to the LLM, and (in the same order) the question put for each.
    asked: Vec<LiteralRef>,
    questions: Vec<LiteralQuestion>,
    /// Every literal and the decision on it, for the trace.
    pub traces: Vec<Value>,
    /// What the caller should be told (a literal matched by trigrams only, and why).
    pub notices: Vec<String>,
}

impl Decided {
    /// The value-correction requests for the literals left open, one each (at most
    /// [`MAX_ASKED`]; the literals after them are kept).
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.questions.iter().take(MAX_ASKED).map(correction_request).collect()
    }

    /// Read the LLM's replies to [`Decided::requests`] (`None`: no reply): the value each
    /// writes, kept when it is one of the values listed for it or when `stored` (the host's
    /// look at the literal's column) finds the column holds it, as the column spells it. A
    /// reply that is SQL is taken as a corrected statement of the same structure instead. The
    /// values, to be written in by [`Decided::apply`].
    pub fn read_replies(
        &mut self,
        replies: &[Option<String>],
        stored: &mut dyn FnMut(&LiteralRef, &str) -> Option<String>,
    ) -> Vec<Proposal> {
        let mut proposed = Vec::new();
        let mut written = Vec::new();
        for (i, reply) in replies.iter().enumerate() {
            let Some(reply) = reply else {
                written.push(Value::Null);
                continue;
            };
            match parse_correction_checked(&self.statement, reply) {
                Err(CorrectionError::NoSql) => {}
                Ok(fixed) => {
                    self.statement = fixed;
                    written.push(json!({"sql": true}));
                    continue;
                }
                Err(e) => {
                    self.traces.push(json!({"llm_correction_rejected": e.to_string()}));
                    written.push(json!({"sql": true}));
                    continue;
                }
            }
            let lit = &self.asked[i];
            let value = read_value(reply);
            // A listed value is stored as listed (in the case it was listed in); any other is
            // looked up in the column. The literal itself is not stored (the rules keep a
            // stored one), so neither returns it.
            let listed = |v: &str| {
                let q = &self.questions[i].candidates;
                q.iter().find(|c| *c == v).or_else(|| q.iter().find(|c| c.to_lowercase() == v.to_lowercase())).cloned()
            };
            let found = value.as_deref().filter(|v| *v != lit.value).and_then(|v| listed(v).or_else(|| stored(lit, v)));
            written.push(json!({"wrote": value, "stored": found}));
            if let Some(value) = found {
                proposed.push(Proposal { asked: i, value });
            }
        }
        self.traces.push(json!({"llm_values": written}));
        proposed
    }

    /// Write the values read from the replies in beside the rules' own replacements.
    pub fn apply(&mut self, original: &CheckedSql, proposed: &[Proposal]) {
        for p in proposed {
            self.replacements.push(Replacement::for_literal(&self.asked[p.asked], &p.value));
        }
        if !proposed.is_empty() {
            match rewrite_checked(original, &self.replacements) {
                Ok(statement) => self.statement = statement,
                Err(e) => self.traces.push(json!({"llm_correction_rejected": e.to_string()})),
            }
        }
    }

    /// A failed LLM call: recorded; the rules' replacements stand.
    pub fn with_failure(&mut self, why: impl std::fmt::Display) {
        self.traces.push(json!({"llm_correction_failed": why.to_string()}));
    }
}

/// The rules' decision on every literal of `checked`, and the statement with their
/// replacements (checked again by the guard, without a parse).
pub fn decide_all(checked: &CheckedSql, looked: &[Looked]) -> Result<Decided, String> {
    let mut replacements = Vec::new();
    let mut asked = Vec::new();
    let mut questions = Vec::new();
    let mut traces = Vec::new();
    let mut notices = Vec::new();
    for Looked { literal: lit, column } in looked {
        let name = format!("{}.{}", lit.table, lit.column);
        let (ev, from_enum, note) = match column {
            ColumnEvidence::EnumPattern => {
                traces.push(json!({"literal": lit.value, "column": name, "decision": "enum_pattern"}));
                continue;
            }
            ColumnEvidence::NotIndexed => {
                traces.push(json!({"literal": lit.value, "column": name, "decision": "not_indexed"}));
                continue;
            }
            ColumnEvidence::Found { evidence, from_enum, embeddings_unused } => (evidence, *from_enum, embeddings_unused),
        };
        if let Some(why) = note {
            notices
                .push(format!("pg_ask: literal {} of {name} matched by trigrams only: {why}", crate::sqltext::quote_literal(&lit.value)));
        }
        let t = decide(ev, Comparison::from(&lit.kind));
        match &t.decision {
            Decision::Replace { value, .. } => replacements.push(Replacement::for_literal(lit, value)),
            Decision::AskLlm { candidates } => {
                asked.push(lit.clone());
                questions.push(LiteralQuestion {
                    literal: ev.literal.clone(),
                    table: lit.table.clone(),
                    column: lit.column.clone(),
                    candidates: candidates.clone(),
                });
            }
            Decision::Keep { .. } => {}
        }
        let mut tv = serde_json::to_value(&t).unwrap_or(Value::Null);
        tv["column"] = json!(name);
        if from_enum {
            tv["source"] = json!("enum_labels");
        }
        if let Some(why) = note {
            tv["embeddings_unused"] = json!(why);
        }
        traces.push(tv);
    }
    let statement = rewrite_checked(checked, &replacements).map_err(|e| e.to_string())?;
    Ok(Decided { statement, replacements, asked, questions, traces, notices })
}
