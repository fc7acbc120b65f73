//! Suite-run results, per question and rolled up by category or difficulty.

use std::collections::BTreeMap;

use serde::Serialize;

use super::JudgeError;

/// The outcome of one question of a suite run, as `ask.evaluate()` records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionRecord {
    pub question: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// The gold field expanded into plain queries.
    pub gold_alternatives: Vec<String>,
    /// The SQL `ask.sql()` produced; `None` when it produced none.
    pub predicted_sql: Option<String>,
    /// Execution accuracy, 0 or 1.
    pub ex: bool,
    /// What happened, in one word.
    pub outcome: RecordOutcome,
    /// Why the question was not answered correctly: `ask.sql()`'s error, or the judge's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// LLM tokens spent on the prediction (prompt and completion).
    pub tokens: u64,
    /// Milliseconds spent on the prediction.
    pub ms: f64,
}

impl QuestionRecord {
    /// A record from a judged prediction.
    #[allow(clippy::too_many_arguments)]
    pub fn judged(
        question: &str,
        category: Option<&str>,
        difficulty: Option<&str>,
        gold_alternatives: Vec<String>,
        predicted_sql: &str,
        judgement: &super::Judgement,
        tokens: u64,
        ms: f64,
    ) -> QuestionRecord {
        QuestionRecord {
            question: question.to_string(),
            category: category.map(str::to_string),
            difficulty: difficulty.map(str::to_string),
            gold_alternatives,
            predicted_sql: Some(predicted_sql.to_string()),
            ex: judgement.ex,
            outcome: match &judgement.error {
                None if judgement.ex => RecordOutcome::Correct,
                Some(JudgeError::WrongResult(_)) | None => RecordOutcome::WrongResult,
                Some(JudgeError::GoldFailed(_)) => RecordOutcome::GoldFailed,
                Some(JudgeError::PredictionRefused(_) | JudgeError::PredictionFailed(_)) => RecordOutcome::PredictionError,
            },
            error: judgement.error.as_ref().map(JudgeError::to_string),
            tokens,
            ms,
        }
    }

    /// A record for a question `ask.sql()` produced no SQL for (`error` says why). Such a
    /// question counts as wrong; the glue may still judge the gold SQL to tell a broken
    /// question apart, and then set [`RecordOutcome::GoldFailed`].
    pub fn unanswered(
        question: &str,
        category: Option<&str>,
        difficulty: Option<&str>,
        gold_alternatives: Vec<String>,
        error: &str,
        tokens: u64,
        ms: f64,
    ) -> QuestionRecord {
        QuestionRecord {
            question: question.to_string(),
            category: category.map(str::to_string),
            difficulty: difficulty.map(str::to_string),
            gold_alternatives,
            predicted_sql: None,
            ex: false,
            outcome: RecordOutcome::PredictionError,
            error: Some(error.to_string()),
            tokens,
            ms,
        }
    }
}

/// What became of one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordOutcome {
    /// The prediction returned a gold result.
    Correct,
    /// The prediction ran and returned something else.
    WrongResult,
    /// No SQL, or SQL that was refused or failed.
    PredictionError,
    /// The gold SQL could not run; the question is left out of EX.
    GoldFailed,
}

/// Which optional field groups the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Category,
    Difficulty,
}

/// Totals of a group of questions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStats {
    /// The group's name (`"(none)"` for questions without one, `"all"` for the total).
    pub group: String,
    /// Questions in the group.
    pub questions: usize,
    /// Questions whose gold SQL could not run, left out of `judged` and `ex`.
    pub gold_failed: usize,
    /// Questions that count: `questions − gold_failed`.
    pub judged: usize,
    /// Correct predictions.
    pub correct: usize,
    /// Judged questions without a correct result for a reason other than a wrong result:
    /// no SQL, refused, failed.
    pub errors: usize,
    /// `correct / judged`, 0 when nothing was judged.
    pub ex: f64,
    pub tokens: u64,
    pub ms_total: f64,
    /// Mean milliseconds per question.
    pub ms_mean: f64,
}

impl GroupStats {
    fn new(group: String, records: &[&QuestionRecord]) -> GroupStats {
        let questions = records.len();
        let count = |outcome| records.iter().filter(|r| r.outcome == outcome).count();
        let gold_failed = count(RecordOutcome::GoldFailed);
        let judged = questions - gold_failed;
        let correct = count(RecordOutcome::Correct);
        let errors = count(RecordOutcome::PredictionError);
        let ms_total: f64 = records.iter().map(|r| r.ms).sum();
        GroupStats {
            group,
            questions,
            gold_failed,
            judged,
            correct,
            errors,
            ex: if judged == 0 { 0.0 } else { correct as f64 / judged as f64 },
            tokens: records.iter().map(|r| r.tokens).sum(),
            ms_total,
            ms_mean: if questions == 0 { 0.0 } else { ms_total / questions as f64 },
        }
    }
}

/// A suite run rolled up: the total and one row per group, groups in name order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteReport {
    pub overall: GroupStats,
    pub groups: Vec<GroupStats>,
}

impl SuiteReport {
    /// An aligned text table, one line per group and the total last.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "{:<24} {:>9} {:>7} {:>7} {:>6} {:>7} {:>9} {:>9}\n",
            "group", "questions", "judged", "correct", "EX", "errors", "tokens", "ms/q"
        );
        for stats in self.groups.iter().chain(std::iter::once(&self.overall)) {
            out.push_str(&format!(
                "{:<24} {:>9} {:>7} {:>7} {:>6.3} {:>7} {:>9} {:>9.1}\n",
                stats.group, stats.questions, stats.judged, stats.correct, stats.ex, stats.errors, stats.tokens, stats.ms_mean
            ));
        }
        out
    }
}

/// Rolls records up by `by`.
pub fn summarize(records: &[QuestionRecord], by: GroupBy) -> SuiteReport {
    let mut groups: BTreeMap<String, Vec<&QuestionRecord>> = BTreeMap::new();
    for record in records {
        let key = match by {
            GroupBy::Category => record.category.as_deref(),
            GroupBy::Difficulty => record.difficulty.as_deref(),
        };
        groups.entry(key.unwrap_or("(none)").to_string()).or_default().push(record);
    }
    let all: Vec<&QuestionRecord> = records.iter().collect();
    SuiteReport {
        overall: GroupStats::new("all".to_string(), &all),
        groups: groups.into_iter().map(|(name, members)| GroupStats::new(name, &members)).collect(),
    }
}
