//! Execution accuracy: the comparison rules, judging through a host, and the suite report.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use pg_ask_core::ask::ExecFailure;
use pg_ask_core::evaluate::{
    asks_for_order, compare_results, judge, parse_suite_rows, summarize, EvalHost, GroupBy, JudgeError, Mismatch, QuestionRecord,
    RecordOutcome, RowOrder,
};
use pg_ask_core::rows::ResultSet;
use serde_json::{json, Value};

fn rs(columns: &[&str], rows: Value) -> ResultSet {
    ResultSet {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: rows.as_array().unwrap().iter().map(|r| r.as_array().unwrap().clone()).collect(),
        truncated: false,
        size_cut: false,
    }
}

use RowOrder::{Ordered, Unordered};

#[test]
fn rows_are_multisets_unless_the_gold_orders() {
    let gold = rs(&["name", "n"], json!([["a", 1], ["b", 2], ["b", 2]]));
    let shuffled = rs(&["x", "y"], json!([["b", 2], ["a", 1], ["b", 2]]));
    assert!(compare_results(&gold, &shuffled, Unordered).is_ok());
    assert_eq!(compare_results(&gold, &shuffled, Ordered), Err(Mismatch::Order));
    // Duplicates count.
    let deduplicated = rs(&["name", "n"], json!([["a", 1], ["b", 2]]));
    assert_eq!(compare_results(&gold, &deduplicated, Unordered), Err(Mismatch::RowCount { gold: 3, predicted: 2 }));
    let other_multiset = rs(&["name", "n"], json!([["a", 1], ["a", 1], ["b", 2]]));
    assert!(compare_results(&gold, &other_multiset, Unordered).is_err());
}

#[test]
fn values_are_normalised() {
    let gold =
        rs(&["id", "avg", "total", "flag", "note"], json!([[1, 3.3333333333333335, "12.50", true, null], [2, 0.1, "7", false, "x"]]));
    let predicted = rs(
        &["id", "avg", "total", "flag", "note"],
        json!([["2", "0.1000000", 7.0, false, "x"], [1.0, "3.3333333333333333", 12.5, true, null]]),
    );
    assert_eq!(compare_results(&gold, &predicted, Unordered).unwrap().mapping, [0, 1, 2, 3, 4]);
    // A rounded average is another value; text is exact; booleans are not numbers.
    for (column, value) in [(1, json!(3.33)), (4, json!("X")), (3, json!(1)), (0, json!(null))] {
        let mut changed = predicted.clone();
        changed.rows[1][column] = value.clone();
        assert!(compare_results(&gold, &changed, Unordered).is_err(), "column {column} = {value} should not match");
    }
}

#[test]
fn columns_may_be_permuted_or_extra_but_not_missing() {
    let gold = rs(&["name", "total"], json!([["ann", 10], ["bob", 7]]));
    let permuted = rs(&["total", "name"], json!([[7, "bob"], [10, "ann"]]));
    assert_eq!(compare_results(&gold, &permuted, Unordered).unwrap().mapping, [1, 0]);
    let extra = rs(&["id", "total", "name"], json!([[2, 7, "bob"], [1, 10, "ann"]]));
    assert_eq!(compare_results(&gold, &extra, Ordered).unwrap_err(), Mismatch::Order);
    assert_eq!(compare_results(&gold, &extra, Unordered).unwrap().mapping, [2, 1]);
    let fewer = rs(&["name"], json!([["ann"], ["bob"]]));
    assert_eq!(compare_results(&gold, &fewer, Unordered), Err(Mismatch::TooFewColumns { gold: 2, predicted: 1 }));
    let wrong_total = rs(&["name", "total"], json!([["ann", 10], ["bob", 8]]));
    assert_eq!(compare_results(&gold, &wrong_total, Unordered), Err(Mismatch::MissingColumn { position: 2, name: "total".into() }));
}

#[test]
fn columns_must_pair_up_row_by_row() {
    // Each gold column has a predicted column with the same values, but the pairs differ.
    let gold = rs(&["name", "n"], json!([["ann", 1], ["bob", 2]]));
    let crossed = rs(&["name", "n"], json!([["ann", 2], ["bob", 1]]));
    assert_eq!(compare_results(&gold, &crossed, Unordered), Err(Mismatch::Rows));
    // Two equal-valued columns: the assignment search finds the one that works.
    let gold = rs(&["a", "b"], json!([[1, 2], [2, 1]]));
    let swapped = rs(&["b", "a", "c"], json!([[2, 1, 0], [1, 2, 0]]));
    assert_eq!(compare_results(&gold, &swapped, Ordered).unwrap().mapping, [1, 0]);
}

#[test]
fn tolerant_numbers_match_across_sort_order() {
    // Sorted by the first column the rows pair up wrongly; tolerant matching pairs them right.
    let gold = rs(&["x", "t"], json!([[1.0000001, "b"], [1.0, "a"]]));
    let predicted = rs(&["x", "t"], json!([[1.0, "b"], [1.0000001, "a"]]));
    assert!(compare_results(&gold, &predicted, Unordered).is_ok());
}

