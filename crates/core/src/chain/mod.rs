//! The chain of memory behind `ask.do(instruction)`, after ChatDB (Hu et al.):
//! the database is the LLM's symbolic memory, read and written through SQL.
//!
//! [`run_chain`] asks the LLM to plan the instruction as a numbered chain of statements
//! ([`prompt::plan_request`], read by [`plan::parse_chain`]), then runs the steps one at a
//! time through a [`ChainHost`]. A step that needs an earlier result names it with a
//! placeholder (`<sale_id>`, see [`placeholder`]); before the step runs, each placeholder is
//! filled:
//!
//! * **deterministically**, without an LLM call, when the most recent earlier step that
//!   returned a column of that name (case-insensitive) returned exactly one row: its value
//!   goes in as a SQL literal ([`placeholder::sql_literal`]);
//! * otherwise by the LLM, which **rewrites** the step given every earlier statement and its
//!   result ([`prompt::rewrite_request`]). The rewrite must keep the statement kind (a
//!   planned `UPDATE` stays an `UPDATE`: data shown to the model cannot turn it into a
//!   `DELETE`) and must leave no placeholder; a model that finds the step impossible answers
//!   `CANNOT …`, which ends the chain with its reason.
//!
//! Every statement, as planned (placeholders read as `NULL`) and again as it will run, goes
//! through [`check_write_step`]: one statement, `SELECT`/`INSERT`/`UPDATE`/`DELETE` only, no
//! DDL, the deny list of functions with `nextval` allowed in `INSERT`. Refusals in the plan
//! stop the chain before anything runs, as does a plan longer than
//! [`ChainConfig::max_steps`]. After the last step, the LLM summarises what was done.
//!
//! Any failure is an error carrying the trace so far; the glue raises it, and PostgreSQL rolls
//! back the caller's transaction, so nothing of the chain persists. The glue also checks
//! `ask.allow_writes` before calling [`run_chain`], and runs each step as the calling role.

pub mod placeholder;
pub mod plan;
pub mod prompt;

use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Map, Value};
use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::ask::{Catalog, ExecFailure, HostError, Llm};
use crate::extract::extract_sql;
use crate::guard::{check_write_step, Refusal};
use crate::llm::{ChatRequest, LlmError};
use crate::trace::{ms_since, StageTrace, Trace};
use placeholder::{find_placeholders, sql_literal, substitute, Placeholder};
use plan::{parse_chain, PlannedStep};

/// Stage names, as they appear in traces and in the ledger.
pub mod stage {
    pub use crate::ask::stage::{EXECUTE, GUARD, SCHEMA};
    pub const PLAN: &str = "plan";
    pub const PRECHECK: &str = "precheck";
    pub const FILL: &str = "fill";
    pub const REWRITE: &str = "rewrite";
    pub const SUMMARY: &str = "summary";
}

/// Settings of a chain run; the glue fills them from GUCs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainConfig {
    /// The most statements a chain may have (`ask.max_steps`).
    pub max_steps: u32,
    /// Rows of each step's result shown to the LLM at most.
    pub prompt_rows: u32,
    /// Rows of each step's result kept in the returned JSON at most.
    pub output_rows: u32,
}

impl Default for ChainConfig {
    fn default() -> Self {
        ChainConfig { max_steps: 10, prompt_rows: 20, output_rows: 100 }
    }
}

/// What one statement did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepResult {
    /// Result columns (a `SELECT`'s, or a `RETURNING` list's); empty for plain DML.
    pub columns: Vec<String>,
    /// The rows fetched (possibly fewer than `rows_affected` under a row limit).
    pub rows: Vec<Vec<Value>>,
    /// Rows returned by a `SELECT`, or inserted, updated or deleted by DML (`SPI_processed`).
    pub rows_affected: u64,
}

/// What a chain needs from its surroundings: `ask()`'s LLM and catalog capabilities (the
/// schema as prompt text, [`Catalog::schema_text`]), and one more.
pub trait ChainHost: Llm + Catalog {
    /// Runs one statement that passed [`check_write_step`], as the calling role, in the
    /// caller's transaction, under the statement timeout.
    fn execute_step(&mut self, sql: &str) -> Result<StepResult, ExecFailure>;
}

/// The kind of a step's statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    Select,
    Insert,
    Update,
    Delete,
}

impl StepKind {
    /// The kind of a single statement, or `None` when it does not parse as one of the four.
    pub fn of(sql: &str) -> Option<StepKind> {
        match Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?.as_slice() {
            [Statement::Query(_)] => Some(StepKind::Select),
            [Statement::Insert(_)] => Some(StepKind::Insert),
            [Statement::Update(_)] => Some(StepKind::Update),
            [Statement::Delete(_)] => Some(StepKind::Delete),
            _ => None,
        }
    }

