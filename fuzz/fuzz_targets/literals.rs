//! Literal resolution and rewriting: the literals compared with text columns, replaced by
//! other values (quotes included), the LIKE pattern shapes, masking and structure comparison.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_ask_core::values::literals::{find_literals, Catalog, CatalogColumn, LikePattern};
use pg_ask_core::values::rewrite::{mask_literals, rewrite, same_structure, Replacement};

fn catalog() -> Catalog {
    Catalog::new(["public", "app"])
        .with_table("public", "cities", vec![CatalogColumn::text("name"), CatalogColumn::text("state"), CatalogColumn::other("id")])
        .with_table(
            "public",
            "restaurants",
            vec![CatalogColumn::text("name"), CatalogColumn::text("cuisine"), CatalogColumn::other("city_id")],
        )
        .with_table("app", "Users", vec![CatalogColumn::text("Email"), CatalogColumn::text("sex"), CatalogColumn::other("age")])
}

fuzz_target!(|data: &[u8]| {
    let sql = String::from_utf8_lossy(data);
    if let Some((pattern, core)) = LikePattern::parse(&sql) {
        let _ = pattern.rebuild(&core);
    }
    let _ = mask_literals(&sql);
    let Ok(literals) = find_literals(&sql, &catalog()) else {
        return;
    };
    for literal in &literals {
        assert!(literal.range.start < literal.range.end && literal.range.end <= sql.len(), "literal range outside the SQL");
        assert!(sql.is_char_boundary(literal.range.start) && sql.is_char_boundary(literal.range.end), "literal range splits a character");
    }
    // Every literal replaced by a value with a quote, a backslash and a wildcard in it: the
    // result must parse to the same statement shape and hold the same literals.
    // (A literal compared with two columns is found twice: it is replaced once.)
    let mut replacements: Vec<Replacement> = literals.iter().map(|l| Replacement::for_literal(l, "O'Hare \\ 100%")).collect();
    replacements.sort_by_key(|r| r.range);
    replacements.dedup_by_key(|r| r.range);
    let rewritten = rewrite(&sql, &replacements).expect("the literals found cannot be rewritten");
    assert_eq!(same_structure(&sql, &rewritten).ok(), Some(true), "rewriting changed the statement: {rewritten}");
    let again = find_literals(&rewritten, &catalog()).expect("the rewritten SQL no longer parses");
    let ranges = |ls: &[pg_ask_core::values::literals::LiteralRef]| {
        let mut r: Vec<_> = ls.iter().map(|l| (l.table.clone(), l.column.clone())).collect();
        r.sort();
        r
    };
    assert_eq!(ranges(&again), ranges(&literals), "rewriting changed the literals' columns: {rewritten}");
});
