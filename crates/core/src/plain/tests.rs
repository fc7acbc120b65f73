//! Tests of [`describe`](super::describe) on real query shapes: the exact lines for some, the
//! structured fields for all, and the statements it refuses.

use super::*;

/// The structured fields expected of a description.
struct Fields<'a> {
    tables: &'a [&'a str],
    filter: &'a [&'a str],
    group: &'a [&'a str],
    order: &'a [&'a str],
    limit: Option<u64>,
}

const NONE: Fields<'static> = Fields { tables: &[], filter: &[], group: &[], order: &[], limit: None };

/// Describes `sql`, checks its structured fields and that every line is one short line ending
/// in a full stop, and returns it.
fn described(sql: &str, fields: Fields) -> Plain {
    let plain = describe(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let strings = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(plain.tables, strings(fields.tables), "tables of {sql}");
    assert_eq!(plain.filter_columns, strings(fields.filter), "filter columns of {sql}");
    assert_eq!(plain.group_columns, strings(fields.group), "group columns of {sql}");
    assert_eq!(plain.order_columns, strings(fields.order), "order columns of {sql}");
    assert_eq!(plain.limit, fields.limit, "limit of {sql}");
    assert!(!plain.lines.is_empty());
    for line in &plain.lines {
        assert!(!line.chars().any(char::is_control), "control character in {line:?}");
        assert!(line.ends_with('.'), "{line:?}");
    }
    assert_eq!(plain.text().lines().count(), plain.lines.len());
    plain
}

fn has_line(plain: &Plain, line: &str) {
    assert!(plain.lines.iter().any(|l| l == line), "no line {line:?} in:\n{}", plain.text());
}

#[test]
fn count_with_filters_is_said_in_three_lines() {
    let sql = "SELECT count(*) FROM restaurants WHERE city = 'San Francisco' AND closed_on IS NULL";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["city", "closed_on"], ..NONE });
    assert_eq!(
        plain.lines,
        ["Reads restaurants.", "Keeps rows whose city is 'San Francisco' and whose closed_on is empty.", "Counts the rows."]
    );
    assert_eq!(plain.text(), plain.lines.join("\n"));
}

#[test]
fn join_with_aliases_group_having_order_and_limit() {
    let sql = "SELECT r.name, AVG(v.stars) AS avg_stars FROM restaurants r JOIN reviews v ON v.restaurant_id = r.id \
               WHERE r.cuisine IN ('Thai', 'Lao') GROUP BY r.name HAVING COUNT(*) > 5 ORDER BY avg_stars DESC LIMIT 5";
    let plain = described(
        sql,
        Fields { tables: &["restaurants", "reviews"], filter: &["cuisine"], group: &["name"], order: &["stars"], limit: Some(5) },
    );
    assert_eq!(
        plain.lines,
        [
            "Reads restaurants.",
            "Joins reviews, matching reviews.restaurant_id to restaurants.id.",
            "Keeps rows whose restaurants.cuisine is one of 'Thai', 'Lao'.",
            "For each restaurants.name, computes the average reviews.stars.",
            "Keeps only the groups whose number of rows is greater than 5.",
            "Sorts by the average reviews.stars, highest first.",
            "Keeps the first 5 rows.",
        ]
    );
}

#[test]
fn group_by_with_several_aggregates_and_order_by_alias() {
    let sql = "SELECT cuisine, count(*) AS n, avg(rating) FROM restaurants GROUP BY cuisine ORDER BY n DESC";
    let plain = described(sql, Fields { tables: &["restaurants"], group: &["cuisine"], ..NONE });
    assert_eq!(
        plain.lines,
        [
            "Reads restaurants.",
            "For each cuisine, computes the number of rows and the average rating.",
            "Sorts by the number of rows, highest first.",
        ]
    );
}

