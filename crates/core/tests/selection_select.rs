//! Lexical scoring and the ranking of tables and schemas, on a small catalog shaped like the
//! glue's (quoted identifiers, foreign keys, comments, frequent values).

use pg_ask_core::schema::{Column, ForeignKey, Table};
use pg_ask_core::selection::lexical::{tokenize, Document, Field, LexicalIndex, TABLE_WEIGHTS};
use pg_ask_core::selection::{Catalog, ColumnValues, Cosines, Fusion, PickReason, SchemaProfile, SelectError, SelectOptions, TableProfile};

fn col(name: &str, ty: &str) -> Column {
    Column { name: name.into(), data_type: ty.into(), not_null: false, comment: None }
}

fn fk(column: &str, references: &str) -> ForeignKey {
    ForeignKey { columns: vec![column.into()], references: references.into(), ref_columns: vec!["id".into()] }
}

fn table(schema: &str, name: &str, columns: &[&str], fks: Vec<ForeignKey>, comment: Option<&str>) -> TableProfile {
    TableProfile::new(Table {
        schema: schema.into(),
        name: name.into(),
        kind: "table".into(),
        comment: comment.map(Into::into),
        columns: columns.iter().map(|c| col(c, "text")).collect(),
        primary_key: vec!["id".into()],
        foreign_keys: fks,
    })
}

/// A music schema and a staff schema with an unrelated `"orderItems"` table and a junction.
fn catalog() -> Catalog {
    let mut singer = table("music", "singer", &["id", "name", "country", "birth_year"], vec![], Some("Performers"));
    singer.values.push(ColumnValues { column: "country".into(), values: vec!["Netherlands".into(), "France".into()] });
    let tables = vec![
        singer,
        table("music", "concert", &["id", "concert_name", "theme", "stadium_id", "year"], vec![fk("stadium_id", "music.stadium")], None),
        table("music", "stadium", &["id", "location", "capacity"], vec![], Some("Venues where concerts take place")),
        table(
            "music",
            "appearance",
            &["id", "performer_id", "show_id"],
            vec![fk("performer_id", "music.singer"), fk("show_id", "music.concert")],
            None,
        ),
        table("staff", "employee", &["id", "name", "age", "city"], vec![], None),
        table("staff", "\"orderItems\"", &["id", "sku", "qty"], vec![], None),
        table(
            "staff",
            "evaluation",
            &["id", "employee_id", "bonus"],
            vec![fk("employee_id", "staff.employee")],
            Some("Yearly bonus per employee"),
        ),
    ];
    Catalog::new(tables, &[SchemaProfile { name: "music".into(), comment: Some("Singers and their concerts".into()) }])
}

fn names(picks: &[pg_ask_core::selection::TablePick]) -> Vec<&str> {
    picks.iter().map(|p| p.table.as_str()).collect()
}

#[test]
fn names_outweigh_comments_and_values() {
    let mut a = Document::default();
    a.push(Field::Table, "stadium");
    a.push(Field::Column, "capacity");
    let mut b = Document::default();
    b.push(Field::Table, "venue");
    b.push(Field::Comment, "a stadium or a hall");
    let mut c = Document::default();
    c.push(Field::Table, "event");
    c.push(Field::Value, "Stadium of Light");
    let index = LexicalIndex::new(&[a, b, c], TABLE_WEIGHTS);
    let s = index.score("Which stadiums hold the most?");
    assert!(s[0].score > s[1].score && s[1].score > s[2].score && s[2].score > 0.0, "{s:?}");
    assert_eq!(s[0].matched, ["stadium"]);
}

#[test]
fn rare_words_count_more_than_common_ones() {
    let docs: Vec<Document> = ["singer name", "employee name", "stadium name"]
        .iter()
        .map(|t| {
            let mut d = Document::default();
            d.push(Field::Column, *t);
            d
        })
        .collect();
    let index = LexicalIndex::new(&docs, TABLE_WEIGHTS);
    let s = index.score("name of the singer");
    // "name" is everywhere, "singer" only in the first.
    assert!(s[0].score > 3.0 * s[1].score, "{s:?}");
    assert_eq!(s[1].score, s[2].score);
}

