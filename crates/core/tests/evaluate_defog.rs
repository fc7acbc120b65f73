//! The gold SQL of defog's `questions_gen_postgres.csv`, read where it lies (never copied in):
//! every row must expand into at least one alternative that `sqlparser` parses as PostgreSQL
//! and that the read-only guard accepts, and the suite loader must take the rows as JSON.
//! Run with `--nocapture` for the counts per database and category.

use std::collections::BTreeMap;

use pg_ask_core::evaluate::{gold_alternatives, parse_suite_rows};
use pg_ask_core::guard::check_read_only;
use serde_json::{json, Value};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

const CSV: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/defog/questions_gen_postgres.csv");

struct Row {
    question: String,
    query: String,
    db_name: String,
    category: String,
    instructions: String,
}

fn rows() -> Vec<Row> {
    let mut reader = csv::Reader::from_path(CSV).unwrap_or_else(|e| panic!("{CSV}: {e}"));
    let headers = reader.headers().expect("a header").clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name} in {headers:?}"));
    let (q, sql, db, cat, ins) = (column("question"), column("query"), column("db_name"), column("query_category"), column("instructions"));
    reader
        .records()
        .map(|record| {
            let record = record.expect("a CSV record");
            Row {
                question: record[q].to_string(),
                query: record[sql].to_string(),
                db_name: record[db].to_string(),
                category: record[cat].to_string(),
                instructions: record[ins].to_string(),
            }
        })
        .collect()
}

#[test]
fn every_gold_field_yields_a_parsable_alternative() {
    let rows = rows();
    assert_eq!(rows.len(), 210, "the defog file has 210 questions");
    let dialect = PostgreSqlDialect {};
    let mut per_db: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut per_category: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let (mut alternatives_total, mut unparsable_alternatives, mut refused_alternatives) = (0, 0, 0);
    let (mut with_braces, mut with_several) = (0, 0);
    let mut failures = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let alternatives = match gold_alternatives(&row.query) {
            Ok(a) => a,
            Err(e) => {
                failures.push(format!("row {}: {e}", i + 2));
                continue;
            }
        };
        with_braces += usize::from(row.query.contains('{'));
        with_several += usize::from(alternatives.len() > 1);
        alternatives_total += alternatives.len();
        let mut usable = 0;
        for alternative in &alternatives {
            assert!(!alternative.contains('{') && !alternative.ends_with(';'), "{alternative}");
            match Parser::parse_sql(&dialect, alternative) {
                Ok(statements) if statements.len() == 1 => match check_read_only(alternative) {
                    Ok(_) => usable += 1,
                    Err(refusal) => {
                        refused_alternatives += 1;
                        println!("row {}: guard refuses {alternative:?}: {refusal}", i + 2);
                    }
                },
                Ok(statements) => panic!("{} statements in one alternative", statements.len()),
                Err(e) => {
                    unparsable_alternatives += 1;
                    println!("row {}: sqlparser cannot parse {alternative:?}: {e}", i + 2);
                }
            }
        }
        if usable == 0 {
            failures.push(format!("row {}: no usable alternative of {}", i + 2, alternatives.len()));
        }
        let entry = per_db.entry(&row.db_name).or_default();
        entry.0 += 1;
        entry.1 += alternatives.len();
        let entry = per_category.entry(&row.category).or_default();
        entry.0 += 1;
        entry.1 += alternatives.len();
    }
    println!("defog questions_gen_postgres.csv: {} questions, {alternatives_total} gold alternatives", rows.len());
    println!("  {with_braces} fields with {{…}} column choices, {with_several} with more than one alternative");
    println!("  {unparsable_alternatives} alternatives sqlparser cannot parse, {refused_alternatives} the guard refuses");
    println!("{:<16} {:>9} {:>12}", "db_name", "questions", "alternatives");
    for (db, (n, a)) in &per_db {
        println!("{db:<16} {n:>9} {a:>12}");
    }
    println!("{:<16} {:>9} {:>12}", "query_category", "questions", "alternatives");
    for (category, (n, a)) in &per_category {
        println!("{category:<16} {n:>9} {a:>12}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(per_db.len(), 11);
    assert_eq!(per_category.len(), 6);
    assert!(per_category.values().all(|(n, _)| *n == 35));
}

#[test]
fn known_rows_expand_as_defog_does() {
    let rows = rows();
    let first = gold_alternatives(&rows[0].query).unwrap();
    assert_eq!(first.len(), 3);
    assert!(first[0].starts_with("SELECT author.name FROM author WHERE"));
    assert!(first[1].starts_with("SELECT author.aid FROM author WHERE"));
    assert!(first[2].starts_with("SELECT author.name, author.aid FROM author WHERE"));
    assert!(first.iter().all(|q| q.ends_with("= 2)")));

    // Four `;`-separated queries (the last two identical), each with a column choice
    // that `GROUP BY {}` follows: 3 + 3 + 3 alternatives after de-duplication.
    let second = gold_alternatives(&rows[1].query).unwrap();
    assert_eq!(second.len(), 9, "{second:#?}");
    assert_eq!(
        second[0],
        "SELECT author.name, sum(publication.citation_num) AS total_citations FROM author \
         JOIN writes ON author.aid = writes.aid JOIN publication ON writes.pid = publication.pid \
         GROUP BY author.name ORDER BY total_citations DESC NULLS LAST"
    );
    assert!(second[5].starts_with("SELECT a.aid, a.name, COUNT(c.cited)"));
    assert!(second[5].ends_with("GROUP BY a.aid, a.name ORDER BY total_citations DESC"));
    assert!(second[8].ends_with("GROUP BY a.aid, a.name"));
}

#[test]
fn the_csv_loads_as_a_suite() {
    let rows = rows();
    let json: Value = rows
        .iter()
        .map(|r| {
            json!({
                "question": r.question,
                "query": r.query,
                "db_name": r.db_name,
                "query_category": r.category,
                "instructions": r.instructions,
            })
        })
        .collect();
    let suite = parse_suite_rows(&json).expect("the defog rows load");
    assert_eq!(suite.len(), 210);
    let instructed = suite.iter().filter(|q| q.instructions.is_some()).count();
    assert_eq!(instructed, rows.iter().filter(|r| !r.instructions.trim().is_empty()).count());
    assert!(suite.iter().all(|q| q.category.is_some() && q.schema.is_some()));
    let with_instructions = suite.iter().find(|q| q.instructions.is_some()).unwrap();
    assert!(with_instructions.prompt_text().starts_with(&with_instructions.question));
    assert!(with_instructions.prompt_text().len() > with_instructions.question.len());
}
