//! The names of one query level's `FROM` clause: the relations it reads and the names
//! (aliases) its columns are qualified with, resolved to table names. The clause in words is
//! [`super::from`].

use sqlparser::ast::{Expr, Ident, ObjectName, TableFactor, TableWithJoins};

use super::text::{folded, is_niladic};
use crate::guard::normalized_parts;

/// A relation of the `FROM` clause and the names its columns may be qualified with.
struct Entry {
    /// The qualifier that names it: its alias, or its (folded) name parts.
    key: Vec<String>,
    /// For a table: its normalized name, to tell a self-join.
    table: Option<Vec<String>>,
    /// Whether it has an alias (then the alias is the only name it answers to).
    aliased: bool,
    /// What a qualified column shows in place of the qualifier.
    shown: String,
}

/// The relations one query level reads, for resolving qualified column references.
#[derive(Default)]
pub(super) struct Scope {
    entries: Vec<Entry>,
}

/// A table in `FROM` (`TableFactor::Table` without arguments): its name and alias.
fn plain_table(factor: &TableFactor) -> Option<(&ObjectName, Option<&Ident>)> {
    match factor {
        TableFactor::Table { name, alias, args: None, .. } => Some((name, alias.as_ref().map(|a| &a.name))),
        _ => None,
    }
}

/// Every relation of a `FROM` list, looking into parenthesized joins.
fn factors(from: &[TableWithJoins]) -> Vec<&TableFactor> {
    let mut out = Vec::new();
    for item in from {
        for factor in std::iter::once(&item.relation).chain(item.joins.iter().map(|j| &j.relation)) {
            match factor {
                TableFactor::NestedJoin { table_with_joins, .. } => out.extend(factors(std::slice::from_ref(table_with_joins))),
                other => out.push(other),
            }
        }
    }
    out
}

impl Scope {
    /// The scope of a `FROM` list.
    pub(super) fn of(from: &[TableWithJoins]) -> Scope {
        let all = factors(from);
        let table_count =
            |key: &[String]| all.iter().filter(|f| plain_table(f).is_some_and(|(name, _)| normalized_parts(name) == key)).count();
        let mut entries = Vec::new();
        for factor in &all {
            if let Some((name, alias)) = plain_table(factor) {
                let table = normalized_parts(name);
                let unique = table_count(&table) == 1;
                let shown = match alias {
                    Some(alias) if !unique => alias.to_string(),
                    _ => name.to_string(),
                };
                let key = alias.map_or_else(|| table.clone(), |a| vec![folded(a)]);
                entries.push(Entry { key, table: Some(table), aliased: alias.is_some(), shown });
            } else if let Some(alias) = factor_alias(factor) {
                entries.push(Entry { key: vec![folded(alias)], table: None, aliased: true, shown: alias.to_string() });
            }
        }
        Scope { entries }
    }

    /// The scope of a sub-query's `FROM` list inside this one: its own relations first, then
    /// the outer ones its correlated references name.
    pub(super) fn inside(&self, from: &[TableWithJoins]) -> Scope {
        let mut inner = Scope::of(from);
        inner.entries.extend(self.entries.iter().map(|e| Entry {
            key: e.key.clone(),
            table: e.table.clone(),
            aliased: e.aliased,
            shown: e.shown.clone(),
        }));
        inner
    }

    /// A column reference as it is shown: `city`, or `restaurants.city` for `r.city` when
    /// several relations are in scope (the alias resolved to its table unless the table is
    /// read twice). `None` when the expression is not a column reference.
    pub(super) fn column(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Identifier(ident) => {
                let special = ident.quote_style.is_none() && is_niladic(&ident.value);
                (!special).then(|| ident.to_string())
            }
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let (column, qualifier) = parts.split_last()?;
                Some(match self.entry(qualifier) {
                    Some(_) if self.entries.len() == 1 => column.to_string(),
                    Some(entry) => format!("{}.{column}", entry.shown),
                    None => parts.iter().map(Ident::to_string).collect::<Vec<_>>().join("."),
                })
            }
            Expr::Nested(inner) => self.column(inner),
            _ => None,
        }
    }

    /// The relation a qualifier (`r` in `r.city`) names.
    fn entry(&self, qualifier: &[Ident]) -> Option<&Entry> {
        let qualifier: Vec<String> = qualifier.iter().map(folded).collect();
        self.entries.iter().find(|e| {
            e.key == qualifier || (!e.aliased && e.table.as_ref().is_some_and(|t| qualifier.len() == 1 && t.last() == qualifier.last()))
        })
    }

    /// The relation a qualifier names as it is shown (`restaurants` for `r` in `r.*`), or the
    /// qualifier as written.
    pub(super) fn qualifier(&self, name: &ObjectName) -> String {
        let parts: Option<Vec<Ident>> = name.0.iter().map(|p| p.as_ident().cloned()).collect();
        match parts.as_deref().and_then(|parts| self.entry(parts)) {
            Some(entry) => entry.shown.clone(),
            None => name.to_string(),
        }
    }

    /// Whether the `FROM` clause reads the table `key` more than once (a self-join).
    pub(super) fn reads_twice(&self, key: &[String]) -> bool {
        self.entries.iter().filter(|e| e.table.as_deref() == Some(key)).count() > 1
    }
}

fn factor_alias(factor: &TableFactor) -> Option<&Ident> {
    match factor {
        TableFactor::Table { alias, .. }
        | TableFactor::Derived { alias, .. }
        | TableFactor::Function { alias, .. }
        | TableFactor::TableFunction { alias, .. }
        | TableFactor::UNNEST { alias, .. } => alias.as_ref().map(|a| &a.name),
        _ => None,
    }
}
