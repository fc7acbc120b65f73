//! Which of a database's instructions each defog question is offered (no model, no database):
//! every distinct line of the instructions defog gives with its questions and of each
//! database's glossary is an instruction on the database's schema, as `bench_real` registers
//! them with `PG_ASK_REAL_KNOWLEDGE=1`; each question is then offered what
//! [`pg_ask_core::knowledge::relevant`] picks for it. defog's own pairing is the reference: a
//! question that comes with instructions should be offered its own lines, and a line offered
//! that is not its own (or to a question that comes with none) is noise in its prompt.
//! Databases alternate between a tuning and a reporting part (alphabetical order).

use std::collections::{BTreeMap, BTreeSet};

use pg_ask_bench::repo;
use pg_ask_bench::suites::{defog_line, defog_lines};
use pg_ask_core::knowledge::{relevant, Item, Kind};

/// The records of a CSV file with a header: fields may be quoted, with `""` for a quote and
/// line breaks inside.
fn csv(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let (mut row, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            ('\r', false) => {}
            (c, _) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    let header = rows.remove(0);
    rows.into_iter().map(|r| header.iter().cloned().zip(r).collect()).collect()
}

fn main() {
    let dir = repo().join("../shared/datasets/defog");
    let questions = csv(&std::fs::read_to_string(dir.join("questions_gen_postgres.csv")).expect("defog's questions"));
    // Each database's lines, numbered as they are registered.
    let mut items: BTreeMap<String, Vec<Item>> = BTreeMap::new();
    let dbs: BTreeSet<String> = questions.iter().map(|q| q["db_name"].clone()).collect();
    let mut id = 0;
    for db in &dbs {
        let instructions = questions.iter().filter(|q| &q["db_name"] == db).map(|q| q["instructions"].clone());
        for line in defog_lines(db, instructions) {
            id += 1;
            items.entry(db.clone()).or_default().push(Item {
                id,
                kind: Some(Kind::Instruction),
                schema: Some(db.clone()),
                body: line,
                ..Default::default()
            });
        }
    }
    println!("{} questions over {} databases; {id} instructions", questions.len(), dbs.len());
    println!("| part | questions with instructions | their own lines offered | others offered to them, per question | questions without | lines offered to them, per question |");
    println!("|---|---|---|---|---|---|");
    for (part, parity) in [("tuning", 0), ("reporting", 1)] {
        let (mut with, mut own_lines, mut own_offered, mut noise_with) = (0, 0, 0, 0);
        let (mut without, mut noise_without) = (0, 0);
        for q in questions.iter().filter(|q| dbs.iter().position(|d| *d == q["db_name"]).unwrap() % 2 == parity) {
            let db = &q["db_name"];
            let its = items.get(db).map(Vec::as_slice).unwrap_or_default();
            let offered = relevant(&q["question"], its, &[format!("{db}.t")], usize::MAX);
            let own: BTreeSet<String> =
                q["instructions"].lines().map(defog_line).filter(|l| !l.is_empty()).map(|l| l.to_lowercase()).collect();
            let is_own = |it: &&&Item| own.contains(&it.body.to_lowercase());
            if own.is_empty() {
                without += 1;
                noise_without += offered.len();
            } else {
                with += 1;
                own_lines += own.len();
                own_offered += offered.iter().filter(is_own).count();
                noise_with += offered.iter().filter(|it| !is_own(it)).count();
            }
            if std::env::var("VERBOSE").is_ok() {
                println!("  {db:<15} own {} offered {:?}  {}", own.len(), offered.iter().map(|i| i.id).collect::<Vec<_>>(), q["question"]);
            }
        }
        println!(
            "| {part} | {with} | {:.3} ({own_offered} of {own_lines}) | {:.2} | {without} | {:.2} |",
            own_offered as f64 / own_lines.max(1) as f64,
            noise_with as f64 / with.max(1) as f64,
            noise_without as f64 / without.max(1) as f64
        );
    }
}
