//! Unit tests of SQL extraction: the shapes models answer in, and what must never be trimmed away.

use super::*;

#[test]
fn mysql_habits_are_written_the_postgresql_way() {
    assert_eq!(
        without_mysql_habits("SELECT `name`, `First Name` FROM `cities` LIMIT 10, 5"),
        "SELECT name, \"First Name\" FROM cities LIMIT 5 OFFSET 10"
    );
    assert_eq!(without_mysql_habits("SELECT `Name` FROM t LIMIT 3"), "SELECT \"Name\" FROM t LIMIT 3");
    // Inside strings and comments nothing changes.
    let s = "SELECT 'a `b` LIMIT 1, 2' FROM t -- `c`\n";
    assert_eq!(without_mysql_habits(s), s);
    assert_eq!(extract_sql("```sql\nSELECT `x` FROM t LIMIT 0,20;\n```").as_deref(), Some("SELECT x FROM t LIMIT 20 OFFSET 0"));
}

fn extracted(reply: &str) -> String {
    extract_sql(reply).unwrap_or_else(|| panic!("no SQL found in {reply:?}"))
}

#[test]
fn bare_statements() {
    assert_eq!(extracted("SELECT * FROM canary;"), "SELECT * FROM canary");
    assert_eq!(extracted("  select 1  \n"), "select 1");
    assert_eq!(extracted("SELECT id\nFROM canary\nWHERE id > 1\nORDER BY id;\n"), "SELECT id\nFROM canary\nWHERE id > 1\nORDER BY id");
    assert_eq!(extracted("(SELECT 1) UNION (SELECT 2)"), "(SELECT 1) UNION (SELECT 2)");
    assert_eq!(extracted("SELECT 1;;"), "SELECT 1");
}

#[test]
fn reasoning_is_not_the_answer() {
    let reply = "<think>Maybe SELECT * FROM people? No, count them.</think>\n```sql\nSELECT count(*) FROM people\n```";
    assert_eq!(extracted(reply), "SELECT count(*) FROM people");
    assert_eq!(extracted("<THINKING>\nSELECT draft\n</THINKING>SELECT final"), "SELECT final");
    // Cut off while thinking: no answer, not the draft.
    assert_eq!(extract_sql("<think>\nSELECT * FROM people WHERE"), None);
}

#[test]
fn a_run_of_repeated_queries_is_read_as_its_first() {
    // SmolLM2-135M, to its token limit.
    let runaway =
        "SELECT * FROM public.restaurants WHERE id NOT IN (1,1)\n\nSELECT * FROM public.cities WHERE city_id NOT IN (1,1)\n\nSELECT * FROM";
    assert_eq!(extracted(runaway), "SELECT * FROM public.restaurants WHERE id NOT IN (1,1)");
    let with_semicolons = "SELECT max(x) FROM t WHERE s = 'USA';\nSELECT max(x) FROM t WHERE s = 'USA';\nSELECT max(x)";
    assert_eq!(extracted(with_semicolons), "SELECT max(x) FROM t WHERE s = 'USA'");
    // Any other statement in the run keeps it whole, for the guard to refuse.
    assert_eq!(extracted("SELECT 1;\nDELETE FROM t;\nSELECT 2"), "SELECT 1;\nDELETE FROM t;\nSELECT 2");
    assert_eq!(extracted("SELECT 1\n\nDROP TABLE t"), "SELECT 1\n\nDROP TABLE t");
    // One statement over several lines, with a blank line inside, stays one.
    assert_eq!(extracted("SELECT a,\n\n  b FROM t"), "SELECT a,\n\n  b FROM t");
    // <query> tags, as in the answer prompt.
    assert_eq!(extracted("<query>\nSELECT 1\n</query>\n\nResult:\n<id>1</id>"), "SELECT 1");
}

#[test]
fn echoed_instructions_are_not_sql() {
    let echo = format!("{}\n\n<question>how many?</question>", crate::prompt::SQL_SYSTEM);
    assert_eq!(extract_sql(&echo), None);
    assert_eq!(
        extract_sql(
            "```sql\nSELECT) statement, PostgreSQL dialect. Never write INSERT, UPDATE, DELETE, DDL, or more than one statement.\n```"
        ),
        None
    );
    assert_eq!(extracted(&format!("{}\n```sql\nSELECT count(*) FROM t\n```", crate::prompt::SQL_SYSTEM)), "SELECT count(*) FROM t");
    // A short line that happens to be in the instructions is kept.
    assert_eq!(extracted("SELECT 1"), "SELECT 1");
}

