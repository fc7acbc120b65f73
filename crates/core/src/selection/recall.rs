//! Offline evaluation of schema and table selection.
//!
//! The harness reads databases given as DDL and data (defog's eleven databases, loaded as
//! eleven schemas of one database), questions with gold SQL, and measures retrieval on its
//! own, with no LLM call:
//!
//! * **schema recall@1 / @5**: the gold schema is the first / among the first five of
//!   [`Catalog::select_schemas`];
//! * **table recall@10**: every table the gold SQL reads is among the ten best of
//!   [`Catalog::select_tables`] over all schemas (also reported with the join tables added,
//!   and with the candidates limited to the gold schema, which is what `ask()` does after the
//!   plan picked the schema).
//!
//! Embeddings plug in as any `Fn(&str) -> Vec<f32>`; without one, the score is lexical only.
//! With one, the plain baseline of the issue is measured beside: cosine alone between the
//! question and `schema: table (columns); …`.
//!
//! Gold SQL in defog's file writes `{a.x, a.y}` where either column is acceptable (and `{}` for
//! "the same as before"), and sometimes gives several `;`-separated acceptable queries:
//! [`gold_tables`] takes the first alternative in braces and returns the tables of each query,
//! and a question counts as found when the tables of any of its queries are.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::ops::ControlFlow;

use serde::Serialize;
use serde_json::Value as Json;
use sqlparser::ast::{
    ColumnOption, Expr, Ident, ObjectName, ObjectNamePart, Query, SetExpr, Statement, TableConstraint, TableObject, Value, Visit, Visitor,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::describe::{baseline_schema_text, baseline_table_text, ColumnValues, TableProfile, MAX_VALUES_PER_COLUMN};
use super::fuse::{cosine, Catalog, Cosines, Fusion, PickReason, SelectError, SelectOptions};
use crate::schema::{Column, ForeignKey, Table};
use crate::values::literals::quote_ident;

/// Why a database could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("the DDL of {schema} does not parse: {message}")]
    Ddl { schema: String, message: String },
    #[error("the column descriptions of {schema} are not valid JSON: {message}")]
    Descriptions { schema: String, message: String },
}

