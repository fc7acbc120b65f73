//! Unit tests of the text-to-SQL pipeline, with a scripted host: the single-schema way, the
//! context switch and clarification here, the plan and verified ways in their own modules.

mod answer;
mod asked_for;
mod embedding;
mod knowledge;
mod one_parse;
mod plan;
mod repair;
mod verified;
mod vote;

use crate::trace::Source;
use std::collections::VecDeque;

use super::*;
use crate::clarify::Ambiguity;
use crate::config::{GrammarUse, TemplateChoice};
use crate::constrain::Constraint;
use crate::llm::{ChatRequest, ChatResponse, LlmError};
use crate::prompt;
use crate::values::correct::{ColumnEvidence, Looked};
use crate::values::decide::Evidence;
use crate::values::literals::{find_literals_in, CatalogColumn, LiteralRef};
use crate::verified::Candidate;

type Exec = Box<dyn FnMut(&str) -> Result<ResultSet, ExecFailure>>;

/// A host with scripted LLM replies and a fake executor.
struct Scripted {
    replies: VecDeque<Result<String, LlmError>>,
    exec: Exec,
    seen: Vec<(&'static str, ChatRequest)>,
    executed: Vec<String>,
    /// The description of the tables (one table, `public.restaurants(name)`, unless a test says).
    schema: &'static str,
    /// The text columns of `public.restaurants` whose string literals `literals_of` finds
    /// (none unless a test says).
    text_columns: &'static [&'static str],
}

impl Scripted {
    fn new(replies: &[&str]) -> Scripted {
        Scripted {
            replies: replies.iter().map(|r| Ok(r.to_string())).collect(),
            exec: Box::new(|_| Ok(one_row())),
            seen: vec![],
            executed: vec![],
            schema: "TABLE public.restaurants\n  name text\n",
            text_columns: &[],
        }
    }
}

fn one_row() -> ResultSet {
    ResultSet { columns: vec!["name".into()], rows: vec![vec![json!("Roma")]], truncated: false, size_cut: false }
}

fn count(n: i64) -> ResultSet {
    ResultSet { columns: vec!["count".into()], rows: vec![vec![json!(n)]], truncated: false, size_cut: false }
}

/// `n` restaurant names, Roma first: more rows than the answer says without the model.
fn names(n: usize) -> ResultSet {
    let rows = (0..n).map(|i| vec![json!(if i == 0 { "Roma".to_string() } else { format!("r{i}") })]).collect();
    ResultSet { columns: vec!["name".into()], rows, truncated: false, size_cut: false }
}

impl Catalog for Scripted {
    fn schema_text(&mut self) -> Result<String, HostError> {
        Ok(self.schema.into())
    }
    fn select_tables(&mut self, _: &Question) -> Result<Option<Selection>, HostError> {
        Ok(None)
    }
    fn literals_of(&mut self, sql: &str, _: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
        if self.text_columns.is_empty() {
            return Ok(Vec::new());
        }
        let mut cat = crate::values::literals::Catalog::new(["public"]);
        cat.add_table(
            "public",
            "restaurants",
            self.text_columns.iter().map(|c| CatalogColumn { name: c.to_string(), text_like: true }).collect(),
        );
        crate::values::literals::find_literals(sql, &cat).map_err(HostError::internal)
    }
}

impl Llm for Scripted {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.seen.push((stage, req.clone()));
        let content = self.replies.pop_front().expect("script ran out")?;
        Ok(ChatResponse { content, prompt_tokens: Some(10), completion_tokens: Some(2), attempts: 1, ..Default::default() })
    }
}

impl Executor for Scripted {
    fn execute(&mut self, sql: &crate::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        self.executed.push(sql.sql.clone());
        (self.exec)(&sql.sql)
    }
    fn execute_verified(&mut self, sql: &crate::guard::CheckedSql, _: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.execute(sql)
    }
}

impl Memory for Scripted {
    crate::no_memory!();
}

/// A host that is `Scripted` (its first field) but for its memories, given in full.
macro_rules! scripted_host {
    ($name:ident { $($memory:item)* }) => {
        impl Catalog for $name {
            fn schema_text(&mut self) -> Result<String, HostError> {
                self.0.schema_text()
            }
            fn select_tables(&mut self, question: &Question) -> Result<Option<Selection>, HostError> {
                self.0.select_tables(question)
            }
            fn literals_of(&mut self, sql: &str, schema: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
                self.0.literals_of(sql, schema)
            }
        }
        impl Llm for $name {
            fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
                self.0.chat(stage, req)
            }
        }
        impl Executor for $name {
            fn execute(&mut self, sql: &crate::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
                self.0.execute(sql)
            }
            fn execute_verified(&mut self, sql: &crate::guard::CheckedSql, schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
                self.0.execute_verified(sql, schema)
            }
        }
        impl Memory for $name {
            $($memory)*
        }
    };
}
use scripted_host;

fn cfg() -> AskConfig {
    AskConfig::default()
}

