//! Unit tests of the evaluation's readers: CSV records and gold SQL.

use super::*;

#[test]
fn csv_fields_may_hold_quotes_commas_and_lines() {
    let r = read_csv("a,b\r\n\"x, \"\"y\"\"\nz\",2\n");
    assert_eq!(r, [vec!["a", "b"], vec!["x, \"y\"\nz", "2"]]);
    assert_eq!(read_csv("a,b"), [vec!["a", "b"]]);
}

#[test]
fn braces_take_the_first_alternative() {
    assert_eq!(
        first_alternatives("SELECT {a.x, a.y}, n FROM a GROUP BY {} ORDER BY {b.z}"),
        "SELECT a.x, n FROM a GROUP BY a.x ORDER BY b.z"
    );
    assert_eq!(first_alternatives("SELECT 1"), "SELECT 1");
}

#[test]
fn gold_tables_skip_ctes_and_keep_alternatives() {
    let gold = gold_tables(
        "WITH c AS (SELECT * FROM Orders) SELECT {c.id, c.n} FROM c JOIN public.\"Items\" i ON true GROUP BY {};\
         SELECT count(*) FROM orders;",
    );
    assert_eq!(gold, [BTreeSet::from(["orders".to_string(), "Items".to_string()]), BTreeSet::from(["orders".to_string()])]);
}
