//! The answer stage: rows that say the answer by themselves are said without a model call, in
//! one shape per kind of answer; more rows go to the model with a prompt whose instructions are
//! the same for every question and whose row count cannot be read as a value.

use super::*;
use crate::grounded;

fn rows(columns: &[&str], rows: Vec<Vec<Value>>) -> ResultSet {
    ResultSet { columns: columns.iter().map(|c| c.to_string()).collect(), rows, truncated: false, size_cut: false }
}

/// `question` answered over `result`, the model scripted to write `sql` and then `replies`.
fn asked(question: &str, sql: &str, result: ResultSet, replies: &[&str]) -> (Outcome, Scripted) {
    let mut script = vec![sql];
    script.extend_from_slice(replies);
    let mut h = Scripted::new(&script);
    h.exec = Box::new(move |_| Ok(result.clone()));
    let out = run(&mut h, question, &cfg(), Goal::Answer).unwrap();
    (out, h)
}

#[test]
fn a_single_value_is_said_without_a_model_call() {
    // The question: the model's answer call took 31 s and said "1" for a count of 7.
    let question = "How many restaurants in San Francisco are still open?";
    let sql = "SELECT count(*) FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id \
               WHERE c.name = 'San Francisco' AND r.closed_on IS NULL";
    let (out, h) = asked(question, sql, count(7), &[]);
    assert_eq!(h.seen.len(), 1, "one call, to write the SQL: {:?}", h.seen.iter().map(|s| s.0).collect::<Vec<_>>());
    assert_eq!(out.trace.llm_calls, 1);
    assert_eq!(out.answer_text(), "count: 7");
    assert_eq!(grounded::check(&out.answer_text(), question, sql, &count(7)), Ok(()), "the answer states the value");
    let st = out.trace.stages.last().unwrap();
    assert_eq!((st.stage, &st.output["answer_from"], &st.output["llm"]), ("answer", &json!("value"), &json!(false)));
    // A count of one is said the same way: the shape is the kind's, whatever the value.
    let (out, _) =
        asked("How many chefs are there?", "SELECT count(*) AS chefs FROM public.chefs", rows(&["chefs"], vec![vec![json!(1)]]), &[]);
    assert_eq!(out.answer_text(), "chefs: 1");
    // A number of another kind, and a short text.
    let (out, _) = asked("average rating?", "SELECT avg(rating) FROM public.restaurants", rows(&["avg"], vec![vec![json!(4.25)]]), &[]);
    assert_eq!(out.answer_text(), "avg: 4.25");
    let (out, _) = asked("best rated?", "SELECT name FROM public.restaurants ORDER BY rating DESC LIMIT 1", one_row(), &[]);
    assert_eq!((out.answer_text(), out.trace.llm_calls), ("name: Roma".to_string(), 1));
}

#[test]
fn a_small_table_makes_no_call() {
    let few = rows(
        &["name", "rating"],
        vec![vec![json!("Roma"), json!(4.5)], vec![json!("Trattoria Nona"), json!(4.1)], vec![json!("Nizza"), json!(3.9)]],
    );
    let (out, h) = asked("which Italian restaurants are in LA?", "SELECT name, rating FROM public.restaurants", few, &[]);
    assert_eq!((h.seen.len(), out.trace.llm_calls), (1, 1));
    assert_eq!(out.answer_text(), "- Roma (rating: 4.5)\n- Trattoria Nona (rating: 4.1)\n- Nizza (rating: 3.9)");
    // One row of several values: each with its column's meaning.
    let one = rows(&["avg_rating", "reviews"], vec![vec![json!(4.3), json!(12)]]);
    let (out, h) = asked("average rating and number of reviews?", "SELECT avg(rating) AS avg_rating, count(*) AS reviews", one, &[]);
    assert_eq!((out.answer_text(), h.seen.len()), ("avg rating: 4.3, reviews: 12".to_string(), 1));
    // Nothing found: asked once more (the `nothing` stage), the same query written again, then
    // asked afresh and the same query once more: the empty result answers.
    const NONE: &str = "SELECT name FROM public.restaurants WHERE false";
    let (out, h) = asked("restaurants in Oslo?", NONE, rows(&["name"], vec![]), &[NONE, NONE]);
    assert_eq!((out.answer_text(), h.seen.len()), ("Nothing was found.".to_string(), 3));
}

#[test]
fn a_larger_result_still_calls_the_model_without_a_count_it_could_take_for_a_value() {
    let (out, h) = asked("which restaurants?", "SELECT name FROM public.restaurants", names(9), &["ROWS"]);
    assert_eq!(out.answer, Some(AnswerDecision::Rows));
    assert_eq!(h.seen.len(), 2);
    let (stage, req) = &h.seen[1];
    assert_eq!(*stage, "answer");
    let user = &req.messages[0].content;
    assert!(!user.contains("rows=") && !user.contains("rows: 9"), "no row count beside the data: {user}");
    // The count is a psql-style line after the rows, and the instructions say it only counts them.
    assert!(user.ends_with("[\"r8\"]\n(9 rows)\n</result>"), "{user}");
    assert!(req.system.contains("the last line, in parentheses, only counts the rows"));
    // The instructions are the same bytes for every question (the server's cache keeps them),
    // and the user message holds only what varies.
    let wide = rows(&["a", "b", "c", "d"], vec![vec![json!(1), json!(2), json!(3), json!(4)]; 2]);
    let (_, other) = asked("what are the ids?", "SELECT a, b, c, d FROM public.t", wide, &["ROWS"]);
    assert_eq!(other.seen[1].1.system, req.system);
    assert_eq!(req.system, prompt::ANSWER_SYSTEM);
    assert!(user.starts_with("<question>which restaurants?</question>"));
    assert!(other.seen[1].1.messages[0].content.contains("\n(2 rows)\n</result>"));
}

#[test]
fn a_result_cut_at_the_row_limit_says_so_in_its_count() {
    let mut cut = names(3);
    cut.truncated = true;
    let (_, h) = asked("all restaurants", "SELECT name FROM public.restaurants", cut, &["ROWS"]);
    assert!(h.seen[1].1.messages[0].content.ends_with("(more than 3 rows)\n</result>"));
}
