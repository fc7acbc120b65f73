//! Text-to-SQL evaluation on the user's own schema: `ask.load_suite(name, rows)` and
//! `CALL ask.evaluate(suite, run_label)` (a procedure in `sql/evaluate.sql` that loops over
//! [`evaluate_step`], committing after each batch).
//!
//! Each question goes through the same pipeline as `ask.sql()` (`Goal::Sql`, through the
//! backend's host), then the prediction and the gold SQL run read-only as the caller and are
//! compared by the core's judge. The LLM calls of a batch are concurrent without any change to
//! the pipeline: see `pg_ask_core::evaluate::prefetch`.

#[cfg(any(test, feature = "pg_test"))]
mod knowledge_tests;
#[cfg(any(test, feature = "pg_test"))]
mod roles_tests;
#[cfg(any(test, feature = "pg_test"))]
mod tests;

use crate::llm::batch;
use std::time::Instant;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Value};

use pg_ask_core::ask::{self as pipeline, AskError, Catalog, ExecFailure, Executor, Goal, HostError, Llm, Memory, NoMemory, Question};
use pg_ask_core::evaluate::prefetch::{Capture, Prefetched, Replay, SelectionMade};
use pg_ask_core::evaluate::{check_gold, judge, parse_suite_rows, QuestionRecord, RecordOutcome};
use pg_ask_core::llm::{ChatRequest, ChatResponse, LlmError};
use pg_ask_core::rows::ResultSet;
use pg_ask_core::sqltext::quote_ident;
use pg_ask_core::values::correct::Looked;
use pg_ask_core::values::literals::LiteralRef;

use crate::ask::host::BackendHost;
use crate::guard::Limits;
use crate::pg::errors::Raised;
use crate::pg::errors::{self, raise};
use crate::pg::gucs::{self, LlmOverrides};
use crate::pg::identity::mine;
use crate::pg::spi::in_schema;

/// Rows a judged result may have at most (the prediction and the gold SQL run again with this
/// limit; a result cut by it cannot be judged).
const JUDGE_ROW_LIMIT: u32 = 100_000;

/// Load a suite of questions with gold SQL (replacing the caller's suite of that name, and its
/// runs). `rows` is a JSON array of objects with `question` and `gold_sql` (or `query`), and
/// optionally `schema` (or `db_name`), `category`, `difficulty`, `instructions`. Returns the
/// number of questions.
#[pg_extern(name = "load_suite", volatile, strict, parallel_unsafe)]
pub(crate) fn load_suite(name: &str, rows: JsonB) -> i32 {
    if name.trim().is_empty() {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "the suite name is empty",
            "Name the suite, e.g. ask.load_suite('mine', rows).",
        );
    }
    let questions = parse_suite_rows(&rows.0).unwrap_or_else(|e| {
        let mut r = Raised::from(&e);
        r.message = format!("suite \"{name}\" cannot be loaded: {}", r.message);
        r.raise()
    });
    let runs = Spi::get_one_with_args::<i64>(&mine("SELECT count(*) FROM ask.eval_runs WHERE owner = {me} AND suite = $1"), &[name.into()])
        .ok()
        .flatten()
        .unwrap_or(0);
    Spi::run_with_args(&mine("DELETE FROM ask.eval_suites WHERE owner = {me} AND suite = $1"), &[name.into()])
        .unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise());
    if runs > 0 {
        notice!("pg_ask: suite \"{name}\" replaced; its {runs} earlier run(s) were dropped");
    }
    let n = questions.len() as i32;
    Spi::run_with_args("INSERT INTO ask.eval_suites (suite, questions) VALUES ($1, $2)", &[name.into(), n.into()])
        .unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise());
    let records: Vec<Value> = questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            json!({"qno": i + 1, "question": q.question, "gold_sql": q.gold_sql, "schema": q.schema,
                   "category": q.category, "difficulty": q.difficulty, "instructions": q.instructions})
        })
        .collect();
    Spi::run_with_args(
        "INSERT INTO ask.eval_questions (suite, qno, question, gold_sql, schema, category, difficulty, instructions)
         SELECT $1, qno, question, gold_sql, schema, category, difficulty, instructions
         FROM jsonb_to_recordset($2) AS r(qno int, question text, gold_sql text, schema text,
                                          category text, difficulty text, instructions text)",
        &[name.into(), JsonB(Value::Array(records)).into()],
    )
    .unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise());
    let distinct = |f: fn(&pg_ask_core::evaluate::SuiteQuestion) -> Option<&String>| {
        questions.iter().filter_map(f).collect::<std::collections::BTreeSet<_>>().len()
    };
    notice!(
        "pg_ask: suite \"{name}\" loaded: {n} questions, {} schema(s), {} categories, {} difficulties",
        distinct(|q| q.schema.as_ref()),
        distinct(|q| q.category.as_ref()),
        distinct(|q| q.difficulty.as_ref())
    );
    n
}

