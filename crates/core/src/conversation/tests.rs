//! Tests of the reading of a later question, the tables it names and the lists a follow-up replaces.

use super::*;

fn turn(n: i32, q: &str, sql: &str) -> Turn {
    Turn { turn: n, question: q.into(), standalone: q.into(), sql: Some(sql.into()), columns: vec!["name".into()], rows: Some(3) }
}

#[test]
fn follow_ups_are_told_from_questions_that_stand_alone() {
    for q in [
        "and in San Francisco?",
        "only the ones rated above 4",
        "sort that by price",
        "What about Paris?",
        "in 2020?",
        "How many of them are open?",
        "Show only those with a rating above 4",
    ] {
        assert!(!follow_up_signals(q).is_empty(), "{q}");
    }
    for q in [
        "Which Italian restaurants are in LA?",
        "How many restaurants are there per city?",
        "List the restaurants that serve pizza.",
        "What is the average rating of restaurants in Chicago?",
        "Which chefs come from France?",
        "In which city is the restaurant Nopa located?",
    ] {
        assert!(follow_up_signals(q).is_empty(), "{q}: {:?}", follow_up_signals(q));
    }
    // The signs decide nothing: the first question stands alone, every later one is read
    // by the model.
    let h = [turn(1, "Which Italian restaurants are in LA?", "SELECT 1")];
    assert_eq!(read_without_llm(&[]), Some(Reading::Standalone));
    assert_eq!(read_without_llm(&h), None);
}

