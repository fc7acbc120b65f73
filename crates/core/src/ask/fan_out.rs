//! A join that multiplies rows and gives nothing: "What is the population of Chicago?" written
//! `SELECT c.population FROM restaurants r JOIN cities c ON r.city_id = c.id WHERE c.name =
//! 'Chicago'` returns Chicago's population once per restaurant in Chicago, and the rows look
//! like an answer. [`as_exists`] writes such a join as the condition it also is: the table is
//! taken out of `FROM` and the query keeps the rows that have a match, `WHERE c.name =
//! 'Chicago' AND EXISTS (SELECT 1 FROM restaurants r WHERE r.city_id = c.id)`, so each row
//! comes back once, as the query's other tables give it.
//!
//! Only where that is all the join does: an inner join (`JOIN`, `INNER JOIN` with `ON`) of a
//! described table that nothing but that one join condition names (no column of it selected,
//! filtered on, sorted by, no `*` or `t.*`, no unqualified name that is one of its columns), by
//! a condition whose every column name is qualified (in the subquery an unqualified one would be
//! read as the joined table's own first), on columns that are not its whole primary key (joined
//! on its key, a row matches once and nothing is multiplied), in a single `SELECT` without
//! `DISTINCT`, `GROUP BY`, `HAVING`, aggregates or window functions (where the copies are
//! counted, summed or grouped, they may be what the question asks for), with one `FROM` item
//! and no `WITH`. Anything else comes back unchanged, as does a statement the parser or
//! tokenizer cannot read.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, JoinConstraint, JoinOperator, SelectItem, SetExpr, Spanned, Statement, TableFactor,
};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use crate::guard::{normalized, normalized_parts};
use crate::plain::bare;
use crate::schema::Table;
use crate::sqledit::{apply, Tokens};

/// Aggregates: where one of these is computed, the rows a join multiplies are counted.
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "every",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "mode",
    "percentile_cont",
    "percentile_disc",
    "corr",
    "covar_pop",
    "covar_samp",
    "bit_and",
    "bit_or",
    "xmlagg",
];

/// Keywords that open the clauses after `WHERE`: where the `WHERE` condition ends.
const AFTER_WHERE: &[Keyword] = &[
    Keyword::GROUP,
    Keyword::HAVING,
    Keyword::WINDOW,
    Keyword::ORDER,
    Keyword::LIMIT,
    Keyword::OFFSET,
    Keyword::FETCH,
    Keyword::UNION,
    Keyword::EXCEPT,
    Keyword::INTERSECT,
    Keyword::FOR,
];

/// A column name as written: its qualifier (the table or alias before it) and its name,
/// unquoted names folded to lower case.
type Name = (Option<String>, String);

