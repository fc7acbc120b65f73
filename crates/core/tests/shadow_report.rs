//! The HTML comparison report: structure, numbers, escaping, self-containment.

use pg_ask_core::shadow::report::{escape, render_html, ReportOptions, ResultRow};
use pg_ask_core::shadow::score::TruthClass;

#[allow(clippy::too_many_arguments)]
fn row(model: &str, prompting: &str, op: &str, cat: Option<&str>, l: i64, o: f64, score: f64, truth: TruthClass) -> ResultRow {
    ResultRow {
        run: 1,
        model: model.into(),
        encoding: "sql".into(),
        prompting: prompting.into(),
        operation: op.into(),
        category: cat.map(str::to_string),
        length: l,
        insert_ratio: 0.5,
        overlap: o,
        score,
        truth,
    }
}

fn rows() -> Vec<ResultRow> {
    use TruthClass::*;
    vec![
        // SELECT for model A: non-empty mean(1, 0.5) = 0.75, empty mean(0) = 0 → 0.9·0.75 = 0.675.
        row("model-a", "few_shot", "select", Some("count"), 5, 0.2, 1.0, NonEmpty),
        row("model-a", "few_shot", "select", Some("ranking"), 10, 0.8, 0.5, NonEmpty),
        row("model-a", "few_shot", "select", Some("count"), 10, 0.8, 0.0, Empty),
        // INSERT for model A: succeed 1/1, fail 0/1 → 0.5.
        row("model-a", "few_shot", "insert", None, 5, 0.2, 1.0, Succeed),
        row("model-a", "few_shot", "insert", None, 10, 0.8, 0.0, Fail),
        row("<script>alert('x')</script>", "zero_shot", "delete", None, 5, 0.2, 1.0, Succeed),
    ]
}

#[test]
fn report_has_tables_charts_and_the_right_numbers() {
    let html = render_html(&rows(), &ReportOptions { title: "Bench & co".into(), subtitle: "db <x>".into() });
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    assert!(html.contains("<title>Bench &amp; co</title>"));
    assert!(html.contains("db &lt;x&gt;"));
    assert!(html.contains("<table id=\"table1\">") && html.contains("<table id=\"table2\">"));
    for id in ["chart-l", "chart-b", "chart-o"] {
        assert!(html.contains(&format!("<svg id=\"{id}\"")), "{id}");
    }
    assert_eq!(html.matches("<svg").count(), 3);
    assert!(html.contains("<polyline"), "series with several points are drawn as lines");
    // Table 1, model A: SELECT 0.675, INSERT 0.500, mean (0.675 + 0.5) / 2 = 0.5875 → 0.588 (UPDATE/DELETE empty).
    let table1 = &html[html.find("id=\"table1\"").unwrap()..html.find("id=\"table2\"").unwrap()];
    let a_row = table1.lines().find(|l| l.contains("model-a")).unwrap();
    assert!(a_row.contains(">0.675<") && a_row.contains(">0.500<") && a_row.contains(">0.588<"), "{a_row}");
    assert_eq!(a_row.matches("class=\"na\"").count(), 2);
    // Table 2, model A: count = non-empty 1 and empty 0 → 0.9; ranking = 0.5; others empty.
    let table2 = &html[html.find("id=\"table2\"").unwrap()..];
    let a_row = table2.lines().find(|l| l.contains("model-a")).unwrap();
    assert!(a_row.contains(">0.900<") && a_row.contains(">0.500<"), "{a_row}");
    assert_eq!(a_row.matches("class=\"na\"").count(), 8);
    for c in ["no filtering", "three table", "ranking"] {
        assert!(table2.contains(&format!("<th>{c}</th>")), "{c}");
    }
}

#[test]
fn hostile_text_is_escaped_and_nothing_is_fetched() {
    let html = render_html(&rows(), &ReportOptions::default());
    assert!(!html.contains("<script"), "no raw script tag");
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    for external in ["src=", "href=", "@import", "url(", "<link", "<script"] {
        assert!(!html.contains(external), "external reference {external}");
    }
    assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

/// `SHADOW_REPORT_OUT=/tmp/report.html cargo test -p pg_ask_core --test shadow_report` writes a
/// larger sample page to look at in a browser.
#[test]
fn sample_page_can_be_written_for_a_look() {
    let Some(path) = std::env::var_os("SHADOW_REPORT_OUT") else { return };
    let mut rows = Vec::new();
    for (m, model) in ["gpt-4o", "llama3.1:8b"].iter().enumerate() {
        for (p, prompting) in ["zero_shot", "few_shot"].iter().enumerate() {
            for l in [5, 10, 20, 40] {
                for (k, op) in ["select", "insert", "update", "delete"].iter().enumerate() {
                    let score = (1.0 - l as f64 / 60.0 - 0.15 * m as f64 + 0.1 * p as f64 - 0.05 * k as f64).clamp(0.0, 1.0);
                    let truth = if *op == "select" { TruthClass::NonEmpty } else { TruthClass::Succeed };
                    let cat = (*op == "select").then_some(["count", "ranking", "three_table"][l as usize % 3]);
                    let mut r = row(model, prompting, op, cat, l, 0.25 * (k as f64), score, truth);
                    r.insert_ratio = 0.2 * (1 + k) as f64;
                    rows.push(r);
                }
            }
        }
    }
    std::fs::write(path, render_html(&rows, &ReportOptions::default())).unwrap();
}

#[test]
fn empty_input_still_renders_a_page() {
    let html = render_html(&[], &ReportOptions::default());
    assert!(html.contains("No results yet"));
    assert!(html.trim_end().ends_with("</html>"));
}