/// A question waiting in a run.
struct Pending {
    qno: i32,
    question: String,
    gold_sql: String,
    schema: Option<String>,
    category: Option<String>,
    difficulty: Option<String>,
    instructions: Option<String>,
}

impl Pending {
    fn prompt_text(&self) -> String {
        pg_ask_core::evaluate::SuiteQuestion {
            question: self.question.clone(),
            gold_sql: self.gold_sql.clone(),
            gold_alternatives: Vec::new(),
            category: None,
            difficulty: None,
            schema: None,
            instructions: self.instructions.clone(),
        }
        .prompt_text()
    }
}

/// The backend's host, with the description narrowed to the question's schema, and the
/// knowledge layer's items offered when the run uses them (`ask.eval_runs.knowledge`).
struct SuiteHost<'a> {
    backend: &'a mut BackendHost,
    schema: Option<&'a str>,
    knowledge: bool,
}

impl Catalog for SuiteHost<'_> {
    fn schema_text(&mut self) -> Result<String, HostError> {
        match self.schema {
            None => self.backend.schema_text(),
            Some(s) => {
                let quoted = quote_ident(s);
                let tables: Vec<_> = crate::schema::readable_tables()?.iter().filter(|t| t.schema == quoted).cloned().collect();
                Ok(crate::values::listed::render(&tables))
            }
        }
    }
    /// A question tied to a schema is described from that schema alone; others go through
    /// the schema selection memory, as ask.sql() does.
    fn select_tables(&mut self, question: &Question) -> Result<Option<pg_ask_core::ask::Selection>, HostError> {
        match self.schema {
            None => self.backend.select_tables(question),
            Some(_) => Ok(None),
        }
    }
    /// Only verified queries read literals, and an evaluation uses none (below).
    fn literals_of(&mut self, _sql: &str, _schema: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
        Ok(Vec::new())
    }
}

impl Llm for SuiteHost<'_> {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.backend.chat(stage, req)
    }
}

impl Executor for SuiteHost<'_> {
    fn execute(&mut self, sql: &pg_ask_core::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        Executor::execute(self.backend, sql)
    }
    fn execute_verified(&mut self, sql: &pg_ask_core::guard::CheckedSql, _schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
        Executor::execute(self.backend, sql)
    }
}

/// An evaluation measures the model: its SQL is corrected against the value memory as ask()'s
/// is (what the model writes for a literal looked up there too), but no verified query answers
/// for it (a suite's gold SQL may have been verified) and no question is asked back.
impl Memory for SuiteHost<'_> {
    fn literal_evidence(&mut self, sql: &pg_ask_core::guard::CheckedSql) -> Result<Vec<Looked>, HostError> {
        self.backend.literal_evidence(sql)
    }
    fn verified(&mut self, question: &Question) -> Result<Vec<pg_ask_core::verified::Candidate>, HostError> {
        NoMemory.verified(question)
    }
    /// The value memory's reading of a value the model wrote for a literal, as ask() reads it
    /// (value correction looks up there what the model wrote).
    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError> {
        self.backend.stored_value(lit, text)
    }
    fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<pg_ask_core::clarify::Ambiguity>, HostError> {
        NoMemory.ambiguities(question, tables)
    }
    /// The question's phrases the value memory holds, as ask() reads them: a query that leaves
    /// one out is asked again in an evaluation as in ask().
    fn named_values(&mut self, question: &str, tables: &[String]) -> Result<Vec<pg_ask_core::clarify::Named>, HostError> {
        self.backend.named_values(question, tables)
    }
    /// The knowledge a DBA wrote, as ask() offers it: an evaluation measures with it unless the
    /// run was started with `ask.use_knowledge` off.
    fn knowledge(&mut self, question: &Question, tables: &[String]) -> Result<Vec<pg_ask_core::knowledge::Item>, HostError> {
        match self.knowledge {
            true => self.backend.knowledge(question, tables),
            false => Ok(Vec::new()),
        }
    }
    fn resolve_relations(&mut self, names: &[Vec<String>]) -> Vec<String> {
        self.backend.resolve_relations(names)
    }
}

