//! The DBA comparison report: one self-contained HTML page (inline CSS and SVG, no script, no
//! external asset) from benchmark result rows.
//!
//! Contents:
//! * Table 1 (as the paper's Table 1): one row per model × prompting × encoding, one column per
//!   operation (SELECT, INSERT, UPDATE, DELETE) and their mean.
//! * Table 2 (as the paper's Table 2): the same rows, one column per SELECT category.
//! * Three line charts: score against the sequence length l, the insert ratio b and the
//!   overlap o, one line per model × prompting × encoding.
//!
//! Every cell is the paper's metric over the samples it covers ([`score::aggregate`]): SELECT
//! samples β-weighted by empty/non-empty truth, INSERT/UPDATE/DELETE samples α-balanced by true
//! outcome. A chart point, and the "mean" column, is the unweighted mean of the per-operation
//! scores of the samples at that point, so each operation counts once however many samples it
//! has. All text (model names included) is HTML-escaped.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::score::{self, TruthClass};
use super::workload::SelectCategory;

/// One scored sample, as the glue reads it from the results table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    pub run: i64,
    pub model: String,
    pub encoding: String,
    pub prompting: String,
    /// `select`, `insert`, `update` or `delete`.
    pub operation: String,
    /// The SELECT category; `None` for other operations.
    pub category: Option<String>,
    /// l
    pub length: i64,
    /// b
    pub insert_ratio: f64,
    /// o
    pub overlap: f64,
    pub score: f64,
    /// The class of the true answer, which weights the sample (β for SELECT, α otherwise).
    pub truth: TruthClass,
}

/// Options of the page.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReportOptions {
    /// Page title; "pg_ask in-context database benchmark" when empty.
    pub title: String,
    /// A line under the title (e.g. the database and time of generation).
    pub subtitle: String,
}

const OPERATIONS: [&str; 4] = ["select", "insert", "update", "delete"];

/// Escape text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

type SeriesKey = (String, String, String); // (model, prompting, encoding)

/// The x coordinate of a row on a chart.
type XOf = fn(&ResultRow) -> f64;

fn series_key(r: &ResultRow) -> SeriesKey {
    (r.model.clone(), r.prompting.clone(), r.encoding.clone())
}

fn series_label(k: &SeriesKey) -> String {
    format!("{} · {} · {}", k.0, k.1, k.2)
}

/// The paper's metric over some rows, or `None` without rows.
fn metric<'a>(rows: impl IntoIterator<Item = &'a ResultRow>) -> Option<f64> {
    score::aggregate(rows.into_iter().map(|r| (r.truth, r.score)))
}

/// Unweighted mean over operations of each operation's metric.
fn mean_over_operations(rows: &[&ResultRow]) -> Option<f64> {
    let per_op: Vec<f64> =
        OPERATIONS.iter().filter_map(|op| metric(rows.iter().copied().filter(|r| r.operation.eq_ignore_ascii_case(op)))).collect();
    (!per_op.is_empty()).then(|| per_op.iter().sum::<f64>() / per_op.len() as f64)
}

fn cell(value: Option<f64>, n: usize) -> String {
    match value {
        Some(v) => format!("<td title=\"{n} samples\">{v:.3}</td>"),
        None => "<td class=\"na\">–</td>".to_string(),
    }
}

