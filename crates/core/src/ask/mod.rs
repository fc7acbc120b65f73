//! The text-to-SQL pipeline behind `ask()`: generate SQL, check it, execute it, repair it from
//! errors, answer. Everything that touches PostgreSQL or the network is behind [`Host`], so the
//! pipeline runs in plain unit tests with a scripted host.
//!
//! A run takes one of three ways: a question that is a verified one is answered by its query
//! (`from_verified`); one over a single description is generated and repaired (`generate`,
//! `execute`), then answered (`answer`); one over several candidate schemas goes through a
//! retrieval plan (`plan`).

mod answer;
mod calendar;
mod call;
mod execute;
mod fan_out;
mod fraction;
mod from_verified;
mod generate;
mod host;
mod named_column;
mod named_table;
mod nulls_last;
mod outcome;
mod plan;
pub mod quoted;
mod repair_hint;
mod shape;
pub mod stage;
mod unasked;
mod vote;
mod whole_year;

use std::time::Instant;

use serde_json::{json, Value};

use crate::clarify;
use crate::config::{AskConfig, VerifiedUse};
use crate::constrain::schemas::Shape;
use crate::conversation::{self, Reading, Turn};
use crate::prompt::AnswerDecision;
use crate::rows::ResultSet;
use crate::schema::count_rendered_tables;
use crate::selection::context::{context_request, parse_context, ContextDecision};
use crate::trace::{ms_since, Source, StageTrace, Trace};
use crate::verified::{self, Candidate};

use answer::answer;
use call::call;
use from_verified::{from_template, from_verified};
use generate::{generate_and_run, Examples};
use outcome::Produced;
use plan::run_plan;

pub use execute::correct_statement;
pub use generate::grammar_rules_out;
pub use host::{Catalog, Correction, ExecFailure, Executor, Host, HostError, Llm, Memory, NoMemory, Question, SchemaCandidate, Selection};
pub use outcome::{AskError, Goal, Outcome};

/// Run the pipeline for `question` up to `goal`. On failure the trace so far comes back with
/// the error, so `ask.explain()` can show where it stopped.
// The trace comes back with the error (ask.explain() shows where a run stopped): once per
// question, so its size on the stack costs nothing worth a box.
#[allow(clippy::result_large_err)]
pub fn run(host: &mut dyn Host, question: &str, cfg: &AskConfig, goal: Goal) -> Result<Outcome, (AskError, Trace)> {
    run_with_context(host, question, None, cfg, goal)
}

/// [`run`] with a context the question may be answered from. With a non-empty `context` and
/// [`Goal::Answer`], the LLM first decides whether the context answers the question (the
/// context switch); when it does, that answer is the outcome and no SQL runs. Otherwise, and
/// for the other goals, the context is ignored.
#[allow(clippy::result_large_err)]
pub fn run_with_context(
    host: &mut dyn Host,
    question: &str,
    context: Option<&str>,
    cfg: &AskConfig,
    goal: Goal,
) -> Result<Outcome, (AskError, Trace)> {
    run_in_conversation(host, question, &[], context, cfg, goal)
}

/// [`run_with_context`] for a question asked in a conversation whose earlier turns are
/// `history` (oldest first): a follow-up is rewritten into a standalone question and answered
/// as that, generation shown the previous turn's SQL to edit ([`crate::conversation`]); the
/// trace's `reading` says how it was read.
#[allow(clippy::result_large_err)]
pub fn run_in_conversation(
    host: &mut dyn Host,
    question: &str,
    history: &[Turn],
    context: Option<&str>,
    cfg: &AskConfig,
    goal: Goal,
) -> Result<Outcome, (AskError, Trace)> {
    let started = Instant::now();
    let mut trace = Trace { question: question.to_string(), record_prompts: cfg.record_prompts, ..Default::default() };
    let result = read_in_conversation(host, &mut trace, question, history, cfg).and_then(|(reading, read)| {
        let previous = match &reading {
            Reading::Rewritten { edits_sql: Some(sql), .. } => history.last().map(|t| (t.standalone.clone(), sql.clone())),
            _ => None,
        };
        // The question as the reading embedded it, when it is the one answered.
        let asked = read.filter(|q| q.text() == reading.question(question)).unwrap_or_else(|| Question::new(reading.question(question)));
        if !history.is_empty() {
            trace.reading = Some(reading);
        }
        run_inner(host, asked, context, cfg, goal, &mut trace, previous)
    });
    trace.ms = ms_since(started);
    match result {
        Ok((sql, result, answer)) => {
            trace.final_sql = Some(sql.clone());
            Ok(Outcome { sql, result, answer, trace })
        }
        Err(e) => {
            trace.error = Some(e.to_json());
            Err((e, trace))
        }
    }
}

