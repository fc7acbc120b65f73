//! A ratio written as a division of two integers: PostgreSQL divides integers as integers, so
//! "What is the ratio of open businesses to closed ones?" written `SELECT count(*) FILTER (WHERE
//! is_open) / count(*) FILTER (WHERE NOT is_open) FROM business` returns 0 (or 1), and the one
//! row looks like an answer. [`as_fraction`] writes the dividend as `numeric`, which divides
//! exactly: `count(*) FILTER (WHERE is_open)::numeric / count(*) FILTER (WHERE NOT is_open)`
//! (`NUMERIC` is a keyword PostgreSQL's parser reads as `pg_catalog.numeric` whatever the
//! search path: a type of that name in another schema, a domain over `integer` say, is never
//! the one meant).
//!
//! Only where both sides are integers for certain, read from the statement and the described
//! tables' column types: counts, sums of `smallint` or `integer` (`sum(CASE WHEN ... THEN 1
//! ELSE 0 END)`), integer literals, columns the description types `smallint`, `integer` or
//! `bigint`, casts to those, and `+`, `-`, `*`, `%`, `CASE`, `coalesce`, `nullif`, `abs`,
//! `min`, `max` and one-value subqueries of them. A divisor written as a number (`minutes /
//! 60`) is a unit and stays integer, as does a division the query itself makes an integer
//! (`CAST(a / b AS integer)`, `floor(a / b)`, `trunc`, `div`). The cast is written right before
//! the `/`: `::` binds tighter than any operator, and the one factor it makes `numeric` makes
//! the dividend, and with it the division, `numeric`. Anything else comes back unchanged, as
//! does a statement the parser cannot read.

use std::collections::{BTreeMap, HashSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, BinaryOperator, CastKind, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, SelectItem,
    SetExpr, Spanned, Statement, TableFactor, UnaryOperator, Value, Visit, Visitor,
};
use sqlparser::tokenizer::Token;

use crate::plain::bare;
use crate::schema::Table;
use crate::sqledit::{apply, Tokens};

/// An integer's width as PostgreSQL types it: `smallint`/`integer`, or `bigint`. A sum of
/// the first is a `bigint`, of the second a `numeric`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Width {
    Four,
    Eight,
}

