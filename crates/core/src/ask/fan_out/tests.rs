use super::*;
use crate::schema::Column;

fn table(name: &str, key: &[&str], columns: &[&str]) -> Table {
    Table {
        schema: "public".into(),
        name: name.into(),
        kind: "table".into(),
        columns: columns
            .iter()
            .map(|n| Column { name: (*n).into(), data_type: "integer".into(), not_null: false, comment: None })
            .collect(),
        primary_key: key.iter().map(|k| (*k).into()).collect(),
        ..Default::default()
    }
}

fn described() -> Vec<Table> {
    vec![
        table("cities", &["id"], &["id", "name", "population", "state_code"]),
        table("restaurants", &["id"], &["id", "name", "city_id", "cuisine", "rating"]),
        table("inspections", &["id"], &["id", "restaurant_id", "score", "grade"]),
        table("states", &["code"], &["code", "name"]),
    ]
}

fn once(sql: &str) -> Option<(String, Vec<String>)> {
    let tables = described();
    let statement = crate::guard::parse_statement(sql).unwrap();
    let read = || tables.as_slice();
    as_exists(sql, &statement, &read)
}

fn rewritten(sql: &str) -> Option<String> {
    once(sql).map(|(s, _)| s)
}

#[test]
fn a_join_that_only_multiplies_rows_is_written_as_exists() {
    // The joined table first, its rows named only by the join: the other table becomes the
    // first, and the join the condition it also is.
    let (sql, what) = once(
        "SELECT T2.population FROM public.restaurants AS T1 INNER JOIN public.cities AS T2 ON T1.city_id = T2.id WHERE T2.name = 'Chicago'",
    )
    .unwrap();
    assert_eq!(
        sql,
        "SELECT T2.population FROM public.cities AS T2 WHERE (T2.name = 'Chicago') AND EXISTS (SELECT 1 FROM public.restaurants AS T1 WHERE T1.city_id = T2.id)"
    );
    assert_eq!(what, ["public.restaurants AS T1 INNER JOIN public.cities AS T2 ON T1.city_id = T2.id"]);
    // A later join, a WHERE of ORs kept together, the sort and limit after it.
    assert_eq!(
        rewritten("SELECT c.name FROM cities c JOIN restaurants r ON r.city_id = c.id WHERE c.population > 5 OR c.name = 'Rome' ORDER BY c.name LIMIT 3").as_deref(),
        Some("SELECT c.name FROM cities c WHERE (c.population > 5 OR c.name = 'Rome') AND EXISTS (SELECT 1 FROM restaurants r WHERE r.city_id = c.id) ORDER BY c.name LIMIT 3")
    );
    // No WHERE: one is written after the FROM clause; a join on no key at all multiplies too.
    assert_eq!(
        rewritten("SELECT c.name, c.population\nFROM cities c\nJOIN inspections i ON c.id = i.restaurant_id\nORDER BY c.population DESC").as_deref(),
        Some("SELECT c.name, c.population\nFROM cities c WHERE EXISTS (SELECT 1 FROM inspections i WHERE c.id = i.restaurant_id)\nORDER BY c.population DESC")
    );
    // The middle of three: the third's join stays.
    assert_eq!(
        rewritten("SELECT c.name, s.name FROM cities c JOIN restaurants r ON r.city_id = c.id JOIN states s ON s.code = c.state_code").as_deref(),
        Some("SELECT c.name, s.name FROM cities c JOIN states s ON s.code = c.state_code WHERE EXISTS (SELECT 1 FROM restaurants r WHERE r.city_id = c.id)")
    );
}

#[test]
fn a_join_whose_rows_are_used_or_counted_is_kept() {
    for sql in [
        // A column of the joined table selected, filtered on, sorted by, or all of them.
        "SELECT c.name, r.name FROM cities c JOIN restaurants r ON r.city_id = c.id",
        "SELECT c.name FROM cities c JOIN restaurants r ON r.city_id = c.id WHERE r.cuisine = 'Thai'",
        "SELECT c.name FROM cities c JOIN restaurants r ON r.city_id = c.id ORDER BY r.rating DESC",
        "SELECT c.name, r.* FROM cities c JOIN restaurants r ON r.city_id = c.id",
        // Unqualified, a column of the joined table (cuisine is only the restaurants').
        "SELECT c.name FROM cities c JOIN restaurants r ON r.city_id = c.id WHERE cuisine = 'Thai'",
        // Counted, grouped, distinct, windowed: the copies may be what is asked.
        "SELECT count(*) FROM cities c JOIN restaurants r ON r.city_id = c.id",
        "SELECT c.name FROM cities c JOIN restaurants r ON r.city_id = c.id GROUP BY c.name",
        "SELECT DISTINCT c.name FROM cities c JOIN restaurants r ON r.city_id = c.id",
        "SELECT c.name, row_number() OVER () FROM cities c JOIN restaurants r ON r.city_id = c.id",
        // Joined on its whole key: nothing is multiplied.
        "SELECT r.name FROM restaurants r JOIN cities c ON r.city_id = c.id",
        "SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE r.rating > 4",
        // Outer joins, USING, a table nothing describes, SELECT *, a WITH, a set operation.
        "SELECT c.name FROM cities c LEFT JOIN restaurants r ON r.city_id = c.id",
        "SELECT c.name FROM cities c JOIN restaurants r USING (id)",
        "SELECT c.name FROM cities c JOIN menus m ON m.city_id = c.id",
        "SELECT * FROM cities c JOIN restaurants r ON r.city_id = c.id",
        "WITH x AS (SELECT 1) SELECT c.name FROM cities c JOIN restaurants r ON r.city_id = c.id",
        "SELECT c.name FROM cities c JOIN restaurants r ON r.city_id = c.id UNION SELECT name FROM states",
        // A name of the join condition unqualified: in the subquery it would be read as the
        // joined table's own column.
        "SELECT c.name FROM cities c JOIN restaurants r ON city_id = c.id",
        "SELECT c.population FROM restaurants r JOIN cities c ON r.city_id = id WHERE c.name = 'Rome'",
        // Two FROM items, and no join at all.
        "SELECT c.name FROM cities c, restaurants r WHERE r.city_id = c.id",
        "SELECT name FROM cities",
    ] {
        assert_eq!(rewritten(sql), None, "{sql}");
    }
}
