//! Conditions (`WHERE`, `HAVING`, `JOIN … ON`) and the values and aggregates they compare, in
//! words: `whose city is 'Paris' and whose closed_on is empty`.
//!
//! A `NOT` is carried down to the comparisons it applies to (`NOT (a = 1 OR b IS NULL)` is said
//! as `whose a is not 1 and whose b is not empty`), which is exact in SQL's three-valued logic.
//! What is not recognised is said as written: `where <expression> is true`.

use sqlparser::ast::{
    BinaryOperator, DuplicateTreatment, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName, Value,
};

use super::scope::Scope;
use super::text::{is_niladic, quoted, subquery_phrase, written};
use crate::values::literals::LikePattern;

/// How deeply conditions nest (through parentheses, `NOT` and mixed `AND`/`OR`) before the
/// rest is said as written.
const MAX_DEPTH: usize = 24;

/// The most values of an `IN` list said one by one.
const MAX_LISTED: usize = 8;

/// A condition in words: a conjunction, a disjunction, or one predicate (`whose a is 1`).
#[derive(Debug)]
pub(super) enum Cond {
    All(Vec<Cond>),
    Any(Vec<Cond>),
    Leaf(String),
}

impl Cond {
    /// The condition as one phrase, with parentheses where an `or` sits in an `and` or the
    /// other way round.
    pub(super) fn render(&self) -> String {
        self.render_in(None)
    }

    fn render_in(&self, parent_is_all: Option<bool>) -> String {
        let (parts, is_all) = match self {
            Cond::Leaf(text) => return text.clone(),
            Cond::All(parts) => (parts, true),
            Cond::Any(parts) => (parts, false),
        };
        let joined = parts.iter().map(|p| p.render_in(Some(is_all))).collect::<Vec<_>>().join(if is_all { " and " } else { " or " });
        match parent_is_all {
            Some(parent) if parent != is_all && parts.len() > 1 => format!("({joined})"),
            _ => joined,
        }
    }
}

/// `expr` without the parentheses around it.
pub(crate) fn bare(mut expr: &Expr) -> &Expr {
    while let Expr::Nested(inner) = expr {
        expr = inner;
    }
    expr
}

/// The operands of a chain of `op` (`a AND b AND (c AND d)`), in order, without recursion.
fn operands<'a>(expr: &'a Expr, op: &BinaryOperator) -> Vec<&'a Expr> {
    let mut out = Vec::new();
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match bare(e) {
            Expr::BinaryOp { left, op: o, right } if o == op => {
                stack.push(right);
                stack.push(left);
            }
            other => out.push(other),
        }
    }
    out
}

/// A condition in words.
pub(super) fn condition(expr: &Expr, scope: &Scope) -> Cond {
    condition_at(expr, scope, false, 0)
}

/// `a = b AND c = d` between columns only (a join on keys), as pairs of shown columns.
pub(super) fn equality_pairs(expr: &Expr, scope: &Scope) -> Option<Vec<(String, String)>> {
    operands(expr, &BinaryOperator::And)
        .into_iter()
        .map(|e| match e {
            Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => Some((scope.column(left)?, scope.column(right)?)),
            _ => None,
        })
        .collect()
}

fn condition_at(expr: &Expr, scope: &Scope, negate: bool, depth: usize) -> Cond {
    let expr = bare(expr);
    if depth > MAX_DEPTH {
        return Cond::Leaf(as_written(expr, negate));
    }
    match expr {
        Expr::BinaryOp { op: op @ (BinaryOperator::And | BinaryOperator::Or), .. } => {
            let parts = operands(expr, op).into_iter().map(|e| condition_at(e, scope, negate, depth + 1)).collect();
            if (*op == BinaryOperator::And) != negate {
                Cond::All(parts)
            } else {
                Cond::Any(parts)
            }
        }
        Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::Not, expr: inner } => condition_at(inner, scope, !negate, depth + 1),
        other => Cond::Leaf(leaf(other, scope, negate).unwrap_or_else(|| as_written(other, negate))),
    }
}

/// An unrecognised condition, as written.
fn as_written(expr: &Expr, negate: bool) -> String {
    format!("where {} is {}", written(expr), if negate { "false" } else { "true" })
}

/// `whose city`, `whose average rating`, or `where lower(name)`.
fn subject(expr: &Expr, scope: &Scope) -> String {
    if let Some(column) = scope.column(expr) {
        format!("whose {column}")
    } else if let Some(noun) = aggregate(expr, scope) {
        format!("whose {noun}")
    } else {
        format!("where {}", written(expr))
    }
}