#[test]
fn folded_and_abbreviated_identifiers_match_partially() {
    let mut a = Document::default();
    a.push(Field::Table, "sbcustomer");
    a.push(Field::Column, "sbcustname");
    let mut b = Document::default();
    b.push(Field::Table, "cust_addr");
    let mut c = Document::default();
    c.push(Field::Table, "customer");
    let mut d = Document::default();
    d.push(Field::Value, "custard");
    let index = LexicalIndex::new(&[a, b, c, d], TABLE_WEIGHTS);
    let s = index.score("customers");
    assert!(s[0].matched.iter().any(|m| m == "customer~sbcustomer"), "{:?}", s[0]);
    assert_eq!(s[1].matched, ["customer~cust"]);
    assert!(s[2].score > s[0].score && s[2].score > s[1].score, "an exact match beats a partial one: {s:?}");
    assert_eq!(s[3].score, 0.0, "values are not searched for abbreviations");
    // Adjacent question words written together match a compound name.
    let mut e = Document::default();
    e.push(Field::Table, "checkin");
    let index = LexicalIndex::new(&[e], TABLE_WEIGHTS);
    assert!(index.score("How many check-ins per day?")[0].matched.iter().any(|m| m == "checkin"));
    assert_eq!(tokenize("orderItems 2023-04-01"), ["order", "item", "2023"]);
}

#[test]
fn tables_are_ranked_and_explained() {
    let c = catalog();
    let options = SelectOptions { k: 2, max_join_tables: 0, ..Default::default() };
    let picks = c.select_tables("Which singers come from France?", &Cosines::new(), &options).unwrap();
    assert_eq!(picks[0].table, "music.singer");
    assert_eq!(picks[0].reason, PickReason::Retrieved);
    assert_eq!(picks[0].parts.lexical_rank, Some(1));
    assert!(picks[0].parts.matched.iter().any(|m| m == "singer") && picks[0].parts.matched.iter().any(|m| m == "france"));
    assert_eq!(picks[0].parts.cosine, None);
    let json = serde_json::to_value(&picks[0]).unwrap();
    assert_eq!(json["reason"], "retrieved");
    assert_eq!(json["table"], "music.singer");
    assert_eq!(json["parts"]["lexical_rank"], 1);
}

#[test]
fn join_tables_are_added_after_the_k_best() {
    let c = catalog();
    let options = SelectOptions { k: 2, ..Default::default() };
    let picks = c.select_tables("Which concerts featured each singer?", &Cosines::new(), &options).unwrap();
    let mut top = names(&picks)[..2].to_vec();
    top.sort_unstable();
    assert_eq!(top, ["music.concert", "music.singer"]);
    assert_eq!(picks.len(), 4, "{:?}", names(&picks));
    // concert's foreign key needs stadium; singer_in_concert links the two picked tables.
    assert!(picks.iter().any(|p| p.table == "music.stadium"
        && p.reason == PickReason::Referenced { by: "music.concert".into(), columns: vec!["stadium_id".into()] }));
    let junction = picks.iter().find(|p| p.table == "music.appearance").expect("the junction table");
    assert_eq!(junction.reason, PickReason::Links { tables: vec!["music.concert".into(), "music.singer".into()] });
    assert_eq!(junction.score, 0.0, "no evidence of its own");
    // Bounded.
    let bounded = SelectOptions { k: 2, max_join_tables: 1, ..Default::default() };
    assert_eq!(c.select_tables("Which concerts featured each singer?", &Cosines::new(), &bounded).unwrap().len(), 3);
}

#[test]
fn a_junction_table_links_two_picked_tables() {
    let c = catalog();
    let options = SelectOptions { k: 2, max_join_tables: 5, schemas: Some(vec!["music".into()]), ..Default::default() };
    let picks = c.select_tables("stadium capacity and singer birth year", &Cosines::new(), &options).unwrap();
    let mut top = names(&picks)[..2].to_vec();
    top.sort_unstable();
    assert_eq!(top, ["music.singer", "music.stadium"]);
    assert!(picks.iter().all(|p| p.table != "music.appearance"), "a junction must link two *picked* tables");
    let picks = c.select_tables("concert themes by singer", &Cosines::new(), &options).unwrap();
    assert!(picks.iter().any(|p| p.table == "music.appearance" && matches!(p.reason, PickReason::Links { .. })), "{:?}", names(&picks));
}

