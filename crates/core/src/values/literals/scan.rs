//! The comparisons of one query level: `column <op> literal(s)` as written, before the column
//! is resolved, and the subqueries to analyse on their own.

use std::ops::ControlFlow;

use sqlparser::ast::{BinaryOperator, Expr, Ident, ObjectName, ObjectNamePart, Query, Value, Visitor};

use super::found::LiteralKind;

/// PostgreSQL's identifier folding: unquoted names are lower-cased.
pub(super) fn ident_name(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_ascii_lowercase()
    }
}

pub(super) fn object_name_parts(name: &ObjectName) -> Option<Vec<String>> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Some(ident_name(i)),
            ObjectNamePart::Function(_) => None,
        })
        .collect()
}

/// The name parts of a column reference, looking through parentheses and casts.
pub(super) fn column_parts(expr: &Expr) -> Option<Vec<String>> {
    match expr {
        Expr::Identifier(i) => Some(vec![ident_name(i)]),
        Expr::CompoundIdentifier(parts) if parts.len() <= 4 => Some(parts.iter().map(ident_name).collect()),
        Expr::Nested(inner) => column_parts(inner),
        Expr::Cast { expr, .. } => column_parts(expr),
        _ => None,
    }
}

/// A single-quoted string literal (possibly cast, `'x'::text`): its value and span.
fn string_literal(expr: &Expr) -> Option<(String, sqlparser::tokenizer::Span)> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some((s.clone(), v.span)),
            _ => None,
        },
        Expr::Nested(inner) => string_literal(inner),
        Expr::Cast { expr, .. } => string_literal(expr),
        _ => None,
    }
}

#[derive(Debug, Clone)]
pub(super) enum RawKind {
    Plain(LiteralKind),
    Like { negated: bool, case_insensitive: bool },
}

/// A comparison found by the scanner, before resolution.
#[derive(Debug)]
pub(super) struct RawComparison {
    pub(super) column: Vec<String>,
    pub(super) literals: Vec<(String, sqlparser::tokenizer::Span)>,
    pub(super) kind: RawKind,
}

/// Visits one query level's expressions: records comparisons, and the subqueries (to be
/// analysed with their own scope) without looking into them.
#[derive(Default)]
pub(super) struct Scanner {
    depth: usize,
    pub(super) comparisons: Vec<RawComparison>,
    pub(super) subqueries: Vec<Query>,
}

impl Visitor for Scanner {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if self.depth == 0 {
            self.subqueries.push(query.clone());
        }
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if self.depth == 0 {
            if let Some(cmp) = comparison(expr) {
                self.comparisons.push(cmp);
            }
        }
        ControlFlow::Continue(())
    }
}

/// Recognises `column <op> literal(s)`.
fn comparison(expr: &Expr) -> Option<RawComparison> {
    let plain = |column: &Expr, literals: Vec<&Expr>, kind: LiteralKind| -> Option<RawComparison> {
        let column = column_parts(column)?;
        let literals: Vec<_> = literals.into_iter().filter_map(string_literal).collect();
        (!literals.is_empty()).then_some(RawComparison { column, literals, kind: RawKind::Plain(kind) })
    };
    match expr {
        Expr::BinaryOp { left, op, right } => {
            let kind = match op {
                BinaryOperator::Eq => LiteralKind::Eq,
                BinaryOperator::NotEq => LiteralKind::NotEq,
                _ => return None,
            };
            if column_parts(left).is_some() {
                plain(left, vec![right], kind)
            } else {
                plain(right, vec![left], kind)
            }
        }
        Expr::InList { expr, list, negated } => plain(expr, list.iter().collect(), LiteralKind::In { negated: *negated }),
        Expr::AnyOp { left, compare_op: BinaryOperator::Eq, right, .. } => match right.as_ref() {
            Expr::Array(array) => plain(left, array.elem.iter().collect(), LiteralKind::In { negated: false }),
            _ => None,
        },
        Expr::Between { expr, negated, low, high } => plain(expr, vec![low, high], LiteralKind::Between { negated: *negated }),
        Expr::Like { negated, any: false, expr, pattern, escape_char: None } => like(expr, pattern, *negated, false),
        Expr::ILike { negated, any: false, expr, pattern, escape_char: None } => like(expr, pattern, *negated, true),
        _ => None,
    }
}

fn like(column: &Expr, pattern: &Expr, negated: bool, case_insensitive: bool) -> Option<RawComparison> {
    Some(RawComparison {
        column: column_parts(column)?,
        literals: vec![string_literal(pattern)?],
        kind: RawKind::Like { negated, case_insensitive },
    })
}
