//! One `SELECT` in words, from what it reads to what it shows: filters, groups and
//! aggregates, `HAVING`, the select list (columns, computed values, window functions),
//! `DISTINCT`; and the sort keys of an `ORDER BY`, which window functions share.

use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, OrderByExpr, OrderBySort, Select, SelectItem, SelectItemQualifiedWildcardKind, Value, WindowType,
};

use super::cond::{aggregate, bare, condition};
use super::scope::Scope;
use super::text::{and_list, capitalized, folded, subquery_phrase, written};

/// The expression an `ORDER BY` or `GROUP BY` key stands for: a select-list alias or a
/// position (`GROUP BY 1`) resolved to the item's expression, anything else as it is.
pub(super) fn resolve<'a>(key: &'a Expr, select: Option<&'a Select>) -> &'a Expr {
    let Some(select) = select else { return key };
    let item_expr = |item: &'a SelectItem| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    };
    match bare(key) {
        Expr::Identifier(ident) => select
            .projection
            .iter()
            .find_map(|item| match item {
                SelectItem::ExprWithAlias { expr, alias } if folded(alias) == folded(ident) => Some(expr),
                _ => None,
            })
            .unwrap_or(key),
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| select.projection.get(i))
                .and_then(item_expr)
                .unwrap_or(key),
            _ => key,
        },
        _ => key,
    }
}

/// The `GROUP BY` expressions (positions resolved); empty when there is none.
pub(super) fn group_keys(select: &Select) -> Vec<&Expr> {
    match &select.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs.iter().map(|e| resolve(e, Some(select))).collect(),
        GroupByExpr::All(_) => Vec::new(),
    }
}

/// A key (of a group, a sort, a partition) in words: a column, `the average rating`, or the
/// expression as written.
fn key_words(expr: &Expr, scope: &Scope) -> String {
    if let Some(column) = scope.column(expr) {
        column
    } else if let Some(noun) = aggregate(expr, scope) {
        format!("the {noun}")
    } else if let Expr::Value(v) = bare(expr) {
        match &v.value {
            Value::Number(n, _) => format!("result column {n}"),
            _ => written(expr),
        }
    } else {
        written(expr)
    }
}

/// What the lines say about one `SELECT`.
pub(super) fn select_lines(select: &Select, out: &mut Vec<String>) {
    let scope = Scope::of(&select.from);
    super::from::lines(&scope, &select.from, out);
    if let Some(filter) = &select.selection {
        out.push(format!("Keeps rows {}.", condition(filter, &scope).render()));
    }
    let groups = group_keys(select);
    let group_words: Vec<String> = match &select.group_by {
        GroupByExpr::Expressions(_, modifiers) if !modifiers.is_empty() => vec![written(&select.group_by)],
        GroupByExpr::All(_) => vec![written(&select.group_by)],
        _ => groups.iter().map(|g| key_words(g, &scope)).collect(),
    };
    let grouped = !group_words.is_empty();

    let mut aggregates = Vec::new();
    let mut shown = Vec::new();
    let mut computed = Vec::new();
    for item in &select.projection {
        let expr = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            SelectItem::Wildcard(_) => {
                shown.push("all columns".to_string());
                continue;
            }
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                let shown_name = scope.qualifier(name);
                shown.push(format!("all columns of {shown_name}"));
                continue;
            }
            other => {
                computed.push(format!("Computes {}.", written(other)));
                continue;
            }
        };
        if grouped && groups.iter().any(|g| bare(g) == bare(expr)) {
            continue; // a group key: said in the `For each …` line
        }
        if let Some(noun) = aggregate(expr, &scope) {
            aggregates.push(noun);
        } else if let Some(column) = scope.column(expr) {
            shown.push(column);
        } else if let Some(line) = window_line(expr, &scope) {
            computed.push(line);
        } else if let Expr::Subquery(query) = bare(expr) {
            computed.push(format!("Computes a value from {}.", subquery_phrase(query)));
        } else {
            computed.push(format!("Computes {}.", written(expr)));
        }
    }

    let each = |what: String| match grouped {
        true => format!("For each {}, {what}.", and_list(&group_words)),
        false => format!("{}.", capitalized(&what)),
    };
    if aggregates == ["number of rows"] {
        out.push(each("counts the rows".to_string()));
    } else if !aggregates.is_empty() {
        let nouns: Vec<String> = aggregates.iter().map(|n| format!("the {n}")).collect();
        out.push(each(format!("computes {}", and_list(&nouns))));
    } else if grouped {
        out.push(format!("Makes one row for each {}.", and_list(&group_words)));
    }
    if let Some(having) = &select.having {
        out.push(format!("Keeps only the groups {}.", condition(having, &scope).render()));
    }
    if !shown.is_empty() {
        out.push(format!("Shows {}.", and_list(&shown)));
    }
    out.extend(computed);
    match &select.distinct {
        Some(Distinct::Distinct) => out.push("Removes duplicate rows.".to_string()),
        Some(Distinct::On(keys)) => {
            let keys: Vec<String> = keys.iter().map(|k| key_words(k, &scope)).collect();
            out.push(format!("Keeps one row for each {}.", and_list(&keys)));
        }
        Some(Distinct::All) | None => {}
    }
    if let Some(into) = &select.into {
        let targets: Vec<String> = into.targets.iter().map(written).collect();
        out.push(format!("Saves the result into a new table {}.", targets.join(", ")));
    }
}

