use super::*;
use crate::schema::Column;

fn table(schema: &str, name: &str, columns: &[(&str, &str)]) -> Table {
    Table {
        schema: schema.into(),
        name: name.into(),
        kind: "table".into(),
        columns: columns
            .iter()
            .map(|(n, t)| Column { name: (*n).into(), data_type: (*t).into(), not_null: false, comment: None })
            .collect(),
        ..Default::default()
    }
}

fn described() -> Vec<Table> {
    vec![
        table("public", "business", &[("business_id", "text"), ("is_open", "integer"), ("state", "text"), ("review_count", "bigint")]),
        table(
            "public",
            "aircraft",
            &[("aircraft_code", "text"), ("range_miles", "integer"), ("pay_load", "integer"), ("speed", "double precision")],
        ),
        table("public", "state", &[("state_name", "text"), ("population", "bigint"), ("area", "double precision")]),
        table("shop", "state", &[("state_name", "text"), ("population", "numeric")]),
    ]
}

fn exact(sql: &str) -> Option<String> {
    let tables = described();
    let statement = crate::guard::parse_statement(sql).unwrap();
    let read = || tables.as_slice();
    as_fraction(sql, &statement, &read).map(|(s, _)| s)
}

#[test]
fn a_ratio_of_counts_divides_exactly() {
    assert_eq!(
        exact("SELECT COUNT(CASE WHEN is_open = 1 THEN 1 END) / COUNT(CASE WHEN is_open = 0 THEN 1 END) AS ratio FROM business").as_deref(),
        Some("SELECT COUNT(CASE WHEN is_open = 1 THEN 1 END)::numeric / COUNT(CASE WHEN is_open = 0 THEN 1 END) AS ratio FROM business")
    );
    // A sum of integers is a bigint; the percentage's dividend is its last factor made numeric.
    assert_eq!(
        exact("SELECT SUM(CASE WHEN is_open = 1 THEN 1 ELSE 0 END) * 100 / COUNT(*) FROM business").as_deref(),
        Some("SELECT SUM(CASE WHEN is_open = 1 THEN 1 ELSE 0 END) * 100::numeric / COUNT(*) FROM business")
    );
    // Integer columns through their aliases, a divisor kept from zero, a one-value subquery.
    assert_eq!(
        exact("SELECT a.aircraft_code, a.range_miles / NULLIF(a.pay_load, 0) AS r FROM aircraft AS a").as_deref(),
        Some("SELECT a.aircraft_code, a.range_miles::numeric / NULLIF(a.pay_load, 0) AS r FROM aircraft AS a")
    );
    assert_eq!(
        exact("SELECT state, COUNT(*) / (SELECT COUNT(*) FROM business) FROM business GROUP BY state").as_deref(),
        Some("SELECT state, COUNT(*)::numeric / (SELECT COUNT(*) FROM business) FROM business GROUP BY state")
    );
    // Unqualified bigint column of the one table read; in a HAVING; parenthesised dividends.
    assert_eq!(
        exact("SELECT state FROM business GROUP BY state HAVING (sum(is_open)) / (count(*)) > 0.5").as_deref(),
        Some("SELECT state FROM business GROUP BY state HAVING (sum(is_open))::numeric / (count(*)) > 0.5")
    );
    // Two divisions; in a chain the first one's dividend makes the rest exact.
    let (sql, divisions) = {
        let tables = described();
        let sql =
            "SELECT count(*) / count(DISTINCT state) AS a, review_count / count(*) / count(*) AS b FROM business GROUP BY review_count";
        let statement = crate::guard::parse_statement(sql).unwrap();
        let read = || tables.as_slice();
        as_fraction(sql, &statement, &read).unwrap()
    };
    assert_eq!(
        sql,
        "SELECT count(*)::numeric / count(DISTINCT state) AS a, review_count::numeric / count(*) / count(*) AS b FROM business GROUP BY review_count"
    );
    assert_eq!(divisions.len(), 2, "{divisions:?}");
    assert!(divisions.contains(&"count(*) / count(DISTINCT state)".to_string()), "{divisions:?}");
}

#[test]
fn anything_not_an_integer_for_certain_is_left_as_written() {
    for sql in [
        // A unit written as a number.
        "SELECT range_miles / 60 FROM aircraft",
        "SELECT count(*) / 2 FROM business",
        // Already exact: a float or numeric side, a cast, a sum of bigints (numeric).
        "SELECT range_miles / speed FROM aircraft",
        "SELECT CAST(count(*) AS FLOAT) / count(DISTINCT state) FROM business",
        "SELECT count(*)::float / count(DISTINCT state) FROM business",
        "SELECT count(*) * 1.0 / count(DISTINCT state) FROM business",
        "SELECT sum(review_count) / count(*) FROM business",
        "SELECT population / area FROM state",
        "SELECT avg(range_miles) / max(pay_load) FROM aircraft",
        // The query makes it an integer itself.
        "SELECT CAST(count(*) / count(DISTINCT state) AS INTEGER) FROM business",
        "SELECT (count(*) / count(DISTINCT state))::int FROM business",
        "SELECT floor(range_miles / pay_load) FROM aircraft",
        // A name whose type is not known: a CTE's column, a subquery's, another schema's table
        // of the same name, a column two tables type differently.
        "WITH c AS (SELECT count(*) AS n FROM business) SELECT c.n / c.n FROM c",
        "SELECT s.n / s.m FROM (SELECT count(*) AS n, count(*) AS m FROM business) s",
        "SELECT st.population / st.population FROM shop.state st",
        "SELECT population / population FROM state, shop.state",
        "SELECT x / y FROM nowhere",
        // No division at all, or one only in a string or a comment.
        "SELECT count(*) FROM business WHERE state = 'a/b' -- a / b",
    ] {
        assert_eq!(exact(sql), None, "{sql}");
    }
}

#[test]
fn the_described_tables_are_read_only_when_a_division_may_be_one() {
    let asked = std::cell::Cell::new(0);
    let tables = described();
    let read = || {
        asked.set(asked.get() + 1);
        tables.as_slice()
    };
    for sql in ["SELECT count(*) FROM business", "SELECT range_miles / 60 FROM aircraft", "SELECT (a / b)::int FROM t"] {
        let statement = crate::guard::parse_statement(sql).unwrap();
        assert_eq!(as_fraction(sql, &statement, &read), None);
    }
    assert_eq!(asked.get(), 0);
}