/// Render the page.
pub fn render_html(rows: &[ResultRow], options: &ReportOptions) -> String {
    let title = if options.title.trim().is_empty() { "pg_ask in-context database benchmark" } else { &options.title };
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(title),
        CSS,
        escape(title)
    );
    if !options.subtitle.is_empty() {
        let _ = writeln!(html, "<p class=\"sub\">{}</p>", escape(&options.subtitle));
    }
    let runs: BTreeSet<i64> = rows.iter().map(|r| r.run).collect();
    let models: BTreeSet<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    let _ = writeln!(
        html,
        "<p>{} scored samples from {} run(s) ({}) and {} model(s).</p>",
        rows.len(),
        runs.len(),
        escape(&runs.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
        models.len()
    );
    if rows.is_empty() {
        html.push_str("<p class=\"na\">No results yet.</p>\n</body>\n</html>\n");
        return html;
    }

    let mut groups: BTreeMap<SeriesKey, Vec<&ResultRow>> = BTreeMap::new();
    for r in rows {
        groups.entry(series_key(r)).or_default().push(r);
    }

    // Table 1.
    html.push_str("<h2>Table 1. Score by model, prompting, encoding and operation</h2>\n");
    html.push_str("<table id=\"table1\">\n<thead><tr><th>model</th><th>prompting</th><th>encoding</th>");
    for op in OPERATIONS {
        let _ = write!(html, "<th>{}</th>", op.to_uppercase());
    }
    html.push_str("<th>mean</th></tr></thead>\n<tbody>\n");
    for (key, group) in &groups {
        let _ = write!(html, "<tr><td>{}</td><td>{}</td><td>{}</td>", escape(&key.0), escape(&key.1), escape(&key.2));
        for op in OPERATIONS {
            let of_op: Vec<&ResultRow> = group.iter().copied().filter(|r| r.operation.eq_ignore_ascii_case(op)).collect();
            html.push_str(&cell(metric(of_op.iter().copied()), of_op.len()));
        }
        html.push_str(&cell(mean_over_operations(group), group.len()));
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table>\n");

    // Table 2.
    let mut categories: Vec<String> = SelectCategory::ALL.iter().map(|c| c.as_str().to_string()).collect();
    let extra: BTreeSet<&str> = rows.iter().filter_map(|r| r.category.as_deref()).filter(|c| !categories.iter().any(|k| k == c)).collect();
    categories.extend(extra.into_iter().map(str::to_string));
    html.push_str("<h2>Table 2. SELECT score by query category</h2>\n");
    html.push_str("<table id=\"table2\">\n<thead><tr><th>model</th><th>prompting</th><th>encoding</th>");
    for c in &categories {
        let _ = write!(html, "<th>{}</th>", escape(&c.replace('_', " ")));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for (key, group) in &groups {
        let _ = write!(html, "<tr><td>{}</td><td>{}</td><td>{}</td>", escape(&key.0), escape(&key.1), escape(&key.2));
        for c in &categories {
            let of_cat: Vec<&ResultRow> = group
                .iter()
                .copied()
                .filter(|r| r.operation.eq_ignore_ascii_case("select") && r.category.as_deref() == Some(c.as_str()))
                .collect();
            html.push_str(&cell(metric(of_cat.iter().copied()), of_cat.len()));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table>\n");

    // Charts.
    html.push_str("<h2>Score against the sampling parameters</h2>\n<div class=\"charts\">\n");
    let axes: [(&str, &str, XOf); 3] = [
        ("chart-l", "sequence length l", |r| r.length as f64),
        ("chart-b", "insert ratio b", |r| r.insert_ratio),
        ("chart-o", "overlap o", |r| r.overlap),
    ];
    for (id, label, x_of) in axes {
        let series: Vec<(String, Vec<(f64, f64)>)> = groups
            .iter()
            .map(|(key, group)| {
                let mut by_x: BTreeMap<u64, Vec<&ResultRow>> = BTreeMap::new();
                for r in group {
                    by_x.entry(x_of(r).to_bits()).or_default().push(r);
                }
                let mut points: Vec<(f64, f64)> =
                    by_x.into_iter().filter_map(|(x, rs)| mean_over_operations(&rs).map(|y| (f64::from_bits(x), y))).collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                (series_label(key), points)
            })
            .collect();
        html.push_str(&line_chart(id, &format!("score vs {label}"), label, &series));
    }
    html.push_str("</div>\n");
    html.push_str(
        "<p class=\"note\">Metric (InConDB): SELECT answers are scored by the Jaccard coefficient of the result sets, \
         times the mean prefix-Jaccard when the query has ORDER BY; a group's SELECT score is 0.9 × the mean over \
         samples with a non-empty true result + 0.1 × the mean over samples with an empty one. INSERT, UPDATE and \
         DELETE answers (Succeed/Fail) score 0.5 × accuracy on true Succeed + 0.5 × accuracy on true Fail. When one \
         of the two groups has no sample, the other counts alone. The mean column and the charts average the \
         operations' scores.</p>\n",
    );
    html.push_str("</body>\n</html>\n");
    html
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;color:#222;max-width:1200px}\
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}.sub{color:#555}\
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}\
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}\
th{background:#f3f3f3}td:nth-child(-n+3){text-align:left}.na{color:#999}\
.charts{display:flex;flex-wrap:wrap;gap:1.5em}.note{color:#555;font-size:.85em;max-width:60em}\
svg text{font-family:inherit}";

/// An SVG line chart with y in [0, 1], drawn by the chart module that draws answers' charts,
/// with the id the page's links and tests find it by.
fn line_chart(id: &str, title: &str, x_label: &str, series: &[(String, Vec<(f64, f64)>)]) -> String {
    let svg = crate::chart::line_svg(title, x_label, series, Some((0.0, 1.0)));
    let named = svg.replacen("<svg", &format!("<svg id=\"{id}\" role=\"img\" aria-label=\"{}\"", escape(title)), 1);
    format!("<figure>{named}</figure>\n")
}