/// An identifier as PostgreSQL resolves it: unquoted names fold to lower case.
fn folded(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

fn last_part(name: &ObjectName) -> Option<String> {
    name.0.last().and_then(ObjectNamePart::as_ident).map(folded)
}

fn is_text_type(data_type: &str) -> bool {
    let t = data_type.to_lowercase();
    ["text", "varchar", "character", "char", "citext", "bpchar"].iter().any(|p| t.starts_with(p))
}

/// The tables a DDL script creates, all placed in `schema` (whatever schema the script used),
/// with identifiers folded as PostgreSQL folds them and quoted as `quote_ident` would. With
/// `with_values`, the [`MAX_VALUES_PER_COLUMN`] most frequent string values its `INSERT`s put
/// in each text column stand in for the value memory. Statements other than `CREATE TABLE`
/// and `INSERT` are ignored.
pub fn tables_from_ddl(ddl: &str, schema: &str, with_values: bool) -> Result<Vec<TableProfile>, EvalError> {
    let statements =
        Parser::parse_sql(&PostgreSqlDialect {}, ddl).map_err(|e| EvalError::Ddl { schema: schema.to_string(), message: e.to_string() })?;
    let qschema = quote_ident(schema);
    let mut tables: Vec<Table> = Vec::new();
    // (table index, column) -> value -> (count, first seen)
    let mut counts: HashMap<(usize, String), HashMap<String, (usize, usize)>> = HashMap::new();
    let mut seen = 0usize;
    for statement in &statements {
        match statement {
            Statement::CreateTable(ct) => {
                let Some(name) = last_part(&ct.name) else { continue };
                let mut t = Table { schema: qschema.clone(), name: quote_ident(&name), kind: "table".into(), ..Default::default() };
                for col in &ct.columns {
                    let cname = quote_ident(&folded(&col.name));
                    let mut column =
                        Column { name: cname.clone(), data_type: col.data_type.to_string().to_lowercase(), ..Default::default() };
                    for opt in &col.options {
                        match &opt.option {
                            ColumnOption::NotNull => column.not_null = true,
                            ColumnOption::PrimaryKey(_) => {
                                column.not_null = true;
                                t.primary_key = vec![cname.clone()];
                            }
                            ColumnOption::ForeignKey(fk) => {
                                if let Some(target) = last_part(&fk.foreign_table) {
                                    t.foreign_keys.push(ForeignKey {
                                        columns: vec![cname.clone()],
                                        references: format!("{qschema}.{}", quote_ident(&target)),
                                        ref_columns: fk.referred_columns.iter().map(|c| quote_ident(&folded(c))).collect(),
                                    });
                                }
                            }
                            ColumnOption::Comment(c) => column.comment = Some(c.clone()),
                            _ => {}
                        }
                    }
                    t.columns.push(column);
                }
                for constraint in &ct.constraints {
                    match constraint {
                        TableConstraint::PrimaryKey(pk) => {
                            t.primary_key = pk
                                .columns
                                .iter()
                                .filter_map(|c| match &c.column.expr {
                                    Expr::Identifier(i) => Some(quote_ident(&folded(i))),
                                    _ => None,
                                })
                                .collect();
                        }
                        TableConstraint::ForeignKey(fk) => {
                            if let Some(target) = last_part(&fk.foreign_table) {
                                t.foreign_keys.push(ForeignKey {
                                    columns: fk.columns.iter().map(|c| quote_ident(&folded(c))).collect(),
                                    references: format!("{qschema}.{}", quote_ident(&target)),
                                    ref_columns: fk.referred_columns.iter().map(|c| quote_ident(&folded(c))).collect(),
                                });
                            }
                        }
                        _ => {}
                    }
                }
                tables.push(t);
            }
            Statement::Insert(insert) if with_values => {
                let TableObject::TableName(name) = &insert.table else { continue };
                let Some(name) = last_part(name).map(|n| quote_ident(&n)) else { continue };
                let Some(ti) = tables.iter().position(|t| t.name == name) else { continue };
                let columns: Vec<String> = if insert.columns.is_empty() {
                    tables[ti].columns.iter().map(|c| c.name.clone()).collect()
                } else {
                    insert.columns.iter().filter_map(|c| last_part(c).map(|n| quote_ident(&n))).collect()
                };
                let Some(SetExpr::Values(values)) = insert.source.as_deref().map(|q| q.body.as_ref()) else { continue };
                for row in &values.rows {
                    for (col, expr) in columns.iter().zip(&row.content) {
                        if let Expr::Value(v) = expr {
                            if let Value::SingleQuotedString(s) = &v.value {
                                let text_column = tables[ti].columns.iter().any(|c| &c.name == col && is_text_type(&c.data_type));
                                if text_column && !s.trim().is_empty() {
                                    seen += 1;
                                    let e = counts.entry((ti, col.clone())).or_default().entry(s.clone()).or_insert((0, seen));
                                    e.0 += 1;
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut profiles: Vec<TableProfile> = tables.into_iter().map(TableProfile::new).collect();
    for ((ti, column), values) in counts {
        let mut values: Vec<(String, (usize, usize))> = values.into_iter().collect();
        values.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
        let values = values.into_iter().take(MAX_VALUES_PER_COLUMN).map(|(v, _)| v).collect();
        profiles[ti].values.push(ColumnValues { column, values });
    }
    for p in &mut profiles {
        let order: Vec<String> = p.table.columns.iter().map(|c| c.name.clone()).collect();
        p.values.sort_by_key(|v| order.iter().position(|c| *c == v.column));
    }
    Ok(profiles)
}

/// Set column comments from defog's description file:
/// `{"table_metadata": {"table": [{"column_name": …, "column_description": …}]}}`. Names
/// are matched case-insensitively; empty descriptions are skipped.
pub fn apply_column_descriptions(profiles: &mut [TableProfile], schema: &str, json: &str) -> Result<(), EvalError> {
    let v: Json = serde_json::from_str(json).map_err(|e| EvalError::Descriptions { schema: schema.to_string(), message: e.to_string() })?;
    let Some(meta) = v.get("table_metadata").and_then(Json::as_object) else {
        return Err(EvalError::Descriptions { schema: schema.to_string(), message: "no table_metadata object".into() });
    };
    for (table, columns) in meta {
        let Some(p) = profiles.iter_mut().find(|p| super::unquote(&p.table.name).eq_ignore_ascii_case(table)) else { continue };
        for c in columns.as_array().into_iter().flatten() {
            let (Some(name), Some(desc)) =
                (c.get("column_name").and_then(Json::as_str), c.get("column_description").and_then(Json::as_str))
            else {
                continue;
            };
            if desc.trim().is_empty() {
                continue;
            }
            if let Some(col) = p.table.columns.iter_mut().find(|col| super::unquote(&col.name).eq_ignore_ascii_case(name)) {
                col.comment = Some(desc.trim().to_string());
            }
        }
    }
    Ok(())
}

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

/// Recall figures of one method.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Metrics {
    pub questions: usize,
    pub schema_recall_at_1: f64,
    pub schema_recall_at_5: f64,
    /// Questions with gold tables (the table figures are over these).
    pub table_questions: usize,
    /// All gold tables among the 10 best tables over all schemas.
    pub table_recall_at_10: f64,
    /// The same, counting the join tables `select_tables` adds.
    pub table_recall_at_10_with_joins: f64,
    /// All gold tables among the 10 best tables of the gold schema.
    pub table_recall_at_10_in_schema: f64,
    /// All gold tables among the 10 tables `ask()` retrieves: the best within the
    /// [`PLAN_SCHEMAS`](super::PLAN_SCHEMAS) best schemas, those without evidence left out as
    /// the glue leaves them out (not for the baseline, which ranks no schema first).
    pub table_recall_at_10_as_asked: Option<f64>,
}

impl fmt::Display for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "schema recall@1 {:.3}, @5 {:.3} ({} questions); table recall@10 {:.3}, with join tables {:.3}, within the gold schema {:.3}{} ({} questions)",
            self.schema_recall_at_1,
            self.schema_recall_at_5,
            self.questions,
            self.table_recall_at_10,
            self.table_recall_at_10_with_joins,
            self.table_recall_at_10_in_schema,
            self.table_recall_at_10_as_asked.map(|r| format!(", as ask() selects {r:.3}")).unwrap_or_default(),
            self.table_questions
        )
    }
}

/// A question retrieval got wrong, for reading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Miss {
    pub question: String,
    /// `schema@1`, `schema@5` or `tables@10`.
    pub kind: &'static str,
    /// What was expected: the gold schema, or the gold tables of the first query.
    pub expected: Vec<String>,
    /// What came first: schemas, or tables.
    pub got: Vec<String>,
}

/// The outcome of an evaluation.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct EvalReport {
    /// Fused selection (lexical only when no embedding function was given).
    pub selection: Metrics,
    /// Cosine of the plain `schema: table (columns)` texts; only with embeddings.
    pub baseline: Option<Metrics>,
    pub misses: Vec<Miss>,
}

/// Counts hits of the three table measures for one ranking.
#[derive(Default)]
struct Tally {
    schema1: usize,
    schema5: usize,
    tables: usize,
    tables_joined: usize,
    tables_in_schema: usize,
    /// `None` for a method that does not select as ask() does.
    tables_as_asked: Option<usize>,
    table_questions: usize,
    questions: usize,
}

impl Tally {
    fn metrics(&self) -> Metrics {
        let ratio = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        Metrics {
            questions: self.questions,
            schema_recall_at_1: ratio(self.schema1, self.questions),
            schema_recall_at_5: ratio(self.schema5, self.questions),
            table_questions: self.table_questions,
            table_recall_at_10: ratio(self.tables, self.table_questions),
            table_recall_at_10_with_joins: ratio(self.tables_joined, self.table_questions),
            table_recall_at_10_in_schema: ratio(self.tables_in_schema, self.table_questions),
            table_recall_at_10_as_asked: self.tables_as_asked.map(|n| ratio(n, self.table_questions)),
        }
    }
}

fn covers(gold: &[BTreeSet<String>], got: &[String]) -> bool {
    gold.iter().any(|g| g.iter().all(|t| got.contains(t)))
}

/// An embedding function: text in, vector out (for example all-MiniLM-L6-v2).
pub type Embedder<'a> = &'a dyn Fn(&str) -> Vec<f32>;

/// How many tables the table measures look at.
pub const EVAL_TABLES: usize = 10;
/// How many schemas the wider schema measure looks at.
pub const EVAL_SCHEMAS: usize = 5;

/// Measure selection over `cases`. With `embed`, every description and question is embedded
/// once, the cosines are fused with the lexical score by `fusion`, and the baseline is
/// measured too.
pub fn evaluate(catalog: &Catalog, cases: &[EvalCase], embed: Option<Embedder<'_>>, fusion: Fusion) -> Result<EvalReport, SelectError> {
    struct Embedded {
        tables: Vec<(String, Vec<f32>)>,
        schemas: Vec<(String, Vec<f32>)>,
        baseline_tables: Vec<(String, Vec<f32>)>,
        baseline_schemas: Vec<(String, Vec<f32>)>,
    }
    let embedded = embed.map(|e| Embedded {
        tables: catalog.table_descriptions().map(|(n, d)| (n, e(d))).collect(),
        schemas: catalog.schema_descriptions().map(|(n, d)| (n.to_string(), e(d))).collect(),
        baseline_tables: catalog.tables().iter().map(|p| (p.table.qualified(), e(&baseline_table_text(p)))).collect(),
        baseline_schemas: catalog
            .schemas()
            .iter()
            .map(|s| {
                let members: Vec<&TableProfile> = s.tables.iter().map(|&i| &catalog.tables()[i]).collect();
                (s.profile.name.clone(), e(&baseline_schema_text(&s.profile.name, &members)))
            })
            .collect(),
    });
    let sims = |q: &[f32], items: &[(String, Vec<f32>)]| -> Cosines { items.iter().map(|(n, v)| (n.clone(), cosine(q, v))).collect() };
    let by_cosine = |c: &Cosines, names: &mut Vec<String>| {
        names.sort_by(|a, b| c[b].total_cmp(&c[a]).then(a.cmp(b)));
    };

    let mut ours = Tally::default();
    let mut base = Tally::default();
    let mut misses = Vec::new();
    for case in cases {
        let q = embed.map(|e| e(&case.question));
        let (table_cos, schema_cos) = match (&q, &embedded) {
            (Some(q), Some(em)) => (sims(q, &em.tables), sims(q, &em.schemas)),
            _ => (Cosines::new(), Cosines::new()),
        };
        ours.questions += 1;
        let schemas: Vec<String> =
            catalog.select_schemas(&case.question, &schema_cos, EVAL_SCHEMAS, fusion)?.into_iter().map(|p| p.schema).collect();
        if schemas.first() == Some(&case.schema) {
            ours.schema1 += 1;
        } else {
            misses.push(Miss {
                question: case.question.clone(),
                kind: "schema@1",
                expected: vec![case.schema.clone()],
                got: schemas.clone(),
            });
        }
        if schemas.contains(&case.schema) {
            ours.schema5 += 1;
        }
        if !case.gold.is_empty() {
            ours.table_questions += 1;
            let options = SelectOptions { k: EVAL_TABLES, fusion, ..Default::default() };
            let picks = catalog.select_tables(&case.question, &table_cos, &options)?;
            let top: Vec<String> = picks.iter().take(EVAL_TABLES).map(|p| p.table.clone()).collect();
            let all: Vec<String> = picks.iter().map(|p| p.table.clone()).collect();
            if covers(&case.gold, &top) {
                ours.tables += 1;
            } else {
                misses.push(Miss {
                    question: case.question.clone(),
                    kind: "tables@10",
                    expected: case.gold[0].iter().cloned().collect(),
                    got: top.clone(),
                });
            }
            ours.tables_joined += usize::from(covers(&case.gold, &all));
            let in_schema = SelectOptions { schemas: Some(vec![case.schema.clone()]), ..options.clone() };
            let picks = catalog.select_tables(&case.question, &table_cos, &in_schema)?;
            let top: Vec<String> = picks.iter().take(EVAL_TABLES).map(|p| p.table.clone()).collect();
            ours.tables_in_schema += usize::from(covers(&case.gold, &top));
            // As ask() selects: the plan's schemas with evidence, their tables with evidence.
            let mut plan = catalog.select_schemas(&case.question, &schema_cos, super::PLAN_SCHEMAS, fusion)?;
            if plan.iter().any(|s| s.score > 0.0) {
                plan.retain(|s| s.score > 0.0);
            }
            let asked = SelectOptions { schemas: Some(plan.into_iter().map(|s| s.schema).collect()), ..options };
            let picks = catalog.select_tables(&case.question, &table_cos, &asked)?;
            let evidence = picks.iter().any(|p| p.score > 0.0);
            let top: Vec<String> = picks
                .iter()
                .filter(|p| p.reason == PickReason::Retrieved && (p.score > 0.0 || !evidence))
                .take(EVAL_TABLES)
                .map(|p| p.table.clone())
                .collect();
            *ours.tables_as_asked.get_or_insert(0) += usize::from(covers(&case.gold, &top));
        }

        if let (Some(q), Some(em)) = (&q, &embedded) {
            base.questions += 1;
            let sc = sims(q, &em.baseline_schemas);
            let mut names: Vec<String> = sc.keys().cloned().collect();
            by_cosine(&sc, &mut names);
            base.schema1 += usize::from(names.first() == Some(&case.schema));
            base.schema5 += usize::from(names.iter().take(EVAL_SCHEMAS).any(|n| *n == case.schema));
            if !case.gold.is_empty() {
                base.table_questions += 1;
                let tc = sims(q, &em.baseline_tables);
                let mut names: Vec<String> = tc.keys().cloned().collect();
                by_cosine(&tc, &mut names);
                let top: Vec<String> = names.iter().take(EVAL_TABLES).cloned().collect();
                let hit = covers(&case.gold, &top);
                base.tables += usize::from(hit);
                base.tables_joined += usize::from(hit);
                let prefix = format!("{}.", case.schema);
                let top: Vec<String> = names.iter().filter(|n| n.starts_with(&prefix)).take(EVAL_TABLES).cloned().collect();
                base.tables_in_schema += usize::from(covers(&case.gold, &top));
            }
        }
    }
    Ok(EvalReport { selection: ours.metrics(), baseline: embedded.map(|_| base.metrics()), misses })
}

/// Entities of a made-up enterprise, by area (schema). Each gets a main table and satellites.
pub const SYNTHETIC_AREAS: [(&str, [&str; 4]); 10] = [
    ("sales", ["customer", "invoice", "quote", "discount"]),
    ("hr", ["employee", "department", "payslip", "vacancy"]),
    ("stock", ["warehouse", "product", "shipment", "supplier"]),
    ("finance", ["ledger", "budget", "expense", "tax_rate"]),
    ("support", ["ticket", "agent", "escalation", "survey"]),
    ("fleet", ["vehicle", "driver", "route", "fuel_card"]),
    ("marketing", ["campaign", "newsletter", "lead", "channel"]),
    ("projects", ["project", "milestone", "timesheet", "risk"]),
    ("facilities", ["building", "room", "booking", "maintenance_job"]),
    ("legal", ["contract", "clause", "dispute", "license"]),
];
pub const SYNTHETIC_SATELLITES: [&str; 5] = ["", "_history", "_note", "_attachment", "_tag"];

/// Questions over the synthetic enterprise, one or two areas each.
pub const SYNTHETIC_QUESTIONS: [&str; 12] = [
    "How many invoices did each customer get last year?",
    "Which employees work in the finance department?",
    "Total amount of shipments per supplier",
    "List open tickets with their escalations",
    "Which drivers use a fuel card on more than two routes?",
    "How many leads did each campaign bring?",
    "Show the milestones of projects at risk",
    "Which rooms were booked most often?",
    "Contracts with disputes and the clauses concerned",
    "Average budget by ledger",
    "Notes written about vehicles this month",
    "Which products are stored in more than one warehouse?",
];

/// The eleven defog databases, each loaded as one schema.
pub const DEFOG_DATABASES: [&str; 11] = [
    "academic",
    "advising",
    "atis",
    "broker",
    "car_dealership",
    "derm_treatment",
    "ewallet",
    "geography",
    "restaurants",
    "scholar",
    "yelp",
];

/// Why the defog data could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DefogError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error(transparent)]
    Eval(#[from] EvalError),
    #[error("the questions file has no column {0}")]
    Column(&'static str),
}

/// Records of a CSV text (RFC 4180: fields in double quotes may hold commas, line breaks and
/// doubled quotes). The header is the first record.
pub fn read_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
                any = false;
            }
            _ => field.push(c),
        }
    }
    if any {
        record.push(field);
        records.push(record);
    }
    records
}

