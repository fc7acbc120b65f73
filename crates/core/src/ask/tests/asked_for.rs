//! Pipeline tests of a query that ran with rows but leaves out a value the question quotes or
//! names, or compares with one it never asks for: asked again once, its rows kept unless a later
//! query does better (the `quoted`, `named_value` and `unasked` stages); and one whose result is
//! a count where the question asks for rows, or rows where it asks how many (`shape`).

use super::*;

#[test]
fn a_query_that_left_out_a_quoted_value_is_asked_again_once_and_answers_when_no_other_runs() {
    const Q: &str = r#"Which restaurants are in "Paris" or "Lyon"?"#;
    const ONE: &str = "SELECT name FROM public.restaurants WHERE city = 'Paris'";
    const BOTH: &str = "SELECT name FROM public.restaurants WHERE city IN ('Paris', 'Lyon')";
    // Asked again as an edit, with the value left out; the next query's rows answer.
    let mut h = Scripted::new(&[ONE, BOTH]);
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, BOTH);
    let repair = &h.seen[1].1.messages.last().unwrap().content;
    assert!(repair.contains(ONE) && repair.contains(r#"does not use the value "Lyon""#), "{repair}");
    let st = out.trace.stages.iter().find(|s| s.stage == stage::QUOTED).expect("a quoted stage");
    assert_eq!(st.output, json!({"left_out": ["Lyon"], "rows": 1, "asked_again": true}));

    // Asked once only: a repair that leaves the value out again does not answer, the first
    // query's rows do; nor does one that uses it and returns nothing.
    let other = "SELECT name FROM public.restaurants WHERE city = 'Paris' ORDER BY name";
    let mut h = Scripted::new(&[ONE, other, BOTH]);
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!((out.sql.as_str(), h.seen.len()), (ONE, 2));
    let kept = out.trace.stages.iter().rfind(|s| s.stage == stage::QUOTED).unwrap();
    assert_eq!(kept.output, json!({"rows": 1, "answers": true}));
    let mut h = Scripted::new(&[ONE, BOTH]);
    h.exec = Box::new(|sql| {
        Ok(if sql.contains("Lyon") {
            ResultSet { columns: vec!["name".into()], rows: vec![], truncated: false, size_cut: false }
        } else {
            one_row()
        })
    });
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!((out.sql.as_str(), out.result.rows.len()), (ONE, 1));

    // The repair cannot be asked (the server fails): the first query's rows answer.
    let mut h = Scripted::new(&[ONE]);
    h.replies.push_back(Err(LlmError::EmptyContent));
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!((out.sql.as_str(), out.result.rows.len(), h.seen.len()), (ONE, 1, 2));

    // The repair fails: the first query's rows answer, the stage says so.
    let mut h = Scripted::new(&[ONE, "no SQL here", "still none"]);
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!((out.sql.as_str(), out.result.rows.len()), (ONE, 1));
    let kept = out.trace.stages.iter().rfind(|s| s.stage == stage::QUOTED).unwrap();
    assert_eq!((kept.output.clone(), kept.attempt), (json!({"rows": 1, "answers": true}), Some(1)));

    // The edit writes the same query again: asked afresh once, without it.
    let mut h = Scripted::new(&[ONE, ONE, BOTH]);
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, BOTH);
    assert!(h.seen[2].1.system.is_empty() && !h.seen[2].1.messages.last().unwrap().content.contains(ONE));

    // Every quoted value used, nothing quoted, one attempt only: no stage.
    for (question, config) in [(Q, cfg()), ("Which restaurants are in Paris?", cfg()), (Q, AskConfig { max_attempts: 1, ..cfg() })] {
        let replies = if question == Q && config.max_attempts > 1 { [BOTH] } else { [ONE] };
        let mut h = Scripted::new(&replies);
        let out = run(&mut h, question, &config, Goal::Sql).unwrap();
        assert_eq!(h.seen.len(), 1, "{question}");
        assert!(!out.trace.stages.iter().any(|s| s.stage == stage::QUOTED), "{question}");
    }
}

/// A host that is `Scripted` whose value memory holds "Seattle".
struct Naming(Scripted);