#[test]
fn happy_path_with_written_answer() {
    let mut h = Scripted::new(&["```sql\nSELECT name FROM public.restaurants;\n```", "Roma is the first of them."]);
    h.exec = Box::new(|_| Ok(names(9)));
    let out = run(&mut h, "which restaurants?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.restaurants");
    assert_eq!(out.answer_text(), "Roma is the first of them.");
    assert_eq!(out.trace.llm_calls, 2);
    assert_eq!(out.trace.prompt_tokens, 20);
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["schema", "generate", "guard", "execute", "answer", "ground"]);
    assert_eq!(out.trace.stages[5].output["answer_from"], "model");
    assert!(h.seen[1].1.messages[0].content.contains("[\"Roma\"]"));
}

#[test]
fn a_written_answer_the_rows_do_not_say_is_replaced_by_the_rows() {
    // A name the rows do not hold (one value or a few rows are said without the model: see
    // tests/answer.rs).
    let mut h = Scripted::new(&["SELECT name FROM public.restaurants", "Roma and Venezia."]);
    h.exec = Box::new(|_| Ok(names(6)));
    let out = run(&mut h, "which restaurants?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.answer, Some(AnswerDecision::Rows));
    let ground = out.trace.stages.last().unwrap();
    assert_eq!((ground.stage, &ground.output["grounded"], &ground.output["answer_from"]), ("ground", &json!(false), &json!("rows")));
    assert_eq!(ground.output["why"]["unsupported"], json!(["Venezia"]));
    // A number they do not say.
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
    h.exec = Box::new(|_| Ok(names(6)));
    let out = run(&mut h, "list restaurants", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.answer, Some(AnswerDecision::Rows));
    let text = out.answer_text();
    assert!(text.starts_with(" name\n------\n Roma\n") && text.ends_with("(6 rows)"), "{text}");
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
    // An edit repair (`auto` asks a misspelt column afresh).
    let edit = AskConfig { first_repair: crate::config::FirstRepair::Edit, ..cfg() };
    let out = run(&mut h, "q", &edit, Goal::Rows).unwrap();
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
    h.exec = Box::new(|_| Ok(names(6)));
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
    let failing = |sqlstate: &'static str| -> Exec {
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
    let mut h =
        Scripted::new(&["SELECT nme FROM public.restaurants", "SELECT nme FROM public.restaurants", "SELECT name FROM public.restaurants"]);
    h.exec = failing("42703");
    let out = run(&mut h, "q", &auto, Goal::Rows).unwrap();
    assert!(matches!(h.seen[2].1.constraint, Some(Constraint::Grammar { .. })));
    // The same request, with a note that the query was written before.
    assert!(h.seen[2].1.messages[0].content.starts_with(&h.seen[1].1.messages[0].content));
    assert!(h.seen[2].1.messages[0].content.ends_with("failed before: write a different one."));
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
    let mut h = Scripted::new(&["```sql\nSELECT nme FROM public.restaurants\n```", "SELECT  nme\n  FROM public.restaurants;", "unused"]);
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
    assert!(h.seen[1].1.messages.last().unwrap().content.contains("refused: calls volatile function"));
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

/// A host whose value memory holds `public.restaurants.city`: every literal compared with it
/// gets the evidence given (its literal filled in).
struct Correcting(Scripted, Evidence);
scripted_host!(Correcting {
    fn literal_evidence(&mut self, sql: &crate::guard::CheckedSql) -> Result<Vec<Looked>, HostError> {
        let mut cat = crate::values::literals::Catalog::new(["public"]);
        let text = |name: &str| CatalogColumn { name: name.into(), text_like: true };
        cat.add_table("public", "restaurants", vec![text("name"), text("city")]);
        let found = find_literals_in(sql, &cat).map_err(HostError::internal)?;
        Ok(found
            .into_iter()
            .map(|literal| {
                let evidence = Evidence { literal: literal.value.clone(), ..self.1.clone() };
                Looked { literal, column: ColumnEvidence::Found { evidence, from_enum: false, embeddings_unused: None } }
            })
            .collect())
    }
    fn verified(&mut self, question: &Question) -> Result<Vec<Candidate>, HostError> {
        self.0.verified(question)
    }
    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError> {
        self.0.stored_value(lit, text)
    }
    fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<Ambiguity>, HostError> {
        self.0.ambiguities(question, tables)
    }
});

fn cities(values: &[&str], all_values: bool) -> Evidence {
    Evidence {
        literal: String::new(),
        exact: false,
        case_insensitive: None,
        candidates: values
            .iter()
            .map(|v| crate::values::decide::Candidate { value: v.to_string(), frequency: 1, cosine: None, trigram: Some(0.1) })
            .collect(),
        distinct_values: values.len() as u64,
        closed_set: false,
        all_values,
    }
}

#[test]
fn corrected_sql_is_checked_again_and_executed() {
    // The rules decide: an initialism of a stored value.
    let mut h = Correcting(Scripted::new(&["SELECT name FROM public.restaurants WHERE city = 'LA'"]), cities(&["Los Angeles"], false));
    let out = run(&mut h, "q", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.restaurants WHERE city = 'Los Angeles'");
    assert_eq!(h.0.executed, ["SELECT name FROM public.restaurants WHERE city = 'Los Angeles'"]);
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["schema", "generate", "guard", "correct", "execute", "answer"]);
    assert_eq!(out.trace.llm_calls, 1);
}

#[test]
fn the_llms_value_choice_is_a_call_of_the_pipeline_and_cannot_smuggle_in_a_statement() {
    // The column's few values are put to the LLM, whose call is traced and counted.
    let sql = "SELECT name FROM public.restaurants WHERE city = 'Big Apple'";
    let few = cities(&["New York", "Boston"], true);
    let mut h = Correcting(Scripted::new(&[sql, "New York"]), few.clone());
    let out = run(&mut h, "q", &cfg(), Goal::Answer).unwrap();
    assert_eq!(h.0.executed, ["SELECT name FROM public.restaurants WHERE city = 'New York'"]);
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["schema", "generate", "guard", "correct", "correct", "execute", "answer"]);
    assert_eq!(out.trace.llm_calls, 2);
    assert!(h.0.seen[1].1.messages.last().unwrap().content.contains("<literal>Big Apple</literal>"));
    // A reply that smuggles in a second statement is not taken; the statement runs as written.
    let smuggled = "```sql\nSELECT name FROM public.restaurants WHERE city = 'x'; DELETE FROM t\n```";
    let mut bad = Correcting(Scripted::new(&[sql, smuggled]), few);
    let out = run(&mut bad, "q", &cfg(), Goal::Answer).unwrap();
    assert_eq!(bad.0.executed, [sql]);
    let literals = &out.trace.stages.iter().find(|s| s.stage == "correct" && s.output["literals"].is_array()).unwrap().output["literals"];
    assert!(literals.as_array().unwrap().iter().any(|l| l.get("llm_correction_rejected").is_some()), "{literals}");
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
    let mut h = Scripted::new(&["{\"answerable\": false}", "SELECT name FROM public.restaurants"]);
    let out = run_with_context(&mut h, "which restaurant?", Some("The weather is fine."), &cfg(), Goal::Answer).unwrap();
    assert_eq!(h.executed, ["SELECT name FROM public.restaurants"]);
    assert_eq!(out.answer_text(), "name: Roma");
    // Without a context, no context call.
    let mut h = Scripted::new(&["SELECT name FROM public.restaurants", "ROWS"]);
    run_with_context(&mut h, "which restaurant?", Some("  "), &cfg(), Goal::Answer).unwrap();
    assert_eq!(h.seen[0].0, "generate");
}

/// A scripted host whose value memory reads "LA" two ways.
struct Ambiguous(Scripted);
scripted_host!(Ambiguous {
    fn ambiguities(&mut self, question: &str, _: &[String]) -> Result<Vec<Ambiguity>, HostError> {
        Ok(if question.contains("LA") { vec![crate::clarify::la()] } else { vec![] })
    }
    fn literal_evidence(&mut self, sql: &crate::guard::CheckedSql) -> Result<Vec<Looked>, HostError> {
        self.0.literal_evidence(sql)
    }
    fn verified(&mut self, question: &Question) -> Result<Vec<Candidate>, HostError> {
        self.0.verified(question)
    }
    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError> {
        self.0.stored_value(lit, text)
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
    assert_eq!((out.trace.llm_calls, out.trace.source), (0, Some(Source::Clarify)));
    assert!(h.0.executed.is_empty());
    let (err, _) = run(&mut h, "restaurants in LA?", &on, Goal::Sql).unwrap_err();
    assert!(matches!(err, AskError::Ambiguous { .. }));
    // The context says which: the SQL is asked for with the reading written in.
    let mut h = Ambiguous(Scripted::new(&["{\"answerable\": false}", "SELECT name FROM public.restaurants", "ROWS"]));
    let out = run_with_context(&mut h, "restaurants in LA?", Some("the city"), &on, Goal::Answer).unwrap();
    assert_eq!(out.trace.source, Some(Source::Llm));
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
    impl Catalog for NoTables {
        fn schema_text(&mut self) -> Result<String, HostError> {
            Ok(String::new())
        }
        fn select_tables(&mut self, _: &Question) -> Result<Option<Selection>, HostError> {
            Ok(None)
        }
        fn literals_of(&mut self, _: &str, _: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
            Ok(Vec::new())
        }
    }
    impl Llm for NoTables {
        fn chat(&mut self, _: &'static str, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            unreachable!()
        }
    }
    impl Executor for NoTables {
        fn execute(&mut self, _: &crate::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
            unreachable!()
        }
        fn execute_verified(&mut self, _: &crate::guard::CheckedSql, _: Option<&str>) -> Result<ResultSet, ExecFailure> {
            unreachable!()
        }
    }
    impl Memory for NoTables {
        crate::no_memory!();
    }
    assert_eq!(run(&mut NoTables, "q", &cfg(), Goal::Sql).unwrap_err().0, AskError::NoTables);
}
