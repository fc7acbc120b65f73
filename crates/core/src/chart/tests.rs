use serde_json::{json, Value};

use super::*;

fn cols(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

fn rows(v: Value) -> Vec<Vec<Value>> {
    v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().clone()).collect()
}

#[test]
fn years_as_numbers_give_a_line_in_time_order() {
    let r = rows(json!([[2023, 4], [2021, 2], [2022, 7]]));
    let c = plan("reviews per year", &cols(&["year", "reviews"]), &r).unwrap();
    assert_eq!(c.x, XAxis::Time { unit: TimeUnit::Number, points: vec![2021.0, 2022.0, 2023.0] });
    assert_eq!(c.series, vec![Series { name: "reviews".into(), values: vec![Some(2.0), Some(7.0), Some(4.0)] }]);
    let s = svg(&c);
    assert!(s.starts_with("<svg") && s.contains("reviews per year") && s.contains("2022"), "{s}");
    assert!(s.contains("<polyline") || s.contains("<path"), "a line: {s}");
}

#[test]
fn text_gives_bars_in_the_result_order() {
    let r = rows(json!([["Italian", 4.5], ["Japanese", 4.25], ["Mexican", null]]));
    let c = plan("average rating per cuisine", &cols(&["cuisine", "avg_rating"]), &r).unwrap();
    assert_eq!(c.x, XAxis::Categories(vec!["Italian".into(), "Japanese".into(), "Mexican".into()]));
    let s = svg(&c);
    assert!(s.contains("Italian") && s.contains("Japanese") && s.contains("avg_rating"), "{s}");
    // Two bars: NULL draws none.
    assert_eq!(
        s.matches("<rect").count()
            - svg(&plan("t", &cols(&["c", "n"]), &rows(json!([["a", 1], ["b", 2]]))).unwrap()).matches("<rect").count(),
        0
    );
}

#[test]
fn dates_and_months_are_times() {
    let r = rows(json!([["2024-03-01", 5], ["2024-01-01", 3], ["2024-02-01", 4]]));
    let c = plan("orders per month", &cols(&["month", "orders"]), &r).unwrap();
    let XAxis::Time { unit: TimeUnit::Days, points } = &c.x else { panic!("{c:?}") };
    assert!(points.windows(2).all(|w| w[0] < w[1]));
    assert!(svg(&c).contains("2024-02"));
    assert_eq!(days_of("1970-01-02"), Some(1.0));
    assert_eq!(days_of("2024-03"), days_of("2024-03-01"));
    assert_eq!(days_of("2024-03-01 12:00:00+02"), Some(days_of("2024-03-01").unwrap() + 0.5));
    assert_eq!(days_of("2024-13-01"), None);
    assert_eq!(days_of("Tokyo"), None);
    assert_eq!(civil_from_days(days_of("2000-02-29").unwrap() as i64), (2000, 2, 29));
}

#[test]
fn results_that_do_not_suit_a_chart_get_none_with_the_reason() {
    let one = rows(json!([[68]]));
    assert_eq!(plan("t", &cols(&["count"]), &one), Err(NoChart::TooFewRows(1)));
    let names = rows(json!([["Roma", "LA"], ["Nona", "SF"]]));
    assert!(matches!(plan("t", &cols(&["name", "city"]), &names), Err(NoChart::TwoAxes(..))));
    let text_only = rows(json!([["Roma"], ["Nona"]]));
    assert_eq!(plan("t", &cols(&["name"]), &text_only), Err(NoChart::NoNumbers));
    let numbers = rows(json!([[1, 2.5], [2, 3.5]]));
    assert_eq!(plan("t", &cols(&["price", "rating"]), &numbers), Err(NoChart::NoAxis));
    let ids = rows(json!([["a", 1], ["b", 2]]));
    assert_eq!(plan("t", &cols(&["name", "customer_id"]), &ids), Err(NoChart::NoNumbers));
    let repeated = rows(json!([["a", 1], ["a", 2]]));
    assert_eq!(plan("t", &cols(&["name", "n"]), &repeated), Err(NoChart::Repeated("a".into())));
    let many: Vec<Vec<Value>> = (0..41).map(|i| vec![json!(format!("c{i}")), json!(i)]).collect();
    assert_eq!(plan("t", &cols(&["c", "n"]), &many), Err(NoChart::TooManyRows { rows: 41, most: MAX_BARS }));
    let flags = rows(json!([[true, 1], [false, 2]]));
    assert_eq!(plan("t", &cols(&["open", "n"]), &flags), Err(NoChart::NoAxis));
    for e in [NoChart::NoAxis, NoChart::TooFewRows(0), NoChart::Repeated("x".into())] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn data_cannot_break_out_of_the_svg() {
    let r = rows(json!([["<script>alert(1)</script>", 1], ["a\"b&c", 2]]));
    let s = svg(&plan("<title>", &cols(&["n<ame", "v"]), &r).unwrap());
    assert!(!s.contains("<script") && !s.contains("<title>") && !s.contains("n<ame"), "{s}");
}

#[test]
fn several_series_get_a_legend() {
    let r = rows(json!([["2024-01-01", 1, 2.0], ["2024-01-02", 3, 1.5]]));
    let c = plan("t", &cols(&["day", "orders", "refunds"]), &r).unwrap();
    assert_eq!(c.series.len(), 2);
    let s = svg(&c);
    assert!(s.contains("orders") && s.contains("refunds"), "{s}");
}

#[test]
fn the_report_line_chart_keeps_its_range() {
    let s = line_svg("score vs rows", "rows", &[("a".into(), vec![(1.0, 0.5), (2.0, 0.75)])], Some((0.0, 1.0)));
    assert!(s.contains("score vs rows") && s.contains("0.5"), "{s}");
}

#[test]
fn an_empty_title_says_what_is_drawn() {
    let r = rows(json!([[2023, 4, 1], [2024, 2, 3]]));
    assert_eq!(plan("", &cols(&["year", "reviews", "stars"]), &r).unwrap().title, "reviews and stars by year");
    assert_eq!(plan(" mine ", &cols(&["year", "reviews"]), &r).unwrap().title, "mine");
}

/// Numbers at the edge of f64 never reach plotters' tick loop, which runs forever on an
/// infinite or too narrow range: a chart of them is refused, a flat series of large ones drawn.
#[test]
fn numbers_plotters_cannot_lay_out_are_refused_and_flat_large_ones_drawn() {
    for r in [json!([["a", 1e308], ["b", -1e308]]), json!([["a", 1.7e308], ["b", 1]])] {
        assert_eq!(plan("t", &cols(&["x", "v"]), &rows(r)), Err(NoChart::OutOfRange));
    }
    assert_eq!(plan("t", &cols(&["year", "v"]), &rows(json!([[2020, 1.7e308], [2021, 1]]))), Err(NoChart::OutOfRange));
    let flat = plan("t", &cols(&["year", "v"]), &rows(json!([[2020, 1e20], [2021, 1e20]]))).unwrap();
    assert!(svg(&flat).starts_with("<svg"));
    let near = plan("t", &cols(&["year", "v"]), &rows(json!([[1e15, 1], [1e15 + 1.0, 2]]))).unwrap();
    assert!(svg(&near).starts_with("<svg"));
    assert_eq!(svg::drawable(f64::MAX, f64::INFINITY), (0.0, 1.0));
    assert_eq!(svg::drawable(5.0, 5.0), (4.0, 6.0));
    let _ = line_svg("t", "x", &[("a".into(), vec![(1e300, 0.5), (1e300, 0.6)])], Some((0.0, 1.0)));
}