/// One recognised predicate; `None` when it is said as written.
fn leaf(expr: &Expr, scope: &Scope, negate: bool) -> Option<String> {
    let not = |yes: &str, no: &str| if negate { no.to_string() } else { yes.to_string() };
    let phrase = match expr {
        Expr::BinaryOp { left, op, right } => return comparison(left, op, right, scope, negate),
        Expr::IsNull(e) => format!("{} {}", subject(e, scope), not("is empty", "is not empty")),
        Expr::IsNotNull(e) => format!("{} {}", subject(e, scope), not("is not empty", "is empty")),
        Expr::IsTrue(e) => format!("{} {}", subject(e, scope), not("is true", "is not true")),
        Expr::IsNotTrue(e) => format!("{} {}", subject(e, scope), not("is not true", "is true")),
        Expr::IsFalse(e) => format!("{} {}", subject(e, scope), not("is false", "is not false")),
        Expr::IsNotFalse(e) => format!("{} {}", subject(e, scope), not("is not false", "is false")),
        Expr::InList { expr, list, negated } => in_values(expr, list, negate != *negated, scope)?,
        Expr::AnyOp { left, compare_op: BinaryOperator::Eq, right, .. } => match bare(right) {
            Expr::Array(array) => in_values(left, &array.elem, negate, scope)?,
            _ => return None,
        },
        Expr::InSubquery { expr, subquery, negated } => {
            let among = if negate != *negated { "is not among" } else { "is among" };
            format!("{} {among} the results of {}", subject(expr, scope), subquery_phrase(subquery))
        }
        Expr::Exists { subquery, negated } => {
            let none = negate != *negated;
            match correlated(subquery, scope) {
                // `EXISTS (SELECT 1 FROM chefs ch WHERE ch.restaurant_id = r.id)`: the rows it
                // looks for, by the columns it matches.
                Some((tables, pairs)) => {
                    let matching = pairs.iter().map(|(a, b)| format!("{a} equal to {b}")).collect::<Vec<_>>().join(" and ");
                    format!("for which {} row of {tables} has {matching}", if none { "no" } else { "some" })
                }
                None => {
                    let finds = if none { "finds no row" } else { "finds at least one row" };
                    format!("for which {} {finds}", subquery_phrase(subquery))
                }
            }
        }
        Expr::Between { expr, negated, low, high } => {
            let is = if negate != *negated { "is not between" } else { "is between" };
            format!("{} {is} {} and {} (inclusive)", subject(expr, scope), value(low, scope), value(high, scope))
        }
        Expr::Like { negated, any: false, expr, pattern, escape_char: None } => like(expr, pattern, negate != *negated, false, scope)?,
        Expr::ILike { negated, any: false, expr, pattern, escape_char: None } => like(expr, pattern, negate != *negated, true, scope)?,
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
            format!("{} {}", subject(expr, scope), not("is true", "is false"))
        }
        _ => return None,
    };
    Some(phrase)
}

/// A sub-query that reads one relation and keeps only rows whose columns equal columns (its
/// own or the outer query's): the relation as shown and the pairs.
fn correlated(query: &sqlparser::ast::Query, scope: &Scope) -> Option<(String, Vec<(String, String)>)> {
    let sqlparser::ast::SetExpr::Select(select) = query.body.as_ref() else { return None };
    if query.with.is_some()
        || select.from.len() != 1
        || !select.from[0].joins.is_empty()
        || select.group_by != sqlparser::ast::GroupByExpr::Expressions(vec![], vec![])
    {
        return None;
    }
    let inner = scope.inside(&select.from);
    let pairs = equality_pairs(select.selection.as_ref()?, &inner)?;
    let sqlparser::ast::TableFactor::Table { name, .. } = &select.from[0].relation else { return None };
    Some((name.to_string(), pairs))
}

/// `=`, `<>`, `<`, `<=`, `>`, `>=` with the constant on either side; dates compared with
/// `before`/`after`.
fn comparison(left: &Expr, op: &BinaryOperator, right: &Expr, scope: &Scope, negate: bool) -> Option<String> {
    use BinaryOperator::{Eq, Gt, GtEq, Lt, LtEq, NotEq};
    if !matches!(op, Eq | NotEq | Gt | GtEq | Lt | LtEq) {
        return None;
    }
    let (subject_side, value_side, op) = if is_constant(left) && !is_constant(right) {
        let flipped = match op {
            Gt => Lt,
            GtEq => LtEq,
            Lt => Gt,
            LtEq => GtEq,
            other => other.clone(),
        };
        (right, left, flipped)
    } else {
        (left, right, op.clone())
    };
    let op = match (negate, op) {
        (false, op) => op,
        (true, Eq) => NotEq,
        (true, NotEq) => Eq,
        (true, Gt) => LtEq,
        (true, GtEq) => Lt,
        (true, Lt) => GtEq,
        (true, LtEq) => Gt,
        (true, _) => return None,
    };
    if matches!(bare(value_side), Expr::Value(v) if v.value == Value::Null) {
        return None; // `= NULL` is never true; said as written.
    }
    let date = is_dateish(value_side);
    let to_column = scope.column(value_side).is_some();
    let verb = match op {
        Eq if to_column => "equals",
        Eq => "is",
        NotEq if to_column => "does not equal",
        NotEq => "is not",
        Gt if date => "is after",
        Gt => "is greater than",
        GtEq if date => "is on or after",
        GtEq => "is at least",
        Lt if date => "is before",
        Lt => "is less than",
        LtEq if date => "is on or before",
        _ => "is at most",
    };
    Some(format!("{} {verb} {}", subject(subject_side, scope), value(value_side, scope)))
}

