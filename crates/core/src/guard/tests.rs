//! Unit tests of the parse-level allowlist: what it refuses, why, and what it lets through.

use std::collections::HashSet;

use super::*;

fn refusal(sql: &str) -> Refusal {
    match check_read_only(sql) {
        Ok(checked) => panic!("accepted {sql:?} as {checked:?}"),
        Err(refusal) => refusal,
    }
}

fn accepted(sql: &str) -> CheckedSql {
    check_read_only(sql).unwrap_or_else(|r| panic!("refused {sql:?}: {r}"))
}

#[test]
fn accepts_plain_queries() {
    for sql in [
        "SELECT 1",
        "select id, note from canary where note ilike '%a%' order by id limit 5",
        "VALUES (1, 'a'), (2, 'b')",
        "SELECT id FROM canary UNION SELECT id FROM canary_log",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
        "SELECT row_number() OVER (ORDER BY id), count(*) OVER () FROM canary",
        "SELECT * FROM generate_series(1, 3) AS g(x)",
        "SELECT currval('canary_seq'), lastval(), current_setting('work_mem')",
        "SELECT now(), current_date, date_trunc('month', now()) - interval '1 day'",
        "SELECT note FROM canary WHERE note ~ '\\d+'",
        "SELECT 1, 'x' UNION TABLE canary",
    ] {
        accepted(sql);
    }
}

#[test]
fn sql_is_trimmed_but_otherwise_as_given() {
    let checked = accepted("  -- the answer\n SELECT 1 /* one */ ;  -- done\n");
    assert_eq!(checked.sql, "SELECT 1");
    assert_eq!(accepted("SELECT 1 /* one */ + 1").sql, "SELECT 1 /* one */ + 1");
    assert_eq!(accepted("SELECT 'a;b';;").sql, "SELECT 'a;b'");
    assert_eq!(accepted("SELECT 'é' AS \"ü\";").sql, "SELECT 'é' AS \"ü\"");
    assert_eq!(accepted("SELECT 1\nFROM canary\n-- inner\nWHERE id = 1;").sql, "SELECT 1\nFROM canary\n-- inner\nWHERE id = 1");
}

#[test]
fn collects_tables_but_not_ctes_or_functions() {
    let checked = accepted(
        "WITH recent AS (SELECT * FROM canary_log WHERE id > 1) \
         SELECT c.id FROM public.canary c JOIN recent r ON r.id = c.id \
         JOIN \"Canary_Log\" l ON l.id = c.id, generate_series(1, 2) g \
         WHERE c.id IN (SELECT id FROM canary) AND EXISTS (SELECT 1 FROM other.t)",
    );
    assert_eq!(checked.tables, ["canary_log", "public.canary", "\"Canary_Log\"", "canary", "other.t"]);
    let checked = accepted("SELECT * FROM Canary JOIN canary USING (id)");
    assert_eq!(checked.tables, ["Canary"]);
    let checked = accepted("SELECT id, note FROM canary_log UNION TABLE canary");
    assert_eq!(checked.tables.len(), 2);
    assert!(checked.tables.iter().any(|t| t == "canary"));
}

#[test]
fn refuses_empty_input() {
    for sql in ["", "  ", ";", " ; ;", "-- nothing\n", "/* nothing */"] {
        assert_eq!(refusal(sql), Refusal::Empty, "{sql:?}");
    }
}

#[test]
fn refuses_unparsable_text() {
    for sql in ["SELEC 1", "DO $$ BEGIN DELETE FROM canary; END $$", "SELECT 'open"] {
        assert!(matches!(refusal(sql), Refusal::Unparsable(_)), "{sql:?}");
    }
}

#[test]
fn refuses_more_than_one_statement() {
    assert_eq!(refusal("SELECT 1; DROP TABLE canary"), Refusal::MultipleStatements(2));
    assert_eq!(refusal("SELECT 1; -- x\nDROP TABLE canary;"), Refusal::MultipleStatements(2));
    assert_eq!(refusal("SELECT 1 /* ; */; SELECT 2; SELECT 3"), Refusal::MultipleStatements(3));
}

