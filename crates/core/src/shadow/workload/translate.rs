//! One MySQL statement translated to PostgreSQL (see the table of the [module
//! documentation](super)), and the relations a PostgreSQL statement names.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{self, Expr, Ident, LimitClause, ObjectName, Offset, OffsetRows, Statement, VisitMut, VisitorMut};
use sqlparser::dialect::{MySqlDialect, PostgreSqlDialect};
use sqlparser::parser::Parser;

use super::ddl::create_table_sql;
use crate::shadow::delta::quote_ident;

/// The outcome of translating one MySQL statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Translation {
    /// PostgreSQL text (no trailing semicolon), with notes on what was changed or dropped.
    Translated { sql: String, notes: Vec<String> },
    /// Not translatable; the glue reports it with a NOTICE.
    Skipped { statement: String, reason: String },
}

impl Translation {
    pub fn sql(&self) -> Option<&str> {
        match self {
            Translation::Translated { sql, .. } => Some(sql),
            Translation::Skipped { .. } => None,
        }
    }
}

/// Translate one MySQL statement to PostgreSQL.
pub fn translate(mysql: &str) -> Translation {
    translate_with_tables(mysql).0
}

fn skipped(statement: &str, reason: impl Into<String>) -> (Translation, BTreeSet<String>) {
    (Translation::Skipped { statement: statement.to_string(), reason: reason.into() }, BTreeSet::new())
}

pub(super) fn translate_with_tables(mysql: &str) -> (Translation, BTreeSet<String>) {
    let dialect = MySqlDialect {};
    let mut notes = Vec::new();
    let statements = match Parser::parse_sql(&dialect, mysql) {
        Ok(s) => s,
        Err(first_error) => match repair_apostrophes(mysql) {
            Some(repaired) => match Parser::parse_sql(&dialect, &repaired) {
                Ok(s) => {
                    notes.push("doubled an unescaped apostrophe inside a string literal".to_string());
                    s
                }
                Err(_) => return skipped(mysql, format!("MySQL parse error: {first_error}")),
            },
            None => return skipped(mysql, format!("MySQL parse error: {first_error}")),
        },
    };
    let mut statement = match <[Statement; 1]>::try_from(statements) {
        Ok([s]) => s,
        Err(v) => return skipped(mysql, format!("expected one statement, found {}", v.len())),
    };

    let mut fixer = MySqlFixer::default();
    let _ = statement.visit(&mut fixer);
    if let Some(reason) = fixer.unsupported {
        return skipped(mysql, reason);
    }
    notes.extend(fixer.notes);

    let sql = match &mut statement {
        Statement::CreateTable(create) => match create_table_sql(create, &mut notes) {
            Ok(sql) => sql,
            Err(reason) => return skipped(mysql, reason),
        },
        Statement::Insert(insert) => {
            if insert.ignore {
                return skipped(mysql, "INSERT IGNORE has no PostgreSQL equivalent that keeps its error semantics");
            }
            if insert.replace_into {
                return skipped(mysql, "REPLACE INTO has no direct PostgreSQL equivalent");
            }
            if insert.on.is_some() {
                return skipped(mysql, "ON DUPLICATE KEY UPDATE needs a conflict target PostgreSQL cannot infer");
            }
            if insert.priority.is_some() || insert.insert_alias.is_some() || !insert.assignments.is_empty() {
                return skipped(mysql, "MySQL-only INSERT syntax (priority, alias or SET form)");
            }
            statement.to_string()
        }
        Statement::Update(update) => {
            if !update.table.joins.is_empty() || update.from.is_some() {
                return skipped(mysql, "multi-table UPDATE is not translated");
            }
            if !update.order_by.is_empty() || update.limit.is_some() {
                return skipped(mysql, "UPDATE with ORDER BY or LIMIT has no PostgreSQL equivalent");
            }
            statement.to_string()
        }
        Statement::Delete(delete) => {
            if !delete.tables.is_empty() || delete.using.is_some() {
                return skipped(mysql, "multi-table DELETE is not translated");
            }
            if !delete.order_by.is_empty() || delete.limit.is_some() {
                return skipped(mysql, "DELETE with ORDER BY or LIMIT has no PostgreSQL equivalent");
            }
            statement.to_string()
        }
        Statement::Query(_) | Statement::CreateIndex(_) => statement.to_string(),
        Statement::Drop { .. } | Statement::Use(_) | Statement::CreateDatabase { .. } => {
            return skipped(mysql, "database set-up statement; the benchmark uses its own scratch schema")
        }
        other => {
            let kind = other.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            return skipped(mysql, format!("unsupported statement kind ({kind} ...)"));
        }
    };

    match tables_in(&sql) {
        Ok(tables) => (Translation::Translated { sql, notes }, tables),
        Err(e) => skipped(mysql, format!("the translation {sql:?} is not valid PostgreSQL: {e}")),
    }
}