scripted_host!(Naming {
    crate::no_memory!();
    fn named_values(&mut self, question: &str, _: &[String]) -> Result<Vec<crate::clarify::Named>, HostError> {
        let seattle = crate::clarify::Reading {
            value: "Seattle".into(),
            table: "public.restaurants".into(),
            column: "city".into(),
            table_columns: vec!["name".into(), "city".into()],
        };
        Ok(if question.contains("Seattle") { vec![crate::clarify::Named { phrase: "Seattle".into(), readings: vec![seattle] }] } else { vec![] })
    }
});

#[test]
fn a_query_that_left_out_a_value_the_memory_holds_is_asked_again_once() {
    const Q: &str = "Which restaurants are open in Seattle?";
    const OPEN: &str = "SELECT name FROM public.restaurants WHERE closed_on IS NULL";
    const BOTH: &str = "SELECT name FROM public.restaurants WHERE closed_on IS NULL AND city = 'Seattle'";
    let mut h = Naming(Scripted::new(&[OPEN, BOTH]));
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, BOTH);
    // Asked afresh: the question and the tables alone, without the rules or the query.
    let afresh = &h.0.seen[1].1;
    let text = &afresh.messages.last().unwrap().content;
    assert!(afresh.system.is_empty() && afresh.messages.len() == 1 && text.contains(Q) && !text.contains(OPEN), "{text}");
    let st = out.trace.stages.iter().find(|s| s.stage == stage::NAMED_VALUE).expect("a named_value stage");
    assert_eq!(st.output, json!({"left_out": ["Seattle"], "rows": 1, "asked_again": true}));

    // A repair that leaves it out again does not answer: the first query's rows do.
    let mut h = Naming(Scripted::new(&[OPEN, "SELECT name FROM public.restaurants WHERE closed_on IS NULL ORDER BY name", BOTH]));
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!((out.sql.as_str(), h.0.seen.len()), (OPEN, 2));
    let kept = out.trace.stages.iter().rfind(|s| s.stage == stage::NAMED_VALUE).unwrap();
    assert_eq!(kept.output, json!({"rows": 1, "answers": true}));

    // Used (as written, or as a code of it), or named by no stored value: one call, no stage.
    for (q, reply) in [
        (Q, BOTH),
        ("Which restaurants are open in Seattle?", "SELECT name FROM public.restaurants WHERE city = 'SEA'"),
        ("Which restaurants are open?", OPEN),
    ] {
        let mut h = Naming(Scripted::new(&[reply]));
        let out = run(&mut h, q, &cfg(), Goal::Sql).unwrap();
        assert_eq!(h.0.seen.len(), 1, "{q} / {reply}");
        assert!(!out.trace.stages.iter().any(|s| s.stage == stage::NAMED_VALUE), "{q}");
    }
}