#[test]
fn refuses_statements_that_are_not_queries() {
    for (sql, kind) in [
        ("DELETE FROM canary", "DELETE"),
        ("UPDATE canary SET note = 'x'", "UPDATE"),
        ("INSERT INTO canary VALUES (1, 'x')", "INSERT"),
        ("TRUNCATE canary", "TRUNCATE"),
        ("DROP TABLE canary", "DROP"),
        ("CREATE TABLE t AS SELECT * FROM canary", "CREATE TABLE"),
        ("COPY canary TO PROGRAM 'true'", "COPY"),
        ("EXPLAIN ANALYZE DELETE FROM canary", "EXPLAIN"),
        ("SET work_mem = '1GB'", "SET"),
        ("BEGIN", "START TRANSACTION"),
        ("WITH x AS (SELECT 1) INSERT INTO canary SELECT 1, 'x' FROM x", "INSERT"),
    ] {
        assert_eq!(refusal(sql), Refusal::NotAQuery(kind.to_string()), "{sql:?}");
    }
}

#[test]
fn refuses_data_modifying_ctes_at_any_depth() {
    assert_eq!(refusal("WITH d AS (DELETE FROM canary RETURNING *) SELECT * FROM d"), Refusal::DataModifyingCte("d".into()));
    assert_eq!(
        refusal(
            "SELECT * FROM canary WHERE id IN \
             (WITH u AS (UPDATE canary SET note = 'x' RETURNING id) SELECT id FROM u)"
        ),
        Refusal::DataModifyingCte("u".into())
    );
    assert_eq!(
        refusal(
            "WITH a AS (SELECT 1), b AS (SELECT 1 UNION ALL \
             (INSERT INTO canary VALUES (9, 'x') RETURNING 1)) SELECT * FROM b"
        ),
        Refusal::DataModifyingCte("b".into())
    );
}

#[test]
fn refuses_data_modifying_subqueries() {
    assert_eq!(refusal("SELECT * FROM (DELETE FROM canary RETURNING *) AS s"), Refusal::DataModifyingSubquery("DELETE".into()));
    assert_eq!(refusal("SELECT 1 UNION (DELETE FROM canary RETURNING 1)"), Refusal::NotAQuery("DELETE".into()));
}

#[test]
fn refuses_select_into() {
    assert_eq!(refusal("SELECT * INTO copy FROM canary"), Refusal::SelectInto);
    assert_eq!(refusal("SELECT * FROM (SELECT 1 INTO t) AS s"), Refusal::SelectInto);
}

#[test]
fn refuses_locking_clauses() {
    assert_eq!(refusal("SELECT * FROM canary FOR UPDATE"), Refusal::LockingClause);
    assert_eq!(refusal("SELECT (SELECT note FROM canary LIMIT 1 FOR SHARE)"), Refusal::LockingClause);
}

#[test]
fn refuses_forbidden_functions_anywhere_and_however_written() {
    for sql in [
        "SELECT pg_sleep(1)",
        "SELECT PG_SLEEP(1)",
        "SELECT \"pg_sleep\"(1)",
        "SELECT pg_catalog.pg_sleep(1)",
        "SELECT pg_catalog.\"pg_sleep_for\"('1 s')",
        "SELECT * FROM canary WHERE pg_sleep(1) IS NOT NULL",
        "SELECT * FROM pg_sleep(5)",
        "SELECT * FROM canary, LATERAL pg_sleep(1) s",
        "SELECT * FROM canary ORDER BY (SELECT pg_sleep(1))",
        "SELECT count(*) FILTER (WHERE pg_sleep(1) IS NULL) FROM canary",
        "SELECT nextval('canary_seq')",
        "SELECT * FROM nextval('canary_seq')",
        "SELECT setval('canary_seq', 1)",
        "SELECT lo_import('/etc/passwd')",
        "SELECT query_to_xml('delete from canary', true, true, '')",
        "SELECT txid_current()",
        "SELECT pg_advisory_lock(1)",
        "SELECT * FROM dblink('', 'DELETE FROM canary') AS t(x int)",
        "SELECT coalesce(NULL, set_config('default_transaction_read_only', 'off', false))",
    ] {
        assert_eq!(refusal(sql).reason_code(), "forbidden_function", "{sql:?}");
    }
    assert_eq!(refusal("SELECT pg_catalog.pg_sleep(1)"), Refusal::ForbiddenFunction("pg_catalog.pg_sleep".into()));
}

