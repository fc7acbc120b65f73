//! Months and weekdays in calendar order: a column of month names sorts as text, so "How many
//! reviews were posted in each month of 2021, ordered by the month?" written `ORDER BY month`
//! answers April, August, December, February, ... . [`in_order`] reads the rows a query
//! returned: when a key of its sort is a column of the result whose every value is the name of
//! a month (`January`, `jan`, `Sept.`, `to_char`'s padded `March    `) or of a weekday
//! (`Monday`, `Tue`), and the rows do not already come in calendar order, the key is written as
//! the position of the name in the calendar (January first; Monday first, as ISO 8601 and
//! PostgreSQL's `isodow` count) and the query runs again ([`or_in_order`], the
//! [`super::stage::CALENDAR`] stage). Its direction, `NULLS` and the other keys stay as
//! written. A sort that is no column of the result, one of a set operation, values that are not
//! all names of the one kind, or fewer than two of them are left as written; so is the result
//! when the query so written fails or returns other rows.
//!
//! The same holds of a range: `month BETWEEN 'June' AND 'December'` compares text, and is
//! never meant so. [`ranges`] writes a column compared by `BETWEEN`, `<`, `<=`, `>` or `>=`
//! with the whole name of a month or weekday (both bounds of a `BETWEEN` of one calendar) as
//! the name's position in the calendar, and the names as their positions, before the query
//! runs (the same stage). Equality is left alone: it means the same as text.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, Ident, OrderByKind, OrderBySort, SelectItem, SetExpr, Spanned, Statement, Value,
};

use serde_json::json;

use super::execute::{guarded_execute, with_step, Ran, Verdict};
use super::host::Host;
use super::stage;
use crate::guard::OffsetCursor;
use crate::rows::ResultSet;
use crate::sqledit::apply;
use crate::trace::{StageTrace, Trace};

const MONTHS: [&str; 12] =
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
const WEEKDAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// Which calendar a column's names belong to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Calendar {
    Month,
    Weekday,
}

impl Calendar {
    fn names(self) -> &'static [&'static str] {
        match self {
            Calendar::Month => &MONTHS,
            Calendar::Weekday => &WEEKDAYS,
        }
    }

    /// The position of `text` in the calendar, from 0: the whole name or its first three
    /// letters (or a longer start of it: `Sept`, `Thurs`), any case, a trailing `.` and
    /// surrounding blanks aside.
    fn position(self, text: &str) -> Option<usize> {
        let t = text.trim_matches(' ').trim_end_matches('.').to_lowercase();
        if t.chars().count() < 3 || !t.chars().all(|c| c.is_ascii_alphabetic()) {
            return None;
        }
        self.names().iter().position(|n| n.starts_with(t.as_str()))
    }

    fn as_str(self) -> &'static str {
        match self {
            Calendar::Month => "month",
            Calendar::Weekday => "weekday",
        }
    }

    /// `expr` as its position in the calendar, from 1 (NULL for what is no name of it); the
    /// functions named in `pg_catalog`, so that no object of the caller's search path stands in
    /// for them. `expr` is not cast: a column that is no text (an integer, a date, an enum of
    /// its own order) makes the statement fail, as comparing it with a name would have, rather
    /// than compare NULL.
    fn key(self, expr: &str) -> String {
        let starts = self.names().iter().map(|n| format!("'{}'", &n[..3])).collect::<Vec<_>>().join(", ");
        format!("pg_catalog.array_position(ARRAY[{starts}], pg_catalog.lower(pg_catalog.\"left\"(pg_catalog.btrim({expr}), 3)))")
    }
}

/// The calendar a string literal names as a whole name (`'June'`, `'monday'`), with its
/// position from 1.
fn named(expr: &Expr) -> Option<(Calendar, usize)> {
    let Expr::Value(v) = expr else { return None };
    let (Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text)) = &v.value else { return None };
    let t = text.trim_matches(' ').to_lowercase();
    [Calendar::Month, Calendar::Weekday].into_iter().find_map(|c| c.names().iter().position(|n| *n == t).map(|at| (c, at + 1)))
}

