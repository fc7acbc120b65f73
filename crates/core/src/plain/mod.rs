//! What a query does, in a few short lines a person who does not read SQL can check against
//! their question.
//!
//! [`describe`] parses one statement (with the guard's parser and its lexical and size checks)
//! and says, in order: the common table expressions it builds, the relations it reads and how
//! they are joined, the rows it keeps, how it groups and what it computes per group, the groups
//! it keeps, what it shows, duplicates removed, the sort, and how many rows it keeps:
//!
//! ```text
//! SELECT count(*) FROM restaurants WHERE city = 'San Francisco' AND closed_on IS NULL
//!
//! Reads restaurants.
//! Keeps rows whose city is 'San Francisco' and whose closed_on is empty.
//! Counts the rows.
//! ```
//!
//! The rule is to say nothing the SQL does not say: what is not recognised is said as written
//! (`Computes round(avg(rating), 2).`, `where ts @@ q is true`). Identifiers and literals are
//! quoted as written; a newline or other control character in them is escaped (`\n`) so that
//! each line stays one line, and long SQL text is cut with `…`. Sub-queries in `FROM` and in
//! conditions are named by the relations they read (`a sub-query over reviews`); a common table
//! expression and each branch of a `UNION`, `INTERSECT` or `EXCEPT` is described in full, its
//! lines prefixed with its name (`top_rated: `) or its part (`Part 2: `).

mod cond;
pub(crate) use cond::bare;
mod from;
mod project;
mod scope;
mod text;

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, LimitClause, Query, Select, SetExpr, SetOperator, SetQuantifier, Statement, Value, Visit, Visitor};

use crate::guard::{data_modifying_statement, parse_statement, statement_kind, Refusal};
use project::{group_keys, resolve, select_lines, sort_words};
use scope::Scope;
use text::{columns_of, escape_controls, over, relations_of, written, Names};

/// A query in words, and the parts of it a caller may check directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plain {
    /// One short sentence per step, in the order the query does them.
    pub lines: Vec<String>,
    /// The relations read anywhere in the statement, as written (schema-qualified if written
    /// so), without repeats, in the order they appear; names of common table expressions are
    /// not included.
    pub tables: Vec<String>,
    /// The columns of every `WHERE` and `HAVING` in the statement (sub-queries included), bare
    /// (`r.city` gives `city`, quotes removed), without repeats.
    pub filter_columns: Vec<String>,
    /// The columns of every `GROUP BY` in the statement, select-list positions resolved.
    pub group_columns: Vec<String>,
    /// The columns of the outermost `ORDER BY`, select-list aliases and positions resolved.
    pub order_columns: Vec<String>,
    /// The outermost `LIMIT` (or `FETCH FIRST n ROWS`) when it is a number.
    pub limit: Option<u64>,
}

impl Plain {
    /// The lines, one per line of text.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }
}

/// Why a statement is not described.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlainError {
    /// The text does not parse (or fails the guard's lexical or size checks).
    #[error("cannot parse the SQL: {0}")]
    Parse(String),
    /// Not exactly one statement; the count is given.
    #[error("{0} statements were given; only a single statement is described")]
    NotSingleStatement(usize),
    /// A statement other than a query; its kind is given (`INSERT`, `CREATE TABLE`, …).
    #[error("{0} is not described: only a query is described")]
    NotAQuery(String),
}

impl From<Refusal> for PlainError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Empty => PlainError::NotSingleStatement(0),
            Refusal::MultipleStatements(n) => PlainError::NotSingleStatement(n),
            Refusal::Unparsable(message) => PlainError::Parse(message),
            other => PlainError::Parse(other.to_string()),
        }
    }
}