#[test]
fn a_query_that_compares_with_a_value_the_question_does_not_ask_for_is_asked_again_once() {
    const Q: &str = "List the Japanese restaurants.";
    const ADDED: &str = "SELECT name FROM public.restaurants WHERE cuisine = 'Japanese' AND chef = 'pastry chef'";
    const ASKED: &str = "SELECT name FROM public.restaurants WHERE cuisine = 'Japanese'";
    let scripted = |replies: &[&str]| Scripted { text_columns: &["name", "cuisine", "chef"], ..Scripted::new(replies) };
    let mut h = scripted(&[ADDED, ASKED]);
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, ASKED);
    let afresh = &h.seen[1].1;
    let text = &afresh.messages.last().unwrap().content;
    assert!(afresh.system.is_empty() && !text.contains("pastry"), "{text}");
    // Asked to edit (`ask.first_repair = edit`), the repair names the value.
    let mut h = scripted(&[ADDED, ASKED]);
    let out = run(&mut h, Q, &AskConfig { first_repair: crate::config::FirstRepair::Edit, ..cfg() }, Goal::Sql).unwrap();
    assert_eq!(out.sql, ASKED);
    let repair = &h.seen[1].1.messages.last().unwrap().content;
    assert!(repair.contains(r#"compares with the value "pastry chef", which the question does not ask for"#), "{repair}");
    let st = out.trace.stages.iter().find(|s| s.stage == stage::UNASKED).expect("an unasked stage");
    assert_eq!(st.output, json!({"unasked": ["pastry chef"], "rows": 1, "asked_again": true}));

    // The repair adds a value again, or returns nothing: the first query's rows answer.
    let again = "SELECT name FROM public.restaurants WHERE cuisine = 'Japanese' AND chef = 'sushi chef'";
    let mut h = scripted(&[ADDED, again]);
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, ADDED);
    let mut h = scripted(&[ADDED, ASKED]);
    h.exec = Box::new(|sql| Ok(if sql.contains("pastry") { one_row() } else { names(0) }));
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, ADDED);

    // What the question asks, in its words or others; an exclusion: one call, no stage.
    for (q, reply) in [
        ("Which restaurants have a pastry chef?", "SELECT name FROM public.restaurants WHERE chef = 'pastry chef'"),
        (Q, "SELECT name FROM public.restaurants WHERE cuisine = 'Japanese' AND chef <> 'pastry chef'"),
        (
            "List the Japanese restaurants with a head chef.",
            "SELECT name FROM public.restaurants WHERE cuisine = 'japanese' AND chef = 'head_chef'",
        ),
    ] {
        let mut h = scripted(&[reply]);
        let out = run(&mut h, q, &cfg(), Goal::Sql).unwrap();
        assert_eq!(h.seen.len(), 1, "{q} / {reply}");
        assert!(!out.trace.stages.iter().any(|s| s.stage == stage::UNASKED), "{q}");
    }
}

#[test]
fn a_count_where_the_question_asks_for_rows_is_asked_again_once_as_an_edit() {
    const Q: &str = "Which restaurants are in Milan?";
    const COUNTED: &str = "SELECT count(*) FROM public.restaurants WHERE city = 'Milan'";
    const LISTED: &str = "SELECT name FROM public.restaurants WHERE city = 'Milan'";
    let scripted = |replies: &[&str]| {
        let mut h = Scripted::new(replies);
        h.exec = Box::new(|sql| Ok(if sql.contains("count(") { count(2) } else { names(2) }));
        h
    };
    let mut h = scripted(&[COUNTED, LISTED]);
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, LISTED);
    // Asked as an edit: the query and the reason.
    let repair = &h.seen[1].1.messages.last().unwrap().content;
    assert!(repair.contains(COUNTED) && repair.contains("the question does not ask how many"), "{repair}");
    let st = out.trace.stages.iter().find(|s| s.stage == stage::SHAPE).expect("a shape stage");
    assert_eq!(st.output, json!({"asked_for": "rows", "returned": "count", "rows": 1, "asked_again": true}));

    // The edit counts again: the first query's count answers, asked once only.
    let mut h = scripted(&[COUNTED, "SELECT count(name) FROM public.restaurants WHERE city = 'Milan'", LISTED]);
    let out = run(&mut h, Q, &cfg(), Goal::Sql).unwrap();
    assert_eq!((out.sql.as_str(), h.seen.len()), (COUNTED, 2));
    let kept = out.trace.stages.iter().rfind(|s| s.stage == stage::SHAPE).unwrap();
    assert_eq!(kept.output, json!({"rows": 1, "answers": true}));

    // Rows where the question asks how many: asked again for the number.
    const HOW_MANY: &str = "How many restaurants are in Milan?";
    let mut h = scripted(&[LISTED, COUNTED]);
    let out = run(&mut h, HOW_MANY, &cfg(), Goal::Sql).unwrap();
    assert_eq!(out.sql, COUNTED);
    let repair = &h.seen[1].1.messages.last().unwrap().content;
    assert!(repair.contains("the query lists 2 rows, but the question asks how many"), "{repair}");

    // The shape asked for, or a number asked in other words: one call, no stage.
    for (q, reply) in [(Q, LISTED), (HOW_MANY, COUNTED), ("What is the number of restaurants in Milan?", COUNTED)] {
        let mut h = scripted(&[reply]);
        let out = run(&mut h, q, &cfg(), Goal::Sql).unwrap();
        assert_eq!(h.seen.len(), 1, "{q} / {reply}");
        assert!(!out.trace.stages.iter().any(|s| s.stage == stage::SHAPE), "{q}");
    }
}