    /// The kind with placeholders read as `NULL` (for planned steps).
    fn of_planned(sql: &str) -> Option<StepKind> {
        StepKind::of(&with_nulls(sql))
    }

    fn returns_rows_only(self) -> bool {
        self == StepKind::Select
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Select => "select",
            StepKind::Insert => "insert",
            StepKind::Update => "update",
            StepKind::Delete => "delete",
        }
    }
}

/// How a step's placeholders were filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Filled {
    /// The step had no placeholders and ran as planned.
    AsPlanned,
    /// From a one-row earlier result, without an LLM call.
    FromResults,
    /// Rewritten by the LLM.
    Rewritten,
}

/// A step that ran.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutedStep {
    /// 1-based.
    pub number: usize,
    pub purpose: Option<String>,
    /// The statement as planned, with its placeholders.
    pub planned_sql: String,
    /// The statement as it ran.
    pub sql: String,
    pub kind: StepKind,
    pub filled: Filled,
    pub result: StepResult,
}

/// A chain that ran to the end.
#[derive(Debug, Clone)]
pub struct ChainOutcome {
    pub instruction: String,
    pub steps: Vec<ExecutedStep>,
    /// The LLM's summary of what was done.
    pub summary: String,
    /// Transaction-control statements of the plan that were dropped.
    pub ignored: Vec<String>,
    pub trace: Trace,
}

impl ChainOutcome {
    /// The `jsonb` that `ask.do()` returns: the instruction, each step with its SQL, kind and
    /// rows affected (or returned, with the rows, at most `output_rows` of them), and the
    /// summary.
    pub fn to_json(&self, output_rows: usize) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|step| {
                let mut v = json!({
                    "step": step.number,
                    "sql": step.sql,
                    "kind": step.kind.as_str(),
                    "filled": step.filled,
                });
                if let Some(purpose) = &step.purpose {
                    v["purpose"] = json!(purpose);
                }
                if step.sql != step.planned_sql {
                    v["planned_sql"] = json!(step.planned_sql);
                }
                let count_key = if step.kind.returns_rows_only() { "rows_returned" } else { "rows_affected" };
                v[count_key] = json!(step.result.rows_affected);
                if !step.result.columns.is_empty() {
                    v["rows"] = Value::Array(row_objects(&step.result, output_rows));
                    if step.result.rows_affected as usize > output_rows.min(step.result.rows.len()) {
                        v["rows_truncated"] = json!(true);
                    }
                }
                v
            })
            .collect();
        let mut out = json!({
            "instruction": self.instruction,
            "steps": steps,
            "summary": self.summary,
            "llm_calls": self.trace.llm_calls,
            "prompt_tokens": self.trace.prompt_tokens,
            "completion_tokens": self.trace.completion_tokens,
            "ms": self.trace.ms,
        });
        if !self.ignored.is_empty() {
            out["ignored"] = json!(self.ignored);
        }
        out
    }
}

/// Result rows as JSON objects keyed by column name (repeated names get `_2`, `_3`, …).
fn row_objects(result: &StepResult, limit: usize) -> Vec<Value> {
    let names =
        crate::rows::ResultSet { columns: result.columns.clone(), rows: vec![], truncated: false, size_cut: false }.unique_columns();
    result
        .rows
        .iter()
        .take(limit)
        .map(|row| {
            let object: Map<String, Value> = names.iter().cloned().zip(row.iter().cloned()).collect();
            Value::Object(object)
        })
        .collect()
}

