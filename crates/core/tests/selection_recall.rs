//! Offline evaluation of schema and table selection on defog's eleven databases, loaded as
//! eleven schemas of one database, with the questions and gold SQL of
//! `questions_gen_postgres.csv`; and the prompt-size reduction on a generated 200-table
//! database.
//!
//! The data stay in ../shared/datasets/defog and are read at test time. Run with
//! `cargo test -p pg_ask_core --features recall --test selection_recall -- --nocapture` to see the numbers.
//! Embeddings plug in through [`evaluate_defog`]: pass any `Fn(&str) -> Vec<f32>` (for example
//! all-MiniLM-L6-v2 from `pg_ask_embed`) and the report adds the fused figures and the plain
//! cosine baseline.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use pg_ask_core::schema::{render, Column, ForeignKey, Table};
use pg_ask_core::selection::recall::{
    apply_column_descriptions, evaluate, tables_from_ddl, Embedder, EvalCase, EvalReport, DEFOG_DATABASES as DATABASES,
    SYNTHETIC_AREAS as AREAS, SYNTHETIC_QUESTIONS as GENERATED_QUESTIONS, SYNTHETIC_SATELLITES as SATELLITES,
};
use pg_ask_core::selection::{Catalog, Cosines, Fusion, SelectOptions, TableProfile};

fn defog_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/defog"))
}

/// The eleven databases as schemas of one catalog. With `with_values`, the most frequent string
/// values of each text column stand in for the value memory.
fn defog_catalog(with_values: bool) -> Catalog {
    let mut tables: Vec<TableProfile> = Vec::new();
    for db in DATABASES {
        let ddl = std::fs::read_to_string(defog_dir().join(format!("{db}.sql"))).expect("defog DDL");
        let json = std::fs::read_to_string(defog_dir().join(format!("{db}.json"))).expect("defog descriptions");
        let mut t = tables_from_ddl(&ddl, db, with_values).unwrap_or_else(|e| panic!("{e}"));
        apply_column_descriptions(&mut t, db, &json).unwrap_or_else(|e| panic!("{e}"));
        tables.extend(t);
    }
    Catalog::new(tables, &[])
}

fn defog_cases(catalog: &Catalog) -> Vec<EvalCase> {
    let mut reader = csv::Reader::from_path(defog_dir().join("questions_gen_postgres.csv")).expect("defog questions");
    let headers = reader.headers().expect("header").clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let (q, sql, db) = (col("question"), col("query"), col("db_name"));
    reader
        .records()
        .map(|r| {
            let r = r.expect("csv record");
            EvalCase::new(&r[q], &r[db], &r[sql], catalog)
        })
        .collect()
}

/// The whole evaluation, with an optional embedding function.
pub fn evaluate_defog(embed: Option<Embedder<'_>>, fusion: Fusion) -> (Catalog, Vec<EvalCase>, EvalReport) {
    let catalog = defog_catalog(true);
    let cases = defog_cases(&catalog);
    let report = evaluate(&catalog, &cases, embed, fusion).expect("evaluation");
    (catalog, cases, report)
}

#[test]
fn defog_loads_as_eleven_schemas_with_keys_comments_and_values() {
    let catalog = defog_catalog(true);
    assert_eq!(catalog.schemas().len(), 11);
    assert_eq!(catalog.tables().len(), 110);
    // Unquoted camelCase names fold to lower case, as in PostgreSQL.
    assert!(catalog.table("broker.sbcustomer").is_some());
    // Tables of another schema in the script land in the database's schema.
    let coupons = catalog.table("ewallet.coupons").expect("ewallet.coupons");
    assert_eq!(coupons.foreign_keys[0].references, "ewallet.merchants");
    assert_eq!(coupons.primary_key, ["cid"]);
    let sales = catalog.table("car_dealership.sales").expect("sales");
    assert_eq!(sales.foreign_keys.len(), 3);
    let author = catalog.table("academic.author").expect("author");
    assert_eq!(author.columns.iter().find(|c| c.name == "name").unwrap().comment.as_deref(), Some("Name of the author"));
    let domain = catalog.tables().iter().find(|p| p.table.qualified() == "academic.domain").unwrap();
    // All values occur once here: the first ones stand in for the most frequent.
    assert_eq!(domain.values_of("name"), ["Data Science", "Natural Sciences", "Computer Science"]);
    let (_, description) = catalog.table_descriptions().find(|(n, _)| n == "academic.domain").unwrap();
    assert!(description.starts_with("Table academic.domain\nColumns: did, name."), "{description}");
}