/// `sql` (whose tree is `statement`, its locations in `sql`) with the dividend of each
/// division of two integers cast to `numeric` (see the [module documentation](self)), and each
/// such division as it was written; `None` when there is none. `tables`: the described tables,
/// asked for only when a division may be one.
pub fn as_fraction<'t>(sql: &str, statement: &Statement, tables: &dyn Fn() -> &'t [Table]) -> Option<(String, Vec<String>)> {
    if !sql.contains('/') {
        return None;
    }
    // Divisions the query itself makes an integer, by the address of their expression (an
    // enclosing cast or function is visited before what it encloses).
    let mut kept: HashSet<*const Expr> = HashSet::new();
    let mut open = 0usize;
    let _ = visit_expressions(statement, |e| {
        keep_integer_divisions(e, &mut kept);
        open += usize::from(may_be_integer_division(e, &kept));
        ControlFlow::<()>::Continue(())
    });
    if open == 0 {
        return None;
    }
    let names = Names::of(statement, tables());
    // Each division of two integers: where its divisor starts, and how it was written.
    let mut found: Vec<(sqlparser::tokenizer::Location, String)> = Vec::new();
    let _ = visit_expressions(statement, |e| {
        if let (true, Expr::BinaryOp { left, right, .. }) = (may_be_integer_division(e, &kept), e) {
            if names.width(left).is_some() && names.width(right).is_some() {
                found.push((right.span().start, e.to_string()));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    // Each division's `/`: the last one before where its divisor starts.
    let mut t = Tokens::read(sql)?;
    let slashes: Vec<usize> = (1..t.len()).filter(|&k| matches!(t.at(k), Some(Token::Div))).collect();
    let mut at: Vec<(usize, String)> = Vec::new();
    for (start, division) in found {
        if start.line == 0 {
            continue;
        }
        let Some(first) = t.first_from(start) else { continue };
        let Some(&k) = slashes.iter().rev().find(|&&k| k < first) else { continue };
        if !at.iter().any(|(j, _)| *j == k) {
            at.push((k, division));
        }
    }
    if at.is_empty() {
        return None;
    }
    at.sort_by_key(|(k, _)| *k);
    let mut edits: Vec<(usize, usize, &str)> = Vec::new();
    for (k, _) in &at {
        let (_, end, _) = t.text(k - 1, k - 1);
        edits.push((end, end, "::numeric"));
    }
    Some((apply(sql, &edits), at.into_iter().map(|(_, d)| d).collect()))
}

/// Records in `kept` a division `e` makes an integer: what a cast to an integer type, or
/// `floor`, `trunc`, `div`, `ceil` enclose.
fn keep_integer_divisions(e: &Expr, kept: &mut HashSet<*const Expr>) {
    match e {
        Expr::Cast { kind: CastKind::Cast | CastKind::DoubleColon, expr, data_type, .. }
            if integer_type(&data_type.to_string()).is_some() =>
        {
            kept.insert(bare(expr) as *const Expr);
        }
        Expr::Function(f) if ["floor", "trunc", "div", "ceil", "ceiling"].contains(&function_name(f).as_str()) => {
            for a in arguments(f) {
                kept.insert(bare(a) as *const Expr);
            }
        }
        Expr::Floor { expr, .. } | Expr::Ceil { expr, .. } => {
            kept.insert(bare(expr) as *const Expr);
        }
        _ => {}
    }
}

/// Whether `e` is a division the query does not make an integer itself, by a divisor that is
/// not written as a number.
fn may_be_integer_division(e: &Expr, kept: &HashSet<*const Expr>) -> bool {
    matches!(e, Expr::BinaryOp { op: BinaryOperator::Divide, right, .. } if !matches!(bare(right), Expr::Value(_)))
        && !kept.contains(&(e as *const Expr))
}

/// A function's name as called, lower case, without its schema.
pub(super) fn function_name(f: &sqlparser::ast::Function) -> String {
    match f.name.0.last() {
        Some(ObjectNamePart::Identifier(i)) => i.value.to_lowercase(),
        _ => String::new(),
    }
}

/// A function's argument expressions, in order (none for `count(*)`).
fn arguments(f: &sqlparser::ast::Function) -> Vec<&Expr> {
    match &f.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The integer width of a type's name, `None` for any other type.
fn integer_type(name: &str) -> Option<Width> {
    let name = name.trim().to_lowercase();
    match name.strip_prefix("pg_catalog.").unwrap_or(&name) {
        "smallint" | "int2" | "integer" | "int" | "int4" | "serial" | "smallserial" => Some(Width::Four),
        "bigint" | "int8" | "bigserial" => Some(Width::Eight),
        _ => None,
    }
}

/// The described tables a statement reads, by the names and aliases it gives them.
struct Names<'a> {
    /// Table name or alias (lower case) → its columns' types (name lower case → type).
    by_name: BTreeMap<String, Option<&'a Table>>,
    /// The described tables the statement reads.
    read: Vec<&'a Table>,
}

impl<'a> Names<'a> {
    fn of(statement: &Statement, tables: &'a [Table]) -> Names<'a> {
        struct Collect<'a, 't> {
            tables: &'t [Table],
            names: &'a mut Names<'t>,
        }
        impl<'t> Visitor for Collect<'_, 't> {
            type Break = ();
            fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
                let (named, alias) = match factor {
                    TableFactor::Table { name, alias, .. } => {
                        let parts = crate::guard::normalized_parts(name);
                        let table = crate::schema::named(&parts, self.tables);
                        if let Some(t) = table {
                            self.names.read.push(t);
                        }
                        (parts.last().map(|n| (n.to_lowercase(), table)), alias.as_ref().map(|a| a.name.value.to_lowercase()))
                    }
                    // A subquery's or function's columns are not described: its alias stands for
                    // nothing known.
                    TableFactor::Derived { alias, .. } | TableFactor::Function { alias, .. } | TableFactor::TableFunction { alias, .. } => {
                        (None, alias.as_ref().map(|a| a.name.value.to_lowercase()))
                    }
                    _ => (None, None),
                };
                let table = named.as_ref().and_then(|(_, t)| *t);
                for key in named.map(|(n, _)| n).into_iter().chain(alias) {
                    // A name given twice to different things stands for neither.
                    let entry = self.names.by_name.entry(key).or_insert(table);
                    if entry.map(|t| t as *const Table) != table.map(|t| t as *const Table) {
                        *entry = None;
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let mut names = Names { by_name: BTreeMap::new(), read: Vec::new() };
        let _ = statement.visit(&mut Collect { tables, names: &mut names });
        // A common table expression's name stands for no described table.
        if let Statement::Query(q) = statement {
            if let Some(with) = &q.with {
                for cte in &with.cte_tables {
                    names.by_name.insert(cte.alias.name.value.to_lowercase(), None);
                }
            }
        }
        names
    }

    /// The type of the column `column` of `table`, when it is an integer.
    fn column(table: &Table, column: &str) -> Option<Width> {
        let c = table.columns.iter().find(|c| c.name.eq_ignore_ascii_case(column))?;
        integer_type(&c.data_type)
    }

    /// The width of `e` when it is an integer for certain.
    fn width(&self, e: &Expr) -> Option<Width> {
        match e {
            Expr::Nested(inner) | Expr::UnaryOp { op: UnaryOperator::Minus | UnaryOperator::Plus, expr: inner } => self.width(inner),
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) if n.chars().all(|c| c.is_ascii_digit()) => {
                    Some(if n.parse::<i32>().is_ok() { Width::Four } else { Width::Eight })
                }
                _ => None,
            },
            Expr::Identifier(ident) => {
                let name = ident.value.to_lowercase();
                let widths: Vec<Option<Width>> = self
                    .read
                    .iter()
                    .filter(|t| t.columns.iter().any(|c| c.name.eq_ignore_ascii_case(&name)))
                    .map(|t| Self::column(t, &name))
                    .collect();
                widths.first().copied().flatten().filter(|w| widths.iter().all(|x| *x == Some(*w)))
            }
            Expr::CompoundIdentifier(parts) => {
                let n = parts.len();
                if n < 2 {
                    return None;
                }
                let table = self.by_name.get(&parts[n - 2].value.to_lowercase()).copied().flatten()?;
                Self::column(table, &parts[n - 1].value)
            }
            Expr::Cast { data_type, .. } => integer_type(&data_type.to_string()),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Plus | BinaryOperator::Minus | BinaryOperator::Multiply | BinaryOperator::Modulo,
                right,
            } => Some(self.width(left)?.max(self.width(right)?)),
            Expr::Case { conditions, else_result, .. } => {
                let results = conditions.iter().map(|w| &w.result).chain(else_result.as_deref());
                let mut width = None;
                for r in results {
                    if matches!(bare(r), Expr::Value(v) if v.value == Value::Null) {
                        continue;
                    }
                    width = Some(self.width(r)?.max(width.unwrap_or(Width::Four)));
                }
                width
            }
            Expr::Function(f) => {
                let args = arguments(f);
                match function_name(f).as_str() {
                    "count" => Some(Width::Eight),
                    "row_number" | "rank" | "dense_rank" | "ntile" if f.over.is_some() => Some(Width::Eight),
                    "length" | "char_length" | "character_length" | "octet_length" | "strpos" | "cardinality" => Some(Width::Four),
                    "sum" if args.len() == 1 => (self.width(args[0])? == Width::Four).then_some(Width::Eight),
                    "min" | "max" | "abs" if args.len() == 1 => self.width(args[0]),
                    "nullif" if args.len() == 2 => self.width(args[0]),
                    "coalesce" | "greatest" | "least" if !args.is_empty() => {
                        args.iter().try_fold(Width::Four, |w, a| Some(w.max(self.width(a)?)))
                    }
                    _ => None,
                }
            }
            Expr::Subquery(q) => match q.body.as_ref() {
                SetExpr::Select(select) if select.projection.len() == 1 => match &select.projection[0] {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => self.width(e),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