fn backend_host() -> BackendHost {
    BackendHost::new(&LlmOverrides::default())
}

fn suite_size(suite: &str) -> i32 {
    match Spi::get_one_with_args::<i32>(&mine("SELECT questions FROM ask.eval_suites WHERE owner = {me} AND suite = $1"), &[suite.into()]) {
        Ok(Some(n)) => n,
        _ => raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("there is no evaluation suite \"{suite}\" of role {}", crate::pg::spi::current_user()),
            "Load one with SELECT ask.load_suite(name, rows); ask.eval_suites lists yours.",
        ),
    }
}

/// The run's row (made when missing, with `ask.use_knowledge` as it is now); says when a
/// resumed run now uses another model. Returns whether the run uses the knowledge layer.
fn ensure_run(suite: &str, run_label: &str, cfg: &pg_ask_core::config::LlmConfig) -> bool {
    if run_label.trim().is_empty() {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "the run label is empty",
            "Label the run, e.g. CALL ask.evaluate('mine', 'qwen-7b-1').",
        );
    }
    // eval_runs.knowledge came with 0.2.0: until ALTER EXTENSION pg_ask UPDATE, no run uses it.
    let recorded = crate::pg::version::sql_at_least("0.2.0");
    let before = Spi::get_three_with_args::<String, String, bool>(
        &mine(if recorded {
            "SELECT provider, model, knowledge FROM ask.eval_runs WHERE owner = {me} AND suite = $1 AND run_label = $2"
        } else {
            "SELECT provider, model, false FROM ask.eval_runs WHERE owner = {me} AND suite = $1 AND run_label = $2"
        }),
        &[suite.into(), run_label.into()],
    );
    match before {
        Ok((Some(p), Some(m), knowledge)) => {
            if p != cfg.provider.as_str() || m != cfg.model {
                notice!(
                    "pg_ask: run \"{run_label}\" was started with {p} model {m}; it continues with {} model {}",
                    cfg.provider.as_str(),
                    cfg.model
                );
            }
            let knowledge = knowledge.unwrap_or(false);
            if knowledge && !gucs::use_knowledge() {
                notice!("pg_ask: run \"{run_label}\" was started with ask.use_knowledge on; it continues without the knowledge layer, as the setting is now off");
            }
            knowledge && gucs::use_knowledge()
        }
        _ => {
            let knowledge = recorded && gucs::use_knowledge();
            let sql = if recorded {
                "INSERT INTO ask.eval_runs (suite, run_label, provider, model, knowledge) VALUES ($1, $2, $3, $4, $5)"
            } else {
                "INSERT INTO ask.eval_runs (suite, run_label, provider, model) VALUES ($1, $2, $3, $4)"
            };
            let args: [DatumWithOid; 5] =
                [suite.into(), run_label.into(), cfg.provider.as_str().into(), cfg.model.as_str().into(), knowledge.into()];
            Spi::run_with_args(sql, if recorded { &args } else { &args[..4] })
                .unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise());
            knowledge
        }
    }
}

/// (evaluated, correct, judged) of a run so far.
fn progress(suite: &str, run_label: &str) -> (i64, i64, i64) {
    Spi::get_three_with_args::<i64, i64, i64>(
        &mine(
            "SELECT count(*), count(*) FILTER (WHERE ex), count(*) FILTER (WHERE outcome <> 'gold_failed')
         FROM ask.eval_results WHERE owner = {me} AND suite = $1 AND run_label = $2",
        ),
        &[suite.into(), run_label.into()],
    )
    .map(|(a, b, c)| (a.unwrap_or(0), b.unwrap_or(0), c.unwrap_or(0)))
    .unwrap_or((0, 0, 0))
}