/// `rating, highest first` or `rating (highest first), then name (lowest first)`.
pub(super) fn sort_words(keys: &[OrderByExpr], scope: &Scope, select: Option<&Select>) -> String {
    let one = |key: &OrderByExpr| {
        let words = key_words(resolve(&key.expr, select), scope);
        let mut direction = match &key.options.sort {
            Some(OrderBySort::Desc) => "highest first".to_string(),
            Some(OrderBySort::Using(op)) => format!("by the operator {op}"),
            Some(OrderBySort::Asc) | None => "lowest first".to_string(),
        };
        match key.options.nulls_first {
            Some(true) => direction.push_str(", empty first"),
            Some(false) => direction.push_str(", empty last"),
            None => {}
        }
        (words, direction)
    };
    match keys {
        [key] => {
            let (words, direction) = one(key);
            format!("{words}, {direction}")
        }
        _ => keys
            .iter()
            .map(|k| {
                let (words, direction) = one(k);
                format!("{words} ({direction})")
            })
            .collect::<Vec<_>>()
            .join(", then "),
    }
}

/// A window function in words, when it is a ranking (`row_number`, `rank`, `dense_rank`) with
/// an order, or an aggregate over whole partitions; `None` otherwise (said as written).
fn window_line(expr: &Expr, scope: &Scope) -> Option<String> {
    let Expr::Function(f) = bare(expr) else { return None };
    let Some(WindowType::WindowSpec(spec)) = &f.over else { return None };
    if spec.window_frame.is_some() || spec.window_name.is_some() {
        return None;
    }
    let partition: Vec<String> = spec.partition_by.iter().map(|p| key_words(p, scope)).collect();
    let name = f.name.to_string().to_lowercase();
    let ranking = matches!(name.as_str(), "row_number" | "rank" | "dense_rank");
    if ranking {
        if spec.order_by.is_empty() || !written(&f.args).trim_matches(|c| c == '(' || c == ')').is_empty() {
            return None;
        }
        let within = if partition.is_empty() { String::new() } else { format!(" within each {}", and_list(&partition)) };
        return Some(format!("Ranks the rows{within} by {} ({name}).", sort_words(&spec.order_by, scope, None)));
    }
    if !spec.order_by.is_empty() {
        return None;
    }
    let mut plain = f.clone();
    plain.over = None;
    let noun = aggregate(&Expr::Function(plain), scope)?;
    Some(match partition.is_empty() {
        true => format!("Computes the {noun} of all rows, shown on every row."),
        false => format!("Computes the {noun} for each {}, shown on every row.", and_list(&partition)),
    })
}