/// How `question` reads after `history`: a question that names a table of its own
/// ([`conversation::names_another_table`]) stands alone; every other later question goes to the
/// model, recorded as the `follow_up` stage; it is a follow-up, answered as the model's
/// standalone question, when that took a word from the turn before
/// ([`conversation::read_rewrite`]). A rewrite that is no question leaves the question as it
/// stands. With the reading, the question as the table names' selection embedded it, if it did.
fn read_in_conversation(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    history: &[Turn],
    cfg: &AskConfig,
) -> Result<(Reading, Option<Question>), AskError> {
    if let Some(reading) = conversation::read_without_llm(history) {
        return Ok((reading, None));
    }
    let Some(last) = history.last() else { return Ok((Reading::Standalone, None)) };
    let t = Instant::now();
    let signals = conversation::follow_up_signals(question);
    let mut read = None;
    if signals.is_empty() {
        let asked = Question::new(question);
        let tables = readable_table_names(host, &asked)?;
        if let Some(table) = conversation::names_another_table(question, last, &signals, &tables) {
            let mut st = StageTrace::new(stage::FOLLOW_UP, json!({"question": question, "after_turn": last.turn}));
            st.output = json!({"reading": "standalone", "signals": signals, "names": table,
                "why": "it names a table the turn before neither read nor named"});
            st.ms = ms_since(t);
            trace.push(st);
            return Ok((Reading::Standalone, Some(asked)));
        }
        read = Some(asked);
    }
    let req = conversation::rewrite_request(question, history);
    let reply = call(host, trace, stage::FOLLOW_UP, None, &req, cfg.max_prompt_tokens)?;
    let (reading, output) = match conversation::parse_rewrite(&reply) {
        Ok(standalone) => {
            let r = conversation::read_rewrite(question, last, standalone.clone(), signals.clone());
            let out = match &r {
                Reading::Rewritten { .. } => serde_json::to_value(&r).unwrap_or_default(),
                Reading::Standalone => json!({"reading": "standalone", "signals": signals, "rewrite": standalone,
                    "why": "the rewrite took nothing from the turn before"}),
            };
            (r, out)
        }
        Err(why) => (Reading::Standalone, json!({"reading": "standalone", "signals": signals, "why": why})),
    };
    if let Some(st) = trace.stages.iter_mut().rev().find(|s| s.stage == stage::FOLLOW_UP) {
        if let (Some(o), Value::Object(add)) = (st.output.as_object_mut(), output) {
            o.extend(add);
        }
        st.ms = ms_since(t);
    }
    Ok((reading, read))
}

/// The names of the tables `question` may read: those the schema selection memory picks for it,
/// or every readable table when no memory was built.
fn readable_table_names(host: &mut dyn Host, question: &Question) -> Result<Vec<String>, AskError> {
    let described = match host.select_tables(question).map_err(AskError::Host)? {
        Some(selection) => selection.candidates.iter().map(|c| c.tables.clone()).collect::<Vec<_>>().join("\n"),
        None => host.schema_text().map_err(AskError::Host)?,
    };
    Ok(crate::schema::parse_rendered(&described).into_iter().map(|t| t.name).collect())
}

