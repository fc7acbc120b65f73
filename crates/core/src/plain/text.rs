//! The small pieces every line is made of: SQL text kept on one line and short, lists in
//! words, and the names a part of a statement refers to (relations, columns).

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Ident, ObjectName, Query, SetExpr, TableFactor, Visit, Visitor};

use crate::guard::normalized_parts;

/// The most characters of SQL text (an expression, a literal) quoted in one line.
const MAX_QUOTED: usize = 80;

/// SQL text as it appears in a line: control characters escaped (see [`escape_controls`])
/// and cut with `…` past [`MAX_QUOTED`] characters.
pub(super) fn one_line(text: &str) -> String {
    let escaped = escape_controls(text);
    match escaped.char_indices().nth(MAX_QUOTED) {
        Some((cut, _)) => format!("{}…", &escaped[..cut]),
        None => escaped,
    }
}

/// Text with every control character escaped (`\n`, `\r`, `\t`, `\u{…}`), so that it is
/// one line whatever the names in it hold (a quoted identifier may hold a newline).
pub(super) fn escape_controls(line: &str) -> String {
    if !line.chars().any(char::is_control) {
        return line.to_string();
    }
    line.chars()
        .map(|c| match c {
            '\n' => "\\n".to_string(),
            '\r' => "\\r".to_string(),
            '\t' => "\\t".to_string(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// An expression as written (sqlparser's rendering of the tree), on one line.
pub(super) fn written(expr: &impl std::fmt::Display) -> String {
    one_line(&expr.to_string())
}

/// A string as a single-quoted SQL literal (quotes doubled), on one line.
pub(super) fn quoted(value: &str) -> String {
    let inner = one_line(&value.replace('\'', "''"));
    if inner.ends_with('…') {
        format!("'{}'…", inner.trim_end_matches('…'))
    } else {
        format!("'{inner}'")
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(super) fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The text with its first letter in upper case.
pub(super) fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// An identifier as PostgreSQL resolves it: unquoted names fold to lower case.
pub(super) fn folded(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// Names in order of first appearance, without repeats of the same normalized key.
#[derive(Default)]
pub(super) struct Names {
    seen: Vec<(String, Vec<String>)>,
}

impl Names {
    pub(super) fn add(&mut self, written: String, key: Vec<String>) {
        if !self.seen.iter().any(|(_, k)| *k == key) {
            self.seen.push((written, key));
        }
    }

    /// A column name: the identifier's text without quotes, keyed the way PostgreSQL folds it.
    pub(super) fn add_column(&mut self, ident: &Ident) {
        self.add(ident.value.clone(), vec![folded(ident)]);
    }

    pub(super) fn into_vec(self) -> Vec<String> {
        self.seen.into_iter().map(|(written, _)| written).collect()
    }
}

/// The columns an expression refers to, not looking into sub-queries (they are read on their
/// own). Each is the last part of the reference (`r.city` gives `city`).
pub(super) fn columns_of(expr: &Expr, into: &mut Names) {
    struct Columns<'a> {
        depth: usize,
        into: &'a mut Names,
    }
    impl Visitor for Columns<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if self.depth > 0 {
                return ControlFlow::Continue(());
            }
            let last = match expr {
                Expr::Identifier(ident) => Some(ident),
                Expr::CompoundIdentifier(parts) => parts.last(),
                _ => None,
            };
            if let Some(ident) = last {
                if ident.quote_style.is_some() || !is_niladic(&ident.value) {
                    self.into.add_column(ident);
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = expr.visit(&mut Columns { depth: 0, into });
}

/// The relations a query reads, as written, in the order the walk meets them, without repeats.
/// With `skip_ctes`, a one-part name that is a common table expression defined anywhere in
/// the query is left out (scoping is not modelled, as in the guard).
pub(super) fn relations_of(query: &Query, skip_ctes: bool) -> Vec<String> {
    #[derive(Default)]
    struct Relations {
        names: Vec<(String, Vec<String>)>,
        ctes: Vec<String>,
    }
    impl Relations {
        fn add(&mut self, name: &ObjectName) {
            let key = normalized_parts(name);
            if !self.names.iter().any(|(_, k)| *k == key) {
                self.names.push((name.to_string(), key));
            }
        }
    }
    impl Visitor for Relations {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                self.ctes.extend(with.cte_tables.iter().map(|cte| folded(&cte.alias.name)));
            }
            if let SetExpr::Table(table) = query.body.as_ref() {
                if let Some(name) = &table.table_name {
                    let parts: Vec<Ident> = table.schema_name.iter().chain([name]).map(|p| Ident::new(p.clone())).collect();
                    self.add(&ObjectName::from(parts));
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table { name, args: None, .. } = factor {
                self.add(name);
            }
            ControlFlow::Continue(())
        }
    }
    let mut relations = Relations::default();
    let _ = query.visit(&mut relations);
    let ctes = relations.ctes;
    relations
        .names
        .into_iter()
        .filter(|(_, key)| !(skip_ctes && key.len() == 1 && ctes.contains(&key[0])))
        .map(|(written, _)| written)
        .collect()
}

/// ` over reviews and users`, or nothing when the query reads no relation.
pub(super) fn over(query: &Query) -> String {
    let names = relations_of(query, false);
    if names.is_empty() {
        String::new()
    } else {
        format!(" over {}", and_list(&names))
    }
}

/// `a sub-query over reviews and users` (or `a sub-query` when it reads no relation).
pub(super) fn subquery_phrase(query: &Query) -> String {
    format!("a sub-query{}", over(query))
}

/// SQL's functions called without parentheses, which sqlparser may read as a column.
pub(super) fn is_niladic(name: &str) -> bool {
    const NILADIC: &[&str] =
        &["current_date", "current_time", "current_timestamp", "localtime", "localtimestamp", "current_user", "session_user", "user"];
    NILADIC.contains(&name.to_lowercase().as_str())
}