/// Start (or resume) a run: checks the suite, records the run, and says what is left to do.
#[pg_extern(name = "_evaluate_begin", volatile, strict, parallel_unsafe)]
pub(crate) fn evaluate_begin(suite: &str, run_label: &str) -> i32 {
    crate::pg::subxact::require_nonatomic("ask.evaluate");
    let total = suite_size(suite);
    let cfg = backend_host().llm;
    ensure_run(suite, run_label, &cfg);
    let (done, _, _) = progress(suite, run_label);
    let left = total as i64 - done;
    if done > 0 {
        notice!("pg_ask evaluate: resuming run \"{run_label}\" of suite \"{suite}\": {left} of {total} questions left ({} model {}, {} at a time)", cfg.provider.as_str(), cfg.model, gucs::concurrency());
    } else {
        notice!(
            "pg_ask evaluate: run \"{run_label}\" of suite \"{suite}\": {total} questions ({} model {}, {} at a time)",
            cfg.provider.as_str(),
            cfg.model,
            gucs::concurrency()
        );
    }
    left as i32
}

/// Evaluate the next batch of questions of a run (at most `batch`, by default
/// `ask.concurrency`), their first LLM calls sent together; returns how many were evaluated (0
/// when the run is complete, which then marks it finished). `CALL ask.evaluate()` loops over
/// this, committing after each batch; inside a transaction block, call it in a loop yourself.
#[pg_extern(name = "evaluate_step", volatile, parallel_unsafe)]
pub(crate) fn evaluate_step(suite: &str, run_label: &str, batch: default!(Option<i32>, "NULL")) -> i32 {
    let total = suite_size(suite);
    let mut backend = backend_host();
    let knowledge = ensure_run(suite, run_label, &backend.llm);
    let concurrency = gucs::concurrency().max(1);
    let batch = batch.unwrap_or(concurrency as i32);
    if batch < 1 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("batch must be at least 1, not {batch}"),
            "Leave it out to use ask.concurrency.",
        );
    }
    let pending = pending_questions(suite, run_label, batch);
    if pending.is_empty() {
        let finished = Spi::get_one_with_args::<bool>(
            &mine(
                "UPDATE ask.eval_runs SET finished_at = clock_timestamp()
             WHERE owner = {me} AND suite = $1 AND run_label = $2 AND finished_at IS NULL RETURNING true",
            ),
            &[suite.into(), run_label.into()],
        );
        // No row: the run was finished before.
        let finished = match finished {
            Ok(v) => v,
            Err(pgrx::spi::SpiError::InvalidPosition) => None,
            Err(e) => crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise(),
        };
        if finished == Some(true) {
            compare_knowledge(suite, run_label, knowledge);
        }
        return 0;
    }
    // The step's settings, read once with its host.
    let cfg = backend.cfg.clone();

    // 1. Each question's first LLM request, captured without sending it.
    let mut captured: Vec<Option<(&'static str, ChatRequest)>> = Vec::with_capacity(pending.len());
    let mut selections: Vec<Option<SelectionMade>> = Vec::with_capacity(pending.len());
    for q in &pending {
        let text = q.prompt_text();
        let (request, selection) = in_schema(q.schema.as_deref(), || {
            let mut host = SuiteHost { backend: &mut backend, schema: q.schema.as_deref(), knowledge };
            let mut capture = Capture::new(&mut host);
            let _ = pipeline::run(&mut capture, &text, &cfg, Goal::Sql);
            (capture.captured, capture.selection)
        });
        captured.push(request);
        selections.push(selection);
    }

    // 2. All of them at once, at most ask.concurrency in flight, grouped by stage for the
    //    ledger (a first call is "generate", or "plan" when several schemas are candidates).
    let mut prefetched: Vec<Option<Prefetched>> = vec![None; pending.len()];
    let jobs: Vec<(usize, &'static str, ChatRequest)> =
        captured.into_iter().enumerate().filter_map(|(i, c)| c.map(|(stage, request)| (i, stage, request))).collect();
    for sent in batch::send(&backend.llm, jobs, concurrency) {
        prefetched[sent.job] = Some(Prefetched { request: sent.request, reply: sent.reply, took: sent.took });
    }

    // 3. Each pipeline for real, served the prefetched reply; then judged.
    for ((q, pre), selection) in pending.iter().zip(prefetched).zip(selections) {
        pgrx::check_for_interrupts!();
        let text = q.prompt_text();
        let (outcome, took) = in_schema(q.schema.as_deref(), || {
            let mut host = SuiteHost { backend: &mut backend, schema: q.schema.as_deref(), knowledge };
            let mut replay = Replay::new(&mut host, pre).with_selection(selection);
            let started = Instant::now();
            let outcome = pipeline::run(&mut replay, &text, &cfg, Goal::Sql);
            (outcome, started.elapsed() + replay.prefetched_time())
        });
        let ms = took.as_secs_f64() * 1000.0;
        let trace = match &outcome {
            Ok(o) => &o.trace,
            Err((_, t)) => t,
        };
        let (tokens, calls, attempts) = (trace.prompt_tokens + trace.completion_tokens, trace.llm_calls, trace.attempts);
        let trace_json = gucs::scrub_json(serde_json::to_value(trace).unwrap_or_default());
        if let Err((e, _)) = &outcome {
            stop_on_service_failure(e);
        }
        let judge_started = Instant::now();
        let mut judge_host = BackendHost {
            llm: backend.llm.clone(),
            limits: Limits { row_limit: JUDGE_ROW_LIMIT.max(gucs::row_limit()), timeout_ms: gucs::statement_timeout_ms() },
            cfg: backend.cfg.clone(),
        };
        let alternatives = pg_ask_core::evaluate::gold_alternatives(&q.gold_sql).unwrap_or_default();
        let (record, matched) = in_schema(q.schema.as_deref(), || match &outcome {
            Ok(o) => {
                let asks_order = pg_ask_core::evaluate::asks_for_order(&q.question, q.category.as_deref());
                let judgement = judge(&mut judge_host, &q.gold_sql, &o.sql, asks_order);
                let record = QuestionRecord::judged(
                    &q.question,
                    q.category.as_deref(),
                    q.difficulty.as_deref(),
                    alternatives,
                    &o.sql,
                    &judgement,
                    tokens,
                    ms,
                );
                (record, judgement.matched_alternative)
            }
            Err((e, _)) => {
                let mut record = QuestionRecord::unanswered(
                    &q.question,
                    q.category.as_deref(),
                    q.difficulty.as_deref(),
                    alternatives,
                    &e.to_string(),
                    tokens,
                    ms,
                );
                if let Err(gold) = check_gold(&mut judge_host, &q.gold_sql) {
                    record.outcome = RecordOutcome::GoldFailed;
                    record.error = Some(format!("{e}; {gold}"));
                }
                (record, None)
            }
        });
        let judge_ms = judge_started.elapsed().as_secs_f64() * 1000.0;
        let outcome_word = serde_json::to_value(record.outcome).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let args: [DatumWithOid; 14] = [
            suite.into(),
            run_label.into(),
            q.qno.into(),
            record.predicted_sql.clone().into(),
            record.ex.into(),
            outcome_word.as_str().into(),
            record.error.as_deref().map(|m| crate::pg::gucs::api_key().scrub(m)).into(),
            matched.map(|m| m as i32 + 1).into(),
            (attempts as i32).into(),
            (calls as i32).into(),
            (tokens.min(i64::MAX as u64) as i64).into(),
            ms.into(),
            judge_ms.into(),
            JsonB(trace_json).into(),
        ];
        // eval_results.trace came with 0.2.0: until ALTER EXTENSION pg_ask UPDATE, a result is
        // written without it.
        let with_trace = crate::pg::version::sql_at_least("0.2.0");
        Spi::run_with_args(
            if with_trace {
                "INSERT INTO ask.eval_results (suite, run_label, qno, predicted_sql, ex, outcome, error,
                     matched_alternative, attempts, llm_calls, tokens, ms, judge_ms, trace)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
            } else {
                "INSERT INTO ask.eval_results (suite, run_label, qno, predicted_sql, ex, outcome, error,
                     matched_alternative, attempts, llm_calls, tokens, ms, judge_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
            },
            if with_trace { &args } else { &args[..13] },
        )
        .unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise());
    }

    let (done, correct, judged) = progress(suite, run_label);
    let ex = if judged == 0 { 0.0 } else { correct as f64 / judged as f64 };
    notice!("pg_ask evaluate: {done}/{total} questions, EX so far {ex:.3} ({correct} of {judged} judged)");
    pending.len() as i32
}