/// Says what one query does. See the [module documentation](self).
pub fn describe(sql: &str) -> Result<Plain, PlainError> {
    let statement = parse_statement(sql)?;
    let Statement::Query(query) = &statement else {
        return Err(PlainError::NotAQuery(statement_kind(&statement)));
    };
    if let Some(inner) = data_modifying_statement(&query.body) {
        return Err(PlainError::NotAQuery(statement_kind(inner)));
    }
    if let Some(with) = &query.with {
        if let Some(inner) = with.cte_tables.iter().find_map(|cte| data_modifying_statement(&cte.query.body)) {
            return Err(PlainError::NotAQuery(format!("WITH … {}", statement_kind(inner))));
        }
    }
    let mut lines = Vec::new();
    query_lines(query, "", &mut lines);

    let mut clauses = Clauses::default();
    let _ = statement.visit(&mut clauses);
    let mut order = Names::default();
    let first = first_select(&query.body);
    for key in order_keys(query) {
        columns_of(resolve(&key.expr, first), &mut order);
    }
    Ok(Plain {
        lines: lines.iter().map(|line| escape_controls(line)).collect(),
        tables: relations_of(query, true),
        filter_columns: clauses.filter.into_vec(),
        group_columns: clauses.group.into_vec(),
        order_columns: order.into_vec(),
        limit: limit_number(query),
    })
}

/// The columns of every `WHERE`, `HAVING` and `GROUP BY`.
#[derive(Default)]
struct Clauses {
    filter: Names,
    group: Names,
}

impl Visitor for Clauses {
    type Break = ();

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        for filter in select.selection.iter().chain(&select.having) {
            columns_of(filter, &mut self.filter);
        }
        for key in group_keys(select) {
            columns_of(key, &mut self.group);
        }
        ControlFlow::Continue(())
    }
}

/// The first `SELECT` of a query body (the one that names the result's columns).
fn first_select(mut body: &SetExpr) -> Option<&Select> {
    loop {
        match body {
            SetExpr::Select(select) => return Some(select),
            SetExpr::Query(query) => body = &query.body,
            SetExpr::SetOperation { left, .. } => body = left,
            _ => return None,
        }
    }
}

fn order_keys(query: &Query) -> &[sqlparser::ast::OrderByExpr] {
    match query.order_by.as_ref().map(|o| &o.kind) {
        Some(sqlparser::ast::OrderByKind::Expressions(keys)) => keys,
        _ => &[],
    }
}

/// A query's lines, each prefixed with `prefix`.
fn query_lines(query: &Query, prefix: &str, out: &mut Vec<String>) {
    if let Some(with) = &query.with {
        let recursive = if with.recursive { "recursive " } else { "" };
        for cte in &with.cte_tables {
            let name = &cte.alias.name;
            out.push(format!("{prefix}Uses a {recursive}sub-query named {name}{}.", over(&cte.query)));
            query_lines(&cte.query, &format!("{prefix}{name}: "), out);
        }
    }
    body_lines(&query.body, prefix, out);
    let mut lines = Vec::new();
    for lock in &query.locks {
        lines.push(format!("Locks the rows it reads ({}).", written(lock)));
    }
    let keys = order_keys(query);
    if !keys.is_empty() {
        let select = first_select(&query.body);
        let scope = match query.body.as_ref() {
            SetExpr::Select(select) => Scope::of(&select.from),
            _ => Scope::default(),
        };
        lines.push(format!("Sorts by {}.", sort_words(keys, &scope, select)));
    }
    limit_lines(query, !keys.is_empty(), &mut lines);
    out.extend(lines.into_iter().map(|line| format!("{prefix}{line}")));
}

