//! The SQL grammar's size and build time against the number of described tables
//! (`bash scripts/bench.sh grammar`). No PostgreSQL and no model: the grammar is built from a
//! description as `ask()` renders it, the way `ask()` builds it for every question.
//!
//! Tables have eight columns of mixed types (number, text, date, boolean) and a foreign key to
//! an earlier table, as the 200-table schema of the schema-selection benchmark does.

use std::time::Instant;

use pg_ask_core::constrain::grammar::{sql_grammar, GrammarOptions};
use pg_ask_core::schema::{parse_rendered, render, Column, ForeignKey, Table};

fn tables(n: usize) -> Vec<Table> {
    (0..n)
        .map(|i| {
            let col = |name: &str, ty: &str| Column { name: name.into(), data_type: ty.into(), not_null: false, comment: None };
            let mut t = Table {
                schema: format!("s{}", i % 10),
                name: format!("table_{i}"),
                kind: "table".into(),
                columns: vec![
                    col("id", "integer"),
                    col("name", "text"),
                    col("status", "character varying(20)"),
                    col("amount", "numeric(12,2)"),
                    col("quantity", "integer"),
                    col("created_at", "timestamp with time zone"),
                    col("active", "boolean"),
                    col("parent_id", "integer"),
                ],
                primary_key: vec!["id".into()],
                ..Default::default()
            };
            if i > 0 {
                let parent = (i * 7919) % i;
                t.foreign_keys.push(ForeignKey {
                    columns: vec!["parent_id".into()],
                    references: format!("s{}.table_{parent}", parent % 10),
                    ref_columns: vec!["id".into()],
                });
            }
            t
        })
        .collect()
}

fn main() {
    // `bench_grammar --print`: the grammar of the description on standard input (as
    // `schema::render` writes it), for trying it on a server by hand.
    if std::env::args().nth(1).as_deref() == Some("--print") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).unwrap();
        let g = sql_grammar(&parse_rendered(&text), GrammarOptions::default()).expect("no table in the description");
        print!("{}", g.text);
        return;
    }
    println!("{:>7} {:>9} {:>9} {:>8} {:>11} {:>10} {:>10}", "tables", "branches", "rules", "KB", "prompt KB", "parse ms", "build ms");
    for n in [10, 50, 200, 1_000, 10_000] {
        let text = render(&tables(n));
        // As ask() does it: read the description back, then build; best of three.
        let mut best = (f64::MAX, f64::MAX);
        let mut g = None;
        for _ in 0..3 {
            let t = Instant::now();
            let parsed = parse_rendered(&text);
            let parse_ms = t.elapsed().as_secs_f64() * 1000.0;
            let t = Instant::now();
            g = sql_grammar(&parsed, GrammarOptions::default());
            let build_ms = t.elapsed().as_secs_f64() * 1000.0;
            best = (best.0.min(parse_ms), best.1.min(build_ms));
        }
        let g = g.expect("a grammar");
        println!(
            "{n:>7} {:>9} {:>9} {:>8.0} {:>11.0} {:>10.2} {:>10.2}",
            g.branches,
            g.rules,
            g.text.len() as f64 / 1024.0,
            text.len() as f64 / 1024.0,
            best.0,
            best.1
        );
    }
}