/// defog's eleven databases from `dir` (`NAME.sql` and `NAME.json`) as eleven schemas of one
/// catalog (with `with_values`, frequent string values stand in for the value memory), and
/// the questions of `questions_gen_postgres.csv` as cases.
pub fn load_defog(dir: &std::path::Path, with_values: bool) -> Result<(Catalog, Vec<EvalCase>), DefogError> {
    let read = |name: String| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|source| DefogError::Io { path: path.display().to_string(), source })
    };
    let mut tables: Vec<TableProfile> = Vec::new();
    for db in DEFOG_DATABASES {
        let mut t = tables_from_ddl(&read(format!("{db}.sql"))?, db, with_values)?;
        apply_column_descriptions(&mut t, db, &read(format!("{db}.json"))?)?;
        tables.extend(t);
    }
    let catalog = Catalog::new(tables, &[]);
    let records = read_csv(&read("questions_gen_postgres.csv".into())?);
    let header = records.first().cloned().unwrap_or_default();
    let col = |name: &'static str| header.iter().position(|h| h == name).ok_or(DefogError::Column(name));
    let (q, sql, db) = (col("question")?, col("query")?, col("db_name")?);
    let cases =
        records.iter().skip(1).filter(|r| r.len() > q.max(sql).max(db)).map(|r| EvalCase::new(&r[q], &r[db], &r[sql], &catalog)).collect();
    Ok((catalog, cases))
}

