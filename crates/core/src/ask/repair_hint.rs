//! What pg_ask adds to a failure before it asks the model for a repair, read from the schema it
//! described: which tables have the column an error says does not exist (a small model keeps
//! the table it guessed otherwise, even with PostgreSQL's own hint in front of it), the tables
//! there are when a relation does not exist, how a date is compared; a condition that no
//! row can meet (`name = 'a' AND name = 'b'`), which returns no rows without an error; and why
//! a query that ran and returned nothing is asked again ([`nothing`]).

use sqlparser::ast::{BinaryOperator, Expr, Query, SetExpr, Statement};

use super::host::ExecFailure;
use crate::guard::CheckedSql;
use crate::rows::ResultSet;
use crate::schema::Table;

/// Most names a hint lists.
const MOST: usize = 12;

/// A note on `failure` from the described `tables`, when there is one to add.
pub fn hint(failure: &ExecFailure, tables: &[Table]) -> Option<String> {
    let ExecFailure::Error { sqlstate, message, .. } = failure else { return None };
    match sqlstate.as_str() {
        "42703" => missing_column(message, tables),
        "42P01" => {
            let names: Vec<String> = tables.iter().take(MOST).map(Table::qualified).collect();
            (!names.is_empty()).then(|| format!("The tables described are: {}.", names.join(", ")))
        }
        "42883" if message.contains("~~") && (message.contains("date") || message.contains("timestamp")) => Some(
            "A date or timestamp is not text: compare it with dates and intervals, or take its parts with \
             extract(dow | month | year FROM ...) or to_char(..., 'Day')."
                .into(),
        ),
        _ => None,
    }
}

/// Whether `failure` points at what to change: a column the query read from the wrong table
/// (a described table has it, and the hint says which: the query needs that one change), or
/// the guard's refusal, whose reason names what may not run (a model asked afresh does not
/// know it). The repair most likely to succeed then is an edit of the query, not a fresh one
/// (`ask.first_repair = auto`). A misspelt name is not among them: asked afresh, with the
/// tables described again, the model writes it from them (measured: BENCHMARKS.md, "The first
/// repair chosen by the failure").
pub fn points_at_the_change(failure: &ExecFailure, tables: &[Table]) -> bool {
    let ExecFailure::Error { sqlstate, message, .. } = failure else { return matches!(failure, ExecFailure::Refused { .. }) };
    sqlstate.as_str() == "42703" && missing_name(message).is_some_and(|column| !having(&column, tables).is_empty())
}

/// The column named by `column "x" does not exist` or `column t.x does not exist`, folded.
fn missing_name(message: &str) -> Option<String> {
    let named = message.strip_prefix("column ")?.split(" does not exist").next()?.trim();
    let column = named.rsplit('.').next()?.trim_matches('"').to_lowercase();
    (!column.is_empty()).then_some(column)
}

/// The described tables that have a column named `column` (folded), qualified.
fn having(column: &str, tables: &[Table]) -> Vec<String> {
    tables.iter().filter(|t| t.columns.iter().any(|c| c.name.to_lowercase() == column)).take(MOST).map(Table::qualified).collect()
}

/// `column "x" does not exist`, `column t.x does not exist`: the tables that have `x`, or the
/// columns whose names are like it.
fn missing_column(message: &str, tables: &[Table]) -> Option<String> {
    let column = missing_name(message)?;
    let having = having(&column, tables);
    if !having.is_empty() {
        return Some(format!("{column} is a column of {}: read it from there (join that table, or use its alias).", having.join(", ")));
    }
    let words: Vec<&str> = column.split('_').filter(|w| w.len() >= 3).collect();
    let like: Vec<String> = tables
        .iter()
        .flat_map(|t| t.columns.iter().map(move |c| (t, c)))
        .filter(|(_, c)| {
            let n = c.name.to_lowercase();
            n.contains(&column)
                || (column.contains(&n) && n.len() >= 3)
                || words.iter().any(|w| n.contains(w))
                || edits(&n, &column) <= (column.chars().count() / 4).max(1)
        })
        .take(MOST)
        .map(|(t, c)| format!("{}.{}", t.qualified(), c.name))
        .collect();
    (!like.is_empty()).then(|| format!("No described table has a column {column}; columns with names like it: {}.", like.join(", ")))
}

/// The edit distance of two names (insertions, deletions, substitutions).
pub(super) fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb)).min(row[j] + 1).min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Whether a query that ran returned nothing to answer with: no rows, or rows whose every
/// value is NULL (an aggregate over no rows); never a result a limit cut (rows were left
/// unread).
pub fn is_nothing(rows: &ResultSet) -> bool {
    !rows.truncated && !rows.size_cut && rows.rows.iter().all(|r| r.iter().all(serde_json::Value::is_null))
}

/// What a query that ran returned when [`is_nothing`] holds: `no rows` or `only NULL`.
fn what_came(rows: &ResultSet) -> &'static str {
    if rows.rows.is_empty() {
        "no rows"
    } else {
        "only NULL"
    }
}

/// Why a query that ran and returned nothing is asked again, as the model reads it.
pub fn nothing(rows: &ResultSet) -> String {
    format!(
        "the query ran and returned {}. If the question expects an answer, a condition compares a column with a value \
         the data does not hold in that form, is stricter than the question asks, or a join matches the wrong columns: \
         write a different query.",
        what_came(rows)
    )
}

