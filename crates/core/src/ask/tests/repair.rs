//! The first repair of a query that failed, asked as `ask.first_repair` says.

use super::*;

/// Three replies, two of which fail as a missing column, asked with `first_repair`: the
/// requests the model saw, once the third reply's query ran.
fn repaired(first_repair: crate::config::FirstRepair) -> Scripted {
    let replies = [
        "```sql\nSELECT sum(citation_num) FROM public.restaurants\n```",
        "```sql\nSELECT nme FROM public.restaurants\n```",
        "```sql\nSELECT name FROM public.restaurants\n```",
    ];
    let mut h = Scripted::new(&replies);
    h.exec = only_name_runs();
    let out = run(&mut h, "q", &AskConfig { first_repair, ..cfg() }, Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.restaurants");
    h
}

#[test]
fn a_restarted_first_repair_tells_the_failure_without_the_failed_query() {
    let h = repaired(crate::config::FirstRepair::Restart);
    let first = &h.seen[0].1.messages.last().unwrap().content;
    let second = &h.seen[1].1.messages.last().unwrap().content;
    let third = &h.seen[2].1.messages.last().unwrap().content;
    // The restart: the first request, the failure told (its message), the query not shown.
    assert!(second.starts_with(first.as_str()), "{second}");
    assert!(second.contains("<error>") && second.contains("does not exist"), "{second}");
    assert!(!second.contains("```sql\nSELECT sum(citation_num)"), "the failed query was shown: {second}");
    // The next repair shows the query that failed then, and keeps the first failure told.
    assert!(third.contains("```sql\nSELECT nme FROM public.restaurants\n```"), "{third}");
    assert!(third.contains("citation_num") && third.matches("Write a different, corrected query").count() == 1, "{third}");
    // `edit` shows the failed query at the first repair (`auto`, the default, does for a
    // failure that points at what to change).
    assert_eq!(cfg().first_repair, crate::config::FirstRepair::Auto);
    let h = repaired(crate::config::FirstRepair::Edit);
    assert!(h.seen[1].1.messages.last().unwrap().content.contains("```sql\nSELECT sum(citation_num) FROM public.restaurants\n```"));
}

/// An executor where only a query reading `name` runs; any other fails as a missing column,
/// its message quoting the query.
fn only_name_runs() -> Exec {
    Box::new(|sql| {
        if sql.contains("name ") {
            Ok(one_row())
        } else {
            Err(ExecFailure::Error {
                sqlstate: "42703".into(),
                message: format!("column in {sql} does not exist"),
                detail: None,
                hint: None,
            })
        }
    })
}

#[test]
fn a_plain_first_repair_asks_afresh_without_the_rules_or_the_failed_query() {
    let h = repaired(crate::config::FirstRepair::Plain);
    let (first, second, third) = (&h.seen[0].1, &h.seen[1].1, &h.seen[2].1);
    let second_text: String = second.messages.iter().map(|m| m.content.as_str()).collect();
    // Afresh: the schema and the question, as data; no system rules, no failure, no query.
    assert!(first.system.contains("Rules:"), "the first request has the rules");
    assert!(second.system.is_empty() && !second_text.contains("<error>"), "{second_text}");
    assert!(!second_text.contains("citation_num"), "the failed query was shown: {second_text}");
    assert!(second_text.contains("<schema>") && second_text.contains("<question>q</question>"), "{second_text}");
    // The next repair edits the plain attempt: its query and its failure shown.
    let third_text = &third.messages.last().unwrap().content;
    assert!(third_text.contains("```sql\nSELECT nme FROM public.restaurants\n```") && third_text.contains("<error>"), "{third_text}");
}

/// A failure that says a column does not exist, with `message`, for every query but one that
/// reads `public.restaurants`.
fn only_restaurants_run(message: &'static str) -> Exec {
    Box::new(move |sql| {
        if sql.contains("public.restaurants") {
            Ok(one_row())
        } else {
            Err(ExecFailure::Error { sqlstate: "42703".into(), message: message.into(), detail: None, hint: None })
        }
    })
}

#[test]
fn an_automatic_first_repair_edits_a_misplaced_column_and_asks_afresh_otherwise() {
    let auto = AskConfig { first_repair: crate::config::FirstRepair::Auto, ..cfg() };
    let replies = ["```sql\nSELECT c.name FROM public.cities c\n```", "```sql\nSELECT name FROM public.restaurants\n```"];
    // `name` is a column of a described table, read from the wrong one: the edit shows the
    // failed query, its failure and where the column is.
    let mut h = Scripted::new(&replies);
    h.exec = only_restaurants_run("column c.name does not exist");
    assert_eq!(run(&mut h, "q", &auto, Goal::Sql).unwrap().sql, "SELECT name FROM public.restaurants");
    let (second, text) = (&h.seen[1].1, &h.seen[1].1.messages.last().unwrap().content);
    assert!(second.system.contains("Rules:"), "an edit keeps the rules");
    assert!(text.contains("SELECT c.name FROM public.cities c") && text.contains("name is a column of public.restaurants"), "{text}");
    // A column no described table has: asked afresh, without the rules or the failed query.
    let mut h = Scripted::new(&replies);
    h.exec = only_restaurants_run("column c.population does not exist");
    assert_eq!(run(&mut h, "q", &auto, Goal::Sql).unwrap().sql, "SELECT name FROM public.restaurants");
    let second = &h.seen[1].1;
    let text: String = second.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(second.system.is_empty() && !text.contains("public.cities") && !text.contains("<error>"), "{text}");
    assert!(text.contains("<question>q</question>"), "{text}");
}

#[test]
fn a_ratio_of_two_counts_runs_as_a_fraction() {
    let written = "SELECT count(*) FILTER (WHERE name LIKE 'R%') / count(*) AS share FROM public.restaurants";
    let mut h = Scripted::new(&[&format!("```sql\n{written}\n```")]);
    h.exec = Box::new(|_| Ok(count(0)));
    let out = run(&mut h, "What share of the restaurants have a name starting with R?", &cfg(), Goal::Sql).unwrap();
    let exact = "SELECT count(*) FILTER (WHERE name LIKE 'R%')::numeric / count(*) AS share FROM public.restaurants";
    assert_eq!(out.sql, exact);
    assert_eq!(h.executed, [exact], "the integer division never ran");
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["schema", "generate", "fraction", "guard", "execute"]);
    assert_eq!(out.trace.stages[2].input["sql"], written);
    assert_eq!(out.trace.stages[2].output["sql"], exact);
    assert_eq!(out.trace.stages[2].output["changed"].as_array().unwrap().len(), 1);
    // A unit written as a number stays an integer division.
    let mut h = Scripted::new(&["```sql\nSELECT count(*) / 2 FROM public.restaurants\n```"]);
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT count(*) / 2 FROM public.restaurants");
    assert!(!out.trace.stages.iter().any(|s| s.stage == "fraction"));
}

