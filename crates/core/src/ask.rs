//! The text-to-SQL pipeline behind `ask()`: generate SQL, check it, execute it, repair it from
//! errors, answer. Everything that touches PostgreSQL or the network is behind [`Host`], so the
//! pipeline runs in plain unit tests with a scripted host.

use std::time::Instant;

use serde_json::{json, Value};

use crate::clarify::{self, Ambiguity};
use crate::config::{AskConfig, GrammarUse, VerifiedUse};
use crate::constrain::grammar::{sql_grammar, GrammarOptions};
use crate::constrain::schemas::Shape;
use crate::constrain::Constraint;
use crate::extract::extract_sql;
use crate::grounded;
use crate::guard::check_read_only;
use crate::llm::{ChatRequest, ChatResponse, LlmError};
use crate::prompt::{self, AnswerDecision};
use crate::rows::ResultSet;
use crate::selection::context::{
    context_request, parse_context, parse_steps_answer, steps_answer_request, ContextDecision, StepOutcome, StepsAnswer,
};
use crate::selection::plan::{parse_plan, plan_request, PlanCandidate};
use crate::trace::{ms_since, StageTrace, Trace};
use crate::values::literals::LiteralRef;
use crate::verified::{self, Candidate, Decision};

/// Stage names, as they appear in traces and in the ledger.
pub mod stage {
    pub const SCHEMA: &str = "schema";
    pub const GENERATE: &str = "generate";
    pub const REPAIR: &str = "repair";
    pub const GUARD: &str = "guard";
    pub const CORRECT: &str = "correct";
    pub const EXECUTE: &str = "execute";
    pub const ANSWER: &str = "answer";
    /// The context switch (seed 001 A.1): does the supplied context answer the question?
    pub const CONTEXT: &str = "context";
    /// Schema and table selection from the schema selection memory (no LLM call).
    pub const SELECT: &str = "select";
    /// The retrieval plan over several candidate schemas (seed 001 A.2).
    pub const PLAN: &str = "plan";
    /// The SQL grammar of the described tables (no LLM call).
    pub const GRAMMAR: &str = "grammar";
    /// Verified queries of similar questions: retrieved, and perhaps answering (no LLM call).
    pub const VERIFIED: &str = "verified";
    /// Ambiguities the value memory shows, and the question back (no LLM call).
    pub const CLARIFY: &str = "clarify";
    /// The written answer checked against the rows (no LLM call).
    pub const GROUND: &str = "ground";
}

/// Why the database refused or failed a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecFailure {
    /// The database-level check refused it (not a plain read-only query, volatile function).
    Refused { reason: String },
    /// PostgreSQL raised an error while planning or running it.
    Error { sqlstate: String, message: String, detail: Option<String>, hint: Option<String> },
}

impl ExecFailure {
    /// The text shown to the LLM when asking for a repair.
    pub fn for_llm(&self) -> String {
        match self {
            ExecFailure::Refused { reason } => format!("refused: {reason}"),
            ExecFailure::Error { message, detail, hint, .. } => {
                let mut s = format!("ERROR: {message}");
                if let Some(d) = detail {
                    s.push_str(&format!("\nDETAIL: {d}"));
                }
                if let Some(h) = hint {
                    s.push_str(&format!("\nHINT: {h}"));
                }
                s
            }
        }
    }
}

/// The outcome of value correction for one statement.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Correction {
    /// The statement, with corrected literals where any were corrected.
    pub sql: String,
    /// Whether any literal changed.
    pub changed: bool,
    /// Every literal looked at and the decision on it, for the trace.
    pub trace: Value,
}

/// One candidate schema of a [`Selection`]: its selected tables, rendered for the prompt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SchemaCandidate {
    /// The schema's quoted name.
    pub schema: String,
    /// The tables selected in it (plus those their joins need), as [`crate::schema::render`]
    /// writes them.
    pub tables: String,
}

/// The tables the schema selection memory picked for a question.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// The candidate schemas, most relevant first. One candidate: a single-schema question;
    /// several: the retrieval-plan stage decides which to query.
    pub candidates: Vec<SchemaCandidate>,
    /// Every decision (schema and table scores, why each table is in), for the trace.
    pub detail: Value,
}

/// What the pipeline needs from its surroundings.
///
/// Only the first three methods are required; the others have defaults that keep the plain
/// single-prompt pipeline (no value memory, no schema selection memory).
pub trait Host {
    /// The description of the tables the caller may read, as prompt text (empty: none).
    fn schema_text(&mut self) -> Result<String, String>;
    /// One LLM call, on behalf of `stage`.
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError>;
    /// Run a statement that passed the parse-level guard, with the database-level checks,
    /// read-only, under the statement timeout and row limit.
    fn execute(&mut self, sql: &str) -> Result<ResultSet, ExecFailure>;
    /// Correct string literals of a checked statement against the value memory. The default
    /// changes nothing (no memory).
    fn correct_values(&mut self, sql: &str) -> Result<Correction, String> {
        Ok(Correction { sql: sql.to_string(), changed: false, trace: Value::Null })
    }
    /// The tables to describe for `question`, from the schema selection memory. `None` (the
    /// default, and the glue's answer when no memory was built): describe every readable table
    /// ([`Host::schema_text`]).
    fn select_tables(&mut self, _question: &str) -> Result<Option<Selection>, String> {
        Ok(None)
    }
    /// The verified queries most like `question` that the caller may use (over tables it may
    /// read), best first. The default: none (no store).
    fn verified(&mut self, _question: &str) -> Result<Vec<Candidate>, String> {
        Ok(Vec::new())
    }
    /// The string literals of `sql` compared with text columns, resolved to their columns, with
    /// the search path set to `schema` when given.
    fn literals_of(&mut self, _sql: &str, _schema: Option<&str>) -> Result<Vec<LiteralRef>, String> {
        Ok(Vec::new())
    }
    /// The value stored in `lit`'s column that `text` stands for, when the column holds it
    /// (ignoring case) or the value memory's lexical rule reads it as one (an initialism, a
    /// plural, a typo); `None` otherwise.
    fn stored_value(&mut self, _lit: &LiteralRef, _text: &str) -> Result<Option<String>, String> {
        Ok(None)
    }
    /// Words of `question` that the value memory reads in two ways ([`clarify`]) among the
    /// columns of `tables` (the described tables, qualified as the description writes them).
    /// The default: none.
    fn ambiguities(&mut self, _question: &str, _tables: &[String]) -> Result<Vec<Ambiguity>, String> {
        Ok(Vec::new())
    }
    /// Run a verified query (already through the parse-level guard) as [`Host::execute`]
    /// does, with the search path set to `schema` when given.
    fn execute_verified(&mut self, sql: &str, _schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.execute(sql)
    }
}

/// How far to take a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// The final SQL (executed once to validate and repair it).
    Sql,
    /// The SQL and its rows.
    Rows,
    /// The SQL, its rows and the answer stage.
    Answer,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    /// The final SQL: the answering step's, or every step's joined by `;` and a line break
    /// when a written answer combines several steps; empty when the context answered.
    pub sql: String,
    pub result: ResultSet,
    pub answer: Option<AnswerDecision>,
    pub trace: Trace,
}