#[test]
fn forbidden_function_message_carries_the_reason() {
    let message = Refusal::ForbiddenFunction("pg_catalog.\"pg_sleep\"".into()).to_string();
    assert!(message.starts_with("calling pg_catalog.\"pg_sleep\"() is not allowed"));
    assert!(message.contains("holds the session"), "{message}");
}

#[test]
fn refuses_settings_and_credentials_however_written() {
    for (sql, code) in [
        ("SELECT current_setting('ask.api_key')", "secret_setting"),
        ("SELECT pg_catalog.current_setting('ASK.API_KEY', true)", "secret_setting"),
        ("SELECT current_setting('ask.' || 'api_key')", "secret_setting"),
        ("SELECT current_setting(name) FROM (VALUES ('x')) v(name)", "secret_setting"),
        ("SELECT 1 WHERE current_setting(E'ask.api_key') <> ''", "secret_setting"),
        ("SELECT setting FROM pg_settings WHERE name = 'ask.api_key'", "forbidden_relation"),
        ("SELECT reset_val FROM pg_catalog.pg_settings", "forbidden_relation"),
        ("SELECT * FROM \"pg_file_settings\"", "forbidden_relation"),
        ("SELECT setconfig FROM pg_db_role_setting", "forbidden_relation"),
        ("SELECT umoptions FROM pg_user_mappings", "forbidden_relation"),
        ("SELECT rolpassword FROM pg_authid", "forbidden_relation"),
        ("SELECT 1 FROM canary WHERE EXISTS (SELECT 1 FROM pg_shadow)", "forbidden_relation"),
        ("TABLE pg_settings", "unparsable"),
        ("SELECT 1 UNION TABLE pg_settings", "forbidden_relation"),
        ("SELECT * FROM pg_show_all_settings()", "forbidden_function"),
        ("SELECT pg_options_to_table(umoptions) FROM canary", "forbidden_function"),
    ] {
        let r = refusal(sql);
        assert_eq!(r.reason_code(), code, "{sql:?}: {r}");
    }
    accepted("SELECT current_setting('server_version_num')::int");
    accepted("SELECT current_setting('search_path', true)");
    assert!(secret_setting("ask.api_key") && secret_setting("my.PASSWORD"));
    assert!(!secret_setting("work_mem"));
}

#[test]
fn deny_list_matching() {
    assert!(forbidden_function_reason("pg_sleep_until").is_some());
    assert!(forbidden_function_reason("LO_EXPORT").is_some());
    assert!(forbidden_function_reason("dblink_exec").is_some());
    assert!(forbidden_function_reason("pg_try_advisory_xact_lock").is_some());
    for allowed in ["currval", "lastval", "lower", "log", "now", "count", "current_setting"] {
        assert_eq!(forbidden_function_reason(allowed), None, "{allowed}");
    }
}

#[test]
fn refuses_literals_that_depend_on_standard_conforming_strings() {
    for sql in ["SELECT 'x\\', $$' ; DELETE FROM canary; --$$", "SELECT 'a\\''b'", "SELECT note FROM canary WHERE note = 'ends with \\'"] {
        assert_eq!(refusal(sql), Refusal::AmbiguousStringLiteral, "{sql:?}");
    }
    // Escape strings mean the same under any setting.
    accepted("SELECT E'it\\'s'");
    assert_eq!(refusal("SELECT $1$; DELETE FROM canary; SELECT $1$"), Refusal::AmbiguousStringLiteral);
    accepted("SELECT $$a$$, $q$b$q$, $_1$c$_1$");
}