/// Why a chain stopped. Step numbers are 1-based. Any of these means that nothing of the
/// chain may persist: the glue raises it as an error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChainError {
    #[error("the instruction is empty")]
    EmptyInstruction,
    #[error("there are no tables the current role may use")]
    NoTables,
    /// The host failed (reading the schema).
    #[error("{0}")]
    Host(HostError),
    #[error("{source}")]
    Llm { stage: &'static str, source: LlmError },
    /// The plan contained no statement.
    #[error("the LLM's plan contained no SQL steps")]
    NoSteps { reply: String },
    #[error("the plan has {planned} steps, more than ask.max_steps ({max})")]
    TooManySteps { planned: usize, max: u32 },
    /// A step was refused by the write allowlist (in the plan, or as it was about to run).
    #[error("step {step} was refused: {refusal}")]
    Refused { step: usize, sql: String, refusal: Refusal },
    /// The rewrite of a step held no SQL.
    #[error("step {step} could not be rewritten: the LLM's reply contained no SQL")]
    NoSqlInRewrite { step: usize, reply: String },
    /// The LLM found, from the earlier results, that a step cannot be done.
    #[error("step {step} cannot be done: {reason}")]
    StepImpossible { step: usize, reason: String },
    /// The rewrite left placeholders unfilled.
    #[error("step {step} still has placeholders after rewriting: {}", names.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>().join(", "))]
    UnfilledPlaceholder { step: usize, names: Vec<String>, sql: String },
    /// The rewrite changed what kind of statement the step is.
    #[error("step {step} was planned as {planned:?} but rewritten as {rewritten:?}")]
    RewriteChangedKind { step: usize, planned: StepKind, rewritten: StepKind, sql: String },
    /// PostgreSQL refused or failed the statement.
    #[error("step {step} failed: {}", failure.for_llm())]
    StepFailed {
        step: usize,
        sql: String,
        /// Boxed: PostgreSQL's error with its detail and hint is large.
        failure: Box<ExecFailure>,
    },
}

impl ChainError {
    /// A short, stable, machine-readable code.
    pub fn reason_code(&self) -> &'static str {
        match self {
            ChainError::EmptyInstruction => "empty_instruction",
            ChainError::NoTables => "no_tables",
            ChainError::Host(_) => "host",
            ChainError::Llm { .. } => "llm",
            ChainError::NoSteps { .. } => "no_steps",
            ChainError::TooManySteps { .. } => "too_many_steps",
            ChainError::Refused { .. } => "refused",
            ChainError::NoSqlInRewrite { .. } => "no_sql_in_rewrite",
            ChainError::StepImpossible { .. } => "step_impossible",
            ChainError::UnfilledPlaceholder { .. } => "unfilled_placeholder",
            ChainError::RewriteChangedKind { .. } => "rewrite_changed_kind",
            ChainError::StepFailed { .. } => "step_failed",
        }
    }

    /// The step the error is about, if any.
    pub fn step(&self) -> Option<usize> {
        match self {
            ChainError::Refused { step, .. }
            | ChainError::NoSqlInRewrite { step, .. }
            | ChainError::StepImpossible { step, .. }
            | ChainError::UnfilledPlaceholder { step, .. }
            | ChainError::RewriteChangedKind { step, .. }
            | ChainError::StepFailed { step, .. } => Some(*step),
            _ => None,
        }
    }

    /// The error as JSON, for the trace.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"message": self.to_string(), "reason": self.reason_code()});
        if let Some(step) = self.step() {
            v["step"] = json!(step);
        }
        match self {
            ChainError::Llm { stage, source } => {
                v["stage"] = json!(stage);
                v["kind"] = json!(source.outcome());
            }
            ChainError::Refused { sql, refusal, .. } => {
                v["sql"] = json!(sql);
                v["refusal"] = json!(refusal.reason_code());
            }
            ChainError::StepFailed { sql, failure, .. } => {
                v["sql"] = json!(sql);
                if let ExecFailure::Error { sqlstate, .. } = failure.as_ref() {
                    v["sqlstate"] = json!(sqlstate);
                }
            }
            ChainError::UnfilledPlaceholder { sql, .. } | ChainError::RewriteChangedKind { sql, .. } => {
                v["sql"] = json!(sql);
            }
            _ => {}
        }
        v
    }
}

/// `sql` with every placeholder read as `NULL`.
fn with_nulls(sql: &str) -> String {
    let found = find_placeholders(sql);
    substitute(sql, &found, &vec!["NULL".to_string(); found.len()])
}

/// One LLM call, recorded in the trace.
fn call(
    host: &mut dyn ChainHost,
    trace: &mut Trace,
    stage: &'static str,
    step: Option<usize>,
    req: &ChatRequest,
) -> Result<String, ChainError> {
    let t = Instant::now();
    let st = StageTrace::new(stage, json!({"prompt_chars": req.prompt_chars(), "messages": req.messages.len(), "step": step}));
    let result = host.chat(stage, req);
    trace.record_call(st, t, result).map_err(|source| ChainError::Llm { stage, source })
}