#[test]
fn nested_and_or_with_not_carried_down() {
    let sql = "SELECT * FROM restaurants WHERE (city = 'LA' OR city = 'SF') AND NOT (price > 3 OR closed_on IS NOT NULL)";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["city", "price", "closed_on"], ..NONE });
    assert_eq!(
        plain.lines,
        [
            "Reads restaurants.",
            "Keeps rows (whose city is 'LA' or whose city is 'SF') and whose price is at most 3 and whose closed_on is empty.",
            "Shows all columns.",
        ]
    );
}

#[test]
fn and_inside_or_is_parenthesized() {
    let sql = "SELECT name FROM t WHERE a = 1 OR (b = 2 AND c <> 'x')";
    let plain = described(sql, Fields { tables: &["t"], filter: &["a", "b", "c"], ..NONE });
    has_line(&plain, "Keeps rows whose a is 1 or (whose b is 2 and whose c is not 'x').");
}

#[test]
fn not_in_subquery_names_the_subquery() {
    let sql = "SELECT name FROM restaurants WHERE id NOT IN (SELECT restaurant_id FROM reviews WHERE stars < 2)";
    let plain = described(sql, Fields { tables: &["restaurants", "reviews"], filter: &["id", "stars"], ..NONE });
    has_line(&plain, "Keeps rows whose id is not among the results of a sub-query over reviews.");
}

#[test]
fn not_in_list() {
    let sql = "SELECT name FROM restaurants WHERE cuisine NOT IN ('Fast food', 'Buffet')";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["cuisine"], ..NONE });
    has_line(&plain, "Keeps rows whose cuisine is none of 'Fast food', 'Buffet'.");
}

#[test]
fn exists_and_not_exists() {
    let sql = "SELECT name FROM restaurants r WHERE EXISTS (SELECT 1 FROM reviews v WHERE v.restaurant_id = r.id) \
               AND NOT EXISTS (SELECT 1 FROM closures c WHERE c.rid = r.id)";
    let plain = described(sql, Fields { tables: &["restaurants", "reviews", "closures"], filter: &["restaurant_id", "id", "rid"], ..NONE });
    has_line(
        &plain,
        "Keeps rows for which some row of reviews has reviews.restaurant_id equal to restaurants.id and for which no row of closures has closures.rid equal to restaurants.id.",
    );
    // A sub-query that is not one relation matched by columns is named only.
    let sql = "SELECT name FROM restaurants r WHERE EXISTS (SELECT 1 FROM reviews v WHERE v.stars > 4)";
    let plain = described(sql, Fields { tables: &["restaurants", "reviews"], filter: &["stars"], ..NONE });
    has_line(&plain, "Keeps rows for which a sub-query over reviews finds at least one row.");
}

#[test]
fn cte_is_named_and_described() {
    let sql = "WITH top_rated AS (SELECT restaurant_id, avg(stars) AS s FROM reviews GROUP BY restaurant_id HAVING avg(stars) >= 4.5) \
               SELECT r.name FROM restaurants r JOIN top_rated t ON t.restaurant_id = r.id";
    let plain = described(sql, Fields { tables: &["reviews", "restaurants"], filter: &["stars"], group: &["restaurant_id"], ..NONE });
    assert_eq!(
        plain.lines,
        [
            "Uses a sub-query named top_rated over reviews.",
            "top_rated: Reads reviews.",
            "top_rated: For each restaurant_id, computes the average stars.",
            "top_rated: Keeps only the groups whose average stars is at least 4.5.",
            "Reads restaurants.",
            "Joins top_rated, matching top_rated.restaurant_id to restaurants.id.",
            "Shows restaurants.name.",
        ]
    );
}

#[test]
fn ranking_window_function() {
    let sql = "SELECT name, rank() OVER (PARTITION BY cuisine ORDER BY rating DESC) FROM restaurants";
    let plain = described(sql, Fields { tables: &["restaurants"], ..NONE });
    has_line(&plain, "Ranks the rows within each cuisine by rating, highest first (rank).");
}