#[test]
fn refuses_unicode_escape_identifiers() {
    assert_eq!(refusal("SELECT U&\"pg\\005fsleep\"(1)"), Refusal::UnicodeEscapeIdentifier);
    // A bitwise AND with spaces is not an escape.
    accepted("SELECT u & 1 FROM (SELECT 3 AS u) AS s");
}

#[test]
fn reason_codes_are_distinct() {
    let all = [
        Refusal::Unparsable(String::new()),
        Refusal::Empty,
        Refusal::MultipleStatements(2),
        Refusal::NotAQuery(String::new()),
        Refusal::NotAWriteStep(String::new()),
        Refusal::DataModifyingCte(String::new()),
        Refusal::DataModifyingSubquery(String::new()),
        Refusal::SelectInto,
        Refusal::LockingClause,
        Refusal::ForbiddenFunction(String::new()),
        Refusal::AmbiguousStringLiteral,
        Refusal::UnicodeEscapeIdentifier,
        Refusal::TooLarge { what: "tokens", found: 2, limit: 1 },
    ];
    let codes: HashSet<_> = all.iter().map(Refusal::reason_code).collect();
    assert_eq!(codes.len(), all.len());
}

#[test]
fn refuses_statements_too_large_to_walk_safely() {
    let unions = vec!["SELECT 1"; MAX_SET_OPERATIONS + 2].join(" UNION ");
    assert_eq!(refusal(&unions), Refusal::TooLarge { what: "set operations", found: MAX_SET_OPERATIONS + 1, limit: MAX_SET_OPERATIONS });
    let sum = format!("SELECT 1{}", " + 1".repeat(MAX_TOKENS));
    assert_eq!(refusal(&sum).reason_code(), "too_large");
    // Far beyond the limits: refused before parsing, so nothing deep is ever built.
    let sum = format!("SELECT 1{}", " + 1".repeat(200_000));
    assert_eq!(refusal(&sum).reason_code(), "too_large");
}

#[test]
fn deepest_accepted_trees_fit_a_small_stack() {
    // A backend usually has 8 MiB of stack; this runs in 2 MiB, in a debug build, whose
    // frames are the largest.
    let deep = [
        vec!["SELECT 1"; MAX_SET_OPERATIONS + 1].join(" UNION "),
        format!("SELECT 1{}", " + 1".repeat(MAX_TOKENS / 2 - 1)),
        format!("SELECT 1{}", "::int".repeat(MAX_TOKENS / 2 - 1)),
        format!("SELECT true{}", " IS NULL".repeat(MAX_TOKENS / 3 - 1)),
    ];
    let checked = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || deep.iter().map(|sql| check_read_only(sql).is_ok()).collect::<Vec<_>>())
        .expect("spawn")
        .join()
        .expect("no stack overflow");
    assert_eq!(checked, [true; 4]);
}

fn write_refusal(sql: &str) -> Refusal {
    match check_write_step(sql) {
        Ok(checked) => panic!("accepted {sql:?} as a write step: {checked:?}"),
        Err(refusal) => refusal,
    }
}

fn write_accepted(sql: &str) -> CheckedSql {
    check_write_step(sql).unwrap_or_else(|r| panic!("refused write step {sql:?}: {r}"))
}

#[test]
fn write_steps_accept_plain_dml_and_queries() {
    let checked = write_accepted(
        "INSERT INTO purchases (supplier_id, purchased_on) VALUES (3, '2023-01-01') \
         RETURNING purchase_id;",
    );
    assert_eq!(checked.tables, ["purchases"]);
    assert!(checked.sql.ends_with("RETURNING purchase_id"));
    let checked = write_accepted(
        "INSERT INTO public.stock (fruit_id, qty) SELECT f.fruit_id, 0 FROM fruits f \
         WHERE f.name = 'cherry' ON CONFLICT (fruit_id) DO UPDATE SET qty = stock.qty + 1",
    );
    assert_eq!(checked.tables, ["public.stock", "fruits"]);
    let checked = write_accepted(
        "UPDATE fruits SET stock_kg = stock_kg + s.kg FROM sale_items s \
         WHERE s.fruit_id = fruits.fruit_id AND s.sale_id = 7",
    );
    assert_eq!(checked.tables, ["fruits", "sale_items"]);
    let checked = write_accepted("DELETE FROM sale_items USING sales WHERE sales.sale_id = sale_items.sale_id");
    assert_eq!(checked.tables, ["sale_items", "sales"]);
    write_accepted("SELECT sale_id FROM sales WHERE customer_id = 1");
    write_accepted("WITH s AS (SELECT 1 AS x) SELECT x FROM s");
}