/// `whose cuisine is one of 'Thai', 'Lao'` (or `is none of`).
fn in_values(expr: &Expr, list: &[Expr], none: bool, scope: &Scope) -> Option<String> {
    let shown: Vec<String> = list.iter().take(MAX_LISTED).map(|v| value(v, scope)).collect();
    let mut values = shown.join(", ");
    if list.len() > MAX_LISTED {
        values.push_str(&format!(", … ({} values)", list.len()));
    }
    let verb = match (list.len(), none) {
        (0, _) => return None,
        (1, false) => "is",
        (1, true) => "is not",
        (_, false) => "is one of",
        (_, true) => "is none of",
    };
    Some(format!("{} {verb} {values}", subject(expr, scope)))
}

/// `LIKE`/`ILIKE` with a literal pattern: `contains`, `starts with`, `ends with` when the
/// pattern is a plain text between `%` wildcards, else `matches the pattern`.
fn like(expr: &Expr, pattern: &Expr, negated: bool, ignoring_case: bool, scope: &Scope) -> Option<String> {
    let Expr::Value(v) = bare(pattern) else { return None };
    let Value::SingleQuotedString(text) = &v.value else { return None };
    let shape = LikePattern::parse(text).map(|(shape, core)| (shape.prefix, shape.suffix, core));
    let (verb, shown) = match shape.as_ref().map(|(p, s, core)| (p.as_str(), s.as_str(), core)) {
        Some(("%", "%", core)) => (if negated { "does not contain" } else { "contains" }, quoted(core)),
        Some(("", "%", core)) => (if negated { "does not start with" } else { "starts with" }, quoted(core)),
        Some(("%", "", core)) => (if negated { "does not end with" } else { "ends with" }, quoted(core)),
        Some(("", "", core)) => (if negated { "is not" } else { "is" }, quoted(core)),
        _ => (if negated { "does not match the pattern" } else { "matches the pattern" }, quoted(text)),
    };
    let case = if ignoring_case { " (ignoring case)" } else { "" };
    Some(format!("{} {verb} {shown}{case}", subject(expr, scope)))
}

/// The lower-cased name of a function with a one-part name.
fn function_name(name: &ObjectName) -> Option<String> {
    match name.0.as_slice() {
        [part] => part.as_ident().map(|i| i.value.to_lowercase()),
        _ => None,
    }
}

/// A value in words: literals as written, `today`, `now`, `'30 days' before today`, columns,
/// aggregates; anything else as written.
pub(super) fn value(expr: &Expr, scope: &Scope) -> String {
    value_at(expr, scope, 0)
}

fn value_at(expr: &Expr, scope: &Scope, depth: usize) -> String {
    let expr = bare(expr);
    if let Some(column) = scope.column(expr) {
        return column;
    }
    if let Some(noun) = aggregate(expr, scope) {
        return format!("the {noun}");
    }
    match expr {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => quoted(s),
            other => written(other),
        },
        Expr::TypedString(typed) => value(&Expr::Value(typed.value.clone()), scope),
        Expr::Cast { expr: inner, .. } if is_constant(inner) => value(inner, scope),
        Expr::Interval(interval) => written(interval).trim_start_matches("INTERVAL ").to_string(),
        Expr::BinaryOp { left, op: op @ (BinaryOperator::Plus | BinaryOperator::Minus), right }
            if matches!(bare(right), Expr::Interval(_)) && depth < MAX_DEPTH =>
        {
            let side = if *op == BinaryOperator::Minus { "before" } else { "after" };
            format!("{} {side} {}", value(right, scope), value_at(left, scope, depth + 1))
        }
        Expr::Subquery(query) => format!("the result of {}", subquery_phrase(query)),
        _ => match now_word(expr) {
            Some(word) => word.to_string(),
            None => written(expr),
        },
    }
}

