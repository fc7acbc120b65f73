//! Execution-accuracy evaluation of text-to-SQL on the user's own schema (`ask.evaluate()`).
//!
//! A suite is a list of questions with gold SQL ([`suite`]); `ask.evaluate()` asks `ask.sql()`
//! for each question, runs the prediction and the gold SQL read-only, and records whether they
//! return the same result (execution accuracy, EX). This module holds everything of that which
//! needs no PostgreSQL:
//!
//! * [`gold`]: the gold SQL as suites write it (defog's `{a.x, a.y}` column choices and
//!   `;`-separated alternatives) expanded into plain queries, and whether a query orders rows;
//! * [`compare`] (in [`crate::compare`], which voting reads too): the comparison of two
//!   results, with its normalisation rules;
//! * [`judge`]: one question judged through an [`EvalHost`] that executes SQL;
//! * [`report`]: per-question records rolled up by category or difficulty;
//! * [`prefetch`]: hosts that let a batch of questions send their first LLM calls at once.

pub mod gold;
pub mod prefetch;
pub mod report;
pub mod suite;

use serde::Serialize;

use crate::guard::check_read_only;
use crate::rows::ResultSet;

pub use crate::compare;
pub use crate::compare::{compare_results, Cell, ColumnMatch, Mismatch, RowOrder};
/// Whether a gold query's rows have a defined order (its outermost query orders them).
pub use crate::shadow::score::has_order_by as orders_rows;
pub use gold::{gold_alternatives, GoldError};
pub use report::{summarize, GroupBy, GroupStats, QuestionRecord, RecordOutcome, SuiteReport};
pub use suite::{parse_suite_rows, SuiteError, SuiteQuestion};

/// What judging needs from its surroundings: `ask()`'s executor ([`crate::ask::Executor::execute`]: a
/// statement that passed [`check_read_only`], read-only, as the calling role, under the
/// statement timeout and a row limit; a result cut by it cannot be judged, so the limit
/// should be generous).
pub use crate::ask::Executor as EvalHost;

/// The verdict on one prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    /// Execution accuracy: whether the prediction returned a gold result.
    pub ex: bool,
    /// The 0-based index of the gold alternative it matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_alternative: Option<usize>,
    /// Why it did not match (the reason for the first alternative that ran), or why the
    /// question could not be judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<JudgeError>,
}

/// Why a prediction is wrong or could not be judged.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum JudgeError {
    /// The prediction was refused by the parse-level guard.
    #[error("the predicted SQL was refused: {0}")]
    PredictionRefused(String),
    /// The prediction failed to run.
    #[error("the predicted SQL failed: {0}")]
    PredictionFailed(String),
    /// The prediction ran but returned something else.
    #[error("wrong result: {0}")]
    WrongResult(String),
    /// No gold alternative could be read, passed the guard or ran: the question itself is
    /// broken and should not count against the model.
    #[error("no gold query could run: {0}")]
    GoldFailed(String),
}

impl JudgeError {
    /// Whether the question's gold SQL, not the prediction, is at fault.
    pub fn is_gold_failure(&self) -> bool {
        matches!(self, JudgeError::GoldFailed(_))
    }
}

/// Whether a question asks for its rows in an order, by defog's `sql-eval` rule: its category
/// is `order_by`, or its wording has the word "order", "sort" or "arrange" (as whole words, in
/// any case: "orders" and "sorted" are not). Only then does a gold query's `ORDER BY` make row
/// order part of the answer; otherwise it is how the gold query happened to be written.
pub fn asks_for_order(question: &str, category: Option<&str>) -> bool {
    if category.is_some_and(|c| c.trim().eq_ignore_ascii_case("order_by")) {
        return true;
    }
    question
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|w| ["order", "sort", "arrange"].iter().any(|k| w.eq_ignore_ascii_case(k)))
}

/// Judges `predicted` against the gold field `gold` (expanded by [`gold_alternatives`]);
/// `asks_order` says whether the question asks for an order ([`asks_for_order`]).
///
/// The prediction goes through [`check_read_only`] and runs once; then the gold alternatives
/// run in order until one matches (each compared order-sensitively exactly when the question
/// asks for an order and the alternative orders its rows, see [`orders_rows`]). Gold
/// alternatives that are refused or fail are skipped; when none runs at all, the verdict is
/// [`JudgeError::GoldFailed`] whatever the prediction did.
pub fn judge(host: &mut dyn EvalHost, gold: &str, predicted: &str, asks_order: bool) -> Judgement {
    let alternatives = match gold_alternatives(gold) {
        Ok(alternatives) => alternatives,
        Err(e) => return failed(JudgeError::GoldFailed(e.to_string())),
    };
    let prediction = match check_read_only(predicted) {
        Ok(checked) => host.execute(&checked).map_err(|f| f.for_llm()),
        Err(refusal) => return judge_gold_only(host, &alternatives, JudgeError::PredictionRefused(refusal.to_string())),
    };
    let prediction = match prediction {
        Ok(rows) => rows,
        Err(message) => return judge_gold_only(host, &alternatives, JudgeError::PredictionFailed(message)),
    };

    let mut first_mismatch: Option<Mismatch> = None;
    let mut gold_errors = Vec::new();
    for (i, alternative) in alternatives.iter().enumerate() {
        let gold_rows = match run_gold(host, alternative) {
            Ok(rows) => rows,
            Err(message) => {
                gold_errors.push(message);
                continue;
            }
        };
        let order = if asks_order && orders_rows(alternative) { RowOrder::Ordered } else { RowOrder::Unordered };
        match compare_results(&gold_rows, &prediction, order) {
            Ok(_) => return Judgement { ex: true, matched_alternative: Some(i), error: None },
            Err(mismatch) => {
                first_mismatch.get_or_insert(mismatch);
            }
        }
    }
    match first_mismatch {
        Some(mismatch) => failed(JudgeError::WrongResult(mismatch.to_string())),
        None => failed(JudgeError::GoldFailed(gold_errors.join("; "))),
    }
}

/// For a question that got no prediction at all: `Ok` when some gold alternative runs (the
/// question counts as wrong), else [`JudgeError::GoldFailed`] (the question is broken and is
/// left out of EX).
pub fn check_gold(host: &mut dyn EvalHost, gold: &str) -> Result<(), JudgeError> {
    let alternatives = gold_alternatives(gold).map_err(|e| JudgeError::GoldFailed(e.to_string()))?;
    let mut gold_errors = Vec::new();
    for alternative in &alternatives {
        match run_gold(host, alternative) {
            Ok(_) => return Ok(()),
            Err(message) => gold_errors.push(message),
        }
    }
    Err(JudgeError::GoldFailed(gold_errors.join("; ")))
}

/// The verdict for a prediction that did not run: wrong, unless no gold runs either.
fn judge_gold_only(host: &mut dyn EvalHost, alternatives: &[String], error: JudgeError) -> Judgement {
    let mut gold_errors = Vec::new();
    for alternative in alternatives {
        match run_gold(host, alternative) {
            Ok(_) => return failed(error),
            Err(message) => gold_errors.push(message),
        }
    }
    failed(JudgeError::GoldFailed(gold_errors.join("; ")))
}

fn run_gold(host: &mut dyn EvalHost, sql: &str) -> Result<ResultSet, String> {
    let checked = check_read_only(sql).map_err(|r| format!("refused: {r}"))?;
    host.execute(&checked).map_err(|f| f.for_llm())
}

fn failed(error: JudgeError) -> Judgement {
    Judgement { ex: false, matched_alternative: None, error: Some(error) }
}
