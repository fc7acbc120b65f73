//! The paper's metric on hand-made cases; every expected number is worked out in a comment.

use pg_ask_core::shadow::prompting::Answer;
use pg_ask_core::shadow::score::{
    aggregate, canonical_datetime, canonical_decimal, has_order_by, jaccard, mean_prefix_jaccard, normalize_value, run_modify_score,
    run_select_score, score_sample, select_score, NormValue, TruthClass,
};
use serde_json::{json, Value};

fn rows(v: Value) -> Vec<Vec<Value>> {
    v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().clone()).collect()
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

#[test]
fn jaccard_of_result_sets() {
    // {1,2,3} vs {1,2,4}: intersection 2, union 4.
    close(jaccard(&rows(json!([[1], [2], [3]])), &rows(json!([[1], [2], [4]]))), 0.5);
    // Both empty: 1 by definition; one empty: 0.
    close(jaccard(&[], &[]), 1.0);
    close(jaccard(&rows(json!([])), &rows(json!([[1]]))), 0.0);
    // Sets: duplicates collapse ({1} vs {1}).
    close(jaccard(&rows(json!([[1], [1]])), &rows(json!([[1]]))), 1.0);
    // Rows are tuples: (1,'a') ≠ (1,'b'); {(1,a),(2,b)} vs {(1,b),(2,b)}: 1/3.
    close(jaccard(&rows(json!([[1, "a"], [2, "b"]])), &rows(json!([[1, "b"], [2, "b"]]))), 1.0 / 3.0);
}

#[test]
fn order_by_multiplies_by_mean_prefix_jaccard() {
    let truth = rows(json!([[1], [2], [3]]));
    let swapped = rows(json!([[2], [1], [3]]));
    // Prefixes: {1}/{2} = 0, {1,2}/{2,1} = 1, {1,2,3}/{..} = 1 → mean 2/3; set Jaccard 1.
    close(mean_prefix_jaccard(&truth, &swapped), 2.0 / 3.0);
    close(select_score(&truth, &swapped, true), 2.0 / 3.0);
    close(select_score(&truth, &swapped, false), 1.0);
    // Truth [1,2], answer [1,2,3]: J = 2/3; prefixes over n = 3: 1, 1, 2/3 → 8/9; 2/3·8/9 = 16/27.
    let short = rows(json!([[1], [2]]));
    let long = rows(json!([[1], [2], [3]]));
    close(select_score(&short, &long, true), 16.0 / 27.0);
    close(select_score(&[], &[], true), 1.0);
}

#[test]
fn values_are_normalised_before_comparison() {
    let truth = rows(json!([[1, "2023-01-01T00:00:00", true, 20.5, null, "Ann"]]));
    let answer = rows(json!([["1.0", "2023-01-01", "TRUE", "20.50", null, "Ann"]]));
    close(jaccard(&truth, &answer), 1.0);
    // Strings stay case-sensitive, numbers are not rounded, 1 is not true.
    close(jaccard(&rows(json!([["Ann"]])), &rows(json!([["ann"]]))), 0.0);
    close(jaccard(&rows(json!([[0.3]])), &rows(json!([[0.30000000000000004]]))), 0.0);
    close(jaccard(&rows(json!([[true]])), &rows(json!([[1]]))), 0.0);
    assert_eq!(normalize_value(&json!("2024-05-01 10:30")), NormValue::Text("2024-05-01 10:30:00".into()));
    assert_eq!(normalize_value(&json!("2024-05-01T10:30:00.500Z")), NormValue::Text("2024-05-01 10:30:00.5+00".into()));
    assert_eq!(normalize_value(&json!({"a": 1})), NormValue::Text("{\"a\":1}".into()));
}