#[test]
fn nextval_only_in_an_insert() {
    write_accepted("INSERT INTO sales (sale_id, customer_id) VALUES (nextval('sales_sale_id_seq'), 2)");
    write_accepted("INSERT INTO sales (sale_id) SELECT nextval('sales_sale_id_seq')");
    for sql in [
        "SELECT nextval('sales_sale_id_seq')",
        "UPDATE sales SET sale_id = nextval('s') WHERE sale_id = 1",
        "DELETE FROM sales WHERE sale_id = nextval('s')",
        "INSERT INTO sales (sale_id) VALUES (setval('s', 1))",
        "INSERT INTO log (x) SELECT pg_sleep(1)",
    ] {
        assert_eq!(write_refusal(sql).reason_code(), "forbidden_function", "{sql:?}");
    }
    // The read-only guard is unchanged.
    assert_eq!(refusal("SELECT nextval('s')").reason_code(), "forbidden_function");
}

#[test]
fn write_steps_refuse_ddl_merge_and_nesting() {
    for (sql, kind) in [
        ("DROP TABLE sales", "DROP"),
        ("CREATE TABLE t (x int)", "CREATE TABLE"),
        ("ALTER TABLE sales ADD COLUMN x int", "ALTER TABLE"),
        ("TRUNCATE sales", "TRUNCATE"),
        ("GRANT ALL ON sales TO public", "GRANT"),
        ("COPY sales FROM '/tmp/x'", "COPY"),
        ("BEGIN", "START TRANSACTION"),
        ("COMMIT", "COMMIT"),
        ("SET role postgres", "SET"),
        (
            "MERGE INTO fruits f USING new_fruits n ON f.name = n.name \
             WHEN NOT MATCHED THEN INSERT (name) VALUES (n.name)",
            "MERGE",
        ),
        (
            "WITH old AS (SELECT sale_id FROM sales WHERE sale_id = 1) \
             DELETE FROM sale_items WHERE sale_id IN (SELECT sale_id FROM old)",
            "WITH … DELETE",
        ),
    ] {
        assert_eq!(write_refusal(sql), Refusal::NotAWriteStep(kind.into()), "{sql:?}");
    }
    assert_eq!(
        write_refusal("INSERT INTO archive WITH d AS (DELETE FROM sales RETURNING *) SELECT * FROM d"),
        Refusal::DataModifyingCte("d".into())
    );
    assert_eq!(write_refusal("DELETE FROM sales; DROP TABLE sales"), Refusal::MultipleStatements(2));
    assert_eq!(write_refusal("SELECT * FROM sales FOR UPDATE"), Refusal::LockingClause);
    assert_eq!(write_refusal("SELECT * INTO copy FROM sales"), Refusal::SelectInto);
    assert_eq!(write_refusal("UPDATE sales SET note = 'a\\''b' WHERE true"), Refusal::AmbiguousStringLiteral);
    assert!(write_refusal("").reason_code() == "empty");
    assert!(Refusal::NotAWriteStep("DROP".into()).to_string().contains("only SELECT, INSERT, UPDATE or DELETE"));
}

#[test]
fn offset_cursor_maps_multibyte_columns() {
    let text = "é\nab€c";
    let mut cursor = OffsetCursor::new(text);
    assert_eq!(cursor.offset(Location { line: 2, column: 4 }), "é\nab€".len());
    assert_eq!(cursor.offset(Location { line: 3, column: 1 }), text.len());
    assert_eq!(cursor.offset(Location { line: 1, column: 2 }), "é".len());
}