#[test]
fn the_first_rows_of_a_descending_sort_run_without_null() {
    let mut h = Scripted::new(&["```sql\nSELECT name FROM public.restaurants ORDER BY length(name) DESC LIMIT 3\n```"]);
    let out = run(&mut h, "Which restaurants have the longest names?", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.restaurants ORDER BY length(name) DESC NULLS LAST LIMIT 3");
    assert_eq!(h.executed, std::slice::from_ref(&out.sql));
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["schema", "generate", "nulls_last", "guard", "execute"]);
    assert_eq!(out.trace.stages[2].output["changed"], json!(["length(name)"]));
}

/// Cities and their restaurants, each keyed by its `id`.
const CITIES_AND_RESTAURANTS: &str = "TABLE public.cities\n  id integer PRIMARY KEY\n  name text\n  population integer\nTABLE public.restaurants\n  id integer PRIMARY KEY\n  name text\n  city_id integer REFERENCES public.cities(id)\n";

#[test]
fn a_join_that_only_multiplies_rows_runs_as_exists() {
    let written = "SELECT c.population FROM public.restaurants r JOIN public.cities c ON r.city_id = c.id WHERE c.name = 'Chicago'";
    let mut h = Scripted::new(&[&format!("```sql\n{written}\n```")]);
    h.schema = CITIES_AND_RESTAURANTS;
    let out = run(&mut h, "What is the population of Chicago?", &cfg(), Goal::Sql).unwrap();
    let once = "SELECT c.population FROM public.cities c WHERE (c.name = 'Chicago') AND EXISTS (SELECT 1 FROM public.restaurants r WHERE r.city_id = c.id)";
    assert_eq!(out.sql, once);
    assert_eq!(h.executed, [once], "the join that multiplies Chicago's row never ran");
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["schema", "generate", "fan_out", "guard", "execute"]);
    assert_eq!(out.trace.stages[2].input["sql"], written);
    assert_eq!(out.trace.stages[2].output["changed"], json!(["public.restaurants r JOIN public.cities c ON r.city_id = c.id"]));
    // The restaurants named: the join stays as written.
    let kept = "SELECT r.name, c.population FROM public.restaurants r JOIN public.cities c ON r.city_id = c.id";
    let mut h = Scripted::new(&[&format!("```sql\n{kept}\n```")]);
    h.schema = CITIES_AND_RESTAURANTS;
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, kept);
    assert!(!out.trace.stages.iter().any(|s| s.stage == "fan_out"));
}