/// The tables a PostgreSQL statement names (targets, FROM/JOIN items, subqueries), folded as
/// PostgreSQL folds unquoted names, without schema. For `shadow_replay`: the log to encode is
/// that of these tables.
pub fn tables_in(sql: &str) -> Result<BTreeSet<String>, String> {
    let parsed = Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| e.to_string())?;
    let mut tables = BTreeSet::new();
    let _ = ast::visit_relations(&parsed, |name: &ObjectName| {
        if let Some(ident) = name.0.last().and_then(|p| p.as_ident()) {
            tables.insert(folded(ident));
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(tables)
}

/// Whether `sql` names only relations of `own` (unqualified, folded names): the workload's
/// statements compute their truths as the role that runs the benchmark, which may read tables
/// the workload's author may not, so a statement that names any other relation (another
/// schema's, `pg_catalog`'s found through the search path) is not run. A statement that does
/// not parse names nothing that can be checked, and is not run either.
pub fn names_only(sql: &str, own: &BTreeSet<String>) -> bool {
    let Ok(parsed) = Parser::parse_sql(&PostgreSqlDialect {}, sql) else { return false };
    let mut ok = true;
    let _ = ast::visit_relations(&parsed, |name: &ObjectName| {
        let plain = match name.0.as_slice() {
            [part] => part.as_ident().map(folded),
            _ => None,
        };
        if !plain.is_some_and(|n| own.contains(&n)) {
            ok = false;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    ok
}

/// Whether `sql` is one plain `CREATE TABLE` with its columns (not `AS` a query): the only kind
/// of statement a workload's `create_tables` may run.
pub fn is_plain_create_table(sql: &str) -> bool {
    match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
        Ok(parsed) => {
            matches!(parsed.as_slice(), [Statement::CreateTable(c)] if c.query.is_none() && c.like.is_none() && c.clone.is_none())
        }
        Err(_) => false,
    }
}

/// An identifier as PostgreSQL stores it: unquoted names fold to lower case.
fn folded(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

/// Double every `'` that sits between two alphanumeric characters (`Mary's`). `None` when
/// there is none.
fn repair_apostrophes(sql: &str) -> Option<String> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = String::with_capacity(sql.len() + 4);
    let mut changed = false;
    for (i, &c) in chars.iter().enumerate() {
        out.push(c);
        if c == '\'' && i > 0 && chars[i - 1].is_alphanumeric() && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric()) {
            out.push('\'');
            changed = true;
        }
    }
    changed.then_some(out)
}

/// MySQL-only functions whose statements are skipped.
const MYSQL_ONLY_FUNCTIONS: &[&str] = &[
    "CURDATE",
    "CURTIME",
    "DATEDIFF",
    "DATE_ADD",
    "DATE_FORMAT",
    "DATE_SUB",
    "FROM_UNIXTIME",
    "GROUP_CONCAT",
    "IF",
    "LAST_INSERT_ID",
    "STR_TO_DATE",
    "UNIX_TIMESTAMP",
];

/// Rewrites MySQL spellings in place (identifiers, literals, LIMIT, IFNULL) and spots
/// constructs that cannot be translated.
#[derive(Default)]
struct MySqlFixer {
    notes: Vec<String>,
    unsupported: Option<String>,
}

impl VisitorMut for MySqlFixer {
    type Break = ();

    fn pre_visit_ident(&mut self, ident: &mut Ident) -> ControlFlow<()> {
        if ident.quote_style == Some('`') {
            let lower = ident.value.to_lowercase();
            if quote_ident(&lower) == lower {
                ident.value.clone_from(&lower);
                ident.quote_style = None;
            } else {
                ident.value = lower;
                ident.quote_style = Some('"');
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_value(&mut self, value: &mut ast::ValueWithSpan) -> ControlFlow<()> {
        if let ast::Value::DoubleQuotedString(s) = &value.value {
            value.value = ast::Value::SingleQuotedString(s.clone());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(function) = expr {
            let name = function.name.to_string().to_ascii_uppercase();
            if name == "IFNULL" {
                function.name = ObjectName::from(vec![Ident::new("COALESCE")]);
            } else if MYSQL_ONLY_FUNCTIONS.contains(&name.as_str()) {
                self.unsupported = Some(format!("MySQL-only function {name}()"));
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        if let Some(LimitClause::OffsetCommaLimit { offset, limit }) = &query.limit_clause {
            query.limit_clause = Some(LimitClause::LimitOffset {
                limit: Some(limit.clone()),
                offset: Some(Offset { value: offset.clone(), rows: OffsetRows::None }),
                limit_by: vec![],
            });
        }
        ControlFlow::Continue(())
    }
}