#[test]
fn aggregate_window_function_and_running_total() {
    let sql = "SELECT name, sum(amount) OVER (PARTITION BY customer_id), sum(amount) OVER (ORDER BY day) FROM orders";
    let plain = described(sql, Fields { tables: &["orders"], ..NONE });
    has_line(&plain, "Computes the total amount for each customer_id, shown on every row.");
    // A running total depends on the frame: said as written.
    has_line(&plain, "Computes sum(amount) OVER (ORDER BY day).");
}

#[test]
fn union_parts_then_order_and_limit() {
    let sql = "SELECT name FROM restaurants WHERE city = 'LA' UNION SELECT name FROM food_trucks WHERE city = 'LA' ORDER BY name LIMIT 10";
    let plain =
        described(sql, Fields { tables: &["restaurants", "food_trucks"], filter: &["city"], order: &["name"], limit: Some(10), ..NONE });
    assert_eq!(
        plain.lines,
        [
            "Combines the rows of 2 parts, removing duplicates.",
            "Part 1: Reads restaurants.",
            "Part 1: Keeps rows whose city is 'LA'.",
            "Part 1: Shows name.",
            "Part 2: Reads food_trucks.",
            "Part 2: Keeps rows whose city is 'LA'.",
            "Part 2: Shows name.",
            "Sorts by name, lowest first.",
            "Keeps the first 10 rows.",
        ]
    );
}

#[test]
fn union_all_intersect_and_except() {
    let plain = described(
        "SELECT name FROM a UNION ALL SELECT name FROM b UNION ALL SELECT name FROM c",
        Fields { tables: &["a", "b", "c"], ..NONE },
    );
    assert_eq!(plain.lines[0], "Combines the rows of 3 parts, keeping duplicates.");
    has_line(&plain, "Part 3: Reads c.");
    let plain = described("SELECT a FROM t1 INTERSECT SELECT a FROM t2", Fields { tables: &["t1", "t2"], ..NONE });
    assert_eq!(plain.lines[0], "Keeps the rows found in both parts.");
    let plain = described("SELECT a FROM t1 EXCEPT SELECT a FROM t2", Fields { tables: &["t1", "t2"], ..NONE });
    assert_eq!(plain.lines[0], "Keeps the rows of part 1 that are not in part 2.");
}

#[test]
fn like_and_ilike_patterns() {
    let sql = "SELECT name FROM restaurants WHERE name LIKE '%pizza%' OR name ILIKE 'Joe%' OR name LIKE '%bar' \
               OR name LIKE 'a_c' OR name NOT LIKE '%x%' OR name LIKE '50\\%'";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["name"], ..NONE });
    has_line(
        &plain,
        "Keeps rows whose name contains 'pizza' or whose name starts with 'Joe' (ignoring case) or whose name ends with 'bar' \
         or whose name matches the pattern 'a_c' or whose name does not contain 'x' or whose name is '50%'.",
    );
}

#[test]
fn between_and_dates() {
    let sql = "SELECT name FROM restaurants WHERE opened BETWEEN '2020-01-01' AND '2020-12-31' AND price NOT BETWEEN 1 AND 2 \
               AND inspected >= CURRENT_DATE - INTERVAL '30 days' AND updated < now() AND closed > DATE '2024-01-01'";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["opened", "price", "inspected", "updated", "closed"], ..NONE });
    has_line(
        &plain,
        "Keeps rows whose opened is between '2020-01-01' and '2020-12-31' (inclusive) and whose price is not between 1 and 2 \
         (inclusive) and whose inspected is on or after '30 days' before today and whose updated is before now \
         and whose closed is after '2024-01-01'.",
    );
}