#[test]
fn decimals_and_datetimes_have_one_spelling() {
    for (input, expected) in [
        ("1", "1"),
        ("1.0", "1"),
        ("-0.0", "0"),
        ("0.00100", "0.001"),
        ("1e3", "1000"),
        ("12.5e-1", "1.25"),
        (".5", "0.5"),
        ("5.", "5"),
        ("+007", "7"),
        ("-12.340", "-12.34"),
        ("1E+2", "100"),
    ] {
        assert_eq!(canonical_decimal(input).as_deref(), Some(expected), "{input}");
    }
    for bad in ["", "-", ".", "abc", "1.2.3", "1e", "12a", "1 2"] {
        assert_eq!(canonical_decimal(bad), None, "{bad}");
    }
    assert_eq!(canonical_datetime("2023-01-01 00:00:00").as_deref(), Some("2023-01-01"));
    assert_eq!(canonical_datetime("2023-01-01T08:05:09").as_deref(), Some("2023-01-01 08:05:09"));
    assert_eq!(canonical_datetime("2023-01-01 08:05:09+02:00").as_deref(), Some("2023-01-01 08:05:09+02:00"));
    assert_eq!(canonical_datetime("2023-01-01x"), None);
    assert_eq!(canonical_datetime("January 1, 2023"), None);
}

#[test]
fn samples_of_any_kind() {
    let truth = Answer::Rows(rows(json!([[1], [2]])));
    close(score_sample(&truth, Some(&Answer::Rows(rows(json!([[2], [1]])))), false), 1.0);
    close(score_sample(&truth, Some(&Answer::Rows(rows(json!([[2], [1]])))), true), 0.5); // prefixes 0, 1
    close(score_sample(&truth, None, false), 0.0); // parse failure
    close(score_sample(&truth, Some(&Answer::Succeed), false), 0.0); // wrong kind
    close(score_sample(&Answer::Succeed, Some(&Answer::Succeed), false), 1.0);
    close(score_sample(&Answer::Fail, Some(&Answer::Succeed), false), 0.0);
    close(score_sample(&Answer::Fail, None, false), 0.0);
}

#[test]
fn run_scores_weight_the_two_groups() {
    // SELECT: 0.9 · mean(1, 0.5) + 0.1 · mean(0, 1) = 0.9·0.75 + 0.1·0.5 = 0.725.
    close(run_select_score(&[1.0, 0.5], &[0.0, 1.0]).unwrap(), 0.725);
    // Modify: 0.5 · mean(1,1,1,0) + 0.5 · mean(0,1) = 0.375 + 0.25 = 0.625.
    close(run_modify_score(&[1.0, 1.0, 1.0, 0.0], &[0.0, 1.0]).unwrap(), 0.625);
    // One group absent: the other counts alone (a perfect model scores 1, not 0.9).
    close(run_select_score(&[1.0, 0.0], &[]).unwrap(), 0.5);
    close(run_select_score(&[], &[1.0]).unwrap(), 1.0);
    close(run_modify_score(&[], &[0.0, 1.0, 1.0, 1.0]).unwrap(), 0.75);
    assert_eq!(run_select_score(&[], &[]), None);
    // aggregate sorts samples by class: SELECT 0.725 as above, modify 0.625, mean 0.675.
    let samples = [
        (TruthClass::NonEmpty, 1.0),
        (TruthClass::NonEmpty, 0.5),
        (TruthClass::Empty, 0.0),
        (TruthClass::Empty, 1.0),
        (TruthClass::Succeed, 1.0),
        (TruthClass::Succeed, 1.0),
        (TruthClass::Succeed, 1.0),
        (TruthClass::Succeed, 0.0),
        (TruthClass::Fail, 0.0),
        (TruthClass::Fail, 1.0),
    ];
    close(aggregate(samples).unwrap(), 0.675);
    close(aggregate(samples[..4].iter().copied()).unwrap(), 0.725);
    assert_eq!(aggregate([]), None);
    assert_eq!(TruthClass::of(&Answer::Rows(vec![])), TruthClass::Empty);
    assert_eq!(TruthClass::of(&Answer::Fail), TruthClass::Fail);
}

#[test]
fn order_by_is_detected_at_the_top_level_only() {
    assert!(has_order_by("SELECT UserID FROM Users ORDER BY CreatedAt DESC;"));
    assert!(has_order_by("(SELECT a FROM t ORDER BY a)"));
    assert!(has_order_by("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1"));
    assert!(!has_order_by("SELECT a FROM (SELECT a FROM t ORDER BY a) s"));
    assert!(!has_order_by("SELECT COUNT(*) FROM t WHERE note = 'ORDER BY'"));
    assert!(!has_order_by("not sql at all"));
    assert!(!has_order_by("DELETE FROM t"));
}
