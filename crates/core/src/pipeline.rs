//! The text-to-SQL pipeline behind `ask()`: generate SQL, check it, execute it, repair it from
//! errors, answer. Everything that touches PostgreSQL or the network is behind [`Host`], so the
//! pipeline runs in plain unit tests with a scripted host.

use std::time::Instant;

use serde_json::{json, Value};

use crate::config::AskConfig;
use crate::extract::extract_sql;
use crate::guard::check_read_only;
use crate::llm::{ChatRequest, ChatResponse, LlmError};
use crate::prompt::{self, AnswerDecision};
use crate::rows::ResultSet;
use crate::trace::{ms_since, StageTrace, Trace};

/// Stage names, as they appear in traces and in the ledger.
pub mod stage {
    pub const SCHEMA: &str = "schema";
    pub const GENERATE: &str = "generate";
    pub const REPAIR: &str = "repair";
    pub const GUARD: &str = "guard";
    pub const CORRECT: &str = "correct";
    pub const EXECUTE: &str = "execute";
    pub const ANSWER: &str = "answer";
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

/// What the pipeline needs from its surroundings.
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


/// One LLM call, recorded in the trace.
fn call(
    host: &mut dyn Host,
    trace: &mut Trace,
    stage: &'static str,
    attempt: Option<u32>,
    req: &ChatRequest,
) -> Result<String, AskError> {
    let t = Instant::now();
    let mut st = StageTrace::new(
        stage,
        json!({"prompt_chars": req.prompt_chars(), "messages": req.messages.len()}),
    );
    st.attempt = attempt;
    let result = host.chat(stage, req);
    trace.record_call(st, t, result).map_err(|source| AskError::Llm { stage, source })
}

/// Run the pipeline for `question` up to `goal`. On failure the trace so far comes back with
/// the error, so `ask.explain()` can show where it stopped.
pub fn run(
    host: &mut dyn Host,
    question: &str,
    cfg: &AskConfig,
    goal: Goal,
) -> Result<Outcome, (AskError, Trace)> {
    let started = Instant::now();
    let mut trace = Trace { question: question.to_string(), ..Default::default() };
    let result = run_inner(host, question, cfg, goal, &mut trace);
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
    cfg: &AskConfig,
    goal: Goal,
    trace: &mut Trace,
) -> Result<Produced, AskError> {
    if question.trim().is_empty() {
        return Err(AskError::EmptyQuestion);
    }
    let t = Instant::now();
    let schema = host.schema_text().map_err(AskError::Host)?;
    let mut st = StageTrace::new(stage::SCHEMA, Value::Null);
    st.output = json!({"chars": schema.len(), "tables": schema.lines().filter(|l| !l.starts_with(' ')).count()});
    st.ms = ms_since(t);
    trace.push(st);
    if schema.trim().is_empty() {
        return Err(AskError::NoTables);
    }

    let first = prompt::sql_request(question, &schema);
    let mut req = first.clone();
    let max_attempts = cfg.max_attempts.max(1);
    let mut last: Option<AskError> = None;
    for attempt in 1..=max_attempts {
        trace.attempts = attempt;
        let stage_name = if attempt == 1 { stage::GENERATE } else { stage::REPAIR };
        let reply = call(host, trace, stage_name, Some(attempt), &req)?;

        let failure = match extract_sql(&reply) {
            None => {
                last = Some(AskError::NoSql { attempts: attempt, reply: reply.chars().take(300).collect() });
                "the reply contained no SQL query".to_string()
            }
            Some(sql) => match guarded_execute(host, trace, attempt, &sql) {
                Ok((sql, result)) => {
                    let answer = if goal == Goal::Answer {
                        let req = prompt::answer_request(question, &sql, &result, cfg.answer_rows as usize);
                        let reply = call(host, trace, stage::ANSWER, None, &req)?;
                        Some(prompt::parse_answer(&reply))
                    } else {
                        None
                    };
                    return Ok((sql, result, answer));
                }
                Err(failure) => {
                    let text = failure.for_llm();
                    last = Some(match failure {
                        ExecFailure::Refused { reason } => AskError::Refused { attempts: attempt, reason, sql },
                        ExecFailure::Error { sqlstate, message, .. } => {
                            AskError::Failed { attempts: attempt, sqlstate, message, sql }
                        }
                    });
                    text
                }
            },
        };
        if attempt < max_attempts {
            req = prompt::repair_request(&req, &reply, &failure);
        }
    }
    Err(last.unwrap_or(AskError::NoSql { attempts: max_attempts, reply: String::new() }))
}

/// Parse-level guard, then the host's execution; both recorded in the trace.
/// On success, the statement as executed (trimmed of surrounding comments) and its rows.
fn guarded_execute(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    sql: &str,
) -> Result<(String, ResultSet), ExecFailure> {
    let t = Instant::now();
    let mut st = StageTrace::new(stage::GUARD, json!({"sql": sql}));
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
    let checked = if let Some(c) = correct(host, trace, attempt, &checked.sql) {
        match check_read_only(&c) {
            Ok(again) => again,
            Err(refusal) => return Err(ExecFailure::Refused { reason: refusal.to_string() }),
        }
    } else {
        checked
    };

    let t = Instant::now();
    let mut st = StageTrace::new(stage::EXECUTE, json!({"sql": checked.sql}));
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

/// Run the host's value correction, recording it; `Some(sql)` when a literal changed. A
/// failing correction is recorded and the statement runs as written.
fn correct(host: &mut dyn Host, trace: &mut Trace, attempt: u32, sql: &str) -> Option<String> {
    let t = Instant::now();
    let result = host.correct_values(sql);
    let mut st = StageTrace::new(stage::CORRECT, json!({"sql": sql}));
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

    /// A host with scripted LLM replies and a fake executor.
    struct Scripted {
        replies: VecDeque<Result<String, LlmError>>,
        exec: Box<dyn FnMut(&str) -> Result<ResultSet, ExecFailure>>,
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
        ResultSet { columns: vec!["name".into()], rows: vec![vec![json!("Roma")]], truncated: false }
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
        assert_eq!(stages, ["schema", "generate", "guard", "execute", "answer"]);
        assert!(h.seen[1].1.messages[0].content.contains("[\"Roma\"]"));
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
        impl Host for Correcting {
            fn schema_text(&mut self) -> Result<String, String> { self.0.schema_text() }
            fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> { self.0.chat(stage, req) }
            fn execute(&mut self, sql: &str) -> Result<ResultSet, ExecFailure> { self.0.execute(sql) }
            fn correct_values(&mut self, sql: &str) -> Result<Correction, String> {
                Ok(Correction { sql: sql.replace("'LA'", self.1), changed: true, trace: json!([{"literal": "LA"}]) })
            }
        }
        let mut h = Correcting(Scripted::new(&["SELECT name FROM public.restaurants WHERE city = 'LA'", "ROWS"]), "'Los Angeles'");
        let out = run(&mut h, "q", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.sql, "SELECT name FROM public.restaurants WHERE city = 'Los Angeles'");
        assert_eq!(h.0.executed, ["SELECT name FROM public.restaurants WHERE city = 'Los Angeles'"]);
        let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
        assert_eq!(stages, ["schema", "generate", "guard", "correct", "execute", "answer"]);
        // A "correction" that smuggles in a second statement is refused, never run.
        let mut bad = Correcting(Scripted::new(&["SELECT name FROM public.restaurants WHERE city = 'LA'"]), "'x'; DELETE FROM t; SELECT 'y'");
        let err = run(&mut bad, "q", &AskConfig { max_attempts: 1, ..cfg() }, Goal::Rows).unwrap_err();
        assert!(matches!(err.0, AskError::Refused { .. }), "{:?}", err.0);
        assert!(bad.0.executed.is_empty());
    }

    #[test]
    fn empty_question_and_no_tables() {
        let mut h = Scripted::new(&[]);
        assert_eq!(run(&mut h, "  ", &cfg(), Goal::Sql).unwrap_err().0, AskError::EmptyQuestion);
        struct NoTables;
        impl Host for NoTables {
            fn schema_text(&mut self) -> Result<String, String> { Ok(String::new()) }
            fn chat(&mut self, _: &'static str, _: &ChatRequest) -> Result<ChatResponse, LlmError> { unreachable!() }
            fn execute(&mut self, _: &str) -> Result<ResultSet, ExecFailure> { unreachable!() }
        }
        assert_eq!(run(&mut NoTables, "q", &cfg(), Goal::Sql).unwrap_err().0, AskError::NoTables);
    }
}
