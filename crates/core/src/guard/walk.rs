//! The walk over a parsed statement: what may not appear anywhere in it (data-modifying
//! statements, `SELECT … INTO`, locks, forbidden functions and settings), and the relations it
//! reads.

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, ObjectNamePart, Query, Select, SetExpr, Statement,
    TableFactor, Value, Visitor,
};

use super::deny::{forbidden_function_reason, secret_setting};
use super::refusal::Refusal;

/// The data-modifying statement a query body consists of, looking through parentheses and
/// set operations: `INSERT`, `UPDATE`, `DELETE` or `MERGE`.
pub(crate) fn data_modifying_statement(body: &SetExpr) -> Option<&Statement> {
    match body {
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) | SetExpr::Merge(s) => Some(s),
        SetExpr::Query(q) => data_modifying_statement(&q.body),
        SetExpr::SetOperation { left, right, .. } => data_modifying_statement(left).or_else(|| data_modifying_statement(right)),
        SetExpr::Select(_) | SetExpr::Values(_) | SetExpr::Table(_) => None,
    }
}

/// The kind of a statement in SQL words (`DELETE`, `CREATE TABLE`, `START TRANSACTION`),
/// derived from its `sqlparser` variant name.
pub(crate) fn statement_kind(statement: &Statement) -> String {
    let debug = format!("{statement:?}");
    let variant: String = debug.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let mut kind = String::with_capacity(variant.len() + 4);
    let mut previous_lower = false;
    for c in variant.chars() {
        if c.is_ascii_uppercase() && previous_lower {
            kind.push(' ');
        }
        previous_lower = c.is_ascii_lowercase();
        kind.push(c.to_ascii_uppercase());
    }
    kind
}

/// The identifier as PostgreSQL resolves it: unquoted names fold to lower case.
pub(crate) fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

/// The parts of a (possibly qualified) name as PostgreSQL resolves them, for de-duplication.
pub(crate) fn normalized_parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(ident) => normalized(ident),
            other => other.to_string(),
        })
        .collect()
}

/// The last part of a (possibly qualified) name, lower-cased, for deny-list matching.
fn bare_name(name: &ObjectName) -> String {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(ident)) => ident.value.to_lowercase(),
        Some(other) => other.to_string().to_lowercase(),
        None => String::new(),
    }
}

/// Refuses a call of a forbidden function; `nextval` passes when `allow_nextval` is set (in
/// the `INSERT` steps of [`check_write_step`](crate::guard::check_write_step)).
fn check_function(name: &ObjectName, allow_nextval: bool) -> ControlFlow<Refusal> {
    let bare = bare_name(name);
    if allow_nextval && bare == "nextval" {
        return ControlFlow::Continue(());
    }
    if forbidden_function_reason(&bare).is_some() {
        ControlFlow::Break(Refusal::ForbiddenFunction(name.to_string()))
    } else {
        ControlFlow::Continue(())
    }
}

/// `current_setting(name [, missing_ok])` passes only when `name` is a plain string literal
/// that is not a [`secret_setting`].
fn check_current_setting(function: &Function) -> ControlFlow<Refusal> {
    let first = match &function.args {
        FunctionArguments::List(list) => list.args.first(),
        _ => None,
    };
    let written = first.map(|a| a.to_string()).unwrap_or_default();
    let name = match first {
        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) => match &v.value {
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Some(s.as_str()),
            _ => None,
        },
        _ => None,
    };
    match name {
        Some(name) if !secret_setting(name) => ControlFlow::Continue(()),
        _ => ControlFlow::Break(Refusal::SecretSetting(written)),
    }
}

/// Walks the whole statement, refusing what may not appear anywhere and collecting relations.
#[derive(Default)]
pub(super) struct Walker {
    /// Statements seen so far; the first is the checked statement itself.
    statements: usize,
    /// Relations read, as written, with their normalized form for de-duplication.
    pub(super) relations: Vec<(String, Vec<String>)>,
    /// Normalized names of every CTE defined anywhere in the statement.
    cte_names: HashSet<String>,
    /// Whether `nextval` may be called (an `INSERT` step of [`check_write_step`](crate::guard::check_write_step)).
    pub(super) allow_nextval: bool,
}

impl Walker {
    pub(super) fn add_relation(&mut self, written: String, normalized_parts: Vec<String>) {
        if !self.relations.iter().any(|(_, parts)| *parts == normalized_parts) {
            self.relations.push((written, normalized_parts));
        }
    }

    /// The relations read, without CTE references. A one-part name that matches a CTE defined
    /// anywhere in the statement is taken for the CTE (scoping is not modelled).
    pub(super) fn into_tables(self) -> Vec<String> {
        let cte_names = self.cte_names;
        self.relations
            .into_iter()
            .filter(|(_, parts)| !(parts.len() == 1 && cte_names.contains(&parts[0])))
            .map(|(written, _)| written)
            .collect()
    }
}

impl Visitor for Walker {
    type Break = Refusal;

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<Refusal> {
        self.statements += 1;
        if self.statements > 1 {
            // Only `INSERT`/`UPDATE`/`DELETE`/`MERGE` can nest in a query; CTEs are reported
            // by name in `pre_visit_query`, which runs first.
            return ControlFlow::Break(Refusal::DataModifyingSubquery(statement_kind(statement)));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Refusal> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                if data_modifying_statement(&cte.query.body).is_some() {
                    return ControlFlow::Break(Refusal::DataModifyingCte(cte.alias.name.value.clone()));
                }
                self.cte_names.insert(normalized(&cte.alias.name));
            }
        }
        if !query.locks.is_empty() {
            return ControlFlow::Break(Refusal::LockingClause);
        }
        collect_table_commands(&query.body, self);
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<Refusal> {
        if select.into.is_some() {
            return ControlFlow::Break(Refusal::SelectInto);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<Refusal> {
        match factor {
            // `FROM f(…)` is a function call, not a relation.
            TableFactor::Table { name, args: Some(_), .. } | TableFactor::Function { name, .. } => {
                check_function(name, self.allow_nextval)?
            }
            TableFactor::Table { name, args: None, .. } => self.add_relation(name.to_string(), normalized_parts(name)),
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<Refusal> {
        if let Expr::Function(function) = expr {
            check_function(&function.name, self.allow_nextval)?;
            if bare_name(&function.name) == "current_setting" {
                check_current_setting(function)?;
            }
        }
        ControlFlow::Continue(())
    }
}

/// Records the relations of `TABLE name` commands directly in a query body (parenthesized
/// queries are visited on their own).
fn collect_table_commands(body: &SetExpr, walker: &mut Walker) {
    match body {
        SetExpr::Table(table) => {
            if let Some(name) = &table.table_name {
                let written = match &table.schema_name {
                    Some(schema) => format!("{schema}.{name}"),
                    None => name.clone(),
                };
                let parts = written.split('.').map(str::to_lowercase).collect();
                walker.add_relation(written, parts);
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            collect_table_commands(left, walker);
            collect_table_commands(right, walker);
        }
        _ => {}
    }
}