/// A condition of `sql` that no row meets: one column compared for equality with two different
/// constants in the same chain of ANDs (`d.name = 'Machine Learning' AND d.name = 'Data
/// Science'`), said as the model should read it. Only the top-level query's and its WITH
/// queries' WHERE clauses are read.
pub fn impossible_condition(sql: &CheckedSql) -> Option<String> {
    let Statement::Query(query) = sql.statement() else { return None };
    let mut queries: Vec<&Query> = vec![query];
    if let Some(with) = &query.with {
        queries.extend(with.cte_tables.iter().map(|c| &*c.query));
    }
    queries.into_iter().find_map(|q| match &*q.body {
        SetExpr::Select(select) => select.selection.as_ref().and_then(contradiction),
        _ => None,
    })
}

fn contradiction(selection: &Expr) -> Option<String> {
    let mut conjuncts = Vec::new();
    flatten_and(selection, &mut conjuncts);
    let mut seen: Vec<(String, String)> = Vec::new();
    for c in conjuncts {
        let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = c else { continue };
        let (column, value) = match (&**left, &**right) {
            (Expr::Identifier(_) | Expr::CompoundIdentifier(_), Expr::Value(v)) => (left.to_string(), v.to_string()),
            (Expr::Value(v), Expr::Identifier(_) | Expr::CompoundIdentifier(_)) => (right.to_string(), v.to_string()),
            _ => continue,
        };
        let column = column.to_lowercase();
        if let Some((_, other)) = seen.iter().find(|(c, v)| *c == column && *v != value) {
            return Some(format!(
                "{column} = {other} AND {column} = {value} holds for no row: a row has one value in {column}. \
                 To find what has both, group the rows and count the distinct values (HAVING count(DISTINCT ...) = 2), \
                 or use OR / IN for either."
            ));
        }
        seen.push((column, value));
    }
    None
}

fn flatten_and<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            flatten_and(left, out);
            flatten_and(right, out);
        }
        Expr::Nested(inner) => flatten_and(inner, out),
        other => out.push(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Column;
    use crate::sqlstate::SqlState;

    fn table(schema: &str, name: &str, columns: &[&str]) -> Table {
        Table {
            schema: schema.into(),
            name: name.into(),
            kind: "table".into(),
            comment: None,
            columns: columns
                .iter()
                .map(|c| Column { name: c.to_string(), data_type: "text".into(), not_null: false, comment: None })
                .collect(),
            primary_key: vec![],
            foreign_keys: vec![],
        }
    }

    fn error(code: &str, message: &str) -> ExecFailure {
        ExecFailure::Error { sqlstate: SqlState::new(code).unwrap(), message: message.into(), detail: None, hint: None }
    }

    #[test]
    fn a_missing_column_is_shown_where_it_is() {
        let tables = vec![
            table("public", "student", &["student_id", "predicted_graduation_semester", "admit_term"]),
            table("public", "student_record", &["student_id", "course_id"]),
        ];
        let h = hint(&error("42703", "column t2.predicted_graduation_semester does not exist"), &tables).unwrap();
        assert!(h.contains("predicted_graduation_semester is a column of public.student:"), "{h}");
        let h = hint(&error("42703", "column \"salesperson_id\" does not exist"), &[table("s", "salespersons", &["id", "name"])]);
        assert!(h.is_none(), "{h:?}");
        let h = hint(&error("42703", "column \"sbcustid\" does not exist"), &[table("s", "sbtransaction", &["sbtxcustid", "sbtxtype"])])
            .unwrap();
        assert!(h.contains("s.sbtransaction.sbtxcustid"), "{h}");
        assert!(points_at_the_change(&error("42703", "column t2.predicted_graduation_semester does not exist"), &tables));
        assert!(!points_at_the_change(&error("42703", "column \"admit_trm\" does not exist"), &tables));
        assert!(!points_at_the_change(&error("42703", "column \"salesperson_id\" does not exist"), &tables));
        assert!(!points_at_the_change(&error("42P01", "relation \"student_id\" does not exist"), &tables));
        assert!(points_at_the_change(&ExecFailure::Refused { reason: "calls a volatile function".into() }, &tables));
        assert!(!points_at_the_change(&error("42883", "operator does not exist: date ~~ unknown"), &tables));
        let h = hint(&error("42P01", "relation \"geography.country\" does not exist"), &tables).unwrap();
        assert!(h.contains("public.student, public.student_record"), "{h}");
        assert!(hint(&error("42883", "operator does not exist: date ~~ unknown"), &tables).unwrap().contains("extract(dow"));
        assert!(hint(&ExecFailure::Refused { reason: "x".into() }, &tables).is_none());
        assert!(hint(&error("22012", "division by zero"), &tables).is_none());
    }

    fn checked(sql: &str) -> CheckedSql {
        crate::guard::check_read_only(sql).unwrap()
    }

    #[test]
    fn one_column_equal_to_two_values_is_impossible() {
        let sql = "SELECT a.name FROM author a JOIN domain d ON d.id = a.did WHERE d.name = 'Machine Learning' AND d.name = 'Data Science'";
        let why = impossible_condition(&checked(sql)).unwrap();
        assert!(why.contains("d.name = 'Machine Learning' AND d.name = 'Data Science'"), "{why}");
        for fine in [
            "SELECT 1 FROM t WHERE a = 1 AND b = 2",
            "SELECT 1 FROM t WHERE a = 1 OR a = 2",
            "SELECT 1 FROM t x JOIN t y ON true WHERE x.a = 1 AND y.a = 2",
            "SELECT 1 FROM t WHERE a = 1 AND a = 1",
        ] {
            assert_eq!(impossible_condition(&checked(fine)), None, "{fine}");
        }
        assert!(impossible_condition(&checked("WITH c AS (SELECT * FROM t WHERE (k = 'x') AND k = 'y') SELECT * FROM c")).is_some());
    }
}