/// Business areas of the large generated catalog, one schema each.
const SCALE_AREAS: [&str; 50] = [
    "accounting",
    "admissions",
    "aftersales",
    "agriculture",
    "archive",
    "auditing",
    "aviation",
    "banking",
    "billing",
    "biobank",
    "catering",
    "charity",
    "clinic",
    "compliance",
    "construction",
    "crm",
    "customs",
    "dairy",
    "dispatch",
    "energy",
    "events",
    "forestry",
    "franchise",
    "gallery",
    "grants",
    "hotel",
    "insurance",
    "laboratory",
    "leasing",
    "library",
    "logistics",
    "manufacturing",
    "media",
    "mining",
    "museum",
    "payroll",
    "pharmacy",
    "procurement",
    "publishing",
    "quality",
    "railway",
    "recruiting",
    "retail",
    "school",
    "shipping",
    "sports",
    "telecom",
    "tourism",
    "utilities",
    "warranty",
];

/// Entities the areas draw from: each area takes forty of them, so that most names recur in
/// several schemas, as `customer` or `invoice` do in real databases.
const SCALE_ENTITIES: [&str; 100] = [
    "account",
    "address",
    "agreement",
    "allocation",
    "appointment",
    "asset",
    "assignment",
    "audit_trail",
    "batch",
    "beneficiary",
    "bid",
    "branch",
    "calendar",
    "carrier",
    "case_file",
    "catalog_item",
    "certificate",
    "claim",
    "client",
    "collection",
    "complaint",
    "consignment",
    "contact",
    "container",
    "cost_center",
    "course",
    "credit_note",
    "currency",
    "customer",
    "deadline",
    "delivery",
    "deposit",
    "device",
    "document",
    "donation",
    "enrollment",
    "equipment",
    "estimate",
    "exhibit",
    "facility",
    "fee",
    "forecast",
    "grade",
    "guest",
    "incident",
    "inspection",
    "installment",
    "inventory",
    "invoice",
    "item",
    "journal",
    "lab_result",
    "location",
    "loan",
    "lot",
    "machine",
    "measurement",
    "meeting",
    "member",
    "membership",
    "order",
    "package",
    "partner",
    "patient",
    "payment",
    "permit",
    "plan",
    "policy",
    "price_list",
    "purchase",
    "receipt",
    "refund",
    "region",
    "registration",
    "rental",
    "report",
    "request",
    "reservation",
    "resource",
    "sample",
    "schedule",
    "season",
    "sensor",
    "session",
    "shift",
    "site",
    "sku",
    "staff",
    "subscription",
    "task",
    "team",
    "ticket",
    "transfer",
    "trip",
    "unit",
    "vendor",
    "visit",
    "voucher",
    "work_order",
    "zone",
];

