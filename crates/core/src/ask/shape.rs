//! A result in a shape the question does not ask for: rows asked for, a count given ("List
//! their names." after "How many of those are in Milan?", answered by the turn before's
//! `count(*)` again), or a count asked for, rows given ("How many chefs are Italian?" answered
//! by the chefs' names). Such a query ran and returned rows that look like an answer, but of
//! another question; it is asked again once as an edit with the reason (the
//! [`super::stage::SHAPE`] stage), and its result answers when no later query does better.
//!
//! Read from the words of the question as the caller asked it (a follow-up's own words, not
//! the reading pg_ask wrote for it):
//!
//! - **rows asked for, a count given**: the question writes `list`, `name` or `names`, or
//!   starts with `which`, `who`, `show`, `display` or `find`, and writes no word that asks a
//!   number (`how many`, `number`, `count` or a word holding it such as `headcount`, `total`,
//!   `average`, `percentage`, ...); the query's result is one row, and every item of its select
//!   list is a `count(…)`. A yes-or-no question (`Is there …`, `Are any …`) is not read.
//! - **a count asked for, rows given**: the question writes `how many`, `number of` or a word
//!   holding `count`; the result has two rows or more and no column holds a number in any row.

use serde_json::{json, Value};
use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement};

use crate::rows::ResultSet;
use crate::text::plain_words;

/// How a result's shape differs from the one the question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mismatch {
    /// The question asks for rows (names, a list); the query only counts them.
    CountForRows,
    /// The question asks how many; the query lists rows and counts nothing.
    RowsForCount,
}

impl Mismatch {
    /// The stage's output for a query that returned `rows` rows and is asked again.
    pub fn output(self, rows: usize) -> Value {
        let (asked, given) = match self {
            Mismatch::CountForRows => ("rows", "count"),
            Mismatch::RowsForCount => ("count", "rows"),
        };
        json!({"asked_for": asked, "returned": given, "rows": rows, "asked_again": true})
    }

    /// Why the query is asked again, as the model reads it.
    pub fn reason(self, rows: usize) -> String {
        match self {
            Mismatch::CountForRows => "the query returns only a count, but the question does not ask how many: it asks for the \
                 rows themselves. Select the columns that name them (their names, for instance) instead of count(...)."
                .to_string(),
            Mismatch::RowsForCount => format!(
                "the query lists {rows} rows, but the question asks how many. Return the number (count(...)) instead of \
                 listing the rows."
            ),
        }
    }
}

/// Words after which a question asks for a number, whatever else it writes.
const NUMBER_WORDS: &[&str] = &[
    "many",
    "much",
    "number",
    "numbers",
    "total",
    "totals",
    "average",
    "averages",
    "avg",
    "mean",
    "median",
    "sum",
    "percentage",
    "percent",
    "ratio",
    "proportion",
    "share",
    "rate",
    "amount",
    "often",
    "frequency",
    "tally",
    "quantity",
    "fraction",
    "portion",
];

/// First words of a question that asks yes or no.
const YES_NO: &[&str] = &["is", "are", "was", "were", "does", "do", "did", "has", "have", "had", "can", "could", "will"];

/// First words of a question that asks for rows.
const ROWS_FIRST: &[&str] = &["which", "who", "whom", "show", "display", "find", "list", "name"];

/// Whether `words` write a word that asks a number.
fn asks_a_number(words: &[String]) -> bool {
    words.iter().any(|w| NUMBER_WORDS.contains(&w.as_str()) || w.contains("count"))
}

/// Whether `words` ask how many: `how many`, `number of`, or a word holding `count`.
fn asks_how_many(words: &[String]) -> bool {
    words.windows(2).any(|p| (p[0] == "how" && p[1] == "many") || (p[0] == "number" && p[1] == "of"))
        || words.iter().any(|w| w.contains("count"))
}

/// Whether `words` ask for rows and no number (module docs).
fn asks_for_rows(words: &[String]) -> bool {
    let Some(first) = words.first() else { return false };
    if YES_NO.contains(&first.as_str()) || asks_a_number(words) {
        return false;
    }
    ROWS_FIRST.contains(&first.as_str()) || words.iter().any(|w| matches!(w.as_str(), "list" | "names" | "name"))
}

/// Whether every item of the outermost select list of `statement` is a `count(…)`.
fn only_counts(statement: &Statement) -> bool {
    let Statement::Query(q) = statement else { return false };
    let SetExpr::Select(select) = q.body.as_ref() else { return false };
    !select.projection.is_empty()
        && select.projection.iter().all(|item| {
            let e = match item {
                SelectItem::UnnamedExpr(e) => e,
                SelectItem::ExprWithAlias { expr, .. } => expr,
                _ => return false,
            };
            matches!(e, Expr::Function(f) if super::fraction::function_name(f) == "count")
        })
}

/// Whether a result cell is a number, or text that reads as one (`numeric` may come as text).
fn numeric(v: &Value) -> bool {
    match v {
        Value::Number(_) => true,
        Value::String(s) => s.trim().parse::<f64>().is_ok(),
        _ => false,
    }
}