/// The lines of a query body: a `SELECT`, a set operation, `VALUES` or `TABLE`.
fn body_lines(body: &SetExpr, prefix: &str, out: &mut Vec<String>) {
    match body {
        SetExpr::Select(select) => {
            let mut lines = Vec::new();
            select_lines(select, &mut lines);
            out.extend(lines.into_iter().map(|line| format!("{prefix}{line}")));
        }
        SetExpr::Query(query) => query_lines(query, prefix, out),
        SetExpr::SetOperation { op, set_quantifier, .. } => {
            let parts = set_parts(body, op, set_quantifier);
            let all = matches!(set_quantifier, SetQuantifier::All | SetQuantifier::AllByName);
            let n = parts.len();
            let line = match op {
                SetOperator::Union if all => format!("Combines the rows of {n} parts, keeping duplicates."),
                SetOperator::Union => format!("Combines the rows of {n} parts, removing duplicates."),
                SetOperator::Intersect if n == 2 => "Keeps the rows found in both parts.".to_string(),
                SetOperator::Intersect => format!("Keeps the rows found in all {n} parts."),
                SetOperator::Except | SetOperator::Minus if n == 2 => "Keeps the rows of part 1 that are not in part 2.".to_string(),
                SetOperator::Except | SetOperator::Minus => "Keeps the rows of part 1 that are in none of the other parts.".to_string(),
            };
            out.push(format!("{prefix}{line}"));
            for (i, part) in parts.into_iter().enumerate() {
                body_lines(part, &format!("{prefix}Part {}: ", i + 1), out);
            }
        }
        SetExpr::Values(values) => out.push(format!("{prefix}Lists {} rows written in the query.", values.rows.len())),
        SetExpr::Table(table) => {
            let name = [table.schema_name.as_deref(), table.table_name.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(".");
            out.push(format!("{prefix}Reads all of {name}."));
        }
        other => out.push(format!("{prefix}Runs {}.", written(other))),
    }
}

/// The operands of a chain of one set operation (`a UNION b UNION c`), in order.
fn set_parts<'a>(body: &'a SetExpr, op: &SetOperator, quantifier: &SetQuantifier) -> Vec<&'a SetExpr> {
    let mut parts = Vec::new();
    let mut current = body;
    loop {
        match current {
            SetExpr::SetOperation { left, op: o, set_quantifier: q, right } if o == op && q == quantifier => {
                parts.push(right.as_ref());
                current = left;
            }
            other => {
                parts.push(other);
                break;
            }
        }
    }
    parts.reverse();
    parts
}

/// The number of a `LIMIT`/`OFFSET`/`FETCH` value, when it is a plain number.
fn number(expr: &Expr) -> Option<u64> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// The outermost row limit, when it is a plain number.
fn limit_number(query: &Query) -> Option<u64> {
    let limit = match &query.limit_clause {
        Some(LimitClause::LimitOffset { limit: Some(limit), .. }) | Some(LimitClause::OffsetCommaLimit { limit, .. }) => Some(limit),
        _ => None,
    };
    match (limit, &query.fetch) {
        (Some(limit), _) => number(limit),
        (None, Some(fetch)) if !fetch.percent => fetch.quantity.as_ref().map_or(Some(1), number),
        _ => None,
    }
}

/// `Skips the first 10 rows.`, `Keeps the first 5 rows.` (at most, when nothing is sorted).
fn limit_lines(query: &Query, sorted: bool, out: &mut Vec<String>) {
    let (limit, offset) = match &query.limit_clause {
        Some(LimitClause::LimitOffset { limit, offset, .. }) => (limit.as_ref(), offset.as_ref().map(|o| &o.value)),
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
        None => (None, None),
    };
    let rows = |n: &Expr| match number(n) {
        Some(1) => "1 row".to_string(),
        _ => format!("{} rows", written(n)),
    };
    if let Some(offset) = offset {
        out.push(format!("Skips the first {}.", rows(offset)));
    }
    let keep = |n: &Expr| match (number(n), sorted) {
        (Some(1), true) => "Keeps the first row".to_string(),
        (Some(1), false) => "Keeps at most 1 row".to_string(),
        (_, true) => format!("Keeps the first {}", rows(n)),
        (_, false) => format!("Keeps at most {}", rows(n)),
    };
    if let Some(limit) = limit {
        if !matches!(limit, Expr::Value(v) if v.value == Value::Null) {
            out.push(format!("{}.", keep(limit)));
        }
    }
    if let Some(fetch) = &query.fetch {
        let one = Expr::value(Value::Number("1".to_string(), false));
        let n = fetch.quantity.as_ref().unwrap_or(&one);
        let line = match (fetch.percent, fetch.with_ties) {
            (true, _) => format!("Keeps the first {} percent of the rows", written(n)),
            (false, true) => format!("{} and any rows tied with the last", keep(n)),
            (false, false) => keep(n),
        };
        out.push(format!("{line}."));
    }
}

#[cfg(test)]
mod tests;