/// Columns of main tables beyond the key, with comments (`{e}`: the entity in words).
const SCALE_COLUMNS: [(&str, &str, Option<&str>); 6] = [
    ("name", "text", Some("Name of the {e}")),
    ("status", "text", Some("open, active, closed or archived")),
    ("amount", "numeric(12,2)", None),
    ("created_at", "timestamptz", None),
    ("reference_code", "varchar(24)", Some("External reference of the {e}")),
    ("notes", "text", None),
];

/// A large made-up catalog: `schemas` areas (at most 50) of `per_schema` tables (at most 200):
/// forty entities per area, each a main table with columns, comments and a foreign key to the
/// area's previous entity, and satellites (`_history`, `_note`, `_attachment`, `_tag`)
/// referencing it. With 50 × 200 it is 10,000 tables; deterministic.
pub fn synthetic_scale_catalog(schemas: usize, per_schema: usize) -> Vec<crate::schema::Table> {
    use crate::schema::{Column, ForeignKey, Table};
    let col =
        |name: &str, ty: &str, comment: Option<String>| Column { name: name.into(), data_type: ty.into(), not_null: name == "id", comment };
    let mut out = Vec::new();
    for (a, area) in SCALE_AREAS.iter().take(schemas).enumerate() {
        let entities: Vec<&str> = (0..40).map(|i| SCALE_ENTITIES[(a * 17 + i * 3) % SCALE_ENTITIES.len()]).collect();
        let mut n = 0;
        'area: for (i, entity) in entities.iter().enumerate() {
            let words = entity.replace('_', " ");
            for suffix in SYNTHETIC_SATELLITES {
                if n == per_schema {
                    break 'area;
                }
                n += 1;
                let mut columns = vec![col("id", "bigint", None)];
                let mut foreign_keys = Vec::new();
                let (parent, parent_column) = if suffix.is_empty() {
                    for (name, ty, comment) in SCALE_COLUMNS {
                        columns.push(col(name, ty, comment.map(|c| c.replace("{e}", &words))));
                    }
                    match i.checked_sub(1).map(|p| entities[p]) {
                        Some(p) if p != *entity => (Some(p), format!("{p}_id")),
                        _ => (None, String::new()),
                    }
                } else {
                    columns.push(col("body", "text", None));
                    columns.push(col("recorded_at", "timestamptz", None));
                    columns.push(col("recorded_by", "text", Some(format!("Who recorded the {words}{}", suffix.replace('_', " ")))));
                    (Some(*entity), format!("{entity}_id"))
                };
                if let Some(parent) = parent {
                    columns.push(col(&parent_column, "bigint", None));
                    foreign_keys.push(ForeignKey {
                        columns: vec![parent_column],
                        references: format!("{area}.{parent}"),
                        ref_columns: vec!["id".into()],
                    });
                }
                out.push(Table {
                    schema: (*area).into(),
                    name: format!("{entity}{suffix}"),
                    kind: "table".into(),
                    comment: Some(format!("{words}{} records of the {area} department", suffix.replace('_', " "))),
                    columns,
                    primary_key: vec!["id".into()],
                    foreign_keys,
                });
            }
        }
    }
    out
}

