//! The verified path: a question that is a verified one is answered by its verified query,
//! without the LLM; otherwise the model may choose a verified template near the question and
//! fill its slots ([`from_template`]).

use std::time::Instant;

use serde_json::json;

use super::answer::without_model;
use super::call::call;
use super::host::{ExecFailure, Host};
use super::outcome::{AskError, Goal, Produced};
use super::stage;
use crate::config::{AskConfig, TemplateChoice, VerifiedUse};
use crate::guard::check_read_only;
use crate::llm::LlmError;
use crate::trace::{ms_since, Source, StageTrace, Trace};
use crate::verified::asks;
use crate::verified::choose::{self, Choice, Offer, SlotKind};
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
                    Ok(checked) => host.execute_verified(&checked, cand.schema.as_deref()).map(|rs| (checked.sql, rs)),
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
    trace.source = Some(Source::Verified);
    trace.verified_id = Some(id);
    trace.verified_used.push(id);
    let answer = without_model(trace, &rs, goal);
    Some((sql, rs, answer))
}

/// A verified query offered as a template: the candidate and its SQL's string literals (its
/// template is at the same index of the offers).
type Offered<'a> = (&'a Candidate, Vec<crate::values::literals::LiteralRef>);

/// The template step: the trusted verified queries near `question` are offered to the model as
/// templates, under a constraint that allows exactly them and "none"; a choice that holds
/// ([`asks::doubt`]) is filled in, guarded and run, and its rows are the answer. `Ok(None)`
/// (generate as usual, the candidates as examples) when nothing is offered, the model chose
/// none, the choice is doubted, or its SQL does not run. A call the server fails (unreachable,
/// timed out, HTTP 429 or 5xx) or that is cancelled ends the question with its error, as
/// generation would; any other failed call is recorded and the question goes on.
pub(super) fn from_template(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    candidates: &[Candidate],
    cfg: &AskConfig,
    goal: Goal,
) -> Result<Option<Produced>, AskError> {
    let Some(constraint) = cfg.template_choice.filter(|_| cfg.verified == VerifiedUse::On) else {
        return Ok(None);
    };
    let t = Instant::now();
    let (mut offered, mut offers): (Vec<Offered<'_>>, Vec<Offer>) = (Vec::new(), Vec::new());
    // The readable tables, read once, when a verified question names a value by another name.
    let mut tables: Option<Vec<crate::schema::Table>> = None;
    for cand in candidates.iter().filter(|c| choose::worth_offering(c)) {
        if offered.len() == choose::MAX_TEMPLATES {
            break;
        }
        if let Ok(literals) = host.literals_of(&cand.sql, cand.schema.as_deref()) {
            let alias = confirmed_alias(host, &mut tables, cand, &literals);
            offers.push(choose::offer(cand, &literals, alias));
            offered.push((cand, literals));
        }
    }
    if offered.is_empty() {
        return Ok(None);
    }
    let req = choose::request(question, &offers, constraint == TemplateChoice::Grammar);
    let reply = match call(host, trace, stage::TEMPLATE, None, &req, cfg.max_prompt_tokens) {
        Ok(r) => r,
        // The server is unreachable, failing or the call was cancelled: generation would meet
        // the same, so the question ends here, with that error.
        Err(e @ AskError::Llm { source: LlmError::Connect { .. } | LlmError::Timeout { .. } | LlmError::Interrupted, .. }) => {
            return Err(e)
        }
        Err(e @ AskError::Llm { source: LlmError::Http { status: 429 | 500..=599, .. }, .. }) => return Err(e),
        // A reply that is no choice, a constraint the server refused, a prompt over the
        // bound: recorded, and the question goes on.
        Err(e) => {
            note(trace, &offers, constraint, t, json!({"choice": "none", "why": format!("the choice could not be asked: {e}")}));
            return Ok(None);
        }
    };
    let decided = decide_choice(host, question, &offered, &offers, &reply);
    let note = |trace: &mut Trace, output: serde_json::Value| note(trace, &offers, constraint, t, output);
    let (index, sql, chosen) = match decided {
        Ok(Some(chosen)) => chosen,
        Ok(None) => {
            note(trace, json!({"choice": "none"}));
            return Ok(None);
        }
        Err((choice, why)) => {
            note(trace, json!({"choice": choice, "taken": false, "why": why}));
            return Ok(None);
        }
    };
    let (cand, _) = &offered[index];
    let ran = match check_read_only(&sql) {
        Ok(checked) => host.execute_verified(&checked, cand.schema.as_deref()).map(|rs| (checked.sql, rs)),
        Err(refusal) => Err(ExecFailure::Refused { reason: refusal.to_string() }),
    };
    match ran {
        Ok((sql, rs)) => {
            note(trace, json!({"choice": chosen, "taken": true, "sql": sql, "rows": rs.rows.len(), "verified_by": cand.verified_by}));
            trace.source = Some(Source::VerifiedTemplate);
            trace.verified_id = Some(cand.id);
            let answer = without_model(trace, &rs, goal);
            Ok(Some((sql, rs, answer)))
        }
        Err(f) => {
            note(trace, json!({"choice": chosen, "taken": false, "sql": sql, "why": f.for_llm()}));
            Ok(None)
        }
    }
}

/// [`choose::alias_candidate`], confirmed: the row the literal's value identifies, in the
/// table its column references, holds the question's name in another text column
/// ("Louisiana" beside `code = 'LA'` in `states`, which `cities.state_code` references). The
/// lookup is by the referenced key (unique, so indexed), runs as the caller through the
/// guard, and any failure is no alias. `tables` are the readable tables, read on first need.
fn confirmed_alias(
    host: &mut dyn Host,
    tables: &mut Option<Vec<crate::schema::Table>>,
    cand: &Candidate,
    literals: &[crate::values::literals::LiteralRef],
) -> Option<(usize, (usize, usize))> {
    use crate::sqltext::{quote_ident, quote_literal};
    let (index, at, name) = choose::alias_candidate(cand, literals)?;
    let lit = &literals[index];
    if tables.is_none() {
        *tables = Some(host.schema_text().map(|t| crate::schema::parse_rendered(&t)).unwrap_or_default());
    }
    let tables = tables.as_deref().unwrap_or_default();
    let unquoted = |n: &str| n.trim_matches('"').to_string();
    let own = lit.table.to_string();
    // (referenced table, referenced column) of each foreign key on the literal's column.
    let mut referenced: Vec<(String, String)> = Vec::new();
    for t in tables.iter().filter(|t| t.qualified() == own) {
        for fk in &t.foreign_keys {
            if let Some(k) = fk.columns.iter().position(|c| unquoted(c) == lit.column) {
                if let Some(rc) = fk.ref_columns.get(k) {
                    referenced.push((fk.references.clone(), unquoted(rc)));
                }
            }
        }
    }
    for (table, column) in referenced {
        let Some(t) = tables.iter().find(|t| t.qualified() == table) else { continue };
        let others: Vec<String> =
            t.columns.iter().filter(|c| unquoted(&c.name) != column && is_text(c)).map(|c| quote_ident(&unquoted(&c.name))).collect();
        if others.is_empty() {
            continue;
        }
        let sql = format!(
            "SELECT 1 FROM {table} WHERE {} = {} AND {} IN ({}) LIMIT 1",
            quote_ident(&column),
            quote_literal(&lit.value),
            quote_literal(&name),
            others.join(", ")
        );
        let found = check_read_only(&sql)
            .is_ok_and(|probe| host.execute_verified(&probe, cand.schema.as_deref()).is_ok_and(|rs| !rs.rows.is_empty()));
        if found {
            return Some((index, at));
        }
    }
    None
}

/// Writes into the template call's own stage what was offered, under which constraint, and
/// `output` (the choice, whether it was taken, why not, or the SQL that ran).
fn note(trace: &mut Trace, offers: &[Offer], constraint: TemplateChoice, t: Instant, output: serde_json::Value) {
    trace.templates_offered = offers.iter().map(|o| o.id).collect();
    if let Some(st) = trace.stages.iter_mut().rev().find(|s| s.stage == stage::TEMPLATE) {
        st.input["offered"] = json!(offers);
        st.input["constraint"] = json!(match constraint {
            TemplateChoice::Grammar => "grammar",
            TemplateChoice::JsonSchema => "json_schema",
        });
        if let (Some(o), serde_json::Value::Object(add)) = (st.output.as_object_mut(), output) {
            o.extend(add);
        }
        st.ms = ms_since(t);
    }
}

/// A choice that holds: the offer's index, the filled SQL, and what was chosen.
type Taken = (usize, String, serde_json::Value);

/// The model's reply as a choice: `Ok(Some((offer index, filled SQL, what was chosen)))` when
/// it holds, `Ok(None)` for "none", `Err((what was chosen, why it is not taken))` otherwise.
/// What was chosen: the template's id and each slot's kind and value.
fn decide_choice(
    host: &mut dyn Host,
    question: &str,
    offered: &[Offered<'_>],
    offers: &[Offer],
    reply: &str,
) -> Result<Option<Taken>, (serde_json::Value, String)> {
    let (index, values) = match choose::parse(reply, offers) {
        Choice::None => return Ok(None),
        Choice::Unreadable(why) => return Err((json!("unreadable"), why)),
        Choice::Template { index, values } => (index, values),
    };
    let ((cand, literals), offer) = (&offered[index], &offers[index]);
    let chosen = json!({"id": offer.id, "slots": offer.slots.iter().zip(&values).map(|(s, v)| json!({"slot": s.name, "kind": s.kind, "value": v})).collect::<Vec<_>>()});
    // The readable tables and their columns: the names a question may use for another table
    // or column than the template's.
    let tables = host.schema_text().map(|text| crate::schema::parse_rendered(&text)).unwrap_or_default();
    let names: Vec<String> = tables
        .iter()
        .flat_map(|t| std::iter::once(t.name.trim_matches('"').to_string()).chain(t.columns.iter().map(|c| c.name.clone())))
        .collect();
    if let Some(why) = asks::doubt(question, &cand.question, offer, &values, &names) {
        return Err((chosen, why));
    }
    // A word the template does not hold that is a word of a value stored in a column of its
    // tables is another condition ("pastry chefs": 'pastry chef').
    let extra = asks::new_words(question, &cand.question, offer, &values);
    if !extra.is_empty() {
        let sql_words: Vec<String> = crate::text::question_words(&cand.sql).into_iter().map(|w| w.norm).collect();
        let own = tables.iter().filter(|t| sql_words.contains(&t.name.trim_matches('"').to_lowercase()));
        if let Some((w, table, column)) = stored_word(host, &extra, own) {
            return Err((chosen, format!("{w:?} is a word of a value of {table}.{column}, which the template does not name")));
        }
    }
    let mut stored = Vec::new();
    for (s, v) in offer.slots.iter().zip(&values) {
        let lit = s.literal.and_then(|i| literals.get(i));
        if let Some(value) = choose::verified_spelling(s, v) {
            stored.push(Some(value));
            continue;
        }
        match (s.kind, lit) {
            (SlotKind::Text, Some(lit)) => match host.stored_value(lit, v) {
                Ok(Some(value)) => stored.push(Some(value)),
                Ok(None) => return Err((chosen, format!("{v:?} is not a value the memory knows in {}.{}", lit.table, lit.column))),
                Err(e) => return Err((chosen, format!("could not resolve {v:?}: {e}"))),
            },
            _ => stored.push(None),
        }
    }
    let sql = choose::fill(&cand.sql, offer, literals, &values, &stored).map_err(|why| (chosen.clone(), why))?;
    // A name of the question that the filled SQL does not hold, stored in any readable table.
    // The values as the question writes them are held too ("LA" for 'Los Angeles').
    let held: Vec<String> = values.iter().cloned().chain(asks::written_forms(question, offer, &values)).collect();
    let names = asks::unheld_names(question, &held, &sql);
    if let Some((w, table, column)) = stored_word(host, &names, tables.iter()) {
        return Err((chosen, format!("{w:?} is a value of {table}.{column}, which the template's SQL does not hold")));
    }
    Ok(Some((index, sql, chosen)))
}

/// The first of `words` that the value memory holds as a value of a text column of `tables`,
/// or as a word of one: the word, its table and column.
fn stored_word<'t>(
    host: &mut dyn Host,
    words: &[String],
    tables: impl Iterator<Item = &'t crate::schema::Table>,
) -> Option<(String, String, String)> {
    if words.is_empty() {
        return None;
    }
    for t in tables {
        let texts: Vec<&str> = t.columns.iter().filter(|c| is_text(c)).map(|c| c.name.as_str()).collect();
        if texts.is_empty() {
            continue;
        }
        let probe = format!(
            "SELECT 1 FROM {}.{} WHERE {}",
            t.schema,
            t.name,
            texts
                .iter()
                .flat_map(|c| words.iter().map(move |w| format!("{c} = {}", crate::sqltext::quote_literal(w))))
                .collect::<Vec<_>>()
                .join(" OR ")
        );
        let Ok(probe) = check_read_only(&probe) else { continue };
        for looked in host.literal_evidence(&probe).unwrap_or_default() {
            if let crate::values::correct::ColumnEvidence::Found { evidence, .. } = &looked.column {
                let w = &looked.literal.value;
                let in_value =
                    |v: &str| crate::text::question_words(v).iter().any(|x| x.norm == *w || crate::text::word_stem(&x.norm) == *w);
                if evidence.exact || evidence.case_insensitive.is_some() || evidence.candidates.iter().any(|k| in_value(&k.value)) {
                    return Some((w.clone(), t.name.trim_matches('"').to_string(), looked.literal.column.clone()));
                }
            }
        }
    }
    None
}

/// Whether a described column holds text (`text`, `varchar`, `char`).
fn is_text(c: &crate::schema::Column) -> bool {
    c.data_type.contains("text") || c.data_type.contains("char")
}