#[test]
fn constant_on_the_left_is_turned_round() {
    let sql = "SELECT * FROM t WHERE 5 < z AND '2024-01-01' >= d AND x = ANY(ARRAY[1, 2, 3])";
    let plain = described(sql, Fields { tables: &["t"], filter: &["z", "d", "x"], ..NONE });
    has_line(&plain, "Keeps rows whose z is greater than 5 and whose d is on or before '2024-01-01' and whose x is one of 1, 2, 3.");
}

#[test]
fn distinct_and_distinct_on() {
    let plain = described("SELECT DISTINCT city FROM restaurants", Fields { tables: &["restaurants"], ..NONE });
    assert_eq!(plain.lines, ["Reads restaurants.", "Shows city.", "Removes duplicate rows."]);
    let sql = "SELECT DISTINCT ON (city) city, name FROM restaurants ORDER BY city, rating DESC NULLS LAST";
    let plain = described(sql, Fields { tables: &["restaurants"], order: &["city", "rating"], ..NONE });
    has_line(&plain, "Keeps one row for each city.");
    has_line(&plain, "Sorts by city (lowest first), then rating (highest first, empty last).");
}

#[test]
fn aggregates_without_group() {
    let sql = "SELECT count(DISTINCT city), min(price), max(price), sum(price * qty) FROM restaurants";
    let plain = described(sql, Fields { tables: &["restaurants"], ..NONE });
    has_line(&plain, "Computes the number of different city, the lowest price, the highest price and the total of price * qty.");
}

#[test]
fn self_join_keeps_the_aliases() {
    let sql = "SELECT e.name, m.name FROM employees e LEFT JOIN employees m ON e.manager_id = m.id";
    let plain = described(sql, Fields { tables: &["employees"], ..NONE });
    assert_eq!(
        plain.lines,
        [
            "Reads employees (as e).",
            "Joins employees (as m), matching e.manager_id to m.id, and keeps employees (as e) rows with no match.",
            "Shows e.name and m.name.",
        ]
    );
}

#[test]
fn schema_qualified_using_and_cross_join() {
    let sql = "SELECT * FROM public.orders o LEFT JOIN public.customers c USING (customer_id) CROSS JOIN regions";
    let plain = described(sql, Fields { tables: &["public.orders", "public.customers", "regions"], ..NONE });
    has_line(&plain, "Joins public.customers, matching on customer_id, and keeps public.orders rows with no match.");
    has_line(&plain, "Pairs every row with every row of regions.");
}

#[test]
fn join_on_a_condition_that_is_not_only_keys() {
    let sql = "SELECT r.* FROM restaurants r JOIN reviews v ON v.rid = r.id AND v.stars > 3";
    let plain = described(sql, Fields { tables: &["restaurants", "reviews"], ..NONE });
    has_line(&plain, "Joins reviews, matching rows whose reviews.rid equals restaurants.id and whose reviews.stars is greater than 3.");
    has_line(&plain, "Shows all columns of restaurants.");
}

#[test]
fn comma_join_says_all_combinations() {
    let sql = "SELECT * FROM restaurants r, reviews v WHERE v.restaurant_id = r.id";
    let plain = described(sql, Fields { tables: &["restaurants", "reviews"], filter: &["restaurant_id", "id"], ..NONE });
    has_line(&plain, "Reads restaurants and reviews (all combinations of their rows).");
    has_line(&plain, "Keeps rows whose reviews.restaurant_id equals restaurants.id.");
}

#[test]
fn what_is_not_recognised_is_said_as_written() {
    let sql = "SELECT round(avg(rating), 2) AS avg_rating, upper(name) FROM restaurants WHERE y ~ 'abc' AND lower(name) = 'x'";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["y", "name"], ..NONE });
    assert_eq!(
        plain.lines,
        [
            "Reads restaurants.",
            "Keeps rows where y ~ 'abc' is true and where lower(name) is 'x'.",
            "Computes round(avg(rating), 2).",
            "Computes upper(name).",
        ]
    );
}