#[test]
fn a_year_asked_and_one_of_its_days_written_runs_as_the_year() {
    let mut h = Scripted::new(&["```sql\nSELECT count(*) FROM public.restaurants r WHERE r.opened_on = '2023-12-31'\n```"]);
    h.exec = Box::new(|_| Ok(count(4)));
    let out = run(&mut h, "How many restaurants opened in 2023?", &cfg(), Goal::Sql).unwrap();
    let year = "(r.opened_on >= '2023-01-01' AND r.opened_on < '2024-01-01')";
    assert_eq!(out.sql, format!("SELECT count(*) FROM public.restaurants r WHERE {year}"));
    assert_eq!(h.executed, std::slice::from_ref(&out.sql), "the year ran, the day did not");
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["schema", "generate", "whole_year", "guard", "execute"]);
    assert_eq!(out.trace.stages[2].output["widened"][0]["from"], "r.opened_on = '2023-12-31'");
    assert_eq!(out.trace.stages[2].output["widened"][0]["to"], year);
    // A day the question names is kept.
    let mut h = Scripted::new(&["```sql\nSELECT count(*) FROM public.restaurants r WHERE r.opened_on = '2023-12-31'\n```"]);
    h.exec = Box::new(|_| Ok(count(1)));
    let out = run(&mut h, "How many restaurants opened on December 31, 2023?", &cfg(), Goal::Sql).unwrap();
    assert!(out.sql.ends_with("r.opened_on = '2023-12-31'"), "{}", out.sql);
    assert!(!out.trace.stages.iter().any(|s| s.stage == "whole_year"));
}