/// `sql` (whose tree is `statement`, its locations in `sql`) with a join that only multiplies
/// rows written as `EXISTS` (see the [module documentation](self)), and the join as it was
/// written; `None` when there is none. `tables`: the described tables, asked for only when the
/// query has a join.
pub fn as_exists<'t>(sql: &str, statement: &Statement, tables: &dyn Fn() -> &'t [Table]) -> Option<(String, Vec<String>)> {
    let Statement::Query(q) = statement else { return None };
    let SetExpr::Select(s) = q.body.as_ref() else { return None };
    if q.with.is_some() || s.distinct.is_some() || s.having.is_some() || s.from.len() != 1 || s.from[0].joins.is_empty() {
        return None;
    }
    if !matches!(&s.group_by, sqlparser::ast::GroupByExpr::Expressions(g, m) if g.is_empty() && m.is_empty()) {
        return None;
    }
    if s.projection.iter().any(|p| matches!(p, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..))) || aggregates(statement) {
        return None;
    }
    let from = &s.from[0];
    // Each item: its relation, the name it is known by, the described table, and its join's
    // `ON` condition (none for the first).
    let mut items = Vec::new();
    for (k, relation) in std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation)).enumerate() {
        let TableFactor::Table { name, alias, args: None, .. } = relation else { return None };
        let parts = normalized_parts(name);
        let table = crate::schema::named(&parts, tables())?;
        let known_as = alias.as_ref().map(|a| normalized(&a.name)).unwrap_or_else(|| parts.last().cloned().unwrap_or_default());
        let on = match k {
            0 => None,
            _ => match &from.joins[k - 1].join_operator {
                JoinOperator::Join(JoinConstraint::On(e)) | JoinOperator::Inner(JoinConstraint::On(e)) => Some(e),
                _ => return None,
            },
        };
        items.push((relation, known_as, table, on));
    }
    // Every column name the statement writes, and each join condition's own.
    let all = names(statement);
    let in_on: Vec<Vec<Name>> = items.iter().map(|(_, _, _, on)| on.map(names).unwrap_or_default()).collect();
    for (r, (_, known_as, table, _)) in items.iter().enumerate() {
        let names_r = |n: &Name| match &n.0 {
            Some(q) => q == known_as,
            None => table.columns.iter().any(|c| c.name == n.1),
        };
        // The one join condition that names the table: its own, or for the first item the
        // second's.
        let at = if r == 0 { 1 } else { r };
        let mut elsewhere = all.clone();
        for n in &in_on[at] {
            if let Some(i) = elsewhere.iter().position(|m| m == n) {
                elsewhere.swap_remove(i);
            }
        }
        if elsewhere.iter().any(names_r) || !in_on[at].iter().any(|n| n.0.as_deref() == Some(known_as)) {
            continue;
        }
        // Moved into the subquery, an unqualified name would be read as the table's own column
        // first (`ON city_id = id` makes `id` the joined table's): every name qualified.
        if in_on[at].iter().any(|n| n.0.is_none()) {
            continue;
        }
        // Joined on its whole primary key, a row of the others matches at most one of its rows.
        let on = items[at].3?;
        let keyed = equated(on, known_as);
        if !table.primary_key.is_empty() && table.primary_key.iter().all(|k| keyed.contains(k)) {
            continue;
        }
        return rewrite(sql, &items.iter().map(|(rel, ..)| *rel).collect::<Vec<_>>(), r);
    }
    None
}

