//! Literal extraction: comparisons, resolution through aliases, joins, subqueries and CTEs.

use pg_ask_core::values::literals::{find_literals, Catalog, CatalogColumn, LikePattern, LiteralKind, LiteralRef, QualifiedName};

fn catalog() -> Catalog {
    Catalog::new(["public", "shop"])
        .with_table(
            "public",
            "restaurant",
            vec![
                CatalogColumn::other("id"),
                CatalogColumn::text("name"),
                CatalogColumn::text("food_type"),
                CatalogColumn::text("city_name"),
                CatalogColumn::other("rating"),
            ],
        )
        .with_table(
            "public",
            "location",
            vec![CatalogColumn::other("restaurant_id"), CatalogColumn::text("street_name"), CatalogColumn::text("city_name")],
        )
        .with_table(
            "public",
            "geographic",
            vec![CatalogColumn::text("city_name"), CatalogColumn::text("county"), CatalogColumn::text("region")],
        )
        .with_table("shop", "customers", vec![CatalogColumn::other("id"), CatalogColumn::text("country"), CatalogColumn::text("Name")])
        .with_table("sales", "customers", vec![CatalogColumn::other("id"), CatalogColumn::text("segment")])
}

fn t(table: &str) -> QualifiedName {
    let (s, t) = table.split_once('.').unwrap();
    QualifiedName::new(s, t)
}

/// (value, schema.table, column) triples, in text order.
fn found(sql: &str) -> Vec<(String, String, String)> {
    find_literals(sql, &catalog())
        .unwrap()
        .into_iter()
        .map(|l| (l.value, format!("{}.{}", l.table.schema, l.table.table), l.column))
        .collect()
}

fn triple(v: &str, t: &str, c: &str) -> (String, String, String) {
    (v.to_owned(), t.to_owned(), c.to_owned())
}

#[test]
fn equality_with_alias_and_range_covers_the_quotes() {
    let sql = "SELECT r.name FROM restaurant AS r WHERE r.city_name = 'LA' AND r.rating > 3";
    let lits = find_literals(sql, &catalog()).unwrap();
    assert_eq!(lits.len(), 1);
    let l = &lits[0];
    assert_eq!(&sql[l.range.start..l.range.end], "'LA'");
    assert_eq!(l.value, "LA");
    assert_eq!(l.kind, LiteralKind::Eq);
    assert_eq!(l.table, t("public.restaurant"));
    assert_eq!(l.column, "city_name");
}