#[test]
fn a_question_is_a_follow_up_when_its_rewrite_takes_from_the_turn_before() {
    let last = turn(2, "How many restaurants are in Chicago?", "SELECT count(*) FROM restaurants");
    let read = |q: &str, rewrite: &str| read_rewrite(q, &last, rewrite.to_string(), follow_up_signals(q));
    // No sign of a follow-up, yet it leaves its subject unsaid: a follow-up of turn 2,
    // answered as the rewrite and editing that turn's SQL.
    match read("How many are there?", "How many restaurants are in Chicago?") {
        Reading::Rewritten { standalone, follows, signals, edits_sql } => {
            assert_eq!(standalone, "How many restaurants are in Chicago?");
            assert_eq!(follows, 2);
            assert!(signals.is_empty());
            assert_eq!(edits_sql.as_deref(), Some("SELECT count(*) FROM restaurants"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(read("What about Paris?", "How many restaurants are in Paris?"), Reading::Rewritten { .. }));
    // A new question written back unchanged, or reworded with words of its own, stands
    // alone, whatever word it opens with.
    assert_eq!(read("How many chefs are there?", "How many chefs are there?"), Reading::Standalone);
    assert_eq!(read("How many chefs are there?", "What is the total number of chefs?"), Reading::Standalone);
    assert_eq!(read("And how many chefs are there?", "How many chefs are there?"), Reading::Standalone);
    // Words the question itself wrote are not taken from the turn before.
    assert_eq!(read("How many restaurants are in Paris?", "How many restaurants are there in Paris?"), Reading::Standalone);
    // A follow-up the model wrote back unchanged is answered as asked (its words say all
    // pg_ask knows of it).
    assert_eq!(read("and in San Francisco?", "and in San Francisco?"), Reading::Standalone);
}

#[test]
fn a_question_naming_a_table_the_turn_before_did_not_read_stands_alone() {
    let tables: Vec<String> = ["restaurants", "cities", "chefs", "reviews", "payments_made"].map(String::from).to_vec();
    let last = Turn {
        turn: 2,
        question: "The Italian ones.".into(),
        standalone: "Which Italian restaurants are in Chicago?".into(),
        sql: Some("SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'Chicago'".into()),
        columns: vec!["name".into()],
        rows: Some(2),
    };
    let named = |q: &str| names_another_table(q, &last, &follow_up_signals(q), &tables);
    assert_eq!(named("How many reviews are there?").as_deref(), Some("reviews"));
    assert_eq!(named("Which chefs are Italian?").as_deref(), Some("chefs"));
    // Every word of a table's name written, none of them before.
    assert_eq!(named("How many payments were made by check?").as_deref(), Some("payments_made"));
    assert_eq!(named("How many payments are there?"), None);
    // A table the turn before read, or whose word its SQL wrote (`city_id`), is no new subject.
    assert_eq!(named("Which city has the most?"), None);
    assert_eq!(named("How many restaurants are there?"), None);
    // A word that refers back or opens a follow-up leaves the reading to the model.
    assert_eq!(named("How many reviews do they have?"), None);
    assert_eq!(named("and their chefs?"), None);
    // A fragment may name a table's word and still continue the turn before.
    assert_eq!(named("Reviewed in 2023."), None);
    assert_eq!(named("Reviews from 2023."), None);
    // No table named: the model reads it.
    assert_eq!(named("How many are there?"), None);
    assert_eq!(named("What is the average rating?"), None);
}

#[test]
fn a_value_named_in_place_of_the_turn_befores_is_not_added_to_it() {
    let before = "SELECT full_name FROM chefs WHERE role = 'head chef' AND nationality = 'French'";
    let replaced = |asked: &str, sql: &str| replaced_not_added(asked, before, sql).map(|(s, _)| s);
    assert_eq!(
        replaced("and the Italian ones?", "SELECT full_name FROM chefs WHERE role = 'head chef' AND nationality IN ('French', 'Italian')")
            .as_deref(),
        Some("SELECT full_name FROM chefs WHERE role = 'head chef' AND nationality = 'Italian'")
    );
    let (sql, edits) =
        replaced_not_added("How many are Italian?", before, "SELECT count(*) FROM chefs c WHERE (c.nationality IN ('Italian','French'))")
            .unwrap();
    assert_eq!(sql, "SELECT count(*) FROM chefs c WHERE (c.nationality = 'Italian')");
    assert_eq!(
        edits,
        vec![Replacement {
            from: "c.nationality IN ('Italian','French')".into(),
            to: "c.nationality = 'Italian'".into(),
            kept: "Italian".into(),
            dropped: vec!["French".into()]
        }]
    );
    // Words that add, a value the follow-up writes too, one the turn before did not have,
    // no value named, a negated list: as written.
    let both = "SELECT full_name FROM chefs WHERE nationality IN ('French', 'Italian')";
    for asked in [
        "and the Italian ones too?",
        "French or Italian?",
        "also Italian",
        "both French and Italian ones",
        "and the others?",
        "compare with Italian",
    ] {
        assert_eq!(replaced(asked, both), None, "{asked}");
    }
    assert_eq!(replaced("and Italian?", "SELECT full_name FROM chefs WHERE nationality IN ('Spanish', 'Italian')"), None);
    assert_eq!(replaced("and Italian?", "SELECT full_name FROM chefs WHERE nationality NOT IN ('French', 'Italian')"), None);
    assert_eq!(replaced("and Italian?", "SELECT full_name FROM chefs WHERE nationality = 'Italian'"), None);
    // No value named: the turn before's one value is kept, one from neither dropped.
    let italian = "SELECT count(*) FROM chefs WHERE nationality = 'Italian'";
    let (sql, edits) =
        replaced_not_added("How many of them are there?", italian, "SELECT count(*) FROM chefs WHERE nationality IN ('French', 'Italian')")
            .unwrap();
    assert_eq!(sql, "SELECT count(*) FROM chefs WHERE nationality = 'Italian'");
    assert_eq!((edits[0].kept.as_str(), edits[0].dropped.as_slice()), ("Italian", ["French".to_string()].as_slice()));
    let both_before = "SELECT count(*) FROM chefs WHERE nationality IN ('French', 'Italian')";
    assert_eq!(replaced_not_added("How many of them are there?", both_before, both_before), None);
    assert_eq!(
        replaced_not_added("How many of them are there?", italian, "SELECT count(*) FROM chefs WHERE nationality IN ('French', 'Spanish')"),
        None
    );
    // The turn's question says what its SQL asked.
    let kept = "Italian";
    let dropped = ["French".to_string()];
    assert_eq!(
        without_values("Which head chefs are French and Italian?", &dropped, kept).as_deref(),
        Some("Which head chefs are Italian?")
    );
    assert_eq!(without_values("Which chefs are both Italian and French?", &dropped, kept).as_deref(), Some("Which chefs are Italian?"));
    assert_eq!(without_values("How many chefs are french or italian?", &dropped, kept).as_deref(), Some("How many chefs are Italian?"));
    assert_eq!(without_values("Which chefs are Italian?", &dropped, kept), None);
    // Values of more than one word are read as words of the follow-up.
    let before = "SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'Los Angeles'";
    assert_eq!(
        replaced_not_added(
            "and in San Francisco?",
            before,
            "SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name IN ('Los Angeles', 'San Francisco')"
        )
        .map(|(s, _)| s)
        .as_deref(),
        Some("SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'San Francisco'")
    );
}

#[test]
fn the_rewrite_request_shows_the_last_turns_and_the_reply_is_one_question() {
    let h: Vec<Turn> = (1..=6).map(|i| turn(i, &format!("question {i}"), &format!("SELECT {i}"))).collect();
    let req = rewrite_request("and in San Francisco?", &h);
    let text = req.messages.last().map(|m| m.content.clone()).unwrap_or_default();
    assert!(!text.contains("question 5\n") && text.contains("<turn (most recent)>\nQuestion: question 6"), "{text}");
    assert!(text.ends_with("<latest_question>and in San Francisco?</latest_question>\nStandalone question:"));
    assert_eq!(
        parse_rewrite("\n Standalone question: \"Which Italian restaurants are in San Francisco?\"\nmore").unwrap(),
        "Which Italian restaurants are in San Francisco?"
    );
    assert!(parse_rewrite("SELECT name FROM restaurants").is_err());
    assert!(parse_rewrite("  \n").is_err());
    assert!(parse_rewrite(&"x".repeat(500)).is_err());
}