/// Plans `instruction`, runs its steps and summarises them. On failure the trace so far comes
/// back with the error; steps after the failing one never run.
// The error carries the whole trace, as `pipeline::run` does; it is built once per call.
#[allow(clippy::result_large_err)]
pub fn run_chain(host: &mut dyn ChainHost, instruction: &str, cfg: &ChainConfig) -> Result<ChainOutcome, (ChainError, Trace)> {
    let started = Instant::now();
    let mut trace = Trace { question: instruction.to_string(), ..Default::default() };
    let result = run_inner(host, instruction, cfg, &mut trace);
    trace.ms = ms_since(started);
    match result {
        Ok((steps, summary, ignored)) => {
            trace.final_sql = steps.last().map(|s| s.sql.clone());
            trace.attempts = 1;
            Ok(ChainOutcome { instruction: instruction.to_string(), steps, summary, ignored, trace })
        }
        Err(e) => {
            trace.error = Some(e.to_json());
            Err((e, trace))
        }
    }
}

type Finished = (Vec<ExecutedStep>, String, Vec<String>);

fn run_inner(host: &mut dyn ChainHost, instruction: &str, cfg: &ChainConfig, trace: &mut Trace) -> Result<Finished, ChainError> {
    if instruction.trim().is_empty() {
        return Err(ChainError::EmptyInstruction);
    }
    let t = Instant::now();
    let schema = host.schema_text().map_err(ChainError::Host)?;
    let mut st = StageTrace::new(stage::SCHEMA, Value::Null);
    st.output = json!({"chars": schema.len()});
    st.ms = ms_since(t);
    trace.push(st);
    if schema.trim().is_empty() {
        return Err(ChainError::NoTables);
    }

    let max_steps = cfg.max_steps.max(1);
    let reply = call(host, trace, stage::PLAN, None, &prompt::plan_request(instruction, &schema, max_steps))?;
    let chain = parse_chain(&trace.read_shaped(crate::constrain::schemas::Shape::ChainPlan, &reply));
    if let Some(st) = trace.stages.last_mut() {
        st.output["steps"] = json!(chain.steps.iter().map(|s| &s.sql).collect::<Vec<_>>());
        if !chain.ignored.is_empty() {
            st.output["ignored"] = json!(chain.ignored);
        }
    }
    if chain.steps.is_empty() {
        return Err(ChainError::NoSteps { reply: reply.chars().take(300).collect() });
    }
    if chain.steps.len() > max_steps as usize {
        return Err(ChainError::TooManySteps { planned: chain.steps.len(), max: max_steps });
    }
    precheck(&chain.steps, trace)?;

    let prompt_rows = cfg.prompt_rows as usize;
    let mut done: Vec<ExecutedStep> = Vec::with_capacity(chain.steps.len());
    for (i, planned) in chain.steps.iter().enumerate() {
        let number = i + 1;
        let (sql, filled) = fill_step(host, trace, instruction, &schema, &done, number, planned, prompt_rows)?;

        let t = Instant::now();
        let mut st = StageTrace::new(stage::GUARD, json!({"step": number, "sql": sql}));
        let checked = check_write_step(&sql);
        st.ms = ms_since(t);
        let checked = match checked {
            Ok(checked) => {
                st.output = json!({"allowed": true, "tables": checked.tables});
                trace.push(st);
                checked
            }
            Err(refusal) => {
                st.output = json!({"allowed": false, "reason": refusal.reason_code()});
                st.error = Some(refusal.to_string());
                trace.push(st);
                return Err(ChainError::Refused { step: number, sql, refusal });
            }
        };
        let kind = StepKind::of(&checked.sql).unwrap_or(StepKind::Select);
        if let Some(planned_kind) = StepKind::of_planned(&planned.sql) {
            if filled == Filled::Rewritten && planned_kind != kind {
                return Err(ChainError::RewriteChangedKind { step: number, planned: planned_kind, rewritten: kind, sql: checked.sql });
            }
        }

        let t = Instant::now();
        let mut st = StageTrace::new(stage::EXECUTE, json!({"step": number, "sql": checked.sql}));
        let result = host.execute_step(&checked.sql);
        st.ms = ms_since(t);
        match result {
            Ok(result) => {
                st.output = json!({"rows_affected": result.rows_affected, "columns": result.columns});
                trace.push(st);
                done.push(ExecutedStep {
                    number,
                    purpose: planned.purpose.clone(),
                    planned_sql: planned.sql.clone(),
                    sql: checked.sql,
                    kind,
                    filled,
                    result,
                });
            }
            Err(failure) => {
                st.output = match &failure {
                    ExecFailure::Refused { .. } => json!({"refused": true}),
                    ExecFailure::Error { sqlstate, .. } => json!({"sqlstate": sqlstate}),
                };
                st.error = Some(failure.for_llm());
                trace.push(st);
                return Err(ChainError::StepFailed { step: number, sql: checked.sql, failure: Box::new(failure) });
            }
        }
    }

    let summary = call(host, trace, stage::SUMMARY, None, &prompt::summary_request(instruction, &done, prompt_rows))?;
    Ok((done, summary.trim().to_string(), chain.ignored))
}

