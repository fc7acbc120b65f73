//! The plan path: several candidate schemas, a retrieval plan of steps over them, each step
//! generated and run, and one answer over every step's rows.

use std::time::Instant;

use serde_json::{json, Value};

use super::answer::{answer, grounded_or_rows, rows_unwritten, too_large_for_the_server};
use super::call::call;
use super::generate::generate_and_run;
use super::host::{Host, SchemaCandidate};
use super::outcome::{AskError, Goal, Produced};
use super::stage;
use crate::config::AskConfig;
use crate::constrain::schemas::Shape;
use crate::prompt::AnswerDecision;
use crate::rows::ResultSet;
use crate::schema::count_rendered_tables;
use crate::selection::context::{parse_steps_answer, steps_answer_request, StepOutcome, StepsAnswer};
use crate::selection::plan::{parse_plan, plan_request, PlanCandidate};
use crate::trace::{ms_since, StageTrace, Trace};

/// One executed step of a retrieval plan.
struct StepRun {
    goal: String,
    schema: String,
    sql: String,
    result: Result<ResultSet, AskError>,
}

/// Several candidate schemas: the LLM writes a retrieval plan of (goal, SQL, schema) steps
/// (the retrieval-plan stage, [`crate::selection::plan`]); each step goes through value
/// correction, guarded execution and self-correction over its schema's selected tables; the
/// answer stage reads every step's result and answers from them all. A plan that cannot be read falls back to the single-schema pipeline over
/// the most relevant candidate. [`Goal::Sql`] and [`Goal::Rows`] run the first step only:
/// they return one statement.
pub(super) fn run_plan(
    host: &mut dyn Host,
    question: &str,
    candidates: &[SchemaCandidate],
    cfg: &AskConfig,
    goal: Goal,
    trace: &mut Trace,
    examples: &super::generate::Examples,
) -> Result<Produced, AskError> {
    let t = Instant::now();
    let shown: Vec<PlanCandidate> =
        candidates.iter().map(|c| PlanCandidate { schema: c.schema.clone(), tables: c.tables.clone() }).collect();
    let mut st = StageTrace::new(stage::SCHEMA, Value::Null);
    st.output = json!({
        "chars": candidates.iter().map(|c| c.tables.len()).sum::<usize>(),
        "tables": candidates.iter().map(|c| count_rendered_tables(&c.tables)).sum::<usize>(),
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
    // Each step is shown the question's knowledge, not its examples (they answer the whole).
    let step_examples = super::generate::Examples { knowledge: examples.knowledge.clone(), ..Default::default() };
    let mut runs: Vec<StepRun> = Vec::new();
    for (i, step) in plan.steps.iter().take(to_run).enumerate() {
        let tables = candidates.iter().find(|c| c.schema == step.schema).map(|c| c.tables.as_str()).unwrap_or_default();
        let goal_text = if step.goal.is_empty() { question } else { step.goal.as_str() };
        let result = generate_and_run(host, trace, goal_text, tables, cfg, step.sql.as_deref(), Some(i + 1), &step_examples);
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