#[test]
fn every_defog_question_has_gold_tables_in_its_schema() {
    let catalog = defog_catalog(false);
    let cases = defog_cases(&catalog);
    assert_eq!(cases.len(), 210);
    let without: Vec<&str> = cases.iter().filter(|c| c.gold.is_empty()).map(|c| c.question.as_str()).collect();
    assert!(without.is_empty(), "questions whose gold SQL names no table: {without:?}");
    let first = &cases[0];
    assert_eq!(first.schema, "academic");
    assert_eq!(first.gold[0], BTreeSet::from(["academic.author", "academic.domain", "academic.domain_author"].map(String::from)));
}

#[test]
fn defog_recall_lexical_only() {
    let (_, _, report) = evaluate_defog(None, Fusion::default());
    let m = &report.selection;
    println!("defog, lexical only: {m}");
    for miss in &report.misses {
        println!(
            "  miss {:<9} {:?}\n    expected {:?}\n    got      {:?}",
            miss.kind,
            miss.question,
            miss.expected,
            miss.got.iter().take(5).collect::<Vec<_>>()
        );
    }
    assert_eq!(m.questions, 210);
    // Floors a little under the measured figures, so that a regression fails.
    assert!(m.schema_recall_at_1 >= 0.85, "{m}");
    assert!(m.schema_recall_at_5 >= 0.97, "{m}");
    assert!(m.table_recall_at_10 >= 0.85, "{m}");
}

/// A deterministic pseudo-embedding (hashed bag of words) to exercise the embedding path of the
/// harness end to end; it is not a measure of quality.
fn hashed_embedding(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 64];
    for w in pg_ask_core::selection::lexical::tokenize(text) {
        let h = w.bytes().fold(2166136261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16777619));
        v[(h % 64) as usize] += 1.0;
    }
    v
}

#[test]
fn the_harness_takes_an_embedding_function() {
    let embed = hashed_embedding;
    let (_, _, report) = evaluate_defog(Some(&embed), Fusion::default());
    let base = report.baseline.expect("a baseline with embeddings");
    println!("defog, hashed bag-of-words stand-in embedding, fused: {}", report.selection);
    println!("defog, hashed bag-of-words stand-in embedding, baseline: {base}");
    assert_eq!(base.questions, 210);
    // The embedding function really ranks: the embedding-only baseline is far above the chance
    // of picking the right one of eleven schemas (0.09).
    assert!(base.schema_recall_at_1 > 0.3, "{base}");
    assert!(report.selection.schema_recall_at_5 > 0.9, "{}", report.selection);
}

// ---------------------------------------------------------------------------------------------
// A generated 200-table database: prompt size of the selection against the full schema.

fn col(name: &str, ty: &str, comment: Option<&str>) -> Column {
    Column { name: name.into(), data_type: ty.into(), not_null: name == "id", comment: comment.map(Into::into) }
}