#[test]
fn a_follow_up_naming_a_value_in_place_of_the_turn_befores_is_answered_with_that_one() {
    let before = "SELECT name FROM public.restaurants WHERE cuisine = 'French'";
    let last = crate::conversation::Turn {
        turn: 1,
        question: "Which restaurants are French?".into(),
        standalone: "Which restaurants are French?".into(),
        sql: Some(before.into()),
        columns: vec!["name".into()],
        rows: Some(2),
    };
    let replies = [
        "Which restaurants are French and Italian?",
        "```sql\nSELECT name FROM public.restaurants WHERE cuisine IN ('French', 'Italian')\n```",
    ];
    let mut h = Scripted::new(&replies);
    let out = run_in_conversation(&mut h, "and the Italian ones?", &[last], None, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.restaurants WHERE cuisine = 'Italian'");
    let st = out.trace.stages.iter().find(|s| s.stage == "replaced").expect("a replaced stage");
    assert_eq!(st.output["replaced"][0]["from"], "cuisine IN ('French', 'Italian')");
    assert_eq!(h.executed, [out.sql.as_str()]);
    // The turn keeps a question that says what its SQL asked.
    match &out.trace.reading {
        Some(crate::conversation::Reading::Rewritten { standalone, .. }) => assert_eq!(standalone, "Which restaurants are Italian?"),
        other => panic!("{other:?}"),
    }
}

/// An executor where a query reading `t2.name` fails as PostgreSQL fails it, naming `t1.name`
/// in its hint; `ran` says which other queries run (one row).
fn named_in_the_hint(ran: fn(&str) -> bool) -> Exec {
    Box::new(move |sql| {
        if sql.contains("t2.name") || sql.contains("T2.name") {
            Err(ExecFailure::Error {
                sqlstate: "42703".into(),
                message: "column t2.name does not exist".into(),
                detail: None,
                hint: Some("Perhaps you meant to reference the column \"t1.name\".".into()),
            })
        } else if ran(sql) {
            Ok(one_row())
        } else {
            Err(ExecFailure::Error { sqlstate: "42P01".into(), message: "relation does not exist".into(), detail: None, hint: None })
        }
    })
}

#[test]
fn a_column_postgresql_names_in_its_hint_is_run_before_the_model_is_asked() {
    const WROTE: &str = "SELECT T2.name FROM public.restaurants AS T1 JOIN public.cities AS T2 ON T1.city_id = T2.id";
    let mut h = Scripted::new(&[WROTE]);
    h.exec = named_in_the_hint(|sql| sql.contains("t1.name"));
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT t1.name FROM public.restaurants AS T1 JOIN public.cities AS T2 ON T1.city_id = T2.id");
    assert_eq!(h.seen.len(), 1, "no repair call");
    let st = out.trace.stages.iter().find(|s| s.stage == stage::NAMED_COLUMN).expect("a named_column stage");
    assert_eq!(st.output, json!({"from": "t2.name", "to": "t1.name"}));
    // The rewritten query went through the guard as any other.
    assert_eq!(out.trace.stages.iter().filter(|s| s.stage == stage::GUARD).count(), 2);

    // When the rewritten query fails too, the model repairs the first failure, as before.
    let mut h = Scripted::new(&[WROTE, "```sql\nSELECT name FROM public.cities\n```"]);
    h.exec = named_in_the_hint(|sql| sql == "SELECT name FROM public.cities");
    let out = run(&mut h, "q", &AskConfig { first_repair: crate::config::FirstRepair::Edit, ..cfg() }, Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.cities");
    let repair = &h.seen[1].1.messages.last().unwrap().content;
    assert!(repair.contains("column t2.name does not exist"), "{repair}");
}

/// The failure PostgreSQL reports for a relation that does not exist.
fn no_relation(name: &str) -> ExecFailure {
    ExecFailure::Error { sqlstate: "42P01".into(), message: format!("relation \"{name}\" does not exist"), detail: None, hint: None }
}

/// An executor where a query reading `public.restaurant` fails as PostgreSQL fails it, one
/// reading `nme` as a missing column, and any other returns one row.
fn a_table_named_nearly() -> Exec {
    Box::new(|sql| {
        if sql.contains("public.restaurant ") {
            Err(no_relation("public.restaurant"))
        } else if sql.contains("nme") {
            Err(ExecFailure::Error { sqlstate: "42703".into(), message: "column r.nme does not exist".into(), detail: None, hint: None })
        } else {
            Ok(one_row())
        }
    })
}

#[test]
fn a_table_named_nearly_as_a_described_one_is_run_with_its_name_before_the_model_is_asked() {
    let mut h = Scripted::new(&["```sql\nSELECT r.name FROM public.restaurant r WHERE r.name <> ''\n```"]);
    h.exec = a_table_named_nearly();
    let out = run(&mut h, "Which restaurants are there?", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT r.name FROM public.restaurants r WHERE r.name <> ''");
    assert_eq!(h.seen.len(), 1, "no repair call");
    let st = out.trace.stages.iter().find(|s| s.stage == stage::NAMED_TABLE).expect("a named_table stage");
    assert_eq!(st.output, json!({"from": "public.restaurant", "to": "public.restaurants"}));
    // The rewritten query went through the guard as any other.
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["schema", "generate", "guard", "execute", "named_table", "guard", "execute"]);

    // When the rewritten query fails in turn, the model is shown that query and its failure.
    let mut h =
        Scripted::new(&["```sql\nSELECT r.nme FROM public.restaurant r\n```", "```sql\nSELECT r.name FROM public.restaurants r\n```"]);
    h.exec = a_table_named_nearly();
    let out = run(&mut h, "q", &AskConfig { first_repair: crate::config::FirstRepair::Edit, ..cfg() }, Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT r.name FROM public.restaurants r");
    assert_eq!(
        h.executed,
        ["SELECT r.nme FROM public.restaurant r", "SELECT r.nme FROM public.restaurants r", "SELECT r.name FROM public.restaurants r"]
    );
    let repair = &h.seen[1].1.messages.last().unwrap().content;
    assert!(repair.contains("SELECT r.nme FROM public.restaurants r") && repair.contains("column r.nme does not exist"), "{repair}");
    assert!(!repair.contains("public.restaurant r") && !repair.contains("relation"), "{repair}");

    // When it returns nothing, the question is asked again once, as for any query that ran.
    let mut h = Scripted::new(&[
        "```sql\nSELECT r.name FROM public.restaurant r WHERE r.name = 'Nowhere'\n```",
        "```sql\nSELECT name FROM public.restaurants\n```",
    ]);
    h.exec = Box::new(|sql| match sql {
        s if s.contains("public.restaurant ") => Err(no_relation("public.restaurant")),
        s if s.contains("Nowhere") => Ok(ResultSet { columns: vec!["name".into()], rows: vec![], truncated: false, size_cut: false }),
        _ => Ok(one_row()),
    });
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.restaurants");
    assert_eq!(h.executed[1], "SELECT r.name FROM public.restaurants r WHERE r.name = 'Nowhere'");
    assert!(out.trace.stages.iter().any(|s| s.stage == stage::NOTHING), "the empty result was asked again");

    // A name no described table is nearly: repaired by the model, as before.
    let mut h = Scripted::new(&["```sql\nSELECT name FROM public.diners\n```", "```sql\nSELECT name FROM public.restaurants\n```"]);
    h.exec = Box::new(|sql| if sql.contains("diners") { Err(no_relation("public.diners")) } else { Ok(one_row()) });
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.restaurants");
    assert!(!out.trace.stages.iter().any(|s| s.stage == stage::NAMED_TABLE));
}

/// An executor where a query reading `public.cities` returns one row, `avg(` one NULL, and any
/// other no rows.
fn only_cities_return_rows() -> Exec {
    Box::new(|sql| {
        if sql.contains("public.cities") {
            Ok(one_row())
        } else if sql.contains("avg(") {
            Ok(ResultSet { columns: vec!["avg".into()], rows: vec![vec![json!(null)]], truncated: false, size_cut: false })
        } else {
            Ok(ResultSet { columns: vec!["name".into()], rows: vec![], truncated: false, size_cut: false })
        }
    })
}

#[test]
fn a_query_that_returned_nothing_is_asked_again_once_and_answers_when_no_other_returns_anything() {
    const EMPTY: &str = "SELECT name FROM public.restaurants WHERE city = 'LA'";
    // Asked again with why, as an edit of the query that ran; the next query's rows answer.
    let mut h = Scripted::new(&[EMPTY, "```sql\nSELECT name FROM public.cities\n```"]);
    h.exec = only_cities_return_rows();
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.cities");
    let repair = &h.seen[1].1.messages.last().unwrap().content;
    assert!(repair.contains(EMPTY) && repair.contains("returned no rows"), "{repair}");
    let st = out.trace.stages.iter().find(|s| s.stage == stage::NOTHING).expect("a nothing stage");
    assert_eq!(st.output, json!({"rows": 0, "asked_again": true}));

    // The repair returns nothing too, then fails: the first query's empty result answers, and
    // only one repair was asked for it.
    let mut h = Scripted::new(&[EMPTY, "```sql\nSELECT name FROM public.restaurants WHERE city = 'L.A.'\n```", "no SQL here"]);
    h.exec = only_cities_return_rows();
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert!(out.result.rows.is_empty());
    assert_eq!(h.seen.len(), 2, "one more query asked for, not two");
    assert_eq!(out.sql, "SELECT name FROM public.restaurants WHERE city = 'L.A.'", "a later empty result stands as well");

    // A repair that fails: the empty result of the query that ran answers, the stage says so.
    let mut h = Scripted::new(&[EMPTY, "no SQL here", "still none"]);
    h.exec = only_cities_return_rows();
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, EMPTY);
    assert!(out.result.rows.is_empty());
    let kept = out.trace.stages.iter().rfind(|s| s.stage == stage::NOTHING).unwrap();
    assert_eq!(kept.output, json!({"rows": 0, "answers": true}));
    assert_eq!(kept.attempt, Some(1));

    // An aggregate over no rows (one row, every value NULL) is nothing too.
    const NULL: &str = "SELECT avg(rating) FROM public.restaurants WHERE city = 'LA'";
    let mut h = Scripted::new(&[NULL, "```sql\nSELECT name FROM public.cities\n```"]);
    h.exec = only_cities_return_rows();
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.cities");
    assert!(h.seen[1].1.messages.last().unwrap().content.contains("returned only NULL"));

    // The edit writes the query that returned nothing again: asked afresh, without it; the
    // fresh query's rows answer.
    let mut h = Scripted::new(&[EMPTY, EMPTY, "```sql\nSELECT name FROM public.cities\n```"]);
    h.exec = only_cities_return_rows();
    let out = run(&mut h, "q", &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, "SELECT name FROM public.cities");
    let afresh = &h.seen[2].1;
    let text = &afresh.messages.last().unwrap().content;
    assert!(afresh.system.is_empty() && !text.contains(EMPTY) && !text.contains("returned no rows"), "{text}");
    let repeated = out.trace.stages.iter().find(|s| s.output["reason"] == "repeats_failed").expect("the repeat recorded");
    assert_eq!(repeated.output["asked_afresh"], json!(true));

    // With one attempt only, the empty result answers as it is, nothing asked again.
    let mut h = Scripted::new(&[EMPTY]);
    h.exec = only_cities_return_rows();
    let out = run(&mut h, "q", &AskConfig { max_attempts: 1, ..cfg() }, Goal::Sql).unwrap();
    assert_eq!((out.sql.as_str(), h.seen.len()), (EMPTY, 1));
    assert!(!out.trace.stages.iter().any(|s| s.stage == stage::NOTHING));
}

#[test]
fn a_result_a_limit_cut_is_never_nothing() {
    let cut = |truncated, size_cut| ResultSet { columns: vec!["name".into()], rows: vec![], truncated, size_cut };
    assert!(crate::ask::repair_hint::is_nothing(&cut(false, false)));
    assert!(!crate::ask::repair_hint::is_nothing(&cut(true, false)));
    assert!(!crate::ask::repair_hint::is_nothing(&cut(false, true)));
    let one = ResultSet { columns: vec!["n".into()], rows: vec![vec![json!(null)], vec![json!(0)]], truncated: false, size_cut: false };
    assert!(!crate::ask::repair_hint::is_nothing(&one), "a value among the NULLs");
}

#[test]
fn month_names_sorted_as_text_run_again_in_calendar_order_without_a_model_call() {
    const Q: &str = "How many restaurants opened in each month, ordered by the month?";
    const SQL: &str = "SELECT month, count(*) AS n FROM public.restaurants GROUP BY month ORDER BY month";
    fn months(names: &[&str]) -> ResultSet {
        let rows = names.iter().map(|m| vec![json!(m), json!(1)]).collect();
        ResultSet { columns: vec!["month".into(), "n".into()], rows, truncated: false, size_cut: false }
    }
    let as_text = || months(&["April", "February", "January"]);
    let mut h = Scripted::new(&[SQL]);
    h.exec = Box::new(move |sql| Ok(if sql.contains("array_position") { months(&["January", "February", "April"]) } else { as_text() }));
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert!(out.sql.ends_with("ORDER BY pg_catalog.array_position(ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], pg_catalog.lower(pg_catalog.\"left\"(pg_catalog.btrim(month), 3)))"), "{}", out.sql);
    let firsts: Vec<&str> = out.result.rows.iter().map(|r| r[0].as_str().unwrap()).collect();
    assert_eq!((firsts, h.seen.len()), (vec!["January", "February", "April"], 1));
    let st = out.trace.stages.iter().find(|s| s.stage == stage::CALENDAR).expect("a calendar stage");
    assert_eq!(st.output["changed"], json!([{"key": "month", "calendar": "month"}]));

    // The query so written fails, or returns other rows: the first result answers, the stage
    // says why; no model call either way.
    for (again, kept) in [(Err("failed"), "failed"), (Ok(2usize), "other_rows")] {
        let mut h = Scripted::new(&[SQL]);
        h.exec = Box::new(move |sql| match (sql.contains("array_position"), again) {
            (false, _) => Ok(as_text()),
            (true, Err(_)) => Err(ExecFailure::Error {
                sqlstate: "42P10".into(),
                message: "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
                detail: None,
                hint: None,
            }),
            (true, Ok(n)) => Ok(months(&["January", "February", "April"][..n])),
        });
        let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
        assert_eq!((out.sql.as_str(), out.result.rows[0][0].as_str(), h.seen.len()), (SQL, Some("April"), 1));
        let st = out.trace.stages.iter().find(|s| s.stage == stage::CALENDAR).unwrap();
        assert_eq!(st.output["kept"], json!(kept));
    }

    // Rows in calendar order already, or numbers: run once, no stage.
    for rows in [
        months(&["January", "April"]),
        ResultSet {
            columns: vec!["month".into(), "n".into()],
            rows: vec![vec![json!(4), json!(1)], vec![json!(1), json!(1)]],
            truncated: false,
            size_cut: false,
        },
    ] {
        let mut h = Scripted::new(&[SQL]);
        let mut runs = 0;
        h.exec = Box::new(move |_| {
            runs += 1;
            assert_eq!(runs, 1, "run once");
            Ok(rows.clone())
        });
        let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
        assert!(!out.trace.stages.iter().any(|s| s.stage == stage::CALENDAR));
    }
}