#[test]
fn empty_and_truncated_results() {
    let empty_gold = rs(&["a", "b"], json!([]));
    assert!(compare_results(&empty_gold, &rs(&["x", "y", "z"], json!([])), Unordered).is_ok());
    assert!(compare_results(&empty_gold, &rs(&["x"], json!([])), Unordered).is_err());
    let mut cut = rs(&["a"], json!([[1]]));
    cut.truncated = true;
    assert_eq!(compare_results(&rs(&["a"], json!([[1]])), &cut, Unordered), Err(Mismatch::Truncated("predicted")));
}

/// A database whose answer to a query is a function of the query's text with `{`-free,
/// whitespace-normalised SQL, so that the same query always returns the same rows and
/// different queries (almost surely) different ones. Queries containing `broken` fail.
struct HashDb {
    executed: Vec<String>,
}

impl EvalHost for HashDb {
    fn execute(&mut self, sql: &pg_ask_core::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        self.executed.push(sql.to_string());
        if sql.sql.contains("broken") {
            return Err(ExecFailure::Error {
                sqlstate: "42P01".into(),
                message: "relation \"broken\" does not exist".into(),
                detail: None,
                hint: None,
            });
        }
        let mut h = DefaultHasher::new();
        sql.sql.split_whitespace().collect::<Vec<_>>().join(" ").hash(&mut h);
        let v = h.finish() % 1_000_000;
        Ok(rs(&["value", "half"], json!([[v, v as f64 / 2.0], [v + 1, "x"]])))
    }
    fn execute_verified(&mut self, sql: &pg_ask_core::guard::CheckedSql, _: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.execute(sql)
    }
}

#[test]
fn judging_through_a_host() {
    let mut db = HashDb { executed: vec![] };
    let gold = "SELECT {a.x, a.y} FROM a; SELECT b.x FROM b;";
    let j = judge(&mut db, gold, "SELECT b.x FROM  b", false);
    assert!(j.ex);
    assert_eq!(j.matched_alternative, Some(3), "a.x, a.y, (a.x, a.y), then b.x");

    let j = judge(&mut db, gold, "SELECT a.y FROM a ;", false);
    assert_eq!((j.ex, j.matched_alternative), (true, Some(1)));

    let j = judge(&mut db, gold, "SELECT c FROM c", false);
    assert!(!j.ex);
    assert!(matches!(j.error, Some(JudgeError::WrongResult(_))), "{j:?}");

    let j = judge(&mut db, gold, "DELETE FROM a", false);
    assert!(matches!(j.error, Some(JudgeError::PredictionRefused(ref m)) if m.contains("DELETE")), "{j:?}");
    db.executed.clear();
    let j = judge(&mut db, gold, "SELECT * FROM broken", false);
    assert!(matches!(j.error, Some(JudgeError::PredictionFailed(ref m)) if m.contains("does not exist")));
    assert_eq!(db.executed.len(), 2, "the prediction, then one gold query to see that it runs");

    let j = judge(&mut db, "SELECT * FROM broken; DROP TABLE a", "SELECT 1", false);
    assert!(matches!(j.error, Some(JudgeError::GoldFailed(ref m)) if m.contains("does not exist") && m.contains("refused")), "{j:?}");
    assert!(judge(&mut db, "SELECT {a", "SELECT 1", false).error.unwrap().is_gold_failure());
}

/// Rows of `t` in the order its query asks for: sorted with `ORDER BY`, reversed without.
struct OrderedDb;

impl EvalHost for OrderedDb {
    fn execute(&mut self, sql: &pg_ask_core::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        if sql.sql.to_lowercase().contains("order by") {
            Ok(rs(&["x"], json!([[1], [2], [3]])))
        } else {
            Ok(rs(&["x"], json!([[3], [2], [1]])))
        }
    }
    fn execute_verified(&mut self, sql: &pg_ask_core::guard::CheckedSql, _: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.execute(sql)
    }
}

#[test]
fn row_order_counts_only_where_the_question_asks_for_one() {
    // sql-eval's rule: the category order_by, or the words order, sort, arrange.
    assert!(!asks_for_order("List the rivers sorted by length", None), "sorted is not sort");
    assert!(asks_for_order("Sort the rivers by length", None));
    assert!(asks_for_order("rivers, in ORDER of length", None));
    assert!(asks_for_order("Arrange the rivers by length", None));
    assert!(asks_for_order("What is the average length of rivers in each country?", Some("order_by")));
    assert!(!asks_for_order("How many orders did each customer place?", Some("group_by")));
    assert!(!asks_for_order("What is the average length of rivers in each country?", None));

    let gold = "SELECT x FROM t ORDER BY x";
    let j = judge(&mut OrderedDb, gold, "SELECT x FROM t", false);
    assert!(j.ex, "a gold ORDER BY the question does not ask for leaves the rows a multiset: {j:?}");
    let j = judge(&mut OrderedDb, gold, "SELECT x FROM t", true);
    assert!(matches!(j.error, Some(JudgeError::WrongResult(ref m)) if m.contains("order")), "{j:?}");
    assert!(judge(&mut OrderedDb, gold, "SELECT x FROM t ORDER BY x", true).ex);
    // A gold without ORDER BY never judges order, asked or not.
    assert!(judge(&mut OrderedDb, "SELECT x FROM t", "SELECT x FROM t ORDER BY x", true).ex);
}

