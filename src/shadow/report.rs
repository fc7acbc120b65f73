//! The DBA comparison report: the metric aggregate and `ask.benchmark_report_html()`.

use super::workload::internal;
use pg_ask_core::shadow::report::{render_html, ReportOptions, ResultRow};
use pg_ask_core::shadow::score::{aggregate, TruthClass};
use pgrx::prelude::*;
use serde_json::Value;

/// The paper's metric over a group of sample scores with their truth classes (`non_empty`,
/// `empty`, `succeed`, `fail`): SELECT samples β-weighted, modifications α-balanced.
#[pg_extern(immutable, parallel_safe)]
pub(crate) fn _metric(scores: Vec<Option<f64>>, classes: Vec<Option<String>>) -> Option<f64> {
    let samples = scores.into_iter().zip(classes).filter_map(|(s, c)| {
        let class: TruthClass = serde_json::from_value(Value::String(c?)).ok()?;
        Some((class, s?))
    });
    aggregate(samples)
}

pub(crate) fn report_rows(run_ids: Option<Vec<i64>>) -> Vec<ResultRow> {
    Spi::connect(|c| {
        let rows = c.select(
            "SELECT run, model, encoding, prompting, operation, select_category, length, insert_ratio, overlap, score, truth_class
               FROM ask.benchmark_results WHERE score IS NOT NULL AND ($1::bigint[] IS NULL OR run = ANY($1)) ORDER BY run, sample",
            None,
            &[run_ids.into()],
        )?;
        let mut out = Vec::new();
        for row in rows {
            let truth: Option<TruthClass> = row.get::<String>(11)?.and_then(|c| serde_json::from_value(Value::String(c)).ok());
            let Some(truth) = truth else { continue };
            out.push(ResultRow {
                run: row.get::<i64>(1)?.unwrap_or(0),
                model: row.get::<String>(2)?.unwrap_or_default(),
                encoding: row.get::<String>(3)?.unwrap_or_default(),
                prompting: row.get::<String>(4)?.unwrap_or_default(),
                operation: row.get::<String>(5)?.unwrap_or_default(),
                category: row.get::<String>(6)?,
                length: row.get::<i32>(7)?.unwrap_or(0) as i64,
                insert_ratio: row.get::<f64>(8)?.unwrap_or(0.0),
                overlap: row.get::<f64>(9)?.unwrap_or(0.0),
                score: row.get::<f64>(10)?.unwrap_or(0.0),
                truth,
            });
        }
        Ok::<_, pgrx::spi::Error>(out)
    })
    .unwrap_or_else(|e| internal("could not read the results", e))
}

/// One self-contained HTML page (inline CSS and SVG) comparing benchmark runs: the paper's
/// Table 1 and Table 2 and the score against l, b and o. NULL: every run.
#[pg_extern(stable, parallel_safe)]
pub(crate) fn benchmark_report_html(run_ids: default!(Option<Vec<i64>>, "NULL")) -> String {
    let rows = report_rows(run_ids);
    let subtitle = Spi::get_one::<String>("SELECT format('database %s, %s', current_database(), to_char(now(), 'YYYY-MM-DD HH24:MI TZ'))")
        .ok()
        .flatten()
        .unwrap_or_default();
    render_html(&rows, &ReportOptions { title: String::new(), subtitle })
}