impl Outcome {
    /// The answer as the text `ask()` returns: the written answer, or the rows as a table.
    pub fn answer_text(&self) -> String {
        match &self.answer {
            Some(AnswerDecision::Text(t)) => t.clone(),
            _ => self.result.render_table(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskError {
    #[error("the question is empty")]
    EmptyQuestion,
    #[error("there are no tables the current role may read")]
    NoTables,
    #[error("{0}")]
    Host(String),
    #[error("{source}")]
    Llm { stage: &'static str, source: LlmError },
    #[error("the LLM's reply contained no SQL after {attempts} attempt(s)")]
    NoSql { attempts: u32, reply: String },
    #[error("the generated SQL was refused after {attempts} attempt(s): {reason}")]
    Refused { attempts: u32, reason: String, sql: String },
    #[error("the generated SQL failed after {attempts} attempt(s): {message}")]
    Failed { attempts: u32, sqlstate: String, message: String, sql: String },
    /// `ask.clarify` is on and the question is ambiguous: the question back.
    #[error("{question}")]
    Ambiguous { question: String },
    /// A prompt that cannot be cut is larger than `ask.max_prompt_tokens`.
    #[error("the {stage} prompt would be about {tokens} tokens, over ask.max_prompt_tokens ({max})")]
    PromptTooLarge { stage: &'static str, tokens: usize, max: usize },
}

impl AskError {
    fn to_json(&self) -> Value {
        let mut v = json!({"message": self.to_string()});
        match self {
            AskError::Llm { stage, source } => {
                v["stage"] = json!(stage);
                v["kind"] = json!(source.outcome());
            }
            AskError::Refused { sql, .. } => v["sql"] = json!(sql),
            AskError::Failed { sql, sqlstate, .. } => {
                v["sql"] = json!(sql);
                v["sqlstate"] = json!(sqlstate);
            }
            _ => {}
        }
        v
    }
}

/// One LLM call, recorded in the trace. A prompt over `max_tokens` is not sent.
fn call(
    host: &mut dyn Host,
    trace: &mut Trace,
    stage: &'static str,
    attempt: Option<u32>,
    req: &ChatRequest,
    max_tokens: usize,
) -> Result<String, AskError> {
    let tokens = prompt::bounds::tokens(req);
    if tokens > max_tokens {
        return Err(AskError::PromptTooLarge { stage, tokens, max: max_tokens });
    }
    let t = Instant::now();
    let mut st = StageTrace::new(stage, json!({"prompt_chars": req.prompt_chars(), "messages": req.messages.len()}));
    if trace.record_prompts {
        st.input["prompt"] = json!({
            "system": req.system,
            "messages": req.messages,
            "constraint": req.constraint.as_ref().map(|c| c.kind().as_str()),
        });
    }
    st.attempt = attempt;
    let result = host.chat(stage, req);
    trace.record_call(st, t, result).map_err(|source| AskError::Llm { stage, source })
}

/// Run the pipeline for `question` up to `goal`. On failure the trace so far comes back with
/// the error, so `ask.explain()` can show where it stopped.
// The trace comes back with the error (ask.explain() shows where a run stopped): once per
// question, so its size on the stack costs nothing worth a box.
#[allow(clippy::result_large_err)]
pub fn run(host: &mut dyn Host, question: &str, cfg: &AskConfig, goal: Goal) -> Result<Outcome, (AskError, Trace)> {
    run_with_context(host, question, None, cfg, goal)
}

/// [`run`] with a context the question may be answered from. With a non-empty `context` and
/// [`Goal::Answer`], the LLM first decides whether the context answers the question (seed 001
/// A.1); when it does, that answer is the outcome and no SQL runs. Otherwise, and for the
/// other goals, the context is ignored.
#[allow(clippy::result_large_err)]
pub fn run_with_context(
    host: &mut dyn Host,
    question: &str,
    context: Option<&str>,
    cfg: &AskConfig,
    goal: Goal,
) -> Result<Outcome, (AskError, Trace)> {
    let started = Instant::now();
    let mut trace = Trace { question: question.to_string(), record_prompts: cfg.record_prompts, ..Default::default() };
    let result = run_inner(host, question, context, cfg, goal, &mut trace);
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

type Produced = (String, ResultSet, Option<AnswerDecision>);

fn run_inner(
    host: &mut dyn Host,
    question: &str,
    context: Option<&str>,
    cfg: &AskConfig,
    goal: Goal,
    trace: &mut Trace,
) -> Result<Produced, AskError> {
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
            trace.source = Some("context");
            return Ok((String::new(), ResultSet::default(), Some(AnswerDecision::Text(answer))));
        }
    }

    // Verified queries of similar questions: one of them may be this question (answered
    // without the LLM); the best others are shown to the LLM as examples.
    let candidates = match cfg.verified {
        VerifiedUse::Off => Vec::new(),
        _ => host.verified(question).map_err(AskError::Host)?,
    };
    if !candidates.is_empty() {
        if let Some(done) = from_verified(host, trace, question, &candidates, cfg, goal) {
            return Ok(done);
        }
    }
    let shown: Vec<&Candidate> = candidates.iter().filter(|c| c.worth_showing()).take(verified::MAX_EXAMPLES).collect();
    if let Some(st) = trace.stages.iter_mut().rev().find(|s| s.stage == stage::VERIFIED) {
        st.output["examples"] = json!(shown.iter().map(|c| c.id).collect::<Vec<_>>());
    }
    let examples: Vec<(String, String)> = shown.iter().map(|c| (c.question.clone(), c.sql.clone())).collect();
    trace.source = Some("llm");

    let t = Instant::now();
    let selection = host.select_tables(question).map_err(AskError::Host)?;
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
    let clarified;
    let question = if cfg.clarify {
        let described: Vec<String> = if selection.len() > 1 {
            selection.iter().flat_map(|c| described_tables(&c.tables)).collect()
        } else {
            described_tables(&schema)
        };
        match clarify_question(host, trace, question, context, &described)? {
            Clarified::Unchanged => question,
            Clarified::Chosen(q) => {
                clarified = q;
                clarified.as_str()
            }
            Clarified::AskBack(text) => {
                trace.source = Some("clarify");
                return match goal {
                    Goal::Answer => Ok((String::new(), ResultSet::default(), Some(AnswerDecision::Text(text)))),
                    _ => Err(AskError::Ambiguous { question: text }),
                };
            }
        }
    } else {
        question
    };

    if selection.len() > 1 {
        return run_plan(host, question, &selection, cfg, goal, trace, &examples);
    }
    let mut st = StageTrace::new(stage::SCHEMA, Value::Null);
    st.output = json!({"chars": schema.len(), "tables": count_tables(&schema)});
    st.ms = schema_ms;
    trace.push(st);
    if schema.trim().is_empty() {
        return Err(AskError::NoTables);
    }
    let (sql, result) = generate_and_run(host, trace, question, &schema, cfg, None, None, &examples)?;
    let answer = answer(host, trace, question, &sql, &result, cfg, goal)?;
    Ok((sql, result, answer))
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

/// Answer from a verified query when one of `candidates` is `question` ([`verified::decide`]):
/// its SQL (with the question's values written in) goes through the parse-level guard and
/// runs, and its rows are the answer: no LLM call. Every candidate's decision is recorded;
/// `None` (generate as usual) when none is the question, or its SQL no longer runs.
fn from_verified(
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
        match verified::decide(question, cand, &literals, cfg.verified_min_cosine, &mut |lit, text| host.stored_value(lit, text)) {
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

/// The tables of a rendered description, qualified as it writes them (each starts an
/// unindented line `TABLE name`).
fn described_tables(schema: &str) -> Vec<String> {
    crate::schema::parse_rendered(schema).into_iter().map(|t| format!("{}.{}", t.schema, t.name)).collect()
}

/// Tables in a rendered description (each starts an unindented line).
fn count_tables(schema: &str) -> usize {
    schema.lines().filter(|l| !l.is_empty() && !l.starts_with(' ')).count()
}

/// The answer stage over one statement's rows, for [`Goal::Answer`].
fn answer(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    sql: &str,
    result: &ResultSet,
    cfg: &AskConfig,
    goal: Goal,
) -> Result<Option<AnswerDecision>, AskError> {
    if goal != Goal::Answer {
        return Ok(None);
    }
    let Some((req, shown)) = prompt::answer_request_within(question, sql, result, cfg.answer_rows as usize, cfg.max_prompt_tokens) else {
        return Ok(Some(rows_unwritten(trace, "not one row of the result fits in ask.max_prompt_tokens", cfg.max_prompt_tokens)));
    };
    if shown.cells_cut > 0 || shown.rows < result.rows.len().min(cfg.answer_rows as usize) {
        let mut st = StageTrace::new(stage::ANSWER, json!({"bounded": cfg.max_prompt_tokens}));
        st.output = json!({"rows_shown": shown.rows, "cells_cut": shown.cells_cut});
        trace.push(st);
    }
    let reply = match call(host, trace, stage::ANSWER, None, &req, cfg.max_prompt_tokens) {
        Ok(reply) => reply,
        Err(e) => return Ok(Some(rows_unwritten(trace, too_large_for_the_server(&e).ok_or(e)?, cfg.max_prompt_tokens))),
    };
    let decision = prompt::parse_answer(&trace.read_shaped(Shape::Answer, &reply));
    Ok(Some(grounded_or_rows(trace, question, sql, std::slice::from_ref(result), decision)))
}

/// Why an answer call failed when the server refused its prompt as larger than its context: a
/// question whose SQL ran then answers with its rows.
fn too_large_for_the_server(e: &AskError) -> Option<&'static str> {
    matches!(e, AskError::Llm { source, .. } if source.is_context_overflow())
        .then_some("the LLM server said the answer prompt exceeds its context")
}

/// The rows as the answer, without a written one, because `why`: recorded in the trace, and
/// said in a NOTICE.
fn rows_unwritten(trace: &mut Trace, why: &str, max: usize) -> AnswerDecision {
    let mut st = StageTrace::new(stage::ANSWER, json!({"bounded": max}));
    st.output = json!({"answer_from": "rows", "skipped": why});
    trace.push(st);
    trace.notices.push(format!("pg_ask: the rows are the answer, without a written one: {why} ({max} tokens)"));
    AnswerDecision::Rows
}

/// A written answer checked against the rows it was written from ([`grounded::check_over`]);
/// one that states what they do not say is replaced by an answer written from the last rows
/// without the model ([`grounded::from_rows`]). Recorded as the `ground` stage.
fn grounded_or_rows(trace: &mut Trace, question: &str, sql: &str, results: &[ResultSet], decision: AnswerDecision) -> AnswerDecision {
    let text = match decision {
        AnswerDecision::Text(text) => text,
        // A single number (a count, a sum, an average) is said, not shown as a table of one
        // cell.
        AnswerDecision::Rows => {
            let [one] = results else { return AnswerDecision::Rows };
            if !grounded::single_value(one).is_some_and(Value::is_number) {
                return AnswerDecision::Rows;
            }
            let grounded::FromRows::Value(v) = grounded::from_rows(one) else { return AnswerDecision::Rows };
            let mut st = StageTrace::new(stage::GROUND, json!({"answer": "ROWS"}));
            st.output = json!({"grounded": true, "answer_from": "value"});
            trace.push(st);
            return AnswerDecision::Text(v);
        }
    };
    let t = Instant::now();
    let checked = grounded::check_over(&text, question, sql, results);
    let mut st = StageTrace::new(stage::GROUND, json!({"answer": text}));
    let decided = match checked {
        Ok(()) => {
            st.output = json!({"grounded": true, "answer_from": "model"});
            AnswerDecision::Text(text)
        }
        Err(why) => {
            let from = grounded::from_rows(results.last().expect("an answer has rows"));
            st.output = json!({"grounded": false, "why": why, "answer_from": from.as_str()});
            match from {
                grounded::FromRows::Value(s) | grounded::FromRows::List(s) => AnswerDecision::Text(s),
                grounded::FromRows::Rows => AnswerDecision::Rows,
            }
        }
    };
    st.ms = ms_since(t);
    trace.push(st);
    decided
}

/// Generate SQL for `question` over `schema`, check, correct and execute it, and repair it
/// from errors up to `cfg.max_attempts` times. `draft`: a query already written (by the plan
/// stage) that stands for the first reply. `step`: the plan step this belongs to, for the
/// trace. `examples`: verified (question, SQL) pairs of similar questions for the prompt.
#[allow(clippy::too_many_arguments)]
fn generate_and_run(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    schema: &str,
    cfg: &AskConfig,
    draft: Option<&str>,
    step: Option<usize>,
    examples: &[(String, String)],
) -> Result<(String, ResultSet), AskError> {
    let shown: Vec<(&str, &str)> = examples.iter().map(|(q, s)| (q.as_str(), s.as_str())).collect();
    let mut req = prompt::sql_request_with_examples(question, schema, &shown);
    let first = req.clone();
    let mut constraint: Option<Constraint> = None;
    // The grammar is built before the first call that needs it (a plan's draft needs none):
    // the first one with `on`; with `auto` a later repair of queries the grammar would have
    // ruled out (see `grammar_due` below).
    let mut grammar_built = cfg.sql_grammar == GrammarUse::Off;
    // Attempts that failed in a way the grammar rules out.
    let mut ruled_out = 0u32;
    let max_attempts = cfg.max_attempts.max(1);
    // What each attempt wrote (its SQL, or its whole reply when it had none), white space
    // folded, with how it ended: a repair that writes the same again would end the same way,
    // so it is neither run nor asked again.
    let mut tried: Vec<(bool, String, u32, AskError)> = Vec::new();
    for attempt in 1..=max_attempts {
        trace.attempts += 1;
        let reply = match (attempt, draft) {
            (1, Some(d)) => format!("```sql\n{}\n```", d.trim()),
            _ => {
                // `auto`: the grammar comes in once the model's own repair failed too, or for
                // the last attempt, so that a question never ends on a name that does not
                // exist, and a repair the model gets right by itself is its own.
                let grammar_due = match cfg.sql_grammar {
                    GrammarUse::Always => true,
                    GrammarUse::Repair => ruled_out >= 2 || (ruled_out >= 1 && attempt == max_attempts),
                    GrammarUse::Off => false,
                };
                if !grammar_built && grammar_due {
                    grammar_built = true;
                    if let Some(gbnf) = grammar_for(trace, schema, step) {
                        let grammar = Constraint::Grammar { gbnf };
                        req = req.constrain(grammar.clone());
                        constraint = Some(grammar);
                    }
                }
                let stage_name = if attempt == 1 { stage::GENERATE } else { stage::REPAIR };
                let reply = call(host, trace, stage_name, Some(attempt), &req, cfg.max_prompt_tokens)?;
                if !grammar_built {
                    // `auto` before a failure the grammar rules out: the model's own query.
                    if let Some(st) = trace.stages.last_mut() {
                        if st.output.get("constrained").is_none() && st.output.get("unconstrained").is_none() {
                            st.output["unconstrained"] = json!("free_first");
                        }
                    }
                }
                reply
            }
        };
        let extracted = extract_sql(&reply);
        let folded = fold_space(extracted.as_deref().unwrap_or(&reply));
        if let Some((_, _, first, ended)) = tried.iter().find(|(had_sql, text, ..)| *had_sql == extracted.is_some() && *text == folded) {
            let (reason, what) =
                if extracted.is_some() { ("repeats_failed", "statement failed") } else { ("repeats_reply", "reply without SQL came") };
            let input = match &extracted {
                Some(sql) => json!({"sql": sql}),
                None => json!({"reply_chars": reply.len()}),
            };
            let mut st = StageTrace::new(stage::GUARD, with_step(input, step));
            st.attempt = Some(attempt);
            st.output = json!({"allowed": false, "reason": reason, "first_attempt": first});
            st.error = Some(format!("the same {what} in attempt {first}; it is not tried again"));
            trace.push(st);
            // `auto` before the grammar came in: the same request is asked again under it, so
            // that the question does not end on what the grammar rules out.
            if cfg.sql_grammar == GrammarUse::Repair && !grammar_built && attempt < max_attempts && grammar_rules_out(ended) {
                ruled_out = ruled_out.max(2);
                continue;
            }
            return Err(with_attempts(ended.clone(), attempt));
        }
        let (failure, ended) = match extracted.clone() {
            None => (
                "the reply contained no SQL query".to_string(),
                AskError::NoSql { attempts: attempt, reply: reply.chars().take(300).collect() },
            ),
            Some(sql) => match guarded_execute(host, trace, attempt, step, &sql) {
                Ok(done) => return Ok(done),
                Err(failure) => {
                    let text = failure.for_llm();
                    let ended = match failure {
                        ExecFailure::Refused { reason } => AskError::Refused { attempts: attempt, reason, sql },
                        ExecFailure::Error { sqlstate, message, .. } => AskError::Failed { attempts: attempt, sqlstate, message, sql },
                    };
                    (text, ended)
                }
            },
        };
        ruled_out += u32::from(grammar_rules_out(&ended));
        tried.push((extracted.is_some(), folded, attempt, ended));
        if attempt < max_attempts {
            match prompt::repair_request_within(&first, &req, &reply, extracted.as_deref(), &failure, cfg.max_prompt_tokens) {
                Some(next) => req = next,
                None => break,
            }
            if grammar_built {
                // The shortened conversation starts from the first request, which may not
                // carry the grammar yet.
                if let (Some(c), None) = (&constraint, &req.constraint) {
                    req = req.constrain(c.clone());
                }
            }
        }
    }
    Err(tried.pop().map(|(.., ended)| ended).expect("every attempt that did not return is recorded"))
}

/// Whether a query that ended as `e` is one the SQL grammar rules out: no SQL, a statement the
/// guard or the database refused, one that does not parse, names a relation, column or
/// function that does not exist, leaves a column ungrouped, mixes types or writes a literal
/// of the wrong form (SQLSTATE class 42 but a missing privilege, 22P02, 22007, 22008, 21000).
pub fn grammar_rules_out(e: &AskError) -> bool {
    match e {
        AskError::NoSql { .. } | AskError::Refused { .. } => true,
        AskError::Failed { sqlstate, .. } => {
            (sqlstate.starts_with("42") && sqlstate != "42501") || matches!(sqlstate.as_str(), "22P02" | "22007" | "22008" | "21000")
        }
        _ => false,
    }
}

/// The SQL grammar of the tables `schema` describes, recorded in the trace with its size and
/// build time.
fn grammar_for(trace: &mut Trace, schema: &str, step: Option<usize>) -> Option<String> {
    let t = Instant::now();
    let tables = crate::schema::parse_rendered(schema);
    let built = sql_grammar(&tables, GrammarOptions::default());
    let mut st = StageTrace::new(stage::GRAMMAR, with_step(json!({"tables": tables.len()}), step));
    st.output = match &built {
        Some(g) => json!({"branches": g.branches, "rules": g.rules, "bytes": g.text.len()}),
        None => json!({"built": false}),
    };
    st.ms = ms_since(t);
    trace.push(st);
    built.map(|g| g.text)
}

/// `sql` with every run of white space made one space, for comparing statements.
fn fold_space(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `e` as it stands after `attempts` attempts.
fn with_attempts(e: AskError, attempts: u32) -> AskError {
    match e {
        AskError::NoSql { reply, .. } => AskError::NoSql { attempts, reply },
        AskError::Refused { reason, sql, .. } => AskError::Refused { attempts, reason, sql },
        AskError::Failed { sqlstate, message, sql, .. } => AskError::Failed { attempts, sqlstate, message, sql },
        other => other,
    }
}

/// One executed step of a retrieval plan.
struct StepRun {
    goal: String,
    schema: String,
    sql: String,
    result: Result<ResultSet, AskError>,
}

/// Several candidate schemas: the LLM writes a retrieval plan of (goal, SQL, schema) steps
/// (seed 001 A.2); each step goes through value correction, guarded execution and
/// self-correction over its schema's selected tables; the answer stage reads every step's
/// result (A.5/A.6). A plan that cannot be read falls back to the single-schema pipeline over
/// the most relevant candidate. [`Goal::Sql`] and [`Goal::Rows`] run the first step only:
/// they return one statement.
fn run_plan(
    host: &mut dyn Host,
    question: &str,
    candidates: &[SchemaCandidate],
    cfg: &AskConfig,
    goal: Goal,
    trace: &mut Trace,
    examples: &[(String, String)],
) -> Result<Produced, AskError> {
    let t = Instant::now();
    let shown: Vec<PlanCandidate> =
        candidates.iter().map(|c| PlanCandidate { schema: c.schema.clone(), tables: c.tables.clone() }).collect();
    let mut st = StageTrace::new(stage::SCHEMA, Value::Null);
    st.output = json!({
        "chars": candidates.iter().map(|c| c.tables.len()).sum::<usize>(),
        "tables": candidates.iter().map(|c| count_tables(&c.tables)).sum::<usize>(),
        "schemas": candidates.iter().map(|c| c.schema.as_str()).collect::<Vec<_>>(),
    });
    st.ms = ms_since(t);
    trace.push(st);

    let req = plan_request(question, &shown);
    let reply = call(host, trace, stage::PLAN, None, &req, cfg.max_prompt_tokens)?;
    let names: Vec<String> = candidates.iter().map(|c| c.schema.clone()).collect();
    let plan = parse_plan(&trace.read_shaped(Shape::RetrievalPlan, &reply), &names);
    let mut st = StageTrace::new(stage::PLAN, json!({"candidates": names}));
    let plan = match plan {
        Ok(p) => {
            st.output = serde_json::to_value(&p).unwrap_or_default();
            trace.push(st);
            p
        }
        Err(e) => {
            st.error = Some(e.to_string());
            st.output = json!({"fallback": candidates[0].schema});
            trace.push(st);
            let top = &candidates[0];
            let (sql, result) = generate_and_run(host, trace, question, &top.tables, cfg, None, None, examples)?;
            let answer = answer(host, trace, question, &sql, &result, cfg, goal)?;
            return Ok((sql, result, answer));
        }
    };

    let to_run = if goal == Goal::Answer { plan.steps.len() } else { 1 };
    let mut runs: Vec<StepRun> = Vec::new();
    for (i, step) in plan.steps.iter().take(to_run).enumerate() {
        let tables = candidates.iter().find(|c| c.schema == step.schema).map(|c| c.tables.as_str()).unwrap_or_default();
        let goal_text = if step.goal.is_empty() { question } else { step.goal.as_str() };
        let result = generate_and_run(host, trace, goal_text, tables, cfg, step.sql.as_deref(), Some(i + 1), &[]);
        let (sql, result) = match result {
            Ok((sql, rs)) => (sql, Ok(rs)),
            Err(e) => (failed_sql(&e).unwrap_or_default(), Err(e)),
        };
        runs.push(StepRun { goal: goal_text.to_string(), schema: step.schema.clone(), sql, result });
    }

    if runs.len() == 1 {
        let run = runs.pop().expect("one step");
        let result = run.result?;
        let answer = answer(host, trace, question, &run.sql, &result, cfg, goal)?;
        return Ok((run.sql, result, answer));
    }
    if runs.iter().all(|r| r.result.is_err()) {
        return Err(runs.into_iter().next().and_then(|r| r.result.err()).expect("a failed step"));
    }
    let errors: Vec<String> = runs.iter().map(|r| r.result.as_ref().err().map(ToString::to_string).unwrap_or_default()).collect();
    let outcomes: Vec<StepOutcome<'_>> = runs
        .iter()
        .zip(&errors)
        .map(|(r, e)| StepOutcome { goal: &r.goal, schema: &r.schema, sql: &r.sql, result: r.result.as_ref().map_err(|_| e.as_str()) })
        .collect();
    let succeeded: Vec<bool> = runs.iter().map(|r| r.result.is_ok()).collect();
    let req = steps_answer_request(question, &outcomes, cfg.answer_rows as usize);
    let reply = match call(host, trace, stage::ANSWER, None, &req, cfg.max_prompt_tokens) {
        Ok(reply) => reply,
        Err(e) => {
            let why = match &e {
                AskError::PromptTooLarge { .. } => "the steps' rows do not fit in ask.max_prompt_tokens",
                _ => too_large_for_the_server(&e).ok_or(e)?,
            };
            let run = runs.iter().rposition(|r| r.result.is_ok()).map(|i| runs.swap_remove(i)).expect("a step with rows");
            let decided = rows_unwritten(trace, why, cfg.max_prompt_tokens);
            return Ok((run.sql, run.result.expect("a step with rows"), Some(decided)));
        }
    };
    let decision = parse_steps_answer(&trace.read_shaped(Shape::StepsAnswer, &reply), &succeeded);
    let mut st = StageTrace::new(stage::ANSWER, json!({"steps": runs.len()}));
    match &decision {
        Ok(d) => st.output = serde_json::to_value(d).unwrap_or_default(),
        Err(e) => st.error = Some(e.to_string()),
    }
    trace.push(st);
    let all_sql = runs.iter().filter(|r| !r.sql.is_empty()).map(|r| r.sql.as_str()).collect::<Vec<_>>().join(";\n");
    let last_rows = runs.iter().rev().find_map(|r| r.result.as_ref().ok().cloned()).unwrap_or_default();
    Ok(match decision {
        Ok(StepsAnswer::Rows { step }) => {
            let run = runs.swap_remove(step - 1);
            (run.sql, run.result.expect("a step with rows"), Some(AnswerDecision::Rows))
        }
        Ok(StepsAnswer::Text { text }) => {
            let results: Vec<ResultSet> = runs.iter().filter_map(|r| r.result.as_ref().ok().cloned()).collect();
            let decided = grounded_or_rows(trace, question, &all_sql, &results, AnswerDecision::Text(text));
            (all_sql, last_rows, Some(decided))
        }
        // An answer that names no usable step: the reply stands as a written answer.
        Err(_) => (all_sql, last_rows, Some(AnswerDecision::Text(reply.trim().to_string()))),
    })
}

/// The statement an error was about, when it names one.
fn failed_sql(e: &AskError) -> Option<String> {
    match e {
        AskError::Refused { sql, .. } | AskError::Failed { sql, .. } => Some(sql.clone()),
        _ => None,
    }
}

/// Parse-level guard, then the host's execution; both recorded in the trace.
/// On success, the statement as executed (trimmed of surrounding comments) and its rows.
fn guarded_execute(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    step: Option<usize>,
    sql: &str,
) -> Result<(String, ResultSet), ExecFailure> {
    let t = Instant::now();
    let mut st = StageTrace::new(stage::GUARD, with_step(json!({"sql": sql}), step));
    st.attempt = Some(attempt);
    let checked = check_read_only(sql);
    st.ms = ms_since(t);
    let checked = match checked {
        Ok(c) => {
            st.output = json!({"allowed": true, "tables": c.tables});
            trace.push(st);
            c
        }
        Err(refusal) => {
            st.output = json!({"allowed": false, "reason": refusal.reason_code()});
            st.error = Some(refusal.to_string());
            trace.push(st);
            return Err(ExecFailure::Refused { reason: refusal.to_string() });
        }
    };

    // Value correction; a corrected statement passes the guard again.
    let checked = if let Some(c) = correct(host, trace, attempt, step, &checked.sql) {
        match check_read_only(&c) {
            Ok(again) => again,
            Err(refusal) => return Err(ExecFailure::Refused { reason: refusal.to_string() }),
        }
    } else {
        checked
    };

    let t = Instant::now();
    let mut st = StageTrace::new(stage::EXECUTE, with_step(json!({"sql": checked.sql}), step));
    st.attempt = Some(attempt);
    let result = host.execute(&checked.sql);
    st.ms = ms_since(t);
    match &result {
        Ok(rs) => st.output = json!({"rows": rs.rows.len(), "columns": rs.columns, "truncated": rs.truncated}),
        Err(f) => {
            st.output = match f {
                ExecFailure::Refused { .. } => json!({"refused": true}),
                ExecFailure::Error { sqlstate, .. } => json!({"sqlstate": sqlstate}),
            };
            st.error = Some(f.for_llm());
        }
    }
    trace.push(st);
    result.map(|rs| (checked.sql, rs))
}

/// A stage's input with the plan step it belongs to, when there is one.
fn with_step(mut input: Value, step: Option<usize>) -> Value {
    if let Some(n) = step {
        input["step"] = json!(n);
    }
    input
}

/// Run the host's value correction, recording it; `Some(sql)` when a literal changed. A
/// failing correction is recorded and the statement runs as written.
fn correct(host: &mut dyn Host, trace: &mut Trace, attempt: u32, step: Option<usize>, sql: &str) -> Option<String> {
    let t = Instant::now();
    let result = host.correct_values(sql);
    let mut st = StageTrace::new(stage::CORRECT, with_step(json!({"sql": sql}), step));
    st.attempt = Some(attempt);
    st.ms = ms_since(t);
    let out = match result {
        Ok(c) if c.trace.is_null() && !c.changed => return None,
        Ok(c) => {
            st.output = json!({"sql": c.sql, "changed": c.changed, "literals": c.trace});
            c.changed.then_some(c.sql)
        }
        Err(e) => {
            st.error = Some(e);
            None
        }
    };
    trace.push(st);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    type Executor = Box<dyn FnMut(&str) -> Result<ResultSet, ExecFailure>>;

    /// A host with scripted LLM replies and a fake executor.
    struct Scripted {
        replies: VecDeque<Result<String, LlmError>>,
        exec: Executor,
        seen: Vec<(&'static str, ChatRequest)>,
        executed: Vec<String>,
    }

    impl Scripted {
        fn new(replies: &[&str]) -> Scripted {
            Scripted {
                replies: replies.iter().map(|r| Ok(r.to_string())).collect(),
                exec: Box::new(|_| Ok(one_row())),
                seen: vec![],
                executed: vec![],
            }
        }
    }

    fn one_row() -> ResultSet {
        ResultSet { columns: vec!["name".into()], rows: vec![vec![json!("Roma")]], truncated: false, size_cut: false }
    }

    impl Host for Scripted {
        fn schema_text(&mut self) -> Result<String, String> {
            Ok("TABLE public.restaurants\n  name text\n".into())
        }
        fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.seen.push((stage, req.clone()));
            let content = self.replies.pop_front().expect("script ran out")?;
            Ok(ChatResponse { content, prompt_tokens: Some(10), completion_tokens: Some(2), attempts: 1, ..Default::default() })
        }
        fn execute(&mut self, sql: &str) -> Result<ResultSet, ExecFailure> {
            self.executed.push(sql.to_string());
            (self.exec)(sql)
        }
    }

    /// A host that is `Scripted` (its first field) but for the methods given.
    macro_rules! scripted_host {
        ($name:ident { $($extra:item)* }) => {
            impl Host for $name {
                fn schema_text(&mut self) -> Result<String, String> {
                    self.0.schema_text()
                }
                fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
                    self.0.chat(stage, req)
                }
                fn execute(&mut self, sql: &str) -> Result<ResultSet, ExecFailure> {
                    self.0.execute(sql)
                }
                $($extra)*
            }
        };
    }

    fn cfg() -> AskConfig {
        AskConfig::default()
    }

    #[test]
    fn happy_path_with_written_answer() {
        let mut h = Scripted::new(&["```sql\nSELECT name FROM public.restaurants;\n```", "Roma is the only one."]);
        let out = run(&mut h, "which restaurants?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.sql, "SELECT name FROM public.restaurants");
        assert_eq!(out.answer_text(), "Roma is the only one.");
        assert_eq!(out.trace.llm_calls, 2);
        assert_eq!(out.trace.prompt_tokens, 20);
        let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
        assert_eq!(stages, ["schema", "generate", "guard", "execute", "answer", "ground"]);
        assert_eq!(out.trace.stages[5].output["answer_from"], "model");
        assert!(h.seen[1].1.messages[0].content.contains("[\"Roma\"]"));
    }

    #[test]
    fn a_written_answer_the_rows_do_not_say_is_replaced_by_the_rows() {
        // One value: said with its column's meaning.
        let mut h = Scripted::new(&["```sql\nSELECT count(*) AS num_restaurants FROM public.restaurants\n```", "{\"answer\": \"1\"}"]);
        h.exec = Box::new(|_| Ok(count(68)));
        let out = run(&mut h, "how many restaurants are there?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.answer_text(), "count: 68");
        let ground = out.trace.stages.last().unwrap();
        assert_eq!((ground.stage, &ground.output["grounded"], &ground.output["answer_from"]), ("ground", &json!(false), &json!("value")));
        assert_eq!(ground.output["why"]["unsupported"], json!(["1"]));
        // A name the rows do not hold: a few rows become a short list.
        let mut h = Scripted::new(&["SELECT name FROM public.restaurants", "Roma and Venezia."]);
        h.exec = Box::new(|_| {
            Ok(ResultSet {
                columns: vec!["name".into()],
                rows: vec![vec![json!("Roma")], vec![json!("Nizza")]],
                truncated: false,
                size_cut: false,
            })
        });
        let out = run(&mut h, "which restaurants?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.answer_text(), "- Roma\n- Nizza");
        // Many rows: the rows.
        let mut h = Scripted::new(&["SELECT name FROM public.restaurants", "There are 3 of them: Roma."]);
        h.exec = Box::new(|_| {
            Ok(ResultSet {
                columns: vec!["name".into()],
                rows: (0..9).map(|i| vec![json!(format!("r{i}"))]).collect(),
                truncated: false,
                size_cut: false,
            })
        });
        let out = run(&mut h, "which restaurants?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.answer, Some(AnswerDecision::Rows));
        assert_eq!(out.trace.stages.last().unwrap().output["answer_from"], "rows");
    }

    #[test]
    fn rows_as_the_answer() {
        let mut h = Scripted::new(&["SELECT name FROM public.restaurants", "ROWS"]);
        let out = run(&mut h, "list restaurants", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.answer, Some(AnswerDecision::Rows));
        assert_eq!(out.answer_text(), " name\n------\n Roma\n(1 row)");
    }

    #[test]
    fn repairs_from_the_error_message() {
        let mut h = Scripted::new(&["SELECT nme FROM public.restaurants", "SELECT name FROM public.restaurants"]);
        h.exec = Box::new(|sql| {
            if sql.contains("nme") {
                Err(ExecFailure::Error {
                    sqlstate: "42703".into(),
                    message: "column \"nme\" does not exist".into(),
                    detail: None,
                    hint: Some("Perhaps you meant \"name\".".into()),
                })
            } else {
                Ok(one_row())
            }
        });
        let out = run(&mut h, "q", &cfg(), Goal::Rows).unwrap();
        assert_eq!(out.sql, "SELECT name FROM public.restaurants");
        assert_eq!(out.trace.attempts, 2);
        let repair = &h.seen[1];
        assert_eq!(repair.0, "repair");
        let last = &repair.1.messages.last().unwrap().content;
        assert!(last.contains("column \"nme\" does not exist") && last.contains("HINT: Perhaps"), "{last}");
    }

    #[test]
    fn an_answer_prompt_over_its_bound_is_cut_or_the_rows_answer() {
        let big = |_: &str| {
            Ok(ResultSet { columns: vec!["names".into()], rows: vec![vec![json!("x".repeat(100_000))]], truncated: false, size_cut: false })
        };
        // A 100 KB cell: cut, and the prompt sent stays within the bound.
        let mut h = Scripted::new(&["SELECT string_agg(name, ', ') AS names FROM public.cities", "ROWS"]);
        h.exec = Box::new(big);
        let cfg = AskConfig { max_prompt_tokens: 1_000, ..cfg() };
        let out = run(&mut h, "all city names in one line", &cfg, Goal::Answer).unwrap();
        assert_eq!(out.answer, Some(AnswerDecision::Rows));
        assert!(prompt::bounds::tokens(&h.seen[1].1) <= 1_000 && h.seen[1].1.messages[0].content.contains("[cut: 100000 chars]"));
        // Not one row fits: the rows, a notice, no answer call.
        let mut h = Scripted::new(&["SELECT * FROM public.cities"]);
        h.exec = Box::new(|_| {
            let columns: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
            Ok(ResultSet { columns, rows: vec![vec![json!("y".repeat(1_000)); 20]], truncated: false, size_cut: false })
        });
        let tiny = AskConfig { max_prompt_tokens: 600, ..cfg.clone() };
        let out = run(&mut h, "all city names", &tiny, Goal::Answer).unwrap();
        assert_eq!((out.answer, h.seen.len()), (Some(AnswerDecision::Rows), 1));
        assert!(out.trace.notices[0].contains("not one row of the result fits"), "{:?}", out.trace.notices);
        // The server says the prompt exceeds its context: the rows, and a notice.
        let mut h = Scripted::new(&["SELECT name FROM public.restaurants"]);
        h.replies.push_back(Err(LlmError::Http {
            url: "u".into(),
            status: 400,
            message: "request (10528 tokens) exceeds the available context size (8192 tokens)".into(),
            retry_after_s: None,
        }));
        let out = run(&mut h, "which restaurants?", &cfg, Goal::Answer).unwrap();
        assert_eq!(out.answer, Some(AnswerDecision::Rows));
        assert!(out.trace.notices[0].contains("exceeds its context"));
        // A description that cannot be cut and does not fit: an error naming the setting.
        let mut h = Scripted::new(&["SELECT 1"]);
        let err = run(&mut h, "q", &AskConfig { max_prompt_tokens: 10, ..cfg.clone() }, Goal::Answer).unwrap_err().0;
        assert!(matches!(err, AskError::PromptTooLarge { stage: "generate", .. }), "{err:?}");
        assert!(h.seen.is_empty());
    }

    #[test]
    fn auto_writes_freely_first_and_repairs_under_the_grammar_what_it_rules_out() {
        let failing = |sqlstate: &'static str| -> Executor {
            Box::new(move |sql| {
                if sql.contains("nme") {
                    Err(ExecFailure::Error { sqlstate: sqlstate.into(), message: "failed".into(), detail: None, hint: None })
                } else {
                    Ok(one_row())
                }
            })
        };
        let replies = ["SELECT nme FROM public.restaurants", "SELECT name FROM public.restaurants"];
        let auto = AskConfig { sql_grammar: GrammarUse::Repair, ..cfg() };
        // A column that does not exist: the model's own repair first; it runs.
        let mut h = Scripted::new(&replies);
        h.exec = failing("42703");
        let out = run(&mut h, "q", &auto, Goal::Rows).unwrap();
        assert!(h.seen.iter().all(|(_, r)| r.constraint.is_none()));
        assert_eq!(out.trace.stages[1].output["unconstrained"], "free_first");
        // Its repair names what does not exist too: the last attempt is under the grammar.
        let mut h = Scripted::new(&[
            "SELECT nme FROM public.restaurants",
            "SELECT nme, 1 FROM public.restaurants",
            "SELECT name FROM public.restaurants",
        ]);
        h.exec = failing("42703");
        run(&mut h, "q", &auto, Goal::Rows).unwrap();
        assert!(h.seen[0].1.constraint.is_none() && h.seen[1].1.constraint.is_none());
        assert!(matches!(h.seen[2].1.constraint, Some(Constraint::Grammar { .. })));
        // Its repair repeats the failed statement: the same request again, under the grammar.
        let mut h = Scripted::new(&[
            "SELECT nme FROM public.restaurants",
            "SELECT nme FROM public.restaurants",
            "SELECT name FROM public.restaurants",
        ]);
        h.exec = failing("42703");
        let out = run(&mut h, "q", &auto, Goal::Rows).unwrap();
        assert!(matches!(h.seen[2].1.constraint, Some(Constraint::Grammar { .. })));
        assert_eq!(h.seen[2].1.messages, h.seen[1].1.messages);
        assert_eq!(out.sql, "SELECT name FROM public.restaurants");
        // With two attempts, the second is the last: under the grammar.
        let mut h = Scripted::new(&replies);
        h.exec = failing("42703");
        run(&mut h, "q", &AskConfig { max_attempts: 2, ..auto.clone() }, Goal::Rows).unwrap();
        assert!(matches!(h.seen[1].1.constraint, Some(Constraint::Grammar { .. })));
        // A division by zero: the grammar would not have prevented it, the repair stays free.
        let mut h = Scripted::new(&replies);
        h.exec = failing("22012");
        run(&mut h, "q", &auto, Goal::Rows).unwrap();
        assert!(h.seen.iter().all(|(_, r)| r.constraint.is_none()));
        // On: from the first call.
        let mut h = Scripted::new(&replies);
        h.exec = failing("42703");
        run(&mut h, "q", &AskConfig { sql_grammar: GrammarUse::Always, ..cfg() }, Goal::Rows).unwrap();
        assert!(h.seen.iter().all(|(_, r)| r.constraint.is_some()));
    }

    #[test]
    fn a_repair_that_repeats_a_failed_statement_ends_without_running_it_again() {
        // The second reply is the first statement with other line breaks and spacing.
        let mut h =
            Scripted::new(&["```sql\nSELECT nme FROM public.restaurants\n```", "SELECT  nme\n  FROM public.restaurants;", "unused"]);
        h.exec = Box::new(|_| {
            Err(ExecFailure::Error { sqlstate: "42703".into(), message: "column \"nme\" does not exist".into(), detail: None, hint: None })
        });
        let (err, trace) = run(&mut h, "q", &cfg(), Goal::Rows).unwrap_err();
        assert!(matches!(&err, AskError::Failed { attempts: 2, sqlstate, .. } if sqlstate == "42703"), "{err:?}");
        assert_eq!(h.executed.len(), 1, "the repeated statement ran again: {:?}", h.executed);
        assert_eq!(trace.llm_calls, 2, "no third call after the repeat");
        let repeat = trace.stages.iter().find(|s| s.output["reason"] == "repeats_failed").expect("the repeat is in the trace");
        assert_eq!((repeat.attempt, repeat.output["first_attempt"].clone()), (Some(2), json!(1)));
    }

    #[test]
    fn hostile_sql_is_never_executed_and_gives_up_after_max_attempts() {
        let mut h = Scripted::new(&["DELETE FROM public.restaurants", "DROP TABLE public.restaurants", "SELECT 1; DELETE FROM x"]);
        let err = run(&mut h, "q", &cfg(), Goal::Answer).unwrap_err();
        assert!(matches!(err.0, AskError::Refused { attempts: 3, .. }), "{:?}", err.0);
        assert!(h.executed.is_empty());
        assert_eq!(err.1.llm_calls, 3);
        assert!(err.1.error.is_some());
    }

    #[test]
    fn database_refusal_goes_back_to_the_llm() {
        let mut h = Scripted::new(&["SELECT my_volatile()", "SELECT name FROM public.restaurants"]);
        h.exec = Box::new(|sql| {
            if sql.contains("my_volatile") {
                Err(ExecFailure::Refused { reason: "calls volatile function my_volatile()".into() })
            } else {
                Ok(one_row())
            }
        });
        let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
        assert_eq!(out.trace.attempts, 2);
        assert!(h.seen[1].1.messages[2].content.contains("refused: calls volatile function"));
    }

    #[test]
    fn reply_without_sql_counts_as_an_attempt() {
        let mut h = Scripted::new(&["I cannot help with that.", "Sorry."]);
        let c = AskConfig { max_attempts: 2, ..cfg() };
        let err = run(&mut h, "q", &c, Goal::Sql).unwrap_err();
        assert!(matches!(err.0, AskError::NoSql { attempts: 2, .. }), "{:?}", err.0);
    }

    #[test]
    fn a_statement_repeated_after_another_ends_with_its_own_error() {
        // Attempt 1 and 3 write the same statement; attempt 2 another one that fails otherwise.
        let mut h =
            Scripted::new(&["SELECT nme FROM public.restaurants", "SELECT name FROM public.nowhere", "SELECT nme FROM public.restaurants"]);
        h.exec = Box::new(|sql| {
            let (sqlstate, message) =
                if sql.contains("nowhere") { ("42P01", "relation does not exist") } else { ("42703", "column \"nme\" does not exist") };
            Err(ExecFailure::Error { sqlstate: sqlstate.into(), message: message.into(), detail: None, hint: None })
        });
        let (err, _) = run(&mut h, "q", &cfg(), Goal::Rows).unwrap_err();
        assert!(
            matches!(&err, AskError::Failed { attempts: 3, sqlstate, sql, .. } if sqlstate == "42703" && sql.contains("nme")),
            "the repeated statement's error, not the previous attempt's: {err:?}"
        );
        assert_eq!(h.executed.len(), 2);
    }

    #[test]
    fn the_same_reply_without_sql_twice_ends_the_attempts() {
        // A small model answering in words ("The answer is: 2") says it again when asked again.
        let mut h = Scripted::new(&["The answer is: 2", "The  answer is:\n2", "unused"]);
        let (err, trace) = run(&mut h, "q", &cfg(), Goal::Sql).unwrap_err();
        assert!(matches!(err, AskError::NoSql { attempts: 2, .. }), "{err:?}");
        assert_eq!(trace.llm_calls, 2);
        assert!(trace.stages.iter().any(|s| s.output["reason"] == "repeats_reply"));
    }

    #[test]
    fn llm_errors_stop_at_once() {
        let mut h = Scripted::new(&[]);
        h.replies.push_back(Err(LlmError::EmptyContent));
        let err = run(&mut h, "q", &cfg(), Goal::Answer).unwrap_err();
        assert_eq!(err.0, AskError::Llm { stage: "generate", source: LlmError::EmptyContent });
        assert_eq!(err.1.error.as_ref().unwrap()["kind"], "empty");
    }

    #[test]
    fn corrected_sql_is_checked_again_and_executed() {
        struct Correcting(Scripted, &'static str);
        scripted_host!(Correcting {
            fn correct_values(&mut self, sql: &str) -> Result<Correction, String> {
                Ok(Correction { sql: sql.replace("'LA'", self.1), changed: true, trace: json!([{"literal": "LA"}]) })
            }
        });
        let mut h = Correcting(Scripted::new(&["SELECT name FROM public.restaurants WHERE city = 'LA'", "ROWS"]), "'Los Angeles'");
        let out = run(&mut h, "q", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.sql, "SELECT name FROM public.restaurants WHERE city = 'Los Angeles'");
        assert_eq!(h.0.executed, ["SELECT name FROM public.restaurants WHERE city = 'Los Angeles'"]);
        let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
        assert_eq!(stages, ["schema", "generate", "guard", "correct", "execute", "answer"]);
        // A "correction" that smuggles in a second statement is refused, never run.
        let mut bad =
            Correcting(Scripted::new(&["SELECT name FROM public.restaurants WHERE city = 'LA'"]), "'x'; DELETE FROM t; SELECT 'y'");
        let err = run(&mut bad, "q", &AskConfig { max_attempts: 1, ..cfg() }, Goal::Rows).unwrap_err();
        assert!(matches!(err.0, AskError::Refused { .. }), "{:?}", err.0);
        assert!(bad.0.executed.is_empty());
    }

    /// A scripted host with a schema selection memory of two schemas.
    struct Selecting(Scripted, Vec<SchemaCandidate>);
    impl Host for Selecting {
        fn schema_text(&mut self) -> Result<String, String> {
            panic!("the full description is not read when a selection exists")
        }
        fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.0.chat(stage, req)
        }
        fn execute(&mut self, sql: &str) -> Result<ResultSet, ExecFailure> {
            self.0.execute(sql)
        }
        fn select_tables(&mut self, _: &str) -> Result<Option<Selection>, String> {
            Ok(Some(Selection { candidates: self.1.clone(), detail: json!({"schemas": ["music", "staff"]}) }))
        }
    }

    fn two_schemas() -> Vec<SchemaCandidate> {
        vec![
            SchemaCandidate { schema: "music".into(), tables: "TABLE music.singer\n  id integer\n".into() },
            SchemaCandidate { schema: "staff".into(), tables: "TABLE staff.employee\n  id integer\n".into() },
        ]
    }

    fn count(n: i64) -> ResultSet {
        ResultSet { columns: vec!["count".into()], rows: vec![vec![json!(n)]], truncated: false, size_cut: false }
    }

    #[test]
    fn a_context_that_answers_runs_no_sql() {
        let mut h = Scripted::new(&["{\"answerable\": true, \"answer\": \"Roma.\"}"]);
        let out = run_with_context(&mut h, "which restaurant?", Some("Our only restaurant is Roma."), &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.answer_text(), "Roma.");
        assert_eq!(out.sql, "");
        assert!(h.executed.is_empty());
        assert!(h.seen[0].1.messages.iter().any(|m| m.content.contains("<context>\nOur only restaurant is Roma.")));
        let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
        assert_eq!(stages, ["context", "context"]);
        assert_eq!(out.trace.stages[1].output["decision"], "answered");
        // A context that does not answer: the pipeline goes on to SQL.
        let mut h = Scripted::new(&["{\"answerable\": false}", "SELECT name FROM public.restaurants", "ROWS"]);
        let out = run_with_context(&mut h, "which restaurant?", Some("The weather is fine."), &cfg(), Goal::Answer).unwrap();
        assert_eq!(h.executed, ["SELECT name FROM public.restaurants"]);
        assert_eq!(out.answer, Some(AnswerDecision::Rows));
        // Without a context, no context call.
        let mut h = Scripted::new(&["SELECT name FROM public.restaurants", "ROWS"]);
        run_with_context(&mut h, "which restaurant?", Some("  "), &cfg(), Goal::Answer).unwrap();
        assert_eq!(h.seen[0].0, "generate");
    }

    #[test]
    fn a_plan_over_two_schemas_runs_both_steps_and_compares() {
        let plan = r#"[{"goal": "count singers", "sql": "SELECT count(*) FROM music.singer", "schema": "music"},
                      {"goal": "count employees", "sql": "SELECT count(*) FROM staff.employee", "schema": "staff"}]"#;
        let mut h = Selecting(Scripted::new(&[plan, "There are more employees (5) than singers (3)."]), two_schemas());
        h.0.exec = Box::new(|sql| Ok(count(if sql.contains("singer") { 3 } else { 5 })));
        let out = run(&mut h, "which has more: singers or employees?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(h.0.executed, ["SELECT count(*) FROM music.singer", "SELECT count(*) FROM staff.employee"]);
        assert_eq!(out.answer_text(), "There are more employees (5) than singers (3).");
        assert_eq!(out.sql, "SELECT count(*) FROM music.singer;\nSELECT count(*) FROM staff.employee");
        let plan_prompt = &h.0.seen[0].1.messages[0].content;
        assert!(plan_prompt.contains("<schema name=\"music\">\nTABLE music.singer") && plan_prompt.contains("TABLE staff.employee"));
        let answer_prompt = &h.0.seen[1].1.messages[0].content;
        assert!(answer_prompt.contains("<step n=\"2\" schema=\"staff\">"), "{answer_prompt}");
        let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
        assert_eq!(stages, ["select", "schema", "plan", "plan", "guard", "execute", "guard", "execute", "answer", "answer", "ground"]);
        assert_eq!(out.trace.stages[7].input["step"], 2);
        assert_eq!(out.trace.llm_calls, 2);
    }

    #[test]
    fn a_plans_answer_over_its_bound_or_the_servers_context_is_the_last_steps_rows() {
        let plan = r#"[{"goal": "list singers", "sql": "SELECT * FROM music.singer", "schema": "music"},
                      {"goal": "list employees", "sql": "SELECT * FROM staff.employee", "schema": "staff"}]"#;
        let wide = |sql: &str| {
            let columns: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
            let tag = if sql.contains("singer") { "s" } else { "e" };
            Ok(ResultSet { columns, rows: vec![vec![json!(tag.repeat(1_000)); 20]; 5], truncated: false, size_cut: false })
        };
        // Over ask.max_prompt_tokens: no answer call.
        let mut h = Selecting(Scripted::new(&[plan]), two_schemas());
        h.0.exec = Box::new(wide);
        let out = run(&mut h, "who is there?", &AskConfig { max_prompt_tokens: 2_000, ..cfg() }, Goal::Answer).unwrap();
        assert_eq!((out.answer, out.sql.as_str(), h.0.seen.len()), (Some(AnswerDecision::Rows), "SELECT * FROM staff.employee", 1));
        assert!(out.trace.notices[0].contains("the steps' rows do not fit"), "{:?}", out.trace.notices);
        // The server refuses it as larger than its context.
        let mut h = Selecting(Scripted::new(&[plan]), two_schemas());
        h.0.exec = Box::new(wide);
        h.0.replies.push_back(Err(LlmError::Http {
            url: "u".into(),
            status: 400,
            message: "the request exceeds the available context size".into(),
            retry_after_s: None,
        }));
        let roomy = AskConfig { max_prompt_tokens: 1_000_000, ..cfg() };
        let out = run(&mut h, "who is there?", &roomy, Goal::Answer).unwrap();
        assert_eq!((out.answer, out.result.rows[0][0].as_str().map(|s| &s[..1])), (Some(AnswerDecision::Rows), Some("e")));
        assert!(out.trace.notices[0].contains("exceeds its context"), "{:?}", out.trace.notices);
        // Any other failure of the call is the question's error.
        let mut h = Selecting(Scripted::new(&[plan]), two_schemas());
        h.0.exec = Box::new(wide);
        h.0.replies.push_back(Err(LlmError::EmptyContent));
        assert!(matches!(run(&mut h, "who is there?", &roomy, Goal::Answer).unwrap_err().0, AskError::Llm { .. }));
    }

    #[test]
    fn a_failing_step_is_repaired_and_one_step_rows_can_be_the_answer() {
        let plan = r#"[{"goal": "list singers", "sql": "SELECT nme FROM music.singer", "schema": "music"},
                      {"goal": "count employees", "schema": "staff"}]"#;
        let mut h = Selecting(
            Scripted::new(&[plan, "SELECT name FROM music.singer", "SELECT count(*) FROM staff.employee", "ROWS 1"]),
            two_schemas(),
        );
        h.0.exec = Box::new(|sql| {
            if sql.contains("nme") {
                Err(ExecFailure::Error {
                    sqlstate: "42703".into(),
                    message: "column \"nme\" does not exist".into(),
                    detail: None,
                    hint: None,
                })
            } else {
                Ok(one_row())
            }
        });
        let out = run(&mut h, "list singers", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.answer, Some(AnswerDecision::Rows));
        assert_eq!(out.sql, "SELECT name FROM music.singer");
        // The repair conversation is about the step's goal over its schema's tables.
        let repair = &h.0.seen[1];
        assert_eq!(repair.0, "repair");
        assert!(
            repair.1.messages[0].content.contains("TABLE music.singer") && repair.1.messages[0].content.contains("<question>list singers")
        );
        // A step without SQL gets it generated over its schema.
        assert_eq!(h.0.seen[2].0, "generate");
        assert!(h.0.seen[2].1.messages[0].content.contains("TABLE staff.employee"));
    }

    #[test]
    fn an_unreadable_plan_falls_back_to_the_best_schema_and_one_schema_needs_no_plan() {
        let mut h = Selecting(Scripted::new(&["I would look at singers.", "SELECT count(*) FROM music.singer", "ROWS"]), two_schemas());
        let out = run(&mut h, "how many singers?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.sql, "SELECT count(*) FROM music.singer");
        assert!(out.trace.stages.iter().any(|s| s.stage == "plan" && s.output["fallback"] == "music"));

        let mut h = Selecting(Scripted::new(&["SELECT count(*) FROM music.singer", "ROWS"]), two_schemas()[..1].to_vec());
        let out = run(&mut h, "how many singers?", &cfg(), Goal::Sql).unwrap();
        assert_eq!(h.0.seen[0].0, "generate");
        assert!(h.0.seen[0].1.messages[0].content.starts_with("<schema>\nTABLE music.singer\n  id integer\n</schema>"));
        let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
        assert_eq!(stages, ["select", "schema", "generate", "guard", "execute"]);
    }

    /// A scripted host with a store of verified queries.
    struct Verifying(Scripted, Vec<Candidate>);
    scripted_host!(Verifying {
        fn verified(&mut self, _: &str) -> Result<Vec<Candidate>, String> {
            Ok(self.1.clone())
        }
    });

    fn verified_count(cosine: f64) -> Candidate {
        Candidate {
            id: 12,
            question: "How many restaurants are there?".into(),
            sql: "SELECT count(*) FROM public.restaurants".into(),
            schema: None,
            verified_by: "alice".into(),
            trusted: true,
            cosine: Some(cosine),
            trigram: 0.6,
        }
    }

    #[test]
    fn a_verified_question_is_answered_without_the_llm() {
        let mut h = Verifying(Scripted::new(&[]), vec![verified_count(0.95)]);
        h.0.exec = Box::new(|_| Ok(count(9)));
        let out = run(&mut h, "What is the number of restaurants?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.trace.llm_calls, 0);
        assert_eq!(h.0.executed, ["SELECT count(*) FROM public.restaurants"]);
        assert_eq!(out.answer, Some(AnswerDecision::Rows));
        assert_eq!((out.trace.source, out.trace.verified_id), (Some("verified"), Some(12)));
        let st = &out.trace.stages[0];
        assert_eq!(
            (st.stage, &st.output["source"], &st.output["id"], &st.output["rule"]),
            ("verified", &json!("verified"), &json!(12), &json!("paraphrase"))
        );
    }

    #[test]
    fn another_question_gets_the_verified_one_as_an_example() {
        let mut h = Verifying(
            Scripted::new(&["SELECT count(*) FROM public.restaurants WHERE closed_on IS NULL", "ROWS"]),
            vec![verified_count(0.8)],
        );
        let out = run(&mut h, "How many restaurants are still open?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.trace.llm_calls, 2);
        assert_eq!(out.trace.source, Some("llm"));
        let prompt = &h.0.seen[0].1.messages[0].content;
        assert!(
            prompt.contains(
                "<example>\n<question>How many restaurants are there?</question>\n```sql\nSELECT count(*) FROM public.restaurants\n```"
            ),
            "{prompt}"
        );
        assert_eq!(out.trace.stages[0].output["candidates"][0]["decision"], "example");
        // Off: nothing retrieved, nothing shown.
        let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants", "ROWS"]), vec![verified_count(0.99)]);
        let off = AskConfig { verified: VerifiedUse::Off, ..cfg() };
        let out = run(&mut h, "How many restaurants are there?", &off, Goal::Answer).unwrap();
        assert_eq!(out.trace.llm_calls, 2);
        assert!(!h.0.seen[0].1.messages[0].content.contains("<examples>"));
        // Examples only: shown, never answering.
        let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants", "ROWS"]), vec![verified_count(0.99)]);
        let examples = AskConfig { verified: VerifiedUse::Examples, ..cfg() };
        let out = run(&mut h, "How many restaurants are there?", &examples, Goal::Answer).unwrap();
        assert_eq!(out.trace.llm_calls, 2);
        assert!(h.0.seen[0].1.messages[0].content.contains("<examples>"));
    }

    #[test]
    fn a_verified_query_that_no_longer_runs_falls_back_to_the_llm() {
        let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants", "ROWS"]), vec![verified_count(0.99)]);
        let mut first = true;
        h.0.exec = Box::new(move |_| {
            if std::mem::take(&mut first) {
                Err(ExecFailure::Error { sqlstate: "42501".into(), message: "permission denied".into(), detail: None, hint: None })
            } else {
                Ok(count(9))
            }
        });
        let out = run(&mut h, "How many restaurants are there?", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.trace.source, Some("llm"));
        assert_eq!(out.trace.stages[0].output["candidates"][0]["decision"], "failed");
    }

    /// A scripted host whose value memory reads "LA" two ways.
    struct Ambiguous(Scripted);
    scripted_host!(Ambiguous {
        fn ambiguities(&mut self, question: &str, _: &[String]) -> Result<Vec<Ambiguity>, String> {
            Ok(if question.contains("LA") { vec![crate::clarify::la()] } else { vec![] })
        }
    });

    #[test]
    fn an_ambiguous_question_is_asked_back_when_clarify_is_on() {
        let on = AskConfig { clarify: true, ..cfg() };
        let mut h = Ambiguous(Scripted::new(&[]));
        let out = run(&mut h, "restaurants in LA?", &on, Goal::Answer).unwrap();
        assert!(
            out.answer_text().starts_with("By \"LA\", did you mean Los Angeles (cities.name) or LA (states.code)?"),
            "{}",
            out.answer_text()
        );
        assert_eq!((out.trace.llm_calls, out.trace.source), (0, Some("clarify")));
        assert!(h.0.executed.is_empty());
        let (err, _) = run(&mut h, "restaurants in LA?", &on, Goal::Sql).unwrap_err();
        assert!(matches!(err, AskError::Ambiguous { .. }));
        // The context says which: the SQL is asked for with the reading written in.
        let mut h = Ambiguous(Scripted::new(&["{\"answerable\": false}", "SELECT name FROM public.restaurants", "ROWS"]));
        let out = run_with_context(&mut h, "restaurants in LA?", Some("the city"), &on, Goal::Answer).unwrap();
        assert_eq!(out.trace.source, Some("llm"));
        assert!(h.0.seen[1].1.messages[0].content.contains("restaurants in LA? (\"LA\" means 'Los Angeles' in public.cities.name)"));
        // Off: no check.
        let mut h = Ambiguous(Scripted::new(&["SELECT name FROM public.restaurants", "ROWS"]));
        let out = run(&mut h, "restaurants in LA?", &cfg(), Goal::Answer).unwrap();
        assert!(out.trace.stages.iter().all(|s| s.stage != "clarify"));
    }

    #[test]
    fn empty_question_and_no_tables() {
        let mut h = Scripted::new(&[]);
        assert_eq!(run(&mut h, "  ", &cfg(), Goal::Sql).unwrap_err().0, AskError::EmptyQuestion);
        struct NoTables;
        impl Host for NoTables {
            fn schema_text(&mut self) -> Result<String, String> {
                Ok(String::new())
            }
            fn chat(&mut self, _: &'static str, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
                unreachable!()
            }
            fn execute(&mut self, _: &str) -> Result<ResultSet, ExecFailure> {
                unreachable!()
            }
        }
        assert_eq!(run(&mut NoTables, "q", &cfg(), Goal::Sql).unwrap_err().0, AskError::NoTables);
    }
}