const CSV: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/defog/questions_gen_postgres.csv");

/// The defog suite with a stand-in model that answers every third question with one of its
/// gold alternatives (the last one, reformatted) and the rest with wrong SQL: the measured EX
/// is known in advance, overall and per category.
#[test]
fn defog_suite_with_a_stand_in_model_measures_the_expected_ex() {
    let mut reader = csv::Reader::from_path(CSV).unwrap();
    let rows: Vec<Value> = reader.deserialize::<std::collections::HashMap<String, String>>().map(|r| json!(r.unwrap())).collect();
    let suite = parse_suite_rows(&Value::Array(rows)).unwrap();
    let mut db = HashDb { executed: vec![] };
    let mut records = Vec::new();
    let mut expected_per_category: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for (i, q) in suite.iter().enumerate() {
        let right = i % 3 == 0;
        let predicted = if right {
            format!("  {}\n;", q.gold_alternatives.last().unwrap().replace(' ', "\n  "))
        } else {
            format!("SELECT {i} AS wrong")
        };
        let judgement = judge(&mut db, &q.gold_sql, &predicted, asks_for_order(&q.question, q.category.as_deref()));
        let entry = expected_per_category.entry(q.category.clone().unwrap()).or_default();
        entry.0 += 1;
        entry.1 += usize::from(right);
        records.push(QuestionRecord::judged(
            &q.question,
            q.category.as_deref(),
            q.difficulty.as_deref(),
            q.gold_alternatives.clone(),
            &predicted,
            &judgement,
            150,
            12.5,
        ));
    }
    let report = summarize(&records, GroupBy::Category);
    assert_eq!(report.overall.questions, 210);
    assert_eq!(report.overall.correct, 70);
    assert_eq!(report.overall.gold_failed, 0);
    assert!((report.overall.ex - 70.0 / 210.0).abs() < 1e-12);
    assert_eq!(report.overall.tokens, 210 * 150);
    assert_eq!(report.groups.len(), 6);
    for group in &report.groups {
        let (n, right) = expected_per_category[&group.group];
        assert_eq!((group.questions, group.correct), (n, right), "{}", group.group);
    }
    assert!(records.iter().all(|r| r.ex == (r.outcome == RecordOutcome::Correct)));
    let text = report.render_text();
    println!("{text}");
    assert!(text.lines().last().unwrap().starts_with("all "));
    assert_eq!(text.lines().count(), 8);
}

#[test]
fn report_counts_errors_and_leaves_broken_questions_out() {
    let record = |category: &str, outcome: RecordOutcome| QuestionRecord {
        question: "q".into(),
        category: Some(category.into()),
        difficulty: None,
        gold_alternatives: vec!["SELECT 1".into()],
        predicted_sql: (outcome != RecordOutcome::PredictionError).then(|| "SELECT 1".into()),
        ex: outcome == RecordOutcome::Correct,
        outcome,
        error: None,
        tokens: 10,
        ms: 4.0,
    };
    let records = vec![
        record("join", RecordOutcome::Correct),
        record("join", RecordOutcome::WrongResult),
        record("join", RecordOutcome::GoldFailed),
        record("ratio", RecordOutcome::PredictionError),
        QuestionRecord::unanswered("q", Some("ratio"), None, vec![], "no SQL", 5, 1.0),
    ];
    let report = summarize(&records, GroupBy::Category);
    let join = &report.groups[0];
    assert_eq!((join.group.as_str(), join.questions, join.judged, join.correct, join.errors), ("join", 3, 2, 1, 0));
    assert!((join.ex - 0.5).abs() < 1e-12);
    let ratio = &report.groups[1];
    assert_eq!((ratio.judged, ratio.correct, ratio.errors, ratio.tokens), (2, 0, 2, 15));
    assert_eq!((report.overall.judged, report.overall.correct), (4, 1));
    let by_difficulty = summarize(&records, GroupBy::Difficulty);
    assert_eq!(by_difficulty.groups.len(), 1);
    assert_eq!(by_difficulty.groups[0].group, "(none)");
    let json = serde_json::to_value(&records[3]).unwrap();
    assert_eq!(json["outcome"], "prediction_error");
}