/// `today` for `CURRENT_DATE`, `now` for `now()`, `CURRENT_TIMESTAMP` and `LOCALTIMESTAMP`.
fn now_word(expr: &Expr) -> Option<&'static str> {
    let name = match expr {
        Expr::Identifier(ident) if ident.quote_style.is_none() => ident.value.to_lowercase(),
        Expr::Function(f) if f.over.is_none() && no_arguments(f) => function_name(&f.name)?,
        _ => return None,
    };
    match name.as_str() {
        "current_date" => Some("today"),
        "now" | "current_timestamp" | "localtimestamp" => Some("now"),
        _ => None,
    }
}

fn no_arguments(f: &Function) -> bool {
    match &f.args {
        FunctionArguments::None => true,
        FunctionArguments::List(list) => list.args.is_empty(),
        FunctionArguments::Subquery(_) => false,
    }
}

/// A constant: a literal, a typed or cast literal, an interval, `CURRENT_DATE` and the like,
/// or arithmetic on constants (looked into [`MAX_DEPTH`] levels deep).
fn is_constant(expr: &Expr) -> bool {
    fn at(expr: &Expr, depth: usize) -> bool {
        match bare(expr) {
            _ if depth > MAX_DEPTH => false,
            Expr::Value(_) | Expr::TypedString(_) | Expr::Interval(_) => true,
            Expr::Cast { expr, .. } | Expr::UnaryOp { expr, .. } => at(expr, depth + 1),
            Expr::BinaryOp { left, right, .. } => at(left, depth + 1) && at(right, depth + 1),
            Expr::Identifier(ident) => ident.quote_style.is_none() && is_niladic(&ident.value),
            other => now_word(other).is_some(),
        }
    }
    at(expr, 0)
}

/// Whether a value is a date or time: a date literal, `CURRENT_DATE`, `now()`, a cast to a
/// date or timestamp, or one of those plus or minus an interval.
fn is_dateish(expr: &Expr) -> bool {
    let date_type = |t: String| {
        let t = t.to_uppercase();
        t.starts_with("DATE") || t.starts_with("TIMESTAMP")
    };
    let mut expr = bare(expr);
    // `d - INTERVAL '1 day' + INTERVAL '2 hours'`: the date is the leftmost operand.
    while let Expr::BinaryOp { left, op: BinaryOperator::Plus | BinaryOperator::Minus, .. } = expr {
        expr = bare(left);
    }
    match expr {
        Expr::TypedString(typed) => date_type(typed.data_type.to_string()),
        Expr::Cast { data_type, .. } => date_type(data_type.to_string()),
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => looks_like_date(s),
            _ => false,
        },
        Expr::Function(f) => function_name(&f.name)
            .is_some_and(|n| matches!(n.as_str(), "now" | "current_date" | "current_timestamp" | "date_trunc" | "make_date" | "to_date")),
        other => now_word(other).is_some(),
    }
}

/// `YYYY-MM-DD` at the start.
fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

/// An aggregate call as a noun without article: `number of rows`, `number of different city`,
/// `average rating`, `total of price * quantity`, `lowest price`, `highest price`. `None` for
/// any other expression, and for aggregates with `FILTER`, `OVER`, `ORDER BY` inside or
/// several arguments.
pub(super) fn aggregate(expr: &Expr, scope: &Scope) -> Option<String> {
    let Expr::Function(f) = bare(expr) else { return None };
    if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let [FunctionArg::Unnamed(arg)] = list.args.as_slice() else { return None };
    if !list.clauses.is_empty() || !matches!(f.parameters, FunctionArguments::None) {
        return None;
    }
    let name = function_name(&f.name)?;
    let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
    let arg = match arg {
        FunctionArgExpr::Wildcard if name == "count" && !distinct => return Some("number of rows".to_string()),
        FunctionArgExpr::Expr(e) => e,
        _ => return None,
    };
    if name == "count" && !distinct && matches!(bare(arg), Expr::Value(v) if matches!(v.value, Value::Number(..))) {
        return Some("number of rows".to_string());
    }
    let (thing, of) = match scope.column(arg) {
        Some(column) => (column, ""),
        None => (written(arg), "of "),
    };
    let noun = match (name.as_str(), distinct) {
        ("count", true) => format!("number of different {thing}"),
        ("count", false) => format!("number of non-empty {thing}"),
        ("sum", true) => format!("total of different {thing}"),
        ("sum", false) => format!("total {of}{thing}"),
        ("avg", true) => format!("average of different {thing}"),
        ("avg", false) => format!("average {of}{thing}"),
        ("min", _) => format!("lowest {of}{thing}"),
        ("max", _) => format!("highest {of}{thing}"),
        _ => return None,
    };
    Some(noun)
}