/// The statement's text with item `r` of its `FROM` taken out and written as `EXISTS` in its
/// `WHERE`.
fn rewrite(sql: &str, relations: &[&TableFactor], r: usize) -> Option<(String, Vec<String>)> {
    let mut t = Tokens::read(sql)?;
    // Each token's depth in parentheses.
    let mut depth = Vec::with_capacity(t.len());
    let mut d = 0i32;
    for k in 0..t.len() {
        if matches!(t.at(k), Some(Token::RParen | Token::RBracket)) {
            d -= 1;
        }
        depth.push(d);
        if matches!(t.at(k), Some(Token::LParen | Token::LBracket)) {
            d += 1;
        }
    }
    let keyword = |t: &Tokens, k: usize, of: &[Keyword]| matches!(t.at(k), Some(Token::Word(w)) if w.quote_style.is_none() && of.contains(&w.keyword));
    // Where each relation's text starts, and where its join keywords do.
    let mut starts = Vec::new();
    for rel in relations {
        let at = rel.span().start;
        if at.line == 0 {
            return None;
        }
        let first = t.first_from(at)?;
        if depth[first] != 0 {
            return None;
        }
        let mut kw = first;
        while kw > 0 && keyword(&t, kw - 1, &[Keyword::JOIN, Keyword::INNER]) {
            kw -= 1;
        }
        starts.push((kw, first));
    }
    // The end of the FROM clause: the first token at the query's level after the last relation
    // that ends a clause (or the end).
    let last = starts.last()?.1;
    let end = (last..t.len())
        .find(|&k| {
            depth[k] < 0
                || (depth[k] == 0
                    && (keyword(&t, k, &[Keyword::WHERE]) || keyword(&t, k, AFTER_WHERE) || matches!(t.at(k), Some(Token::SemiColon))))
        })
        .unwrap_or(t.len());
    // Each join's `ON` keyword and the last token of its condition.
    let mut ons = vec![(0, 0)];
    for j in 1..starts.len() {
        let stop = starts.get(j + 1).map(|s| s.0).unwrap_or(end);
        let on = (starts[j].1..stop).find(|&k| depth[k] == 0 && keyword(&t, k, &[Keyword::ON]))?;
        ons.push((on, stop.checked_sub(1)?));
    }
    let at = if r == 0 { 1 } else { r };
    let (on, on_last) = ons[at];
    let condition = t.text(on + 1, on_last).2.to_string();
    let relation_last = if r == 0 { starts[1].0 - 1 } else { on - 1 };
    let relation = t.text(starts[r].1, relation_last).2.to_string();
    let exists = format!("EXISTS (SELECT 1 FROM {relation} WHERE {condition})");
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let written = if r == 0 {
        let (from, _, _) = t.text(starts[0].1, starts[0].1);
        let (to, _, _) = t.text(starts[1].1, starts[1].1);
        edits.push((from, to, String::new()));
        let (_, cut, _) = t.text(on - 1, on - 1);
        let (_, stop, _) = t.text(on_last, on_last);
        edits.push((cut, stop, String::new()));
        t.text(starts[0].1, on_last).2.to_string()
    } else {
        let (_, cut, _) = t.text(starts[r].0 - 1, starts[r].0 - 1);
        let (_, stop, _) = t.text(on_last, on_last);
        edits.push((cut, stop, String::new()));
        t.text(starts[r].0, on_last).2.to_string()
    };
    // The WHERE clause, when there is one: its condition in parentheses, and the EXISTS after.
    if end < t.len() && keyword(&t, end, &[Keyword::WHERE]) {
        let stop = (end + 1..t.len())
            .find(|&k| depth[k] < 0 || (depth[k] == 0 && (keyword(&t, k, AFTER_WHERE) || matches!(t.at(k), Some(Token::SemiColon)))))
            .unwrap_or(t.len());
        if stop <= end + 1 {
            return None;
        }
        let (first, _, _) = t.text(end + 1, end + 1);
        let (_, last, _) = t.text(stop - 1, stop - 1);
        edits.push((first, first, "(".into()));
        edits.push((last, last, format!(") AND {exists}")));
    } else {
        let (_, last, _) = t.text(end - 1, end - 1);
        edits.push((last, last, format!(" WHERE {exists}")));
    }
    edits.sort_by_key(|e| (e.0, e.1));
    let edits: Vec<(usize, usize, &str)> = edits.iter().map(|(a, b, s)| (*a, *b, s.as_str())).collect();
    Some((apply(sql, &edits), vec![written]))
}

/// Whether `statement` computes an aggregate or a window function anywhere.
fn aggregates(statement: &Statement) -> bool {
    let mut found = false;
    let _ = visit_expressions(statement, |e| {
        if let Expr::Function(f) = e {
            let name = super::fraction::function_name(f);
            if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() || AGGREGATES.contains(&name.as_str()) {
                found = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    found
}

/// Every column name `node` writes, qualified or not.
fn names<V: sqlparser::ast::Visit>(node: &V) -> Vec<Name> {
    let mut out = Vec::new();
    let _ = visit_expressions(node, |e| {
        match e {
            Expr::Identifier(i) => out.push((None, normalized(i))),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                out.push((Some(normalized(&parts[parts.len() - 2])), normalized(&parts[parts.len() - 1])));
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// The columns of the table known as `known_as` that `on` equates with an expression that
/// names none of its columns (`r.city_id = c.id`: `city_id`), in a condition of `AND`s whose
/// names are all qualified.
fn equated(on: &Expr, known_as: &str) -> Vec<String> {
    let mine = |e: &Expr| match bare(e) {
        Expr::CompoundIdentifier(p) if p.len() >= 2 && normalized(&p[p.len() - 2]) == known_as => Some(normalized(&p[p.len() - 1])),
        _ => None,
    };
    let names_it = |e: &Expr| names(e).iter().any(|n| n.0.as_deref() == Some(known_as));
    let mut out = Vec::new();
    let mut stack = vec![on];
    while let Some(e) = stack.pop() {
        match bare(e) {
            Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
                stack.push(left);
                stack.push(right);
            }
            Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => {
                if let (Some(c), false) = (mine(left), names_it(right)) {
                    out.push(c);
                } else if let (Some(c), false) = (mine(right), names_it(left)) {
                    out.push(c);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