#[test]
fn hostile_literal_stays_on_one_line() {
    let sql = "SELECT name FROM restaurants WHERE note = 'a\nb'' ; DROP TABLE x; --\r\n' AND is_open";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["note", "is_open"], ..NONE });
    has_line(&plain, "Keeps rows whose note is 'a\\nb'' ; DROP TABLE x; --\\r\\n' and whose is_open is true.");
    assert_eq!(plain.lines.len(), 3);
}

#[test]
fn quoted_identifier_with_newline_and_long_literal() {
    let long = "x".repeat(200);
    let sql = format!("SELECT \"odd\nname\" FROM \"Weird Table\" WHERE \"City\" = '{long}'");
    let plain = described(&sql, Fields { tables: &["\"Weird Table\""], filter: &["City"], ..NONE });
    has_line(&plain, "Shows \"odd\\nname\".");
    let keep = plain.lines.iter().find(|l| l.starts_with("Keeps rows")).unwrap();
    assert!(keep.chars().count() < 120 && keep.ends_with("'….") && keep.contains("whose \"City\" is"), "{keep}");
}

#[test]
fn derived_table_and_scalar_subquery() {
    let sql = "SELECT * FROM (SELECT city, count(*) AS n FROM restaurants GROUP BY 1) s WHERE s.n > 3";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["n"], group: &["city"], ..NONE });
    assert_eq!(
        plain.lines,
        ["Reads a sub-query over restaurants (named s).", "Keeps rows whose n is greater than 3.", "Shows all columns."]
    );
    let sql = "SELECT name, (SELECT count(*) FROM reviews v WHERE v.rid = r.id) FROM restaurants r";
    let plain = described(sql, Fields { tables: &["reviews", "restaurants"], filter: &["rid", "id"], ..NONE });
    has_line(&plain, "Computes a value from a sub-query over reviews.");
}

#[test]
fn offset_limit_without_order_says_at_most() {
    let sql = "SELECT * FROM orders WHERE created_at >= date_trunc('month', now()) OFFSET 10 LIMIT 1";
    let plain = described(sql, Fields { tables: &["orders"], filter: &["created_at"], limit: Some(1), ..NONE });
    assert_eq!(
        plain.lines[1..],
        [
            "Keeps rows whose created_at is on or after date_trunc('month', now()).",
            "Shows all columns.",
            "Skips the first 10 rows.",
            "Keeps at most 1 row.",
        ]
    );
}

#[test]
fn fetch_first_and_order_by_position() {
    let sql = "SELECT name, created_at FROM orders ORDER BY 2 DESC FETCH FIRST 3 ROWS ONLY";
    let plain = described(sql, Fields { tables: &["orders"], order: &["created_at"], limit: Some(3), ..NONE });
    has_line(&plain, "Sorts by created_at, highest first.");
    has_line(&plain, "Keeps the first 3 rows.");
}

#[test]
fn group_without_aggregates_and_group_by_position() {
    let plain = described("SELECT city FROM restaurants GROUP BY 1", Fields { tables: &["restaurants"], group: &["city"], ..NONE });
    assert_eq!(plain.lines, ["Reads restaurants.", "Makes one row for each city."]);
}

#[test]
fn recursive_cte_values_and_select_without_from() {
    let sql = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10) SELECT sum(n) FROM t";
    let plain = described(sql, Fields { filter: &["n"], ..NONE });
    assert_eq!(plain.lines[0], "Uses a recursive sub-query named t over t.");
    has_line(&plain, "t: Part 1: Computes 1.");
    assert_eq!(plain.lines.last().unwrap(), "Computes the total n.");
    assert_eq!(described("VALUES (1), (2)", NONE).lines, ["Lists 2 rows written in the query."]);
    assert_eq!(described("SELECT 1", NONE).lines, ["Computes 1."]);
}

