//! The verified path: a question that is a verified one is answered by its verified query,
//! without the LLM.

use std::time::Instant;

use serde_json::json;

use super::host::{ExecFailure, Host};
use super::outcome::{Goal, Produced};
use super::stage;
use crate::config::{AskConfig, VerifiedUse};
use crate::guard::check_read_only;
use crate::prompt::AnswerDecision;
use crate::trace::{ms_since, StageTrace, Trace};
use crate::verified::{self, Candidate, Decision};

/// Answer from a verified query when one of `candidates` is `question` ([`verified::decide`]):
/// its SQL (with the question's values written in) goes through the parse-level guard and
/// runs, and its rows are the answer: no LLM call. Every candidate's decision is recorded;
/// `None` (generate as usual) when none is the question, or its SQL no longer runs.
pub(super) fn from_verified(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    candidates: &[Candidate],
    cfg: &AskConfig,
    goal: Goal,
) -> Option<Produced> {
    let t = Instant::now();
    let mut decisions = Vec::new();
    let mut found = None;
    for cand in candidates {
        let mut d = json!({"id": cand.id, "cosine": cand.cosine, "trigram": cand.trigram});
        if cfg.verified != VerifiedUse::On {
            decisions.push(d);
            continue;
        }
        // An untrusted verifier's query is an example whatever its literals: not read.
        let literals = match if cand.trusted { host.literals_of(&cand.sql, cand.schema.as_deref()) } else { Ok(Vec::new()) } {
            Ok(l) => l,
            Err(e) => {
                d["decision"] = json!("example");
                d["why"] = json!(format!("its literals could not be read: {e}"));
                decisions.push(d);
                continue;
            }
        };
        match verified::decide(question, cand, &literals, cfg.verified_min_cosine, &mut |lit, text| {
            host.stored_value(lit, text).map_err(|e| e.to_string())
        }) {
            Decision::Example { why } => {
                d["decision"] = json!("example");
                d["why"] = json!(why);
                decisions.push(d);
            }
            Decision::Answer { rule, sql, substituted } => {
                let ran = match check_read_only(&sql) {
                    Ok(checked) => host.execute_verified(&checked.sql, cand.schema.as_deref()).map(|rs| (checked.sql, rs)),
                    Err(refusal) => Err(ExecFailure::Refused { reason: refusal.to_string() }),
                };
                match ran {
                    Ok((sql, rs)) => {
                        d = json!({
                            "source": "verified", "id": cand.id, "rule": rule, "verified_by": cand.verified_by,
                            "question": cand.question, "sql": sql, "cosine": cand.cosine, "trigram": cand.trigram,
                            "rows": rs.rows.len(),
                        });
                        if !substituted.is_empty() {
                            d["substituted"] = json!(substituted);
                        }
                        decisions.push(d);
                        found = Some((cand.id, sql, rs));
                        break;
                    }
                    Err(f) => {
                        d["decision"] = json!("failed");
                        d["why"] = json!(f.for_llm());
                        decisions.push(d);
                    }
                }
            }
        }
    }
    let mut st = StageTrace::new(stage::VERIFIED, json!({"question": question, "retrieved": candidates.len()}));
    st.ms = ms_since(t);
    match &found {
        Some(_) => st.output = decisions.pop().unwrap_or_default(),
        None => st.output = json!({"candidates": decisions}),
    }
    trace.push(st);
    let (id, sql, rs) = found?;
    trace.source = Some("verified");
    trace.verified_id = Some(id);
    let answer = (goal == Goal::Answer).then_some(AnswerDecision::Rows);
    Some((sql, rs, answer))
}