fn generated_database() -> Vec<TableProfile> {
    let mut out = Vec::new();
    for (schema, entities) in AREAS {
        for (i, entity) in entities.iter().enumerate() {
            for suffix in SATELLITES {
                let name = format!("{entity}{suffix}");
                let mut columns = vec![col("id", "bigint", None)];
                let mut foreign_keys = Vec::new();
                if suffix.is_empty() {
                    columns.push(col("name", "text", Some(&format!("Name of the {}", entity.replace('_', " ")))));
                    columns.push(col("status", "text", Some("active, closed or archived")));
                    columns.push(col("amount", "numeric(12,2)", None));
                    columns.push(col("created_at", "timestamptz", None));
                    columns.push(col("owner_email", "text", None));
                    if i > 0 {
                        let parent = entities[i - 1];
                        columns.push(col(&format!("{parent}_id"), "bigint", None));
                        foreign_keys.push(ForeignKey {
                            columns: vec![format!("{parent}_id")],
                            references: format!("{schema}.{parent}"),
                            ref_columns: vec!["id".into()],
                        });
                    }
                } else {
                    columns.push(col(&format!("{entity}_id"), "bigint", None));
                    foreign_keys.push(ForeignKey {
                        columns: vec![format!("{entity}_id")],
                        references: format!("{schema}.{entity}"),
                        ref_columns: vec!["id".into()],
                    });
                    columns.push(col("body", "text", None));
                    columns.push(col("recorded_at", "timestamptz", None));
                    columns.push(col("recorded_by", "text", None));
                }
                out.push(TableProfile::new(Table {
                    schema: schema.into(),
                    name,
                    kind: "table".into(),
                    comment: Some(format!("{} records of the {schema} area", entity.replace('_', " "))),
                    columns,
                    primary_key: vec!["id".into()],
                    foreign_keys,
                }));
            }
        }
    }
    out
}

#[test]
fn prompt_of_selected_tables_is_a_fraction_of_the_full_schema() {
    let tables = generated_database();
    assert_eq!(tables.len(), 200);
    let started = Instant::now();
    let catalog = Catalog::new(tables, &[]);
    let build_ms = started.elapsed().as_secs_f64() * 1000.0;
    let all: Vec<Table> = catalog.tables().iter().map(|p| p.table.clone()).collect();
    let full = render(&all).len();

    let options = SelectOptions::default();
    let mut ratios = Vec::new();
    let mut times = Vec::new();
    for q in GENERATED_QUESTIONS {
        let t = Instant::now();
        let picks = catalog.select_tables(q, &Cosines::new(), &options).expect("selection");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        let selected = render(&catalog.picked_tables(&picks)).len();
        ratios.push(selected as f64 / full as f64);
    }
    // The question's own tables come first.
    let picks = catalog.select_tables(GENERATED_QUESTIONS[0], &Cosines::new(), &options).unwrap();
    let top: Vec<&str> = picks.iter().take(4).map(|p| p.table.as_str()).collect();
    assert!(top.contains(&"sales.invoice") && top.contains(&"sales.customer"), "{top:?}");

    times.sort_by(f64::total_cmp);
    let p95 = times[((times.len() as f64 * 0.95).ceil() as usize).min(times.len()) - 1];
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let max = ratios.iter().cloned().fold(0.0, f64::max);
    println!(
        "200-table database: full schema prompt {full} chars; selected (k = {}, ≤ {} join tables) mean {:.1}% and at most {:.1}% of it; \
         catalog build {build_ms:.1} ms, selection p95 {p95:.2} ms (this build's optimisation level)",
        options.k,
        options.max_join_tables,
        mean * 100.0,
        max * 100.0
    );
    assert!(max <= 0.25, "selected tables take {:.1}% of the full prompt", max * 100.0);
}

#[test]
fn the_scale_catalog_has_ten_thousand_tables_whose_references_come_first() {
    use pg_ask_core::selection::recall::{synthetic_scale_catalog, synthetic_scale_ddl};
    let tables = synthetic_scale_catalog(50, 200);
    assert_eq!(tables.len(), 10_000);
    let names: BTreeSet<String> = tables.iter().map(|t| format!("{}.{}", t.schema, t.name)).collect();
    assert_eq!(names.len(), 10_000, "names are unique");
    assert_eq!(tables.iter().map(|t| &t.schema).collect::<BTreeSet<_>>().len(), 50);
    let mut seen = BTreeSet::new();
    for t in &tables {
        for fk in &t.foreign_keys {
            assert!(seen.contains(&fk.references), "{} references {} before it is created", t.name, fk.references);
        }
        seen.insert(format!("{}.{}", t.schema, t.name));
    }
    let ddl = synthetic_scale_ddl(&tables[..5]);
    assert_eq!(ddl.matches("CREATE TABLE").count(), 5, "{ddl}");
    assert!(ddl.contains("COMMENT ON COLUMN accounting."), "{ddl}");
}