#[test]
fn embeddings_fuse_with_the_lexical_score() {
    let c = catalog();
    let options = SelectOptions { k: 3, max_join_tables: 0, ..Default::default() };
    // No word in common with "evaluation", but the embedding knows that a bonus is pay.
    let q = "Who earned the highest pay rise?";
    let lexical_only = c.select_tables(q, &Cosines::new(), &options).unwrap();
    assert!(lexical_only.iter().all(|p| p.parts.lexical == 0.0 || p.table != "staff.evaluation"));
    let cosines: Cosines = [("staff.evaluation", 0.61), ("staff.employee", 0.45), ("music.singer", 0.12), ("gone.table", 0.99)]
        .into_iter()
        .map(|(n, c)| (n.to_string(), c))
        .collect();
    let fused = c.select_tables(q, &cosines, &options).unwrap();
    assert_eq!(names(&fused)[..2], ["staff.evaluation", "staff.employee"]);
    assert_eq!(fused[0].parts.cosine_rank, Some(1));
    assert!(fused.iter().all(|p| p.table != "gone.table"), "names not in the catalog are never served");
    let weighted =
        c.select_tables(q, &cosines, &SelectOptions { fusion: Fusion::WeightedSum { embedding_weight: 0.7 }, ..options.clone() }).unwrap();
    assert_eq!(weighted[0].table, "staff.evaluation");
    let broken: Cosines = [("staff.employee".to_string(), f64::NAN)].into_iter().collect();
    assert!(matches!(c.select_tables(q, &broken, &options), Err(SelectError::NotFinite { .. })));
}

#[test]
fn schema_filter_limits_candidates() {
    let c = catalog();
    let options = SelectOptions { k: 10, schemas: Some(vec!["staff".into()]), ..Default::default() };
    let picks = c.select_tables("singers and employees", &Cosines::new(), &options).unwrap();
    assert!(picks.iter().all(|p| p.table.starts_with("staff.")), "{:?}", names(&picks));
    assert_eq!(picks.len(), 3);
    let unknown = SelectOptions { schemas: Some(vec!["nope".into()]), ..Default::default() };
    assert_eq!(c.select_tables("x", &Cosines::new(), &unknown), Err(SelectError::UnknownSchema("nope".into())));
}

#[test]
fn schemas_are_ranked_as_databases() {
    let c = catalog();
    let picks = c.select_schemas("Which has more: singers or employees?", &Cosines::new(), 5, Fusion::default()).unwrap();
    // Both schemas have evidence for a question that names one table of each.
    let mut found: Vec<&str> = picks.iter().filter(|p| p.score > 0.0).map(|p| p.schema.as_str()).collect();
    found.sort_unstable();
    assert_eq!(found, ["music", "staff"], "{picks:?}");
    let picks = c.select_schemas("How big is the largest stadium?", &Cosines::new(), 1, Fusion::default()).unwrap();
    assert_eq!(picks[0].schema, "music");
    let picks = c.select_schemas("quantity of each order item by sku", &Cosines::new(), 2, Fusion::default()).unwrap();
    assert_eq!(picks[0].schema, "staff", "quoted camelCase table names are split: {picks:?}");
    let (_, description) = c.schema_descriptions().next().unwrap();
    assert!(
        description.starts_with("Schema music: Singers and their concerts\nTables: singer, concert, stadium, appearance."),
        "{description}"
    );
}

