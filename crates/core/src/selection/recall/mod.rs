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

mod ddl;
mod defog;
mod gold;
mod stored;
mod synthetic;

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;

use crate::selection::describe::{baseline_schema_text, baseline_table_text, TableProfile};
use crate::selection::fuse::{cosine, Catalog, Cosines, Fusion, SelectError, SelectOptions};

pub use ddl::{apply_column_descriptions, tables_from_ddl, EvalError};
pub use defog::{load_defog, read_csv, DefogError, DEFOG_DATABASES};
pub use gold::{first_alternatives, gold_tables, EvalCase};
pub use stored::{stored_recall, STORED_CANDIDATES};
pub use synthetic::{synthetic_scale_catalog, synthetic_scale_ddl, SYNTHETIC_AREAS, SYNTHETIC_QUESTIONS, SYNTHETIC_SATELLITES};

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

/// The [`EVAL_TABLES`] tables `ask()` retrieves for `question` ([`Catalog::select_as_asked`]).
fn as_asked(catalog: &Catalog, question: &str, tables: &Cosines, schemas: &Cosines, fusion: Fusion) -> Result<Vec<String>, SelectError> {
    let asked = catalog.select_as_asked(question, tables, schemas, EVAL_TABLES, fusion)?;
    Ok(asked.map(|a| a.retrieved().take(EVAL_TABLES).map(str::to_string).collect()).unwrap_or_default())
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
            let top = as_asked(catalog, &case.question, &table_cos, &schema_cos, fusion)?;
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

#[cfg(test)]
mod tests;
