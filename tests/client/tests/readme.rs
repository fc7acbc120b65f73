//! The README's first transcript is the sample database's real output: its SQL, run over the
//! sample as a role that may read it, returns rows from which pg_ask says exactly the answer
//! the README shows (`pg_ask_core::grounded::said_by_rows`, what `ask()` says without a model
//! call). A README that invents restaurants, or shows an answer in a shape pg_ask does not
//! write, fails here. (The default model's own SQL for the same question is held to these rows
//! in `default_model.rs`.)

use pg_ask_core::grounded::{said_by_rows, FromRows};
use pg_ask_core::rows::ResultSet;
use pg_ask_it::sample_database;

/// The question, the SQL of the NOTICE and the answer's lines of the README's first transcript.
pub fn readme_transcript() -> (String, String, Vec<String>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(path).unwrap();
    let block = text.split("```").nth(1).expect("a transcript block");
    let question = block
        .lines()
        .find_map(|l| l.split("SELECT ask('").nth(1).and_then(|r| r.split("')").next()))
        .expect("SELECT ask('...') in the transcript")
        .to_string();
    let lines: Vec<&str> = block.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("---")).expect("the result's header line");
    // The NOTICE's SQL runs to the line before the column's name.
    let notice = lines.iter().position(|l| l.starts_with("NOTICE:  pg_ask SQL: ")).expect("the NOTICE with the SQL");
    let sql = lines[notice..header - 1].join("\n").trim_start_matches("NOTICE:  pg_ask SQL: ").to_string();
    let end = lines.iter().position(|l| l.starts_with("(1 row)")).expect("(1 row)");
    let answer = lines[header + 1..end].iter().map(|l| l.trim_start_matches(' ').trim_end_matches('+').trim_end().to_string()).collect();
    (question, sql, answer)
}

#[test]
fn the_readme_transcript_is_the_samples_real_output() {
    let (question, sql, answer) = readme_transcript();
    assert!(!question.is_empty());
    let mut c = sample_database("pg_ask_readme");
    let stmt = c.prepare(&sql).unwrap();
    let columns: Vec<String> = stmt.columns().iter().map(|c| c.name().to_string()).collect();
    let rows: Vec<Vec<serde_json::Value>> = c
        .query(&format!("SELECT to_jsonb(t)::text FROM ({sql}) t"), &[])
        .unwrap()
        .iter()
        .map(|r| {
            let object: serde_json::Value = serde_json::from_str(&r.get::<_, String>(0)).unwrap();
            columns.iter().map(|name| object[name].clone()).collect()
        })
        .collect();
    assert!(!rows.is_empty(), "the README's SQL finds nothing in the sample: {sql}");
    let result = ResultSet { columns, rows, truncated: false, size_cut: false };
    let said = match said_by_rows(&result) {
        Some(FromRows::List(text) | FromRows::Value(text)) => text,
        other => panic!("pg_ask would not say these rows by themselves ({other:?}); the README shows: {answer:?}"),
    };
    assert_eq!(
        said.lines().map(str::to_string).collect::<Vec<_>>(),
        answer,
        "the README's answer is not what pg_ask says of its SQL's rows"
    );
}

/// The README's chart examples draw on the sample: a line of reviews by year, bars of the
/// average rating per cuisine. With `PG_ASK_CHART_OUT` set to a directory, the SVGs are written
/// there (to look at them in a browser).
#[test]
fn the_readme_charts_draw_on_the_sample() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(path).unwrap();
    let block = text.split("```sql").find(|b| b.contains("-- On the sample database")).expect("the README's chart examples");
    let block = block.split("```").next().unwrap();
    let statements: Vec<String> = block
        .split(';')
        .map(|s| s.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n"))
        .filter(|s| s.contains("ask.chart("))
        .collect();
    assert_eq!(statements.len(), 2, "{block}");
    let mut c = sample_database("pg_ask_readme_charts");
    let cuisines: Vec<String> = c.query("SELECT DISTINCT cuisine FROM restaurants", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    for (i, sql) in statements.iter().enumerate() {
        let svg: Option<String> = c.query_one(sql.as_str(), &[]).unwrap().get(0);
        let svg = svg.unwrap_or_else(|| panic!("no chart for the README's {sql}"));
        assert!(svg.starts_with("<svg") && !svg.contains("<script"), "{}", &svg[..200.min(svg.len())]);
        if i == 0 {
            assert!(svg.contains("reviews by year") && svg.contains("<polyline"), "a line of reviews by year");
        } else {
            assert!(svg.contains("average rating per cuisine"), "the title");
            for cuisine in &cuisines {
                assert!(svg.contains(&format!("\n{cuisine}\n")), "a bar labelled {cuisine}");
            }
        }
        if let Ok(dir) = std::env::var("PG_ASK_CHART_OUT") {
            std::fs::write(std::path::Path::new(&dir).join(format!("readme_chart_{}.svg", i + 1)), &svg).unwrap();
        }
    }
}
