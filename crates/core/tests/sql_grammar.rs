//! The SQL grammar, refereed by llama.cpp's own grammar parser (`llama-gbnf-validator`, built
//! by `scripts/llm.sh install`; no model needed): each generated grammar accepts a corpus of
//! valid queries over its tables and rejects queries that name anything else.
//!
//! The validator is found at `$PG_ASK_GBNF_VALIDATOR`, else where `scripts/llm.sh` installs it.

use std::path::PathBuf;
use std::process::Command;

use pg_ask_core::constrain::grammar::{class_of, sql_grammar, Class, GrammarOptions};
use pg_ask_core::schema::{parse_rendered, render, Column, Table};

fn validator() -> PathBuf {
    let path = std::env::var_os("PG_ASK_GBNF_VALIDATOR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/pg_ask/llm/llama.cpp-0.3.36/bin/llama-gbnf-validator"));
    assert!(
        path.exists(),
        "llama-gbnf-validator not found at {}: run `bash scripts/llm.sh install` (or set PG_ASK_GBNF_VALIDATOR)",
        path.display()
    );
    path
}

/// Every text, checked against the grammar: `true` where llama.cpp accepts it.
fn accepted(grammar: &str, texts: &[String]) -> Vec<bool> {
    let dir = tempdir();
    let g = dir.join("g.gbnf");
    std::fs::write(&g, grammar).unwrap();
    let v = validator();
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let input = dir.join(format!("in{i}.txt"));
            std::fs::write(&input, text).unwrap();
            let out = Command::new(&v).arg(&g).arg(&input).output().expect("llama-gbnf-validator runs");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                !stdout.contains("Failed to initialize"),
                "llama.cpp could not parse the grammar:\n{}",
                &grammar[..grammar.len().min(3000)]
            );
            stdout.contains("Input string is valid")
        })
        .collect()
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pg_ask_grammar_{}_{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

fn fenced(sql: &str) -> String {
    format!("```sql\n{sql}\n```")
}

/// Every query of `good`, fenced as a reply, is accepted by the grammar, and every one of `bad`
/// refused; the failure names the query.
fn assert_verdicts(grammar: &str, good: &[&str], bad: &[&str]) {
    let texts: Vec<String> = good.iter().chain(bad).map(|q| fenced(q)).collect();
    let verdicts = accepted(grammar, &texts);
    for (q, ok) in good.iter().zip(&verdicts) {
        assert!(ok, "the grammar refuses a valid query over its tables:\n{q}");
    }
    for (q, ok) in bad.iter().zip(&verdicts[good.len()..]) {
        assert!(!ok, "the grammar accepts a query it must refuse:\n{q}");
    }
}

/// Four of the sample database's tables as `render` describes them (also what
/// `scripts/bench.sh grammar` samples with).
const SAMPLE: &str = include_str!("../../../bench/fixtures/sample_tables.txt");

#[test]
fn the_sample_grammar_accepts_queries_over_its_tables() {
    let tables = parse_rendered(SAMPLE);
    assert_eq!(tables.len(), 4);
    let g = sql_grammar(&tables, GrammarOptions::default()).unwrap();
    let good = [
        "SELECT COUNT(*) FROM public.restaurants",
        "SELECT COUNT(*) FROM public.restaurants;",
        "SELECT name, rating FROM public.restaurants WHERE cuisine = 'Italian' AND rating >= 4.5 ORDER BY rating DESC LIMIT 5",
        "SELECT DISTINCT cuisine FROM public.restaurants\nORDER BY 1",
        "SELECT r.name, c.name AS \"City\" FROM public.restaurants AS r JOIN public.cities AS c ON r.city_id = c.id WHERE c.name = 'Los Angeles'",
        "SELECT c.name, COUNT(*) AS \"n\" FROM public.restaurants AS r JOIN public.cities AS c ON r.city_id = c.id GROUP BY 1 HAVING COUNT(*) > 3 ORDER BY COUNT(*) DESC, 1",
        "SELECT AVG(stars) FROM public.reviews WHERE reviewed_at >= DATE '2023-01-01' AND body ILIKE '%pasta%'",
        "SELECT name FROM public.restaurants WHERE city_id IN (SELECT id FROM public.cities WHERE country = 'United Kingdom')",
        "SELECT name FROM public.restaurants WHERE rating > (SELECT AVG(rating) FROM public.restaurants)",
        "SELECT name, RANK() OVER (ORDER BY rating DESC) FROM public.restaurants",
        "SELECT name, CASE WHEN rating >= 4 THEN 'good' ELSE 'other' END FROM public.restaurants WHERE closed_on IS NULL",
        "SELECT EXTRACT(YEAR FROM opened_on) AS \"year\", COUNT(*) FROM public.restaurants GROUP BY 1 ORDER BY 1",
        "SELECT name FROM public.restaurants WHERE is_open = TRUE AND price_range IN ('$', '$$')",
        "SELECT name FROM public.cities UNION SELECT name FROM public.states",
        "SELECT ROUND(AVG(rating)::NUMERIC, 2) FROM public.restaurants WHERE opened_on BETWEEN DATE '2019-01-01' AND DATE '2020-12-31'",
        "SELECT s.name, COUNT(*) FROM public.restaurants AS r JOIN public.cities AS c ON r.city_id = c.id JOIN public.states AS s ON c.state_code = s.code GROUP BY 1",
        "SELECT r2.name, AVG(r.stars) FROM public.reviews AS r JOIN public.restaurants AS r2 ON r.restaurant_id = r2.id GROUP BY 1",
        "SELECT name FROM public.restaurants WHERE EXISTS (SELECT 1 FROM public.reviews WHERE stars = 1)",
        "SELECT CAST(rating AS INTEGER), LOWER(name) || ' ' || cuisine FROM public.restaurants",
        "SELECT MAX(reviewed_at) - INTERVAL '30 days' FROM public.reviews",
        "SELECT name FROM public.restaurants WHERE (cuisine = 'Italian' OR cuisine = 'French') AND NOT rating > 4",
        "SELECT ROUND(CAST(SUM(rating) AS NUMERIC) / COUNT(*)::NUMERIC, 2) FROM public.restaurants",
        "SELECT cuisine, city_id, COUNT(*), MAX(rating) FROM public.restaurants GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 3",
        "SELECT SUM(CASE WHEN is_open THEN 1 ELSE 0 END) FROM public.restaurants",
        "SELECT name, rating - AVG(rating) OVER (PARTITION BY cuisine) FROM public.restaurants",
        "SELECT name FROM public.cities UNION SELECT name FROM public.states ORDER BY 1 LIMIT 10",
        "SELECT name FROM public.restaurants WHERE rating = (SELECT MAX(rating) FROM public.restaurants)",
        "SELECT name FROM public.restaurants ORDER BY LENGTH(name) DESC, rating",
        // What models write: keywords and functions in lower case, tables without the
        // schema of the search path, Spider's T1/T2 aliases, a table's own name, INNER JOIN,
        // AS left out, a join's condition either way round, line breaks and indentation, a
        // trailing semicolon.
        "select count(*) from restaurants;",
        "SELECT count(*) FROM public.restaurants",
        "SELECT COUNT(*) FROM restaurants",
        "SELECT T1.name FROM public.restaurants AS T1 JOIN public.cities AS T2 ON T1.city_id = T2.id WHERE T2.name = 'Los Angeles'",
        "SELECT T1.name FROM restaurants AS T1 INNER JOIN cities AS T2 ON T2.id = T1.city_id WHERE T2.name = 'Los Angeles';",
        "SELECT restaurants.name FROM restaurants JOIN cities ON restaurants.city_id = cities.id WHERE cities.name = 'Los Angeles'",
        "SELECT T1.name FROM restaurants T1 WHERE T1.rating > 4",
        "SELECT r.name FROM restaurants r JOIN cities c ON r.city_id = c.id",
        "SELECT restaurants.name FROM restaurants ORDER BY restaurants.rating desc limit 3",
        "SELECT name\nFROM restaurants\nWHERE cuisine = 'Italian'\n  AND rating > 4;",
        "SELECT\n    name,\n    rating\nFROM public.restaurants\nORDER BY rating DESC\nLIMIT 5",
        "SELECT cuisine, avg(rating) AS \"avg\" FROM restaurants GROUP BY 1 ORDER BY 2 DESC",
        "SELECT name FROM restaurants WHERE opened_on >= date '2020-01-01' and rating is not null",
    ];
    let bad = [
        // No such table, or not schema-qualified as described.
        "SELECT COUNT(*) FROM public.dishes",
        "SELECT COUNT(*) FROM dishes",
        // A column of another table.
        "SELECT population FROM public.restaurants",
        "SELECT name FROM public.restaurants WHERE country = 'Italy'",
        // A column that exists nowhere.
        "SELECT address FROM public.restaurants",
        // A text column compared with a number, a number with a string.
        "SELECT name FROM public.restaurants WHERE cuisine = 4",
        "SELECT name FROM public.restaurants WHERE rating = 'high'",
        // A join that is not along a foreign key, an alias that is not the branch's.
        "SELECT r.name FROM public.restaurants AS r JOIN public.states AS s ON r.city_id = s.code",
        "SELECT x.name FROM public.restaurants AS x",
        "SELECT T2.name FROM public.restaurants AS T1",
        "SELECT cities.name FROM restaurants",
        "SELECT T1.name FROM restaurants AS T1 JOIN cities AS T2 ON T1.city_id = T2.code",
        // White space runs, mixed-case identifiers that PostgreSQL would not find.
        "SELECT name FROM restaurants\n\nWHERE rating > 4",
        "SELECT Name FROM restaurants",
        // Writes and a second statement.
        "DELETE FROM public.restaurants",
        "SELECT 1 FROM public.restaurants; DROP TABLE public.restaurants",
        // Untyped and impossible dates.
        "SELECT name FROM public.restaurants WHERE opened_on > '2020-01-01'",
        "SELECT name FROM public.restaurants WHERE opened_on > DATE '2020-13-01'",
        // round(double precision, integer) does not exist in PostgreSQL.
        "SELECT ROUND(AVG(rating), 2) FROM public.restaurants",
        // Runaway white space, and nesting without end: parentheses, NOT, functions and
        // subqueries nest a bounded number of levels.
        "SELECT  name FROM public.restaurants",
        "SELECT name FROM public.restaurants WHERE NOT NOT is_open",
        "SELECT ((rating)) FROM public.restaurants",
        "SELECT name FROM public.restaurants WHERE ((rating > 4))",
        "SELECT LOWER(LOWER(LOWER(name))) FROM public.restaurants",
        "SELECT name FROM public.restaurants WHERE id IN (SELECT id FROM public.restaurants WHERE id IN (SELECT id FROM public.restaurants))",
        // What PostgreSQL would refuse after generation. A column neither grouped nor
        // aggregated (42803), an aggregate or a window function in WHERE (42803, 42P20),
        // grouping by a name (keys come first and are grouped by position, so none is left
        // out), an ORDER BY after DISTINCT on something not selected (42P10), a position or a
        // constant to order by that may not exist (42P10, 42601), a scalar subquery that can
        // return more than one row (21000), UNION operands of different shapes (42601).
        "SELECT name, COUNT(*) FROM public.restaurants",
        "SELECT cuisine, name, COUNT(*) FROM public.restaurants GROUP BY 1",
        "SELECT name FROM public.restaurants WHERE rating > AVG(rating)",
        "SELECT name FROM public.restaurants WHERE RANK() OVER (ORDER BY rating) <= 3",
        "SELECT cuisine, COUNT(*) FROM public.restaurants GROUP BY cuisine",
        "SELECT DISTINCT cuisine FROM public.restaurants ORDER BY rating",
        "SELECT name FROM public.restaurants ORDER BY 3",
        "SELECT name FROM public.restaurants ORDER BY 'x'",
        "SELECT cuisine, COUNT(*) FROM public.restaurants GROUP BY 1 ORDER BY 3",
        "SELECT name FROM public.restaurants WHERE rating = (SELECT rating FROM public.restaurants)",
        "SELECT COUNT(*) FROM public.restaurants HAVING COUNT(*) > 1 ORDER BY name",
        "SELECT name, rating FROM public.cities UNION SELECT name FROM public.states",
    ];
    assert_verdicts(&g.text, &good, &bad);
    // Unfenced text is refused: the reply keeps the shape the prompt asks for.
    assert_eq!(accepted(&g.text, &["SELECT COUNT(*) FROM public.restaurants".to_string()]), vec![false]);
}

#[test]
fn identifiers_are_written_as_postgresql_needs_them() {
    // Mixed case, a reserved word, spaces, a double quote, a schema that needs quotes.
    let text = "\
TABLE \"Sales Data\".\"Order\"
  \"Id\" integer PRIMARY KEY
  \"select\" text
  \"unit price\" numeric
  \"say \"\"hi\"\"\" text
  customer_id integer REFERENCES \"Sales Data\".customer(id)
TABLE \"Sales Data\".customer
  id integer PRIMARY KEY
  \"Name\" text
";
    let tables = parse_rendered(text);
    assert_eq!(tables[0].columns.len(), 5);
    let g = sql_grammar(&tables, GrammarOptions::default()).unwrap();
    let good = [
        "SELECT \"Id\", \"select\" FROM \"Sales Data\".\"Order\" WHERE \"unit price\" > 10",
        "SELECT \"say \"\"hi\"\"\" FROM \"Sales Data\".\"Order\"",
        "SELECT c.\"Name\", SUM(o.\"unit price\") FROM \"Sales Data\".\"Order\" AS o JOIN \"Sales Data\".customer AS c ON o.customer_id = c.id GROUP BY 1",
    ];
    let bad = [
        "SELECT Id FROM \"Sales Data\".\"Order\"",
        "SELECT select FROM \"Sales Data\".\"Order\"",
        "SELECT \"Id\" FROM Sales Data.Order",
        "SELECT \"Id\" FROM \"sales data\".\"order\"",
        // A schema that is not on the search path cannot be left out.
        "SELECT \"Id\" FROM \"Order\"",
        "SELECT name FROM \"Sales Data\".customer",
    ];
    assert_verdicts(&g.text, &good, &bad);
}

#[test]
fn a_table_of_1600_columns_and_a_self_reference() {
    let mut wide = Table { schema: "public".into(), name: "wide".into(), kind: "table".into(), ..Default::default() };
    for i in 0..1600 {
        let ty = ["integer", "text", "date", "boolean", "jsonb"][i % 5];
        wide.columns.push(Column { name: format!("c{i}"), data_type: ty.into(), ..Default::default() });
    }
    let staff = "\
TABLE public.staff
  id integer PRIMARY KEY
  name text
  manager_id integer REFERENCES public.staff(id)
";
    let mut tables = parse_rendered(&render(&[wide]));
    tables.extend(parse_rendered(staff));
    let g = sql_grammar(&tables, GrammarOptions::default()).unwrap();
    // Two tables and the self-join; each table bare, with T1 and with its own name; the
    // self-join with initials and numbered (its own name twice would be ambiguous).
    assert_eq!(g.branches, 8);
    assert_verdicts(
        &g.text,
        &[
            "SELECT c1599, c0 FROM public.wide WHERE c1 = 'x' AND c3 = TRUE",
            "SELECT s.name, s2.name FROM public.staff AS s JOIN public.staff AS s2 ON s.manager_id = s2.id",
            "SELECT T1.name, T2.name FROM staff AS T1 JOIN staff AS T2 ON T1.manager_id = T2.id",
        ],
        // jsonb is neither text nor number: no literal comparison; c1600 does not exist.
        &["SELECT c0 FROM public.wide WHERE c4 = 'x'", "SELECT c1600 FROM public.wide"],
    );
}

#[test]
fn column_classes() {
    for (t, c) in [
        ("integer", Class::Number),
        ("numeric(10,2)", Class::Number),
        ("double precision", Class::Number),
        ("character varying(20)", Class::Text),
        ("timestamp with time zone", Class::Time),
        ("timestamp(3) without time zone", Class::Time),
        ("boolean", Class::Bool),
        ("integer[]", Class::Other),
        ("\"Mood\"", Class::Other),
        ("jsonb", Class::Other),
    ] {
        assert_eq!(class_of(t), c, "{t}");
    }
}

#[test]
fn the_size_follows_the_described_tables() {
    // Branches are capped; a grammar of many tables still comes out, smaller per table.
    let many: String = (0..300)
        .map(|i| format!("TABLE s.t{i}\n  id integer PRIMARY KEY\n  name text\n  parent_id integer REFERENCES s.t{}(id)\n", (i + 1) % 300))
        .collect();
    let tables = parse_rendered(&many);
    let g = sql_grammar(&tables, GrammarOptions { max_branches: 400, two_hops: true, ..GrammarOptions::default() }).unwrap();
    assert_eq!((g.tables, g.branches), (300, 400));
    assert!(sql_grammar(&[], GrammarOptions::default()).is_none());
}