#[test]
fn an_echoed_schema_is_not_sql() {
    // Gemma 3 270M copied the prompt's description back; its lines read as TABLE statements.
    let echo = "TABLE public.cities  -- Cities covered by the restaurant guide.\n  id integer NOT NULL PRIMARY KEY\n  name text NOT NULL\nTABLE public.states\n  code text NOT NULL PRIMARY KEY";
    assert_eq!(extract_sql(echo), None);
    assert_eq!(extracted(&format!("{echo}\n\nSELECT name FROM public.cities")), "SELECT name FROM public.cities");
    assert_eq!(extracted(&format!("<schema>\n{echo}\n</schema>\nSELECT 1")), "SELECT 1");
    // The same description written as statements.
    let statements =
        "CREATE TABLE public.cities (  -- Cities covered by the restaurant guide.\n  id integer PRIMARY KEY,\n  name text NOT NULL\n);";
    assert_eq!(extract_sql(statements), None);
    assert_eq!(extracted(&format!("{statements}\n\nSELECT name FROM public.cities")), "SELECT name FROM public.cities");
    // A TABLE statement stays one.
    assert_eq!(extracted("TABLE public.cities"), "TABLE public.cities");
    assert_eq!(extracted("TABLE public.cities;\n"), "TABLE public.cities");
    assert_eq!(extracted("```sql\nTABLE cities\n```"), "TABLE cities");
}

#[test]
fn fenced_blocks_of_every_flavour() {
    for reply in [
        "```sql\nSELECT 1;\n```",
        "```SQL\nSELECT 1\n```",
        "```postgresql\nSELECT 1\n```",
        "```postgres\nSELECT 1;\n```\n",
        "```pgsql\nSELECT 1\n```",
        "```\nSELECT 1\n```",
        "~~~sql\nSELECT 1\n~~~",
        "````sql\nSELECT 1\n````",
        "```sql SELECT 1```",
        "```SELECT 1;```",
        "Here you go: ```sql\nSELECT 1\n```",
        "```sql\nSELECT 1",
        "```sql\nSELECT 1;```",
    ] {
        assert_eq!(extracted(reply), "SELECT 1", "{reply:?}");
    }
}

#[test]
fn prose_around_a_fence_is_dropped() {
    let reply = "Sure! Here is the query you asked for:\n\n```sql\nSELECT count(*)\nFROM canary;\n```\n\nThis counts the rows of `canary`. Let me know if you need more.";
    assert_eq!(extracted(reply), "SELECT count(*)\nFROM canary");
}

#[test]
fn the_last_sql_block_wins() {
    let reply = "First attempt:\n```sql\nSELECT id FROM canary\n```\nBetter:\n```sql\nSELECT id, note FROM canary\n```\nResult:\n```\n id | note\n----+------\n```";
    assert_eq!(extracted(reply), "SELECT id, note FROM canary");
    let reply = "```python\nprint(1)\n```\n```sql\nSELECT 2\n```\n```json\n{\"rows\": 1}\n```";
    assert_eq!(extracted(reply), "SELECT 2");
}

#[test]
fn a_block_is_never_split() {
    let reply = "```sql\nSELECT 1;\nDROP TABLE canary;\n```";
    assert_eq!(extracted(reply), "SELECT 1;\nDROP TABLE canary");
    let reply = "```sql\nSELECT 1; -- harmless\nDELETE FROM canary\n```";
    assert_eq!(extracted(reply), "SELECT 1; -- harmless\nDELETE FROM canary");
    let reply = "```sql\nSELECT 1 /* ; */; UPDATE canary SET note = 'x';\n```";
    assert_eq!(extracted(reply), "SELECT 1 /* ; */; UPDATE canary SET note = 'x'");
}

#[test]
fn a_trailing_semicolon_in_a_comment_stays() {
    assert_eq!(extracted("SELECT 1 -- done;"), "SELECT 1 -- done;");
    assert_eq!(extracted("```sql\nSELECT 1; -- done;\n```"), "SELECT 1; -- done;");
}

#[test]
fn sql_tags() {
    assert_eq!(extracted("<sql>SELECT 1;</sql>"), "SELECT 1");
    assert_eq!(extracted("I think this works.\n<SQL>\nSELECT note\nFROM canary\n</SQL>\nDone."), "SELECT note\nFROM canary");
    assert_eq!(extracted("<sql>\n```sql\nSELECT 1\n```\n</sql>"), "SELECT 1");
    assert_eq!(extracted("<sql>SELECT 1; DELETE FROM canary</sql>"), "SELECT 1; DELETE FROM canary");
    assert_eq!(extracted("<sql>SELECT 3"), "SELECT 3");
}

