//! The SQL in plain words over the sample database's whole question suite: every gold query is
//! described; the tables the description names are exactly those the guard finds it reads, and
//! every line names what the structure says — each table in some line, each filtered column in
//! a line that keeps rows, each grouping column in a "for each" line, the limit in a line.

use pg_ask_core::guard::check_read_only;
use pg_ask_core::plain::describe;

#[test]
fn every_sample_question_is_said_in_words_that_match_its_sql() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/questions.json");
    let suite: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(suite.len() >= 40);
    for q in &suite {
        let sql = q["gold_sql"].as_str().unwrap();
        let plain = describe(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let text = plain.text();
        let mut read = check_read_only(sql).unwrap().tables;
        read.sort();
        read.dedup();
        let mut named = plain.tables.clone();
        named.sort();
        named.dedup();
        assert_eq!(named, read, "{sql}\n{text}");
        for t in &plain.tables {
            assert!(text.contains(t.as_str()), "{sql}: table {t} in no line\n{text}");
        }
        for c in &plain.filter_columns {
            assert!(
                plain
                    .lines
                    .iter()
                    .any(|l| l.contains(c.as_str()) && (l.contains("Keeps") || l.contains("whose") || l.contains("matching"))),
                "{sql}: filtered column {c} in no line that keeps rows\n{text}"
            );
        }
        for c in &plain.group_columns {
            assert!(
                plain.lines.iter().any(|l| l.contains(c.as_str()) && (l.contains("For each") || l.contains("for each") || l.contains("one row for each"))),
                "{sql}: grouping column {c} in no 'for each' line\n{text}"
            );
        }
        if let Some(n) = plain.limit {
            let said = if n == 1 { text.contains("first row") || text.contains("1 row") } else { text.contains(&n.to_string()) };
            assert!(said, "{sql}: limit {n} in no line\n{text}");
        }
        assert!(plain.lines.iter().all(|l| !l.contains('\n') && l.ends_with('.')), "{text}");
    }
}
