//! The gold side of an evaluation: the tables each acceptable gold query reads, and the
//! questions ([`EvalCase`]) with them.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use serde::Serialize;
use sqlparser::ast::{ObjectName, Query, Statement, Visit, Visitor};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::ddl::{folded, last_part};
use crate::selection::fuse::Catalog;
use crate::values::literals::quote_ident;

/// Gold SQL with each `{a, b}` replaced by its first alternative `a`, and each `{}` by the
/// alternative chosen for the brace before it.
pub fn first_alternatives(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut last = String::new();
    let mut rest = sql;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else { break };
        out.push_str(&rest[..open]);
        let inside = rest[open + 1..close].trim();
        if !inside.is_empty() {
            last = inside.split(',').next().unwrap_or("").trim().to_string();
        }
        out.push_str(&last);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Relation names a query reads, without the names of its common table expressions.
#[derive(Default)]
struct Relations {
    names: Vec<String>,
    ctes: BTreeSet<String>,
}

impl Visitor for Relations {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.ctes.insert(folded(&cte.alias.name));
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
        if let Some(name) = last_part(relation) {
            self.names.push(name);
        }
        ControlFlow::Continue(())
    }
}

/// The tables (bare names, folded) each acceptable query of a gold SQL text reads: one set per
/// `;`-separated query that parses, without duplicates.
pub fn gold_tables(sql: &str) -> Vec<BTreeSet<String>> {
    let sql = first_alternatives(sql);
    let dialect = PostgreSqlDialect {};
    let statements: Vec<Statement> = match Parser::parse_sql(&dialect, &sql) {
        Ok(s) => s,
        // One query the parser does not know must not hide the others.
        Err(_) => sql.split(';').filter_map(|q| Parser::parse_sql(&dialect, q).ok()).flatten().collect(),
    };
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for s in &statements {
        let mut r = Relations::default();
        let _ = s.visit(&mut r);
        let set: BTreeSet<String> = r.names.into_iter().filter(|n| !r.ctes.contains(n)).collect();
        if !set.is_empty() && !out.contains(&set) {
            out.push(set);
        }
    }
    out
}

/// One question of an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalCase {
    pub question: String,
    /// The gold schema's quoted name.
    pub schema: String,
    /// The tables (qualified as in the catalog) of each acceptable gold query; empty when no
    /// gold query parsed or named a table of the schema.
    pub gold: Vec<BTreeSet<String>>,
}

impl EvalCase {
    /// A case from a question, its gold schema and gold SQL. Relations the gold SQL reads that
    /// are not tables of `schema` in `catalog` (set-returning functions) are left out.
    pub fn new(question: &str, schema: &str, gold_sql: &str, catalog: &Catalog) -> EvalCase {
        let qschema = quote_ident(schema);
        let mut gold: Vec<BTreeSet<String>> = Vec::new();
        for names in gold_tables(gold_sql) {
            let set: BTreeSet<String> =
                names.iter().map(|n| format!("{qschema}.{}", quote_ident(n))).filter(|q| catalog.table(q).is_some()).collect();
            if !set.is_empty() && !gold.contains(&set) {
                gold.push(set);
            }
        }
        EvalCase { question: question.to_string(), schema: qschema, gold }
    }
}