/// When a run finishes and the suite has a finished run of the other kind (with the knowledge
/// layer against without it), a NOTICE puts the two EX side by side.
fn compare_knowledge(suite: &str, run_label: &str, knowledge: bool) {
    if !crate::pg::version::sql_at_least("0.2.0") {
        return;
    }
    let ex_of = |label_filter: &str, args: &[DatumWithOid]| {
        Spi::get_two_with_args::<String, pgrx::AnyNumeric>(
            &mine(&format!(
                "SELECT run_label, ex FROM ask.eval_summary WHERE owner = {{me}} AND suite = $1 AND {label_filter}
                 ORDER BY finished_at DESC LIMIT 1"
            )),
            args,
        )
        .ok()
    };
    let Some((Some(other), Some(other_ex))) = ex_of("knowledge <> $2 AND finished_at IS NOT NULL", &[suite.into(), knowledge.into()])
    else {
        return;
    };
    let Some((_, Some(this_ex))) = ex_of("run_label = $2", &[suite.into(), run_label.into()]) else { return };
    let (with, without) =
        if knowledge { ((run_label, this_ex), (other.as_str(), other_ex)) } else { ((other.as_str(), other_ex), (run_label, this_ex)) };
    notice!(
        "pg_ask evaluate: suite \"{suite}\": EX {} with the knowledge layer (run \"{}\"), {} without it (run \"{}\"); ask.eval_knowledge lists the items the right and wrong answers used",
        with.1, with.0, without.1, without.0
    );
}

