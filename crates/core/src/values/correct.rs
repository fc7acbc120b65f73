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
use super::prompt::{correction_request, parse_correction_checked, read_choices, LiteralQuestion};
use super::rewrite::{rewrite_checked, Replacement};
use crate::guard::CheckedSql;
use crate::llm::ChatRequest;

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
    /// The value-correction request for the literals left open, if any.
    pub fn request(&self) -> Option<ChatRequest> {
        (!self.questions.is_empty()).then(|| correction_request(&self.statement.sql, &self.questions))
    }

    /// Take the LLM's reply to [`Decided::request`]: stored values chosen per literal (a
    /// structured reply), written in with the rules' own replacements, or a corrected
    /// statement of the same structure. A reply that is neither is recorded and changes
    /// nothing.
    pub fn with_reply(&mut self, original: &CheckedSql, reply: &str) {
        match read_choices(reply, &self.questions) {
            Some(choices) => {
                self.traces.push(json!({"llm_choices": choices, "read": "structured"}));
                let chosen = self.asked.iter().zip(&choices).filter_map(|(lit, c)| c.as_deref().map(|v| Replacement::for_literal(lit, v)));
                self.replacements.extend(chosen);
                if !self.replacements.is_empty() {
                    match rewrite_checked(original, &self.replacements) {
                        Ok(statement) => self.statement = statement,
                        Err(e) => self.traces.push(json!({"llm_correction_rejected": e.to_string()})),
                    }
                }
            }
            None => match parse_correction_checked(&self.statement, reply) {
                Ok(fixed) => self.statement = fixed,
                Err(e) => self.traces.push(json!({"llm_correction_rejected": e.to_string()})),
            },
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