/// What a catalog rebuilt from an earlier one gives: the same as one built afresh, after a
/// comment, a new column, new frequent values, a new table, a dropped table and a new schema
/// comment; and what the glue reads of it (descriptions, rankings, the full description's length).
#[test]
fn a_catalog_rebuilt_from_an_earlier_one_is_the_one_built_afresh() {
    let first = catalog();
    let mut tables: Vec<TableProfile> = first.tables().to_vec();
    tables[0].table.comment = Some("Singers who perform in concerts".into());
    tables[2].table.columns.push(col("opened_year", "integer"));
    tables[4].values.push(ColumnValues { column: "city".into(), values: vec!["Utrecht".into()] });
    tables.remove(5);
    tables.push(table("staff", "payslip", &["id", "employee_id", "net_amount"], vec![fk("employee_id", "staff.employee")], None));
    let schemas = [
        SchemaProfile { name: "music".into(), comment: Some("Singers and their concerts".into()) },
        SchemaProfile { name: "staff".into(), comment: Some("People who work here".into()) },
    ];
    let fresh = Catalog::new(tables.clone(), &schemas);
    let values: std::collections::HashMap<String, Vec<ColumnValues>> =
        tables.iter().map(|p| (p.table.qualified(), p.values.clone())).collect();
    let plain: Vec<Table> = tables.iter().map(|p| p.table.clone()).collect();
    let renewed = Catalog::renewed(first.clone(), &plain, |n, _| values[n].clone(), &schemas);
    assert_eq!(renewed.renewal().unwrap().from, first.id());
    assert_eq!(renewed.renewal().unwrap().tables, ["music.singer", "music.stadium", "staff.employee", "staff.payslip"]);
    assert_eq!(renewed.renewal().unwrap().schemas, ["music", "staff"]);
    let rebuilt = Catalog::reusing(&first, tables, &schemas);
    assert_eq!(renewed.table_descriptions().collect::<Vec<_>>(), fresh.table_descriptions().collect::<Vec<_>>());
    for q in ["singers who perform", "concert venues opened", "employees in Utrecht", "net amount of payslips", "cust orders"] {
        let options = SelectOptions { k: 10, ..Default::default() };
        let (a, b) =
            (renewed.select_tables(q, &Cosines::new(), &options).unwrap(), fresh.select_tables(q, &Cosines::new(), &options).unwrap());
        assert_eq!(a, b, "{q}");
    }
    assert_eq!(rebuilt.table_descriptions().collect::<Vec<_>>(), fresh.table_descriptions().collect::<Vec<_>>());
    assert_eq!(rebuilt.schema_descriptions().collect::<Vec<_>>(), fresh.schema_descriptions().collect::<Vec<_>>());
    assert_eq!(rebuilt.full_chars(), fresh.full_chars());
    assert_eq!(
        rebuilt.full_chars(),
        pg_ask_core::schema::render(&fresh.tables().iter().map(|p| p.table.clone()).collect::<Vec<_>>()).len()
    );
    assert_ne!(rebuilt.table_description("music.singer"), first.table_description("music.singer"));
    assert_eq!(rebuilt.table_description("staff.\"orderItems\""), None);
    for q in ["singers who perform", "concert venues opened", "employees in Utrecht", "net amount of payslips", "people who work here"] {
        let options = SelectOptions { k: 3, ..Default::default() };
        let (a, b) =
            (rebuilt.select_tables(q, &Cosines::new(), &options).unwrap(), fresh.select_tables(q, &Cosines::new(), &options).unwrap());
        assert_eq!(a, b, "{q}");
        let (a, b) = (
            rebuilt.select_schemas(q, &Cosines::new(), 2, Fusion::default()).unwrap(),
            fresh.select_schemas(q, &Cosines::new(), 2, Fusion::default()).unwrap(),
        );
        assert_eq!(a, b, "{q}");
    }
    // The changes are what the rankings see.
    let payslip = rebuilt.select_tables("net amount of payslips", &Cosines::new(), &SelectOptions { k: 1, ..Default::default() }).unwrap();
    assert_eq!(names(&payslip)[0], "staff.payslip");
}

/// The same on a generated catalog of 200 tables, renewed three times in a row (a comment, a
/// new column, a table dropped, a table created in the middle of a schema): every ranking, with
/// its scores and matched terms, is the one of a catalog built afresh. The catalog is the
/// selection evaluation's (feature `recall`).
#[cfg(feature = "recall")]
#[test]
fn a_generated_catalog_renewed_again_and_again_ranks_as_one_built_afresh() {
    let mut tables = pg_ask_core::selection::recall::synthetic_scale_catalog(5, 40);
    let mut catalog = Catalog::new(tables.iter().cloned().map(TableProfile::new).collect(), &[]);
    let questions = [
        "How many claims did the insurance department record?",
        "open tickets",
        "invoices per cust",
        "lab results of patients",
        "renewed memberships",
    ];
    for step in 0..3 {
        tables[3 + step].comment = Some(format!("Changed at step {step}: claims and renewals"));
        tables[50 + step].columns.push(col(&format!("extra_{step}"), "integer"));
        tables.remove(100 + step);
        let mut new = tables[10].clone();
        new.name = format!("lab_note_{step}");
        tables.insert(11, new);
        catalog = Catalog::renewed(catalog, &tables, |_, _| Vec::new(), &[]);
        let fresh = Catalog::new(tables.iter().cloned().map(TableProfile::new).collect(), &[]);
        assert_eq!(catalog.full_chars(), fresh.full_chars());
        for q in questions {
            let options = SelectOptions { k: 20, ..Default::default() };
            assert_eq!(
                catalog.select_tables(q, &Cosines::new(), &options).unwrap(),
                fresh.select_tables(q, &Cosines::new(), &options).unwrap(),
                "{q}"
            );
            assert_eq!(
                catalog.select_schemas(q, &Cosines::new(), 5, Fusion::default()).unwrap(),
                fresh.select_schemas(q, &Cosines::new(), 5, Fusion::default()).unwrap()
            );
        }
    }
}