#[test]
fn every_comparison_kind_is_recognised() {
    let sql = "SELECT 1 FROM restaurant WHERE 'Italian' = food_type OR city_name <> 'SF' \
               OR city_name != 'NYC' OR name IN ('A', 'B') OR name NOT IN ('C') \
               OR city_name = ANY(ARRAY['x', 'y']) OR name LIKE '%pizza%' OR name NOT ILIKE 'Bar_' \
               OR name BETWEEN 'a' AND 'm'";
    let lits = find_literals(sql, &catalog()).unwrap();
    let kinds: Vec<(&str, &LiteralKind)> = lits.iter().map(|l| (l.value.as_str(), &l.kind)).collect();
    assert_eq!(kinds.len(), 12, "{kinds:?}");
    assert_eq!(kinds[0], ("Italian", &LiteralKind::Eq));
    assert_eq!(kinds[1], ("SF", &LiteralKind::NotEq));
    assert_eq!(kinds[2], ("NYC", &LiteralKind::NotEq));
    assert_eq!(kinds[3], ("A", &LiteralKind::In { negated: false }));
    assert_eq!(kinds[5], ("C", &LiteralKind::In { negated: true }));
    assert_eq!(kinds[6], ("x", &LiteralKind::In { negated: false }));
    match kinds[8] {
        ("pizza", LiteralKind::Like { negated: false, case_insensitive: false, pattern }) => {
            assert_eq!((pattern.prefix.as_str(), pattern.suffix.as_str()), ("%", "%"))
        }
        other => panic!("{other:?}"),
    }
    match kinds[9] {
        ("Bar", LiteralKind::Like { negated: true, case_insensitive: true, pattern }) => {
            assert_eq!((pattern.prefix.as_str(), pattern.suffix.as_str()), ("", "_"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(kinds[10], ("a", &LiteralKind::Between { negated: false }));
    assert_eq!(kinds[11], ("m", &LiteralKind::Between { negated: false }));
}

#[test]
fn non_text_columns_and_non_comparisons_are_ignored() {
    // rating is not text; 'x' || name is not a comparison; a literal compared with a function
    // result is not a column value.
    assert!(found("SELECT 'x' || name FROM restaurant WHERE rating = '4' AND lower(name) = 'a'").is_empty());
    // Numbers and E'' strings are not plain string literals.
    assert!(found("SELECT 1 FROM restaurant WHERE name = E'a\\'b' OR city_name = 3").is_empty());
}

#[test]
fn unqualified_columns_resolve_to_the_single_table_that_has_them() {
    let sql = "SELECT * FROM restaurant r JOIN location l ON l.restaurant_id = r.id \
               WHERE food_type = 'italian' AND street_name = 'Main St' AND l.city_name = 'LA'";
    assert_eq!(
        found(sql),
        vec![
            triple("italian", "public.restaurant", "food_type"),
            triple("Main St", "public.location", "street_name"),
            triple("LA", "public.location", "city_name"),
        ]
    );
    // city_name is in both tables: ambiguous, not reported.
    assert!(found("SELECT 1 FROM restaurant r, location l WHERE city_name = 'LA'").is_empty());
}

#[test]
fn join_conditions_and_table_names_without_alias() {
    let sql = "SELECT 1 FROM restaurant JOIN geographic ON geographic.city_name = restaurant.city_name \
               AND geographic.region = 'bay area' WHERE public.restaurant.name = 'x'";
    assert_eq!(found(sql), vec![triple("bay area", "public.geographic", "region"), triple("x", "public.restaurant", "name")]);
}

#[test]
fn search_path_and_schema_qualification() {
    assert_eq!(found("SELECT 1 FROM customers WHERE country = 'US'"), vec![triple("US", "shop.customers", "country")]);
    assert_eq!(found("SELECT 1 FROM sales.customers c WHERE c.segment = 'smb'"), vec![triple("smb", "sales.customers", "segment")]);
    // Quoted identifiers keep their case; unquoted fold to lower case.
    assert_eq!(found(r#"SELECT 1 FROM CUSTOMERS c WHERE c."Name" = 'Bob'"#), vec![triple("Bob", "shop.customers", "Name")]);
    assert!(found("SELECT 1 FROM customers c WHERE c.Name = 'Bob'").is_empty());
    // Unknown tables resolve to nothing.
    assert!(found("SELECT 1 FROM nowhere WHERE city_name = 'LA'").is_empty());
}

#[test]
fn subqueries_see_their_own_and_outer_scopes() {
    let sql = "SELECT name FROM restaurant r WHERE r.id IN \
               (SELECT restaurant_id FROM location WHERE street_name = 'Main' AND r.food_type = 'thai') \
               AND EXISTS (SELECT 1 FROM geographic g WHERE g.city_name = r.city_name AND region = 'north')";
    assert_eq!(
        found(sql),
        vec![
            triple("Main", "public.location", "street_name"),
            triple("thai", "public.restaurant", "food_type"),
            triple("north", "public.geographic", "region"),
        ]
    );
}

#[test]
fn derived_tables_and_ctes_map_back_to_their_source_columns() {
    let sql = "WITH c AS (SELECT city_name AS town, region FROM geographic), \
               d(kind) AS (SELECT food_type FROM restaurant) \
               SELECT * FROM c JOIN (SELECT name AS n, upper(city_name) AS up FROM restaurant) s ON true, d \
               WHERE c.town = 'LA' AND region = 'bay' AND s.n = 'Pizza' AND s.up = 'SF' AND d.kind = 'thai'";
    assert_eq!(
        found(sql),
        vec![
            triple("LA", "public.geographic", "city_name"),
            triple("bay", "public.geographic", "region"),
            triple("Pizza", "public.restaurant", "name"),
            triple("thai", "public.restaurant", "food_type"),
        ]
    );
}

#[test]
fn cte_body_literals_and_star_projections() {
    let sql = "WITH x AS (SELECT * FROM restaurant WHERE city_name = 'LA') SELECT * FROM x WHERE x.food_type = 'thai'";
    assert_eq!(found(sql), vec![triple("LA", "public.restaurant", "city_name"), triple("thai", "public.restaurant", "food_type")]);
    // A CTE shadows a table of the same name.
    let sql = "WITH restaurant AS (SELECT 'a' AS name) SELECT 1 FROM restaurant WHERE name = 'b'";
    assert!(found(sql).is_empty());
}

#[test]
fn unions_keep_a_source_only_when_both_branches_agree() {
    let sql = "SELECT * FROM (SELECT city_name FROM restaurant UNION SELECT city_name FROM restaurant) u WHERE u.city_name = 'LA'";
    assert_eq!(found(sql), vec![triple("LA", "public.restaurant", "city_name")]);
    let sql = "SELECT * FROM (SELECT city_name FROM restaurant UNION SELECT city_name FROM location) u WHERE u.city_name = 'LA'";
    assert!(found(sql).is_empty());
}

#[test]
fn ranges_are_byte_exact_with_unicode_and_newlines() {
    let sql = "SELECT 'Zürich' AS x\nFROM restaurant\n  WHERE city_name = 'São Paulo'\n    AND name = 'O''Brien'";
    let lits: Vec<LiteralRef> = find_literals(sql, &catalog()).unwrap();
    assert_eq!(lits.len(), 2);
    assert_eq!(&sql[lits[0].range.start..lits[0].range.end], "'São Paulo'");
    assert_eq!(&sql[lits[1].range.start..lits[1].range.end], "'O''Brien'");
    assert_eq!(lits[1].value, "O'Brien");
}

#[test]
fn like_patterns_split_and_rebuild() {
    let (p, core) = LikePattern::parse("%San Fran%").unwrap();
    assert_eq!((p.prefix.as_str(), core.as_str(), p.suffix.as_str()), ("%", "San Fran", "%"));
    assert_eq!(p.rebuild("San Francisco"), "%San Francisco%");
    assert_eq!(p.rebuild("50%_off\\"), "%50\\%\\_off\\\\%");
    let (p, core) = LikePattern::parse("100\\%%").unwrap();
    assert_eq!((core.as_str(), p.suffix.as_str()), ("100%", "%"));
    assert!(LikePattern::parse("Los%Angeles").is_none());
    assert!(LikePattern::parse("%%").is_none());
    // Patterns whose core holds wildcards are not reported.
    assert!(found("SELECT 1 FROM restaurant WHERE name LIKE 'a%b'").is_empty());
}

#[test]
fn parse_errors_are_reported() {
    assert!(find_literals("SELEC 1 FROM", &catalog()).is_err());
}

#[test]
fn the_relations_a_query_reads_are_named_by_their_last_part() {
    use pg_ask_core::values::literals::relation_names;
    let sql = r#"WITH recent AS (SELECT * FROM sales.Orders WHERE placed > now() - interval '1 day')
                 SELECT c.name FROM public.customers c JOIN recent r ON r.customer_id = c.id
                 WHERE c.id IN (SELECT customer_id FROM "Returns") AND EXISTS (SELECT 1 FROM customers)"#;
    assert_eq!(relation_names(sql), ["orders", "customers", "recent", "Returns"]);
    assert!(relation_names("SELEC nonsense FROM").is_empty());
}
