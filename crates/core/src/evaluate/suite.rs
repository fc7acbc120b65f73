//! Suites of questions with gold SQL, as `ask.load_suite(name, rows jsonb)` receives them.
//!
//! `rows` is a JSON array of objects, one per question. Field names follow the common
//! text-to-SQL datasets, so a defog or Spider file converted to JSON loads as it is:
//!
//! | field | also accepted as | |
//! |---|---|---|
//! | `question` | `nl`, `utterance` | required, non-empty |
//! | `gold_sql` | `query`, `sql`, `gold` | required; expanded by [`gold_alternatives`] |
//! | `category` | `query_category` | optional |
//! | `difficulty` | `hardness`, `level` | optional |
//! | `schema` | `db_name`, `db_id` | optional: the schema the question is about |
//! | `instructions` | | optional: extra guidance given to the model with the question |
//!
//! Empty strings in optional fields count as absent. Other fields are ignored.

use serde::Serialize;
use serde_json::Value;

use super::gold::{gold_alternatives, GoldError};

/// One question of a suite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteQuestion {
    /// The question in natural language.
    pub question: String,
    /// The gold SQL as given (possibly with `{…}` choices and `;`-separated alternatives).
    pub gold_sql: String,
    /// The gold field expanded into plain queries.
    pub gold_alternatives: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl SuiteQuestion {
    /// The text to ask: the question, followed by the instructions when there are any.
    pub fn prompt_text(&self) -> String {
        match &self.instructions {
            Some(instructions) => format!("{}\n\n{}", self.question.trim(), instructions.trim()),
            None => self.question.trim().to_string(),
        }
    }
}

/// Why a suite could not be loaded. Row numbers are 1-based.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SuiteError {
    /// The rows are not a JSON array.
    #[error("suite rows must be a JSON array of objects")]
    NotAnArray,
    /// The array is empty.
    #[error("the suite has no rows")]
    Empty,
    /// A row is not an object.
    #[error("row {row}: not a JSON object")]
    NotAnObject { row: usize },
    /// A required field is missing, empty or not a string.
    #[error("row {row}: no \"{field}\" (a non-empty string) is given")]
    MissingField { row: usize, field: &'static str },
    /// An optional field is present but not a string.
    #[error("row {row}: \"{field}\" must be a string")]
    NotAString { row: usize, field: String },
    /// The gold SQL cannot be expanded.
    #[error("row {row}: {source}")]
    Gold { row: usize, source: GoldError },
}

/// Reads suite rows; see the [module documentation](self) for the fields.
pub fn parse_suite_rows(rows: &Value) -> Result<Vec<SuiteQuestion>, SuiteError> {
    let rows = rows.as_array().ok_or(SuiteError::NotAnArray)?;
    if rows.is_empty() {
        return Err(SuiteError::Empty);
    }
    rows.iter().enumerate().map(|(i, row)| parse_row(i + 1, row)).collect()
}

fn parse_row(row: usize, value: &Value) -> Result<SuiteQuestion, SuiteError> {
    let object = value.as_object().ok_or(SuiteError::NotAnObject { row })?;
    let field = |names: &[&str]| -> Result<Option<String>, SuiteError> {
        for name in names {
            match object.get(*name) {
                None | Some(Value::Null) => continue,
                Some(Value::String(s)) if s.trim().is_empty() => continue,
                Some(Value::String(s)) => return Ok(Some(s.clone())),
                Some(_) => return Err(SuiteError::NotAString { row, field: (*name).to_string() }),
            }
        }
        Ok(None)
    };
    let question = field(&["question", "nl", "utterance"])?.ok_or(SuiteError::MissingField { row, field: "question" })?;
    let gold_sql = field(&["gold_sql", "query", "sql", "gold"])?.ok_or(SuiteError::MissingField { row, field: "gold_sql" })?;
    let gold_alternatives = gold_alternatives(&gold_sql).map_err(|source| SuiteError::Gold { row, source })?;
    Ok(SuiteQuestion {
        question,
        gold_sql,
        gold_alternatives,
        category: field(&["category", "query_category"])?,
        difficulty: field(&["difficulty", "hardness", "level"])?,
        schema: field(&["schema", "db_name", "db_id"])?,
        instructions: field(&["instructions"])?,
    })
}
