//! Rewriting literals and the masked-structure acceptance check.

use pg_ask_core::values::literals::{find_literals, Catalog, CatalogColumn};
use pg_ask_core::values::rewrite::{mask_literals, quote_literal, rewrite, same_structure, Replacement, RewriteError};

fn catalog() -> Catalog {
    Catalog::new(["public"]).with_table(
        "public",
        "restaurant",
        vec![CatalogColumn::other("id"), CatalogColumn::text("name"), CatalogColumn::text("city_name")],
    )
}

#[test]
fn replaces_only_the_literals_and_keeps_layout_and_comments() {
    let sql = "SELECT name -- the 'LA' ones\nFROM   restaurant r\nWHERE r.city_name = 'LA'  AND name LIKE '%pasta hous%'";
    let lits = find_literals(sql, &catalog()).unwrap();
    assert_eq!(lits.len(), 2);
    let out =
        rewrite(sql, &[Replacement::for_literal(&lits[1], "The Pasta House"), Replacement::for_literal(&lits[0], "Los Angeles")]).unwrap();
    assert_eq!(
        out,
        "SELECT name -- the 'LA' ones\nFROM   restaurant r\nWHERE r.city_name = 'Los Angeles'  AND name LIKE '%The Pasta House%'"
    );
}

#[test]
fn quotes_are_doubled_and_unicode_is_kept() {
    assert_eq!(quote_literal("O'Brien"), "'O''Brien'");
    let sql = "SELECT 1 FROM restaurant WHERE name = 'obrien' OR city_name IN ('Zurich', 'x')";
    let lits = find_literals(sql, &catalog()).unwrap();
    let out = rewrite(sql, &[Replacement::for_literal(&lits[0], "O'Brien's"), Replacement::for_literal(&lits[1], "Zürich")]).unwrap();
    assert_eq!(out, "SELECT 1 FROM restaurant WHERE name = 'O''Brien''s' OR city_name IN ('Zürich', 'x')");
    // A value that would end the literal early is still data.
    let out = rewrite(sql, &[Replacement::for_literal(&lits[0], "x' OR '1'='1")]).unwrap();
    assert_eq!(out, "SELECT 1 FROM restaurant WHERE name = 'x'' OR ''1''=''1' OR city_name IN ('Zurich', 'x')");
    assert!(same_structure(sql, &out).unwrap());
}

#[test]
fn ranges_that_are_not_literals_are_refused() {
    let sql = "SELECT name FROM restaurant WHERE city_name = 'LA'";
    let r = |start, end| Replacement { range: pg_ask_core::values::literals::TextRange { start, end }, text: "x".into() };
    assert!(matches!(rewrite(sql, &[r(7, 11)]), Err(RewriteError::NotALiteral(_))));
    // A quoted span that does not start a literal token: `'LA'` minus its first byte.
    let lits = find_literals(sql, &catalog()).unwrap();
    let (s, e) = (lits[0].range.start, lits[0].range.end);
    assert!(rewrite(sql, &[r(s, e), r(s + 1, e)]).is_err());
    assert_eq!(rewrite(sql, &[]).unwrap(), sql);
}

#[test]
fn masked_structure_accepts_value_changes_only() {
    let original = "SELECT name FROM restaurant WHERE city_name = 'LA' AND id > 3";
    assert!(same_structure(original, "select name\nfrom restaurant where city_name = 'Los Angeles' and id > 3").unwrap());
    assert!(!same_structure(original, "SELECT name FROM restaurant WHERE city_name = 'LA' AND id > 4").unwrap());
    assert!(!same_structure(original, "SELECT name FROM restaurant WHERE city_name ILIKE 'LA' AND id > 3").unwrap());
    assert!(!same_structure(original, "SELECT name FROM restaurant WHERE city_name = 'LA' OR true AND id > 3").unwrap());
    assert!(!same_structure(original, "SELECT name FROM restaurant; DROP TABLE restaurant").unwrap());
    assert!(!same_structure(original, "not sql").unwrap());
    assert!(same_structure("not sql", original).is_err());
    assert_eq!(mask_literals(original).unwrap(), mask_literals("SELECT name FROM restaurant WHERE city_name = 'x' AND id > 3").unwrap());
    assert!(mask_literals(original).unwrap().contains("city_name = '?'"));
}

#[test]
fn a_checked_statement_is_rewritten_with_its_tree_and_no_parse() {
    use pg_ask_core::guard::check_read_only;
    use pg_ask_core::values::literals::find_literals_in;
    use pg_ask_core::values::rewrite::rewrite_checked;
    let sql = "SELECT name -- the 'LA' ones\nFROM restaurant r\nWHERE r.city_name = 'LA'\n  AND name LIKE '%pasta%' AND name <> 'zürich'";
    let checked = check_read_only(sql).unwrap();
    assert!(checked.located().is_some());
    let lits = find_literals_in(&checked, &catalog()).unwrap();
    assert_eq!(lits, find_literals(sql, &catalog()).unwrap(), "the tree gives what a parse of the text gives");
    let replacements = [
        Replacement::for_literal(&lits[0], "Los Angeles"),
        // A backslash is written in escape quotes, a quote doubled: both stay one literal.
        Replacement::for_literal(&lits[1], "Pasta \\ Co's"),
        Replacement::for_literal(&lits[2], "Zürich"),
    ];
    let out = rewrite_checked(&checked, &replacements).unwrap();
    assert_eq!(
        out.sql,
        // (the pattern escapes its backslash for LIKE, the literal both for escape quotes)
        "SELECT name -- the 'LA' ones\nFROM restaurant r\nWHERE r.city_name = 'Los Angeles'\n  AND name LIKE E'%Pasta \\\\\\\\ Co''s%' AND name <> 'Zürich'"
    );
    // The carried tree is the tree of the new text, and it no longer points into that text.
    assert_eq!(out.statement(), check_read_only(&out.sql).unwrap().statement());
    assert!(out.located().is_none());
    assert_eq!(out.tables, checked.tables);
    // Its literals are still found (from a parse of its own text).
    assert_eq!(find_literals_in(&out, &catalog()).unwrap()[0].value, "Los Angeles");
    // A range that is not one literal token is refused; so is a rewrite of a rewritten tree
    // at the old ranges.
    let not_a_literal = Replacement { range: pg_ask_core::values::literals::TextRange { start: 0, end: 6 }, text: "x".into() };
    assert!(matches!(rewrite_checked(&checked, &[not_a_literal]), Err(RewriteError::NotALiteral(_))));
    assert!(rewrite_checked(&checked, &[]).unwrap() == checked);
}