/// The DDL that creates [`synthetic_scale_catalog`] in PostgreSQL: schemas, tables with keys,
/// and comments, in an order that creates every referenced table first. Each schema is dropped
/// and created again where its first table comes: give it whole schemas.
pub fn synthetic_scale_ddl(tables: &[crate::schema::Table]) -> String {
    let mut out = String::new();
    let mut schema = "";
    for t in tables {
        if t.schema != schema {
            schema = &t.schema;
            out.push_str(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};\n"));
        }
        let mut defs: Vec<String> =
            t.columns.iter().map(|c| format!("{} {}{}", c.name, c.data_type, if c.name == "id" { " PRIMARY KEY" } else { "" })).collect();
        for fk in &t.foreign_keys {
            defs.push(format!("FOREIGN KEY ({}) REFERENCES {} (id)", fk.columns.join(", "), fk.references));
        }
        out.push_str(&format!("CREATE TABLE {}.{} ({});\n", t.schema, t.name, defs.join(", ")));
        if let Some(comment) = &t.comment {
            out.push_str(&format!("COMMENT ON TABLE {}.{} IS '{comment}';\n", t.schema, t.name));
        }
        for c in &t.columns {
            if let Some(comment) = &c.comment {
                out.push_str(&format!("COMMENT ON COLUMN {}.{}.{} IS '{comment}';\n", t.schema, t.name, c.name));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_may_hold_quotes_commas_and_lines() {
        let r = read_csv("a,b\r\n\"x, \"\"y\"\"\nz\",2\n");
        assert_eq!(r, [vec!["a", "b"], vec!["x, \"y\"\nz", "2"]]);
        assert_eq!(read_csv("a,b"), [vec!["a", "b"]]);
    }

    #[test]
    fn braces_take_the_first_alternative() {
        assert_eq!(
            first_alternatives("SELECT {a.x, a.y}, n FROM a GROUP BY {} ORDER BY {b.z}"),
            "SELECT a.x, n FROM a GROUP BY a.x ORDER BY b.z"
        );
        assert_eq!(first_alternatives("SELECT 1"), "SELECT 1");
    }

    #[test]
    fn gold_tables_skip_ctes_and_keep_alternatives() {
        let gold = gold_tables(
            "WITH c AS (SELECT * FROM Orders) SELECT {c.id, c.n} FROM c JOIN public.\"Items\" i ON true GROUP BY {};\
             SELECT count(*) FROM orders;",
        );
        assert_eq!(gold, [BTreeSet::from(["orders".to_string(), "Items".to_string()]), BTreeSet::from(["orders".to_string()])]);
    }
}