/// `sql` (whose tree is `statement`) with each range of month or weekday names over a column
/// compared by calendar position (the [module docs](self)), and each comparison so changed as
/// written; `None` when there is none.
pub fn ranges(sql: &str, statement: &Statement) -> Option<(String, Vec<String>)> {
    let lower = sql.to_lowercase();
    if !MONTHS.iter().chain(WEEKDAYS.iter()).any(|n| lower.contains(n)) {
        return None;
    }
    // Per comparison: its calendar, what is written over (the column's span, written as its
    // position, and each name's, written as its number), and the comparison as written.
    type Found = (Calendar, Vec<(sqlparser::tokenizer::Span, Option<usize>)>, String);
    let mut found: Vec<Found> = Vec::new();
    let _ = visit_expressions(statement, |e| {
        match e {
            Expr::Between { expr, low, high, .. } if plain_name(expr).is_some() => {
                if let (Some((c, a)), Some((d, b))) = (named(low), named(high)) {
                    if c == d {
                        found.push((c, vec![(expr.span(), None), (low.span(), Some(a)), (high.span(), Some(b))], e.to_string()));
                    }
                }
            }
            Expr::BinaryOp { left, op: BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq, right } => {
                let (column, name) = if plain_name(left).is_some() { (left, right) } else { (right, left) };
                if let (Some(_), Some((c, at))) = (plain_name(column), named(name)) {
                    found.push((c, vec![(column.span(), None), (name.span(), Some(at))], e.to_string()));
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    let mut cursor = OffsetCursor::new(sql);
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut changed = Vec::new();
    for (calendar, parts, written) in found {
        if parts.iter().any(|(span, _)| span.start.line == 0) {
            continue;
        }
        for (span, number) in parts {
            let (start, end) = (cursor.offset(span.start), cursor.offset(span.end));
            let text = match number {
                Some(n) => n.to_string(),
                None => calendar.key(&sql[start..end]),
            };
            edits.push((start, end, text));
        }
        changed.push(written);
    }
    edits.sort_by_key(|(start, ..)| *start);
    if edits.is_empty() || edits.windows(2).any(|w| w[0].1 > w[1].0) {
        return None;
    }
    Some((apply(sql, &edits), changed))
}

/// The calendar every value of column `col` of `rows` names, when there are two names or more
/// and all non-NULL values are names of it.
fn calendar_of(rows: &ResultSet, col: usize) -> Option<Calendar> {
    let values: Vec<&str> =
        rows.rows.iter().filter_map(|r| r.get(col)).filter(|v| !v.is_null()).map(|v| v.as_str()).collect::<Option<_>>()?;
    [Calendar::Month, Calendar::Weekday].into_iter().find(|c| {
        let at: Option<Vec<usize>> = values.iter().map(|v| c.position(v)).collect();
        at.is_some_and(|mut at| {
            at.sort_unstable();
            at.dedup();
            at.len() >= 2
        })
    })
}

/// The name of a plain column reference, folded as PostgreSQL folds it (its last part).
fn plain_name(expr: &Expr) -> Option<String> {
    let fold = |i: &Ident| if i.quote_style.is_some() { i.value.clone() } else { i.value.to_lowercase() };
    match expr {
        Expr::Identifier(i) => Some(fold(i)),
        Expr::CompoundIdentifier(parts) => parts.last().map(fold),
        Expr::Nested(e) => plain_name(e),
        _ => None,
    }
}

/// `sql` (whose tree is `statement`, its locations in `sql`) with each key of its sort that
/// orders a column of `rows` holding month or weekday names (the [module docs](self)) written
/// as the name's calendar position, and the keys so changed with their calendar; `None` when
/// there is none, or the rows come in calendar order already.
pub fn in_order(sql: &str, statement: &Statement, rows: &ResultSet) -> Option<(String, Vec<(String, Calendar)>)> {
    let Statement::Query(q) = statement else { return None };
    let SetExpr::Select(select) = q.body.as_ref() else { return None };
    let OrderByKind::Expressions(keys) = &q.order_by.as_ref()?.kind else { return None };
    let wildcard = select.projection.iter().any(|p| matches!(p, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)));
    // Each key's column of the result and the expression it stands for (an alias names one).
    let column_of = |key: &Expr| -> Option<(usize, Option<Expr>)> {
        if let Expr::Value(v) = key {
            let Value::Number(n, _) = &v.value else { return None };
            let at = n.parse::<usize>().ok()?.checked_sub(1)?;
            if wildcard {
                return None;
            }
            return match select.projection.get(at)? {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some((at, Some(e.clone()))),
                _ => None,
            };
        }
        let name = plain_name(key)?;
        if !wildcard {
            for (at, item) in select.projection.iter().enumerate() {
                match item {
                    SelectItem::ExprWithAlias { expr, alias }
                        if matches!(key, Expr::Identifier(_)) && plain_name(&Expr::Identifier(alias.clone())).as_deref() == Some(&name) =>
                    {
                        return Some((at, Some(expr.clone())));
                    }
                    SelectItem::UnnamedExpr(e) if e == key || plain_name(e).as_deref() == Some(&name) => return Some((at, None)),
                    _ => {}
                }
            }
            return None;
        }
        let at = rows.columns.iter().position(|c| *c == name)?;
        (rows.columns.iter().filter(|c| **c == name).count() == 1).then_some((at, None))
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut changed = Vec::new();
    let mut cursor = OffsetCursor::new(sql);
    // The result's columns of the keys before this one, for where their runs begin and end.
    let mut before: Vec<usize> = Vec::new();
    for k in keys {
        let Some((col, stands_for)) = column_of(&k.expr) else {
            // The rows are in no order this check can read past a key it cannot place.
            break;
        };
        if let Some(calendar) = calendar_of(rows, col) {
            let descending = matches!(k.options.sort, Some(OrderBySort::Desc));
            if !in_calendar_order(rows, col, &before, calendar, descending) {
                let span = k.expr.span();
                if span.start.line == 0 {
                    return None;
                }
                let (start, end) = (cursor.offset(span.start), cursor.offset(span.end));
                let expr = stands_for.map(|e| e.to_string()).unwrap_or_else(|| sql[start..end].to_string());
                edits.push((start, end, calendar.key(&expr)));
                changed.push((sql[start..end].to_string(), calendar));
            }
        }
        before.push(col);
    }
    if edits.is_empty() {
        return None;
    }
    Some((apply(sql, &edits), changed))
}

/// Whether the rows come in calendar order of column `col` within each run of equal values of
/// the columns `before` (NULL and what is no name of the calendar aside).
fn in_calendar_order(rows: &ResultSet, col: usize, before: &[usize], calendar: Calendar, descending: bool) -> bool {
    let mut last: Option<(Vec<&serde_json::Value>, usize)> = None;
    for r in &rows.rows {
        let run: Vec<&serde_json::Value> = before.iter().filter_map(|&b| r.get(b)).collect();
        let Some(at) = r.get(col).and_then(|v| v.as_str()).and_then(|v| calendar.position(v)) else { continue };
        if let Some((prev_run, prev)) = &last {
            if *prev_run == run && (if descending { at > *prev } else { at < *prev }) {
                return false;
            }
        }
        last = Some((run, at));
    }
    true
}

/// The query that ran, or, when its sort orders month or weekday names as text, the same
/// query with them in calendar order ([`in_order`]) when that runs and returns as many rows;
/// with whether it changed.
pub(super) fn or_in_order(
    host: &mut dyn Host,
    trace: &mut Trace,
    attempt: u32,
    step: Option<usize>,
    sql: String,
    ran: Ran,
    max_prompt_tokens: usize,
) -> (String, Ran, bool) {
    let Ok((checked, rows)) = &ran else { return (sql, ran, false) };
    if rows.rows.len() < 2 || rows.truncated {
        return (sql, ran, false);
    }
    // Parsed only when a column of the result holds such names.
    if !(0..rows.columns.len()).any(|col| calendar_of(rows, col).is_some()) {
        return (sql, ran, false);
    }
    let Ok(statement) = crate::guard::parse_statement(&checked.sql) else { return (sql, ran, false) };
    let Some((fixed, changed)) = in_order(&checked.sql, &statement, rows) else { return (sql, ran, false) };
    let verdict = Verdict::of(&fixed);
    let mut st = StageTrace::new(stage::CALENDAR, with_step(json!({"sql": checked.sql}), step));
    st.attempt = Some(attempt);
    st.output = json!({
        "changed": changed.iter().map(|(key, c)| json!({"key": key, "calendar": c.as_str()})).collect::<Vec<_>>(),
        "sql": fixed,
    });
    if !verdict.allowed() {
        st.output["kept"] = json!("refused");
        trace.push(st);
        return (sql, ran, false);
    }
    let at = trace.stages.len();
    trace.push(st);
    let row_count = rows.rows.len();
    match guarded_execute(host, trace, attempt, step, &fixed, verdict, max_prompt_tokens) {
        Ok(again) if again.1.rows.len() == row_count => (fixed, Ok(again), true),
        other => {
            trace.stages[at].output["kept"] = json!(if other.is_ok() { "other_rows" } else { "failed" });
            (sql, ran, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(columns: &[&str], rows: &[&[serde_json::Value]]) -> ResultSet {
        ResultSet {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: rows.iter().map(|r| r.to_vec()).collect(),
            truncated: false,
            size_cut: false,
        }
    }

    fn written(sql: &str, rows: &ResultSet) -> Option<String> {
        in_order(sql, &crate::guard::parse_statement(sql).unwrap(), rows).map(|(s, _)| s)
    }

    const MONTH: &str =
        "pg_catalog.array_position(ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], pg_catalog.lower(pg_catalog.\"left\"(pg_catalog.btrim(";

    #[test]
    fn month_names_sorted_as_text_are_sorted_by_the_calendar() {
        let rows = result(&["month", "n"], &[&[json!("April"), json!(3)], &[json!("February"), json!(1)], &[json!("January"), json!(2)]]);
        let sql = "SELECT month, COUNT(*) AS n FROM yelp.review WHERE year = 2021 GROUP BY month ORDER BY month";
        assert_eq!(
            written(sql, &rows).unwrap(),
            format!("SELECT month, COUNT(*) AS n FROM yelp.review WHERE year = 2021 GROUP BY month ORDER BY {MONTH}month), 3)))")
        );
        // A position, a qualified name, an alias of an expression; direction and NULLS kept.
        let sql = "SELECT r.month, COUNT(*) FROM review r GROUP BY 1 ORDER BY 1 DESC NULLS LAST";
        let rows = result(&["month", "count"], &[&[json!("February"), json!(3)], &[json!("April"), json!(1)]]);
        assert_eq!(
            written(sql, &rows).unwrap(),
            format!("SELECT r.month, COUNT(*) FROM review r GROUP BY 1 ORDER BY {MONTH}r.month), 3))) DESC NULLS LAST")
        );
        let sql = "SELECT to_char(d, 'Month') AS m, sum(x) FROM t GROUP BY 1 ORDER BY m";
        let rows = result(&["m", "sum"], &[&[json!("March    "), json!(3)], &[json!("February "), json!(1)]]);
        assert_eq!(
            written(sql, &rows).unwrap(),
            format!("SELECT to_char(d, 'Month') AS m, sum(x) FROM t GROUP BY 1 ORDER BY {MONTH}to_char(d, 'Month')), 3)))")
        );
        // Weekdays, Monday first; abbreviations.
        let sql = "SELECT day, total FROM checkins ORDER BY day";
        let rows = result(&["day", "total"], &[&[json!("Fri"), json!(3)], &[json!("Mon"), json!(1)], &[json!("Sun."), json!(1)]]);
        let (fixed, changed) = in_order(sql, &crate::guard::parse_statement(sql).unwrap(), &rows).unwrap();
        assert!(fixed.starts_with(
            "SELECT day, total FROM checkins ORDER BY pg_catalog.array_position(ARRAY['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']"
        ));
        assert_eq!(changed, vec![("day".to_string(), Calendar::Weekday)]);
    }

    #[test]
    fn ranges_of_month_and_weekday_names_compare_calendar_positions() {
        let ranged = |sql: &str| ranges(sql, &crate::guard::parse_statement(sql).unwrap()).map(|(s, _)| s);
        let (sql, changed) = {
            let sql =
                "SELECT COUNT(DISTINCT T1.month) FROM yelp.review AS T1 WHERE T1.year = 2021 AND T1.month BETWEEN 'June' AND 'December'";
            ranges(sql, &crate::guard::parse_statement(sql).unwrap()).unwrap()
        };
        assert_eq!(
            sql,
            format!(
                "SELECT COUNT(DISTINCT T1.month) FROM yelp.review AS T1 WHERE T1.year = 2021 AND {MONTH}T1.month), 3))) BETWEEN 6 AND 12"
            )
        );
        assert_eq!(changed, ["T1.month BETWEEN 'June' AND 'December'"]);
        assert_eq!(
            ranged("SELECT * FROM c WHERE 'Friday' <= day AND n > 2").unwrap(),
            "SELECT * FROM c WHERE 5 <= pg_catalog.array_position(ARRAY['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], pg_catalog.lower(pg_catalog.\"left\"(pg_catalog.btrim(day), 3))) AND n > 2"
        );
        // Equality, names of two calendars, a word that is no name, an expression: as written.
        for sql in [
            "SELECT * FROM r WHERE month = 'June'",
            "SELECT * FROM r WHERE month IN ('June', 'July')",
            "SELECT * FROM r WHERE month BETWEEN 'June' AND 'Friday'",
            "SELECT * FROM r WHERE name > 'Junebug' AND month < 'Jun'",
            "SELECT * FROM r WHERE lower(month) < 'june'",
        ] {
            assert_eq!(ranged(sql), None, "{sql}");
        }
    }

    #[test]
    fn a_later_key_is_ordered_within_the_runs_of_the_keys_before_it() {
        let sql = "SELECT year, month, n FROM t ORDER BY year, month";
        // In calendar order within each year: nothing to change.
        let ordered = result(
            &["year", "month", "n"],
            &[&[json!(2020), json!("March"), json!(1)], &[json!(2021), json!("January"), json!(1)], &[json!(2021), json!("May"), json!(1)]],
        );
        assert_eq!(written(sql, &ordered), None);
        let unordered = result(
            &["year", "month", "n"],
            &[&[json!(2020), json!("March"), json!(1)], &[json!(2021), json!("May"), json!(1)], &[json!(2021), json!("January"), json!(1)]],
        );
        assert_eq!(written(sql, &unordered).unwrap(), format!("SELECT year, month, n FROM t ORDER BY year, {MONTH}month), 3)))"));
    }

    #[test]
    fn what_is_left_as_written() {
        let rows = result(&["month", "n"], &[&[json!("April"), json!(3)], &[json!("February"), json!(1)]]);
        // No sort; a set operation; a sort by what is not a column of the result.
        assert_eq!(written("SELECT month, n FROM t", &rows), None);
        assert_eq!(written("SELECT month, n FROM t UNION SELECT month, n FROM u ORDER BY month", &rows), None);
        assert_eq!(written("SELECT month, n FROM t ORDER BY other", &rows), None);
        // Values that are not all names of one calendar, or only one name.
        let mixed = result(&["month", "n"], &[&[json!("April"), json!(3)], &[json!("Monday"), json!(1)]]);
        assert_eq!(written("SELECT month, n FROM t ORDER BY month", &mixed), None);
        let words = result(&["month", "n"], &[&[json!("Mayo"), json!(3)], &[json!("Apricot"), json!(1)]]);
        assert_eq!(written("SELECT month, n FROM t ORDER BY month", &words), None);
        let one = result(&["month", "n"], &[&[json!("May"), json!(3)], &[json!("May"), json!(1)], &[json!(null), json!(1)]]);
        assert_eq!(written("SELECT month, n FROM t ORDER BY month", &one), None);
        // Numbers, or names that come in calendar order already.
        let numbers = result(&["month", "n"], &[&[json!(4), json!(3)], &[json!(2), json!(1)]]);
        assert_eq!(written("SELECT month, n FROM t ORDER BY month DESC", &numbers), None);
        let ordered = result(&["month", "n"], &[&[json!("April"), json!(3)], &[json!("February"), json!(1)]]);
        assert_eq!(written("SELECT month, n FROM t ORDER BY month DESC", &ordered), None);
        // A key past one this check cannot place.
        assert_eq!(written("SELECT month, n FROM t ORDER BY n + 1, month", &rows), None);
    }
}