/// The next questions of a run without a result, in suite order.
fn pending_questions(suite: &str, run_label: &str, batch: i32) -> Vec<Pending> {
    Spi::connect(|client| {
        client
            .select(
                &mine(
                    "SELECT q.qno, q.question, q.gold_sql, q.schema, q.category, q.difficulty, q.instructions
                 FROM ask.eval_questions q
                 WHERE q.owner = {me} AND q.suite = $1
                   AND NOT EXISTS (SELECT 1 FROM ask.eval_results r
                                   WHERE r.owner = q.owner AND r.suite = q.suite AND r.run_label = $2 AND r.qno = q.qno)
                 ORDER BY q.qno LIMIT $3",
                ),
                None,
                &[suite.into(), run_label.into(), batch.into()],
            )
            .unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise())
            .map(|row| Pending {
                qno: row.get::<i32>(1).ok().flatten().unwrap_or_default(),
                question: row.get::<String>(2).ok().flatten().unwrap_or_default(),
                gold_sql: row.get::<String>(3).ok().flatten().unwrap_or_default(),
                schema: row.get::<String>(4).ok().flatten(),
                category: row.get::<String>(5).ok().flatten(),
                difficulty: row.get::<String>(6).ok().flatten(),
                instructions: row.get::<String>(7).ok().flatten(),
            })
            .collect()
    })
}

/// A failure of the LLM service (unreachable, timing out, refusing the key, overloaded,
/// speaking another protocol) says nothing about the model's SQL: it stops the run with its
/// error instead of marking questions wrong. Finished batches stay; the same CALL resumes.
fn stop_on_service_failure(e: &AskError) {
    match e {
        AskError::Llm { stage, source } if source.is_service_failure() => {
            let mut r = errors::from_llm(source, stage);
            r.detail = Some("The evaluation stopped; the questions of earlier batches are kept, and the same CALL resumes the run.".into());
            r.raise()
        }
        AskError::Host(_) => errors::from_ask(e).raise(),
        _ => {}
    }
}