/// Checks every planned step (placeholders read as `NULL`) before anything runs. A step that
/// only fails to parse because of where its placeholders stand is left to the check before it
/// runs; any other refusal stops the chain now.
fn precheck(steps: &[PlannedStep], trace: &mut Trace) -> Result<(), ChainError> {
    let t = Instant::now();
    let mut st = StageTrace::new(stage::PRECHECK, json!({"steps": steps.len()}));
    for (i, step) in steps.iter().enumerate() {
        let has_placeholders = !find_placeholders(&step.sql).is_empty();
        match check_write_step(&with_nulls(&step.sql)) {
            Ok(_) => {}
            Err(Refusal::Unparsable(_)) if has_placeholders => {}
            Err(refusal) => {
                st.ms = ms_since(t);
                st.output = json!({"allowed": false, "step": i + 1, "reason": refusal.reason_code()});
                st.error = Some(refusal.to_string());
                trace.push(st);
                return Err(ChainError::Refused { step: i + 1, sql: step.sql.clone(), refusal });
            }
        }
    }
    st.ms = ms_since(t);
    st.output = json!({"allowed": true});
    trace.push(st);
    Ok(())
}

/// The value for a placeholder from earlier results: the most recent step that returned a
/// column of that name decides; it must have returned exactly one row.
fn deterministic_value(done: &[ExecutedStep], name: &str) -> Option<Value> {
    let step = done.iter().rev().find(|s| s.result.columns.iter().any(|c| c.eq_ignore_ascii_case(name)))?;
    let column = step.result.columns.iter().position(|c| c.eq_ignore_ascii_case(name))?;
    match step.result.rows.as_slice() {
        [row] if step.result.rows_affected == 1 => row.get(column).cloned(),
        _ => None,
    }
}

/// The reason of a rewrite reply that says the step cannot be done (`CANNOT: ...`), or `None`
/// for any other reply.
pub fn step_impossible(reply: &str) -> Option<String> {
    let trimmed = reply.trim().trim_start_matches(['`', '*', '"']);
    // (`get`: a reply may start with a character of several bytes.)
    if !trimmed.get(..6).is_some_and(|head| head.eq_ignore_ascii_case("cannot")) {
        return None;
    }
    let reason = trimmed[6..].trim_start_matches([':', ' ', '-', '.']).trim();
    Some(if reason.is_empty() { "no reason given".into() } else { reason.to_string() })
}

/// The statement to run for a planned step, and how its placeholders were filled.
#[allow(clippy::too_many_arguments)]
fn fill_step(
    host: &mut dyn ChainHost,
    trace: &mut Trace,
    instruction: &str,
    schema: &str,
    done: &[ExecutedStep],
    number: usize,
    planned: &PlannedStep,
    prompt_rows: usize,
) -> Result<(String, Filled), ChainError> {
    let placeholders: Vec<Placeholder> = find_placeholders(&planned.sql);
    if placeholders.is_empty() {
        return Ok((planned.sql.clone(), Filled::AsPlanned));
    }
    let values: Option<Vec<String>> = placeholders.iter().map(|p| deterministic_value(done, &p.name).map(|v| sql_literal(&v))).collect();
    let mut names: Vec<String> = Vec::new();
    for placeholder in &placeholders {
        if !names.contains(&placeholder.name) {
            names.push(placeholder.name.clone());
        }
    }
    if let Some(values) = values {
        let sql = substitute(&planned.sql, &placeholders, &values);
        let mut st = StageTrace::new(stage::FILL, json!({"step": number, "placeholders": names}));
        st.output = json!({"sql": sql, "values": values});
        trace.push(st);
        return Ok((sql, Filled::FromResults));
    }

    let req = prompt::rewrite_request(instruction, schema, done, number, &planned.sql, &names, prompt_rows);
    let reply = call(host, trace, stage::REWRITE, Some(number), &req)?;
    if let Some(reason) = step_impossible(&reply) {
        return Err(ChainError::StepImpossible { step: number, reason });
    }
    let Some(sql) = extract_sql(&reply) else {
        return Err(ChainError::NoSqlInRewrite { step: number, reply: reply.chars().take(300).collect() });
    };
    let left: Vec<String> = find_placeholders(&sql).into_iter().map(|p| p.name).collect();
    if !left.is_empty() {
        return Err(ChainError::UnfilledPlaceholder { step: number, names: left, sql });
    }
    Ok((sql, Filled::Rewritten))
}