/// How the result of `statement` (`result`) differs in shape from what `question` asks for,
/// if it does (module docs).
pub(super) fn mismatch(question: &str, statement: &Statement, result: &ResultSet) -> Option<Mismatch> {
    let words = plain_words(question);
    if result.rows.len() == 1 && asks_for_rows(&words) && only_counts(statement) {
        return Some(Mismatch::CountForRows);
    }
    let no_number = (0..result.columns.len()).all(|c| !result.rows.iter().any(|r| r.get(c).is_some_and(numeric)));
    if result.rows.len() >= 2 && !result.columns.is_empty() && no_number && asks_how_many(&words) {
        return Some(Mismatch::RowsForCount);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn parsed(sql: &str) -> Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap().remove(0)
    }

    fn result(columns: &[&str], rows: Vec<Vec<Value>>) -> ResultSet {
        ResultSet { columns: columns.iter().map(|c| c.to_string()).collect(), rows, truncated: false, size_cut: false }
    }

    fn count(n: i64) -> ResultSet {
        result(&["count"], vec![vec![json!(n)]])
    }

    fn names(n: usize) -> ResultSet {
        result(&["name"], (0..n).map(|i| vec![json!(format!("Trattoria {i}"))]).collect())
    }

    #[test]
    fn a_count_for_a_list_of_names_is_a_mismatch() {
        let s = parsed("SELECT count(*) FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'Milan'");
        assert_eq!(mismatch("List their names.", &s, &count(3)), Some(Mismatch::CountForRows));
        assert_eq!(mismatch("Which restaurants are in Milan?", &s, &count(3)), Some(Mismatch::CountForRows));
        assert_eq!(mismatch("Who are the chefs there?", &s, &count(3)), Some(Mismatch::CountForRows));
        let aliased = parsed("SELECT COUNT(DISTINCT r.id) AS n FROM restaurants r");
        assert_eq!(mismatch("Show the restaurants in Milan", &aliased, &count(3)), Some(Mismatch::CountForRows));
    }

    #[test]
    fn a_count_where_a_number_is_asked_is_no_mismatch() {
        let s = parsed("SELECT count(*) FROM restaurants");
        for q in [
            "How many restaurants are there?",
            "Give me the count for 2 stars.",
            "What is the number of restaurants?",
            "Which city has the total of the most restaurants?",
            "List the headcount of the Sales department.",
            "Are there restaurants in Milan?",
        ] {
            assert_eq!(mismatch(q, &s, &count(3)), None, "{q}");
        }
        // Not read: a question starting with `what` (which asks for a number as often: "What is
        // the headcount?"), and one whose words ask for neither.
        for q in ["What restaurants are in Milan?", "and in Rome?"] {
            assert_eq!(mismatch(q, &s, &count(3)), None, "{q}");
        }
    }

    #[test]
    fn a_list_with_a_count_beside_it_is_no_mismatch() {
        let s = parsed("SELECT name, count(*) FROM restaurants GROUP BY name");
        let r = result(&["name", "count"], vec![vec![json!("A"), json!(1)]]);
        assert_eq!(mismatch("List the restaurants.", &s, &r), None);
        // Several count rows are a count per group, asked or not.
        let s = parsed("SELECT count(*) FROM restaurants GROUP BY city_id");
        assert_eq!(mismatch("List the restaurants.", &s, &result(&["count"], vec![vec![json!(1)], vec![json!(2)]])), None);
    }

    #[test]
    fn rows_where_a_count_is_asked_are_a_mismatch() {
        let s = parsed("SELECT name FROM chefs WHERE nationality = 'Italian'");
        assert_eq!(mismatch("How many chefs are Italian?", &s, &names(4)), Some(Mismatch::RowsForCount));
        assert_eq!(mismatch("Count the Italian chefs.", &s, &names(4)), Some(Mismatch::RowsForCount));
        assert_eq!(mismatch("What is the number of Italian chefs?", &s, &names(4)), Some(Mismatch::RowsForCount));
    }

    #[test]
    fn rows_with_a_number_or_a_single_row_are_no_mismatch_for_a_count() {
        let s = parsed("SELECT c.name, count(*) FROM chefs c GROUP BY c.name");
        let r = result(&["name", "count"], vec![vec![json!("A"), json!(1)], vec![json!("B"), json!(2)]]);
        assert_eq!(mismatch("How many restaurants does each chef have?", &s, &r), None);
        // numeric comes as text
        let r = result(&["city", "n"], vec![vec![json!("A"), json!("1.0")], vec![json!("B"), json!("2")]]);
        assert_eq!(mismatch("How many restaurants per city?", &s, &r), None);
        assert_eq!(mismatch("How many chefs are Italian?", &s, &names(1)), None);
        assert_eq!(mismatch("List the Italian chefs.", &s, &names(4)), None);
        assert_eq!(mismatch("How many chefs are Italian?", &s, &result(&["name"], vec![])), None);
    }
}