fn run_inner(
    host: &mut dyn Host,
    asked: Question,
    context: Option<&str>,
    cfg: &AskConfig,
    goal: Goal,
    trace: &mut Trace,
    previous: Option<(String, String)>,
) -> Result<Produced, AskError> {
    let question = asked.text();
    if question.trim().is_empty() {
        return Err(AskError::EmptyQuestion);
    }
    if let (Some(ctx), Goal::Answer) = (context.filter(|c| !c.trim().is_empty()), goal) {
        let req = context_request(question, ctx);
        let reply = call(host, trace, stage::CONTEXT, None, &req, cfg.max_prompt_tokens)?;
        let decision = parse_context(&trace.read_shaped(Shape::Context, &reply));
        let mut st = StageTrace::new(stage::CONTEXT, json!({"decision_of": "the reply above"}));
        st.output = serde_json::to_value(&decision).unwrap_or_default();
        trace.push(st);
        if let ContextDecision::Answered { answer } = decision {
            trace.source = Some(Source::Context);
            return Ok((String::new(), ResultSet::default(), Some(AnswerDecision::Text(answer))));
        }
    }

    // `asked`: the question, embedded at most once for the verified queries and the selection
    // below (and for a later question of a conversation, the reading's look at its tables).
    // Verified queries of similar questions: one of them may be this question (answered
    // without the LLM); the best others are shown to the LLM as examples.
    let candidates = match cfg.verified {
        VerifiedUse::Off => Vec::new(),
        _ => host.verified(&asked).map_err(AskError::Host)?,
    };
    if !candidates.is_empty() {
        if let Some(done) = from_verified(host, trace, question, &candidates, cfg, goal) {
            return Ok(done);
        }
        if let Some(done) = from_template(host, trace, question, &candidates, cfg, goal)? {
            return Ok(done);
        }
    }
    let shown: Vec<&Candidate> = candidates.iter().filter(|c| c.worth_showing()).take(verified::MAX_EXAMPLES).collect();
    if let Some(st) = trace.stages.iter_mut().rev().find(|s| s.stage == stage::VERIFIED) {
        st.output["examples"] = json!(shown.iter().map(|c| c.id).collect::<Vec<_>>());
        trace.verified_used.extend(shown.iter().map(|c| c.id));
    }
    let mut examples =
        Examples { verified: shown.iter().map(|c| (c.question.clone(), c.sql.clone())).collect(), previous, knowledge: Vec::new() };
    trace.source = Some(Source::Llm);

    let t = Instant::now();
    let selection = host.select_tables(&asked).map_err(AskError::Host)?;
    let selection = match selection {
        Some(sel) => {
            let mut st = StageTrace::new(stage::SELECT, json!({"question": question}));
            st.output = sel.detail.clone();
            st.ms = ms_since(t);
            trace.push(st);
            sel.candidates.into_iter().filter(|c| !c.tables.trim().is_empty()).collect::<Vec<_>>()
        }
        None => Vec::new(),
    };
    let t = Instant::now();
    let schema = match (selection.len(), selection.first()) {
        (1, Some(c)) => c.tables.clone(),
        (0, _) => host.schema_text().map_err(AskError::Host)?,
        _ => String::new(),
    };
    let schema_ms = ms_since(t);

    // Ambiguities the value memory shows among the described tables: resolved from the
    // context (or the words around them), or put back to the user as a question.
    let described: Vec<String> =
        if selection.len() > 1 { selection.iter().flat_map(|c| described_tables(&c.tables)).collect() } else { described_tables(&schema) };
    let clarified;
    let question = if cfg.clarify {
        match clarify_question(host, trace, question, context, &described)? {
            Clarified::Unchanged => question,
            Clarified::Chosen(q) => {
                clarified = q;
                clarified.as_str()
            }
            Clarified::AskBack(text) => {
                trace.source = Some(Source::Clarify);
                return match goal {
                    Goal::Answer => Ok((String::new(), ResultSet::default(), Some(AnswerDecision::Text(text)))),
                    _ => Err(AskError::Ambiguous { question: text }),
                };
            }
        }
    } else {
        question
    };

    examples.knowledge = offer_knowledge(host, trace, &asked, &described, cfg)?;

    if selection.len() > 1 {
        let done = run_plan(host, question, &selection, cfg, goal, trace, &examples)?;
        note_knowledge_used(trace, &examples, &done.0);
        return Ok(done);
    }
    let mut st = StageTrace::new(stage::SCHEMA, Value::Null);
    st.output = json!({"chars": schema.len(), "tables": count_rendered_tables(&schema)});
    st.ms = schema_ms;
    trace.push(st);
    if schema.trim().is_empty() {
        return Err(AskError::NoTables);
    }
    let (sql, result) = generate_and_run(host, trace, question, &schema, cfg, None, None, &examples)?;
    note_knowledge_used(trace, &examples, &sql);
    let answer = answer(host, trace, question, &sql, &result, cfg, goal)?;
    Ok((sql, result, answer))
}

