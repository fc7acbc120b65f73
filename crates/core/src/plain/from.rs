//! The `FROM` clause of one query level in words: the relations it reads, then one line per
//! join and what it matches on.

use sqlparser::ast::{Join, JoinConstraint, JoinOperator, ObjectName, TableFactor, TableWithJoins};

use super::cond::{condition, equality_pairs};
use super::scope::Scope;
use super::text::{and_list, subquery_phrase, written};
use crate::guard::normalized_parts;

/// How a relation is named in a line.
fn relation(scope: &Scope, factor: &TableFactor) -> String {
    match factor {
        TableFactor::Table { name, alias, args: None, .. } => {
            let key = normalized_parts(name);
            let twice = scope.reads_twice(&key);
            match alias {
                Some(alias) if twice => format!("{name} (as {})", alias.name),
                _ => name.to_string(),
            }
        }
        TableFactor::Derived { lateral, subquery, alias, .. } => {
            let mut notes = Vec::new();
            if let Some(alias) = alias {
                notes.push(format!("named {}", alias.name));
            }
            if *lateral {
                notes.push("run for each row".to_string());
            }
            match notes.is_empty() {
                true => subquery_phrase(subquery),
                false => format!("{} ({})", subquery_phrase(subquery), notes.join(", ")),
            }
        }
        TableFactor::Table { alias: Some(alias), .. } | TableFactor::Function { alias: Some(alias), .. } => {
            let mut unnamed = factor.clone();
            if let TableFactor::Table { alias, .. } | TableFactor::Function { alias, .. } = &mut unnamed {
                *alias = None;
            }
            format!("the rows of {} (named {})", written(&unnamed), alias.name)
        }
        other => format!("the rows of {}", written(other)),
    }
}

/// The lines for a `FROM` list: what is read, then one line per join.
pub(super) fn lines(scope: &Scope, from: &[TableWithJoins], out: &mut Vec<String>) {
    if from.is_empty() {
        return;
    }
    let mut bases = Vec::new();
    let mut joins = Vec::new();
    for item in from {
        item_lines(scope, item, &mut bases, &mut joins);
    }
    let reads = match bases.len() {
        1 => format!("Reads {}.", bases[0]),
        _ => format!("Reads {} (all combinations of their rows).", and_list(&bases)),
    };
    out.push(reads);
    out.extend(joins);
}

fn item_lines(scope: &Scope, item: &TableWithJoins, bases: &mut Vec<String>, joins: &mut Vec<String>) {
    let mut left = match &item.relation {
        TableFactor::NestedJoin { table_with_joins, alias: None } => {
            let before = bases.len();
            item_lines(scope, table_with_joins, bases, joins);
            bases[before..].join(" and ")
        }
        factor => {
            let phrase = relation(scope, factor);
            bases.push(phrase.clone());
            phrase
        }
    };
    for (i, join) in item.joins.iter().enumerate() {
        joins.push(join_line(scope, join, if i == 0 { &left } else { "" }));
        left.clear();
    }
}

/// One join as a line; `left` names the relation joined to when it is a single one.
fn join_line(scope: &Scope, join: &Join, left: &str) -> String {
    let right = relation(scope, &join.relation);
    let (constraint, keeps) = match &join.join_operator {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => (c, None),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => {
            let rows = if left.is_empty() { "earlier".to_string() } else { left.to_string() };
            (c, Some(format!("keeps {rows} rows with no match")))
        }
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (c, Some(format!("keeps {right} rows with no match"))),
        JoinOperator::FullOuter(c) => (c, Some("keeps rows with no match on either side".to_string())),
        JoinOperator::CrossJoin(JoinConstraint::None) => return format!("Pairs every row with every row of {right}."),
        _ => return format!("Joins as written: {}.", written(join)),
    };
    let matching = match constraint {
        JoinConstraint::On(expr) => match equality_pairs(expr, scope) {
            Some(pairs) => format!(", matching {}", and_list(&pairs.iter().map(|(a, b)| format!("{a} to {b}")).collect::<Vec<_>>())),
            None => format!(", matching rows {}", condition(expr, scope).render()),
        },
        JoinConstraint::Using(names) => {
            format!(", matching on {}", and_list(&names.iter().map(ObjectName::to_string).collect::<Vec<_>>()))
        }
        JoinConstraint::Natural => ", matching on every column name they share".to_string(),
        JoinConstraint::None => String::new(),
    };
    match keeps {
        Some(keeps) => format!("Joins {right}{matching}, and {keeps}."),
        None => format!("Joins {right}{matching}."),
    }
}