#[test]
fn table_functions_and_locks() {
    let plain = described("SELECT * FROM generate_series(1, 10) g", NONE);
    assert_eq!(plain.lines[0], "Reads the rows of generate_series(1, 10) (named g).");
    let plain = described("SELECT * FROM t FOR UPDATE", Fields { tables: &["t"], ..NONE });
    has_line(&plain, "Locks the rows it reads (FOR UPDATE).");
}

#[test]
fn booleans_and_negated_comparisons() {
    let sql = "SELECT * FROM t WHERE x <> 3 AND NOT x = 4 AND NOT flag AND a = b AND ok IS TRUE";
    let plain = described(sql, Fields { tables: &["t"], filter: &["x", "flag", "a", "b", "ok"], ..NONE });
    has_line(&plain, "Keeps rows whose x is not 3 and whose x is not 4 and whose flag is false and whose a equals b and whose ok is true.");
}

#[test]
fn comparison_with_null_is_said_as_written() {
    let plain = described("SELECT * FROM t WHERE x = NULL", Fields { tables: &["t"], filter: &["x"], ..NONE });
    has_line(&plain, "Keeps rows where x = NULL is true.");
}

#[test]
fn long_condition_chains_do_not_overflow() {
    let chain = vec!["a = 1"; 2400].join(" AND "); // 9,600 tokens: near the guard's limit
    let plain = described(&format!("SELECT * FROM t WHERE {chain}"), Fields { tables: &["t"], filter: &["a"], ..NONE });
    assert_eq!(plain.lines.len(), 3);
    let sum = vec!["1"; 3000].join(" + ");
    described(&format!("SELECT * FROM t WHERE a = {sum}"), Fields { tables: &["t"], filter: &["a"], ..NONE });
}

#[test]
fn statements_that_are_not_one_query_are_refused() {
    assert_eq!(describe("INSERT INTO t VALUES (1)"), Err(PlainError::NotAQuery("INSERT".to_string())));
    assert_eq!(describe("INSERT INTO t VALUES (1)").unwrap_err().to_string(), "INSERT is not described: only a query is described");
    assert_eq!(describe("CREATE TABLE x (a int)"), Err(PlainError::NotAQuery("CREATE TABLE".to_string())));
    assert_eq!(describe("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x"), Err(PlainError::NotAQuery("WITH … DELETE".to_string())));
    assert_eq!(describe("SELECT 1; SELECT 2"), Err(PlainError::NotSingleStatement(2)));
    assert_eq!(describe("  -- nothing\n"), Err(PlainError::NotSingleStatement(0)));
    assert!(matches!(describe("SELEC x FROM t"), Err(PlainError::Parse(_))));
}

#[test]
fn long_in_list_count_of_a_column_and_negated_having() {
    let sql = "SELECT city, count(phone) FROM restaurants WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10) \
               GROUP BY city HAVING NOT (count(*) < 3 OR max(price) IS NULL)";
    let plain = described(sql, Fields { tables: &["restaurants"], filter: &["id", "price"], group: &["city"], ..NONE });
    assert_eq!(
        plain.lines,
        [
            "Reads restaurants.",
            "Keeps rows whose id is one of 1, 2, 3, 4, 5, 6, 7, 8, … (10 values).",
            "For each city, computes the number of non-empty phone.",
            "Keeps only the groups whose number of rows is at least 3 and whose highest price is not empty.",
        ]
    );
}

#[test]
fn a_count_over_one_table_in_two_lines() {
    let plain = describe("SELECT count(*) AS cities FROM public.cities").unwrap();
    assert_eq!(plain.lines, vec!["Reads public.cities.", "Counts the rows."]);
    let plain = describe("SELECT name FROM public.cities WHERE name LIKE 'San%' ORDER BY name LIMIT 2").unwrap();
    assert_eq!(plain.lines[0], "Reads public.cities.");
    assert!(plain.lines.iter().any(|l| l.contains("starts with 'San'")), "{:?}", plain.lines);
}