/// The knowledge items the caller may see over the described tables, those relevant to the
/// question kept within an eighth of the prompt's budget ([`crate::knowledge::relevant`]);
/// recorded as the `knowledge` stage when there are any.
fn offer_knowledge(
    host: &mut dyn Host,
    trace: &mut Trace,
    asked: &Question,
    described: &[String],
    cfg: &AskConfig,
) -> Result<Vec<crate::knowledge::Item>, AskError> {
    let t = Instant::now();
    let items = host.knowledge(asked, described).map_err(AskError::Host)?;
    if items.is_empty() {
        return Ok(items);
    }
    let budget = (cfg.max_prompt_tokens / 2).max(400);
    let kept: Vec<crate::knowledge::Item> =
        crate::knowledge::relevant(asked.text(), &items, described, budget).into_iter().cloned().collect();
    let mut st = StageTrace::new(stage::KNOWLEDGE, json!({"visible": items.len()}));
    st.output = json!({"offered": kept.iter().map(|i| json!({"id": i.id, "kind": i.kind, "name": i.name})).collect::<Vec<_>>()});
    st.ms = ms_since(t);
    trace.push(st);
    trace.knowledge_offered = kept.iter().map(|i| i.id).collect();
    Ok(kept)
}

/// Which of the offered knowledge items the statement that answered used.
fn note_knowledge_used(trace: &mut Trace, examples: &Examples, sql: &str) {
    if examples.knowledge.is_empty() {
        return;
    }
    let offered: Vec<&crate::knowledge::Item> = examples.knowledge.iter().collect();
    trace.knowledge_used = crate::knowledge::used_by(sql, &offered, &trace.knowledge_expanded);
}

/// What the clarification check made of a question.
enum Clarified {
    /// Nothing ambiguous.
    Unchanged,
    /// Every ambiguity resolved: the question with the readings chosen written in.
    Chosen(String),
    /// The question to ask back.
    AskBack(String),
}

/// Look for ambiguities, resolve what the context or the words around them settle, and say
/// what is left; recorded as the `clarify` stage.
fn clarify_question(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    context: Option<&str>,
    tables: &[String],
) -> Result<Clarified, AskError> {
    let t = Instant::now();
    let found = host.ambiguities(question, tables).map_err(AskError::Host)?;
    if found.is_empty() {
        return Ok(Clarified::Unchanged);
    }
    let mut open = Vec::new();
    let mut chosen = Vec::new();
    for a in &found {
        match clarify::resolve(a, context.unwrap_or(""), question) {
            Some(i) => chosen.push((a, i)),
            None => open.push(a.clone()),
        }
    }
    let mut st = StageTrace::new(stage::CLARIFY, json!({"question": question, "context": context}));
    st.ms = ms_since(t);
    let resolved: Vec<Value> = chosen.iter().map(|(a, i)| json!({"phrase": a.phrase, "reading": a.readings[*i]})).collect();
    let outcome = if open.is_empty() {
        Clarified::Chosen(clarify::with_choices(question, &chosen))
    } else {
        Clarified::AskBack(clarify::question_back(&open))
    };
    st.output = json!({"ambiguities": found, "resolved": resolved});
    match &outcome {
        Clarified::AskBack(text) => st.output["asked_back"] = json!(text),
        Clarified::Chosen(q) => st.output["question_for_sql"] = json!(q),
        Clarified::Unchanged => {}
    }
    trace.push(st);
    Ok(outcome)
}

/// The tables of a rendered description, qualified as it writes them (each starts an
/// unindented line `TABLE name`).
pub(super) fn described_tables(schema: &str) -> Vec<String> {
    crate::schema::parse_rendered(schema).into_iter().map(|t| format!("{}.{}", t.schema, t.name)).collect()
}

#[cfg(test)]
mod tests;