#[test]
fn json_replies() {
    assert_eq!(extracted(r#"{"sql": "SELECT 1;", "explanation": "one"}"#), "SELECT 1");
    assert_eq!(extracted("```json\n{\"query\": \"SELECT 2\"}\n```"), "SELECT 2");
}

#[test]
fn prose_before_and_after() {
    let reply = "Here is the query:\n SELECT * FROM canary WHERE id = 1;\n\nThis returns the first canary.";
    assert_eq!(extracted(reply), "SELECT * FROM canary WHERE id = 1");
    let reply = "Here is the query:\nSELECT *\nFROM canary\n\nThis query lists every canary.";
    assert_eq!(extracted(reply), "SELECT *\nFROM canary");
    let reply = "SQL: SELECT note FROM canary ORDER BY id";
    assert_eq!(extracted(reply), "SELECT note FROM canary ORDER BY id");
    let reply = "Sure. SELECT 1; It's that simple.";
    assert_eq!(extracted(reply), "SELECT 1");
    let reply = "With pleasure! Here is the SQL:\nWITH t AS (SELECT 1 AS x)\nSELECT x FROM t;";
    assert_eq!(extracted(reply), "WITH t AS (SELECT 1 AS x)\nSELECT x FROM t");
    let reply = "sql\nSELECT 1";
    assert_eq!(extracted(reply), "SELECT 1");
}

#[test]
fn prose_mode_keeps_later_statements() {
    let reply = "Here you go:\nSELECT 1; -- harmless\nDROP TABLE canary;\n\nThis cleans up.";
    assert_eq!(extracted(reply), "SELECT 1; -- harmless\nDROP TABLE canary");
    let reply = "SELECT 1;\n\nDELETE FROM canary;";
    assert_eq!(extracted(reply), "SELECT 1;\n\nDELETE FROM canary");
    let reply = "SELECT 1; /* ; */ DELETE FROM canary";
    assert_eq!(extracted(reply), "SELECT 1; /* ; */ DELETE FROM canary");
    let reply = "SELECT 1; /* unterminated DELETE FROM canary";
    assert_eq!(extracted(reply), reply);
    let reply = "SELECT 'a;b', 1; delete from canary";
    assert_eq!(extracted(reply), reply);
}

#[test]
fn prose_mode_keeps_blank_lines_inside_sql() {
    let reply = "SELECT id\n\nFROM canary\n\n  WHERE id > 1\n\nORDER BY id";
    assert_eq!(extracted(reply), reply);
}

#[test]
fn leading_comments_start_the_statement() {
    let reply = "-- count the canaries\nSELECT count(*) FROM canary;";
    assert_eq!(extracted(reply), "-- count the canaries\nSELECT count(*) FROM canary");
    let reply = "/* harmless */ DELETE FROM canary";
    assert_eq!(extracted(reply), reply);
}

#[test]
fn comments_before_prose_do_not_hide_a_label() {
    assert_eq!(extracted("/* note */\nHere: SELECT 1"), "SELECT 1");
    assert_eq!(extracted("/* a\n b */ Answer:\nSELECT 2"), "SELECT 2");
    assert_eq!(extract_sql("/* unterminated\nSELECT 1"), None);
}

#[test]
fn adversarial_replies_take_linear_time() {
    let started = std::time::Instant::now();
    let many_statements = format!("SELECT 1{}", "; SELECT 1".repeat(20_000));
    assert_eq!(extracted(&many_statements).len(), many_statements.len());
    let many_semicolons = format!("SELECT 1{}", ";".repeat(20_000));
    assert_eq!(extracted(&many_semicolons), "SELECT 1");
    let many_comments = format!("{}x", "/*\n".repeat(20_000));
    assert_eq!(extract_sql(&many_comments), None);
    let nested_comments = format!("{}{}x", "/*\n".repeat(10_000), "*/\n".repeat(10_000));
    assert_eq!(extract_sql(&nested_comments), None);
    let fences = "```\n".repeat(20_000);
    assert_eq!(extract_sql(&fences), None);
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn inline_code() {
    assert_eq!(extracted("Run `SELECT count(*) FROM canary` to count."), "SELECT count(*) FROM canary");
    assert_eq!(extracted("The table `canary` has it: `select note from canary`."), "select note from canary");
}

#[test]
fn no_sql_at_all() {
    for reply in [
        "",
        "   ",
        "I'm sorry, I cannot answer that from this database.",
        "```text\nno idea\n```",
        "```sql\n```",
        "Select the table you want to query and ask again.",
        "The `canary` table holds notes.",
    ] {
        assert_eq!(extract_sql(reply), None, "{reply:?}");
    }
}

#[test]
fn strip_fences_takes_the_last_block() {
    assert_eq!(strip_fences("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
    assert_eq!(strip_fences("  plain  "), "plain");
    assert_eq!(strip_fences("```\na\n```\n```\nb\n```"), "b");
}

#[test]
fn fenced_block_details() {
    let blocks = fenced_blocks("x\n```sql\nSELECT 1\n```\ny\n```\nz");
    assert_eq!(
        blocks,
        [FencedBlock { info: "sql", body: "SELECT 1\n", closed: true }, FencedBlock { info: "", body: "z", closed: false },]
    );
    assert!(blocks[0].is_tagged_sql());
    assert!(!blocks[1].is_tagged_sql());
}
