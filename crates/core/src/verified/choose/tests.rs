use super::*;
use crate::constrain::Constraint;
use crate::values::literals::{find_literals, Catalog, CatalogColumn};
use crate::verified::asks::*;

fn catalog() -> Catalog {
    let mut c = Catalog::new(["public"]);
    let text = |n: &str| CatalogColumn { name: n.into(), text_like: true };
    c.add_table("public", "cities", vec![text("name"), text("country")]);
    c.add_table("public", "restaurants", vec![text("name"), text("cuisine"), CatalogColumn::other("rating")]);
    c
}

fn cand(question: &str, sql: &str) -> Candidate {
    Candidate {
        id: 3,
        question: question.into(),
        sql: sql.into(),
        schema: None,
        verified_by: "alice".into(),
        trusted: true,
        cosine: Some(0.8),
        trigram: 0.4,
    }
}

fn offer_of(question: &str, sql: &str) -> (Offer, Vec<LiteralRef>) {
    let c = cand(question, sql);
    let lits = find_literals(sql, &catalog()).unwrap();
    (offer(&c, &lits, None), lits)
}

const COLUMNS: &[&str] = &["name", "cuisine", "rating", "city_id", "country", "price_level"];

fn columns() -> Vec<String> {
    COLUMNS.iter().map(|c| c.to_string()).collect()
}

#[test]
fn a_verified_query_becomes_a_template_with_typed_slots() {
    let (o, _) = offer_of(
        "Which Italian restaurants have a rating above 4.5?",
        "SELECT name FROM restaurants WHERE cuisine = 'Italian' AND rating > 4.5 ORDER BY name LIMIT 10",
    );
    assert_eq!(o.question, "Which {s1} restaurants have a rating above {s2}?");
    assert_eq!(o.sql, "SELECT name FROM restaurants WHERE cuisine = {s1} AND rating > {s2} ORDER BY name LIMIT 10");
    assert_eq!(o.slots.iter().map(|s| s.kind).collect::<Vec<_>>(), [SlotKind::Text, SlotKind::Number]);
    assert_eq!(o.slots[0].column.as_deref(), Some("public.restaurants.cuisine"));
    // A value the question does not name (LIMIT 10) is part of the meaning, not a slot.
    assert!(o.slots.iter().all(|s| s.original != "10"));
}

#[test]
fn the_grammar_allows_exactly_the_templates_and_none() {
    let (o, _) = offer_of(
        "Which Italian restaurants have a rating above 4.5?",
        "SELECT name FROM restaurants WHERE cuisine = 'Italian' AND rating > 4.5",
    );
    let g = gbnf(std::slice::from_ref(&o));
    assert!(g.starts_with("root ::= \"{\\\"template\\\": 0, \\\"slots\\\": {}}\" | t1\n"), "{g}");
    assert!(g.contains("t1 ::= \"{\\\"template\\\": 1, \\\"slots\\\": {\" \"\\\"s1\\\": \" text \", \\\"s2\\\": \" number \"}}\""), "{g}");
    let s = schema(std::slice::from_ref(&o));
    assert_eq!(s["properties"]["choice"]["anyOf"].as_array().unwrap().len(), 2);
    assert_eq!(s["properties"]["choice"]["anyOf"][1]["properties"]["slots"]["properties"]["s2"]["type"], "number");
    // The request carries the grammar, or the schema for a provider without grammars.
    assert!(matches!(request("q", std::slice::from_ref(&o), true).constraint, Some(Constraint::Grammar { .. })));
    assert!(matches!(request("q", std::slice::from_ref(&o), false).constraint, Some(Constraint::JsonSchema { .. })));
}

#[test]
fn a_reply_is_read_as_a_choice_and_anything_else_is_unreadable() {
    let (o, _) = offer_of(
        "Which Italian restaurants have a rating above 4.5?",
        "SELECT name FROM restaurants WHERE cuisine = 'Italian' AND rating > 4.5",
    );
    let offers = [o];
    assert_eq!(parse("{\"template\": 0, \"slots\": {}}", &offers), Choice::None);
    assert_eq!(
        parse("{\"template\": 1, \"slots\": {\"s1\": \"French\", \"s2\": 4}}", &offers),
        Choice::Template { index: 0, values: vec!["French".into(), "4".into()] }
    );
    assert_eq!(
        parse("{\"choice\": {\"template\": 1, \"slots\": {\"s1\": \"French\", \"s2\": 4.2}}}", &offers),
        Choice::Template { index: 0, values: vec!["French".into(), "4.2".into()] }
    );
    assert!(matches!(parse("{\"template\": 2, \"slots\": {}}", &offers), Choice::Unreadable(_)));
    assert!(matches!(parse("{\"template\": 1, \"slots\": {\"s1\": \"French\"}}", &offers), Choice::Unreadable(_)));
    assert!(matches!(parse("SELECT 1", &offers), Choice::Unreadable(_)));
}

#[test]
fn a_choice_is_filled_into_the_verified_sql() {
    let sql = "SELECT name FROM restaurants WHERE cuisine = 'Italian' AND rating > 4.5";
    let (o, lits) = offer_of("Which Italian restaurants have a rating above 4.5?", sql);
    let filled = fill(sql, &o, &lits, &["french".into(), "4".into()], &[Some("French".into()), None]).unwrap();
    assert_eq!(filled, "SELECT name FROM restaurants WHERE cuisine = 'French' AND rating > 4");
    // A number slot takes a number only.
    assert!(fill(sql, &o, &lits, &["French".into(), "4; DROP TABLE x".into()], &[Some("French".into()), None]).is_err());
}

#[test]
fn a_paraphrase_with_new_values_holds() {
    let q = "Which Italian restaurants have a rating above 4.5?";
    let (o, _) = offer_of(q, "SELECT name FROM restaurants WHERE cuisine = 'Italian' AND rating > 4.5");
    let asked = "Show me French restaurants rated above 4";
    assert_eq!(doubt(asked, q, &o, &["French".into(), "4".into()], &columns()), None);
    let (count, _) = offer_of("How many restaurants are there?", "SELECT count(*) FROM restaurants");
    assert_eq!(doubt("What is the total number of restaurants?", "How many restaurants are there?", &count, &[], &columns()), None);
}

#[test]
fn near_misses_are_doubted() {
    let q = "Which Italian restaurants have a rating above 4.5?";
    let (o, _) = offer_of(q, "SELECT name FROM restaurants WHERE cuisine = 'Italian' AND rating > 4.5");
    let vals = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
    // Another comparison.
    assert!(doubt("Which French restaurants have a rating below 4?", q, &o, &vals("French", "4"), &columns()).is_some());
    // A negation.
    assert!(doubt("Which restaurants that are not French have a rating above 4?", q, &o, &vals("French", "4"), &columns()).is_some());
    // Another aggregate.
    assert!(doubt("How many French restaurants have a rating above 4?", q, &o, &vals("French", "4"), &columns()).is_some());
    // A value the question does not write.
    assert!(doubt("Which French restaurants have a rating above 4?", q, &o, &vals("Spanish", "4"), &columns()).is_some());
    assert!(doubt("Which French restaurants have a rating above 4?", q, &o, &vals("French", "3"), &columns()).is_some());
    // Another column of the tables it reads.
    let (avg, _) =
        offer_of("What is the average rating of Italian restaurants?", "SELECT avg(rating) FROM restaurants WHERE cuisine = 'Italian'");
    assert!(doubt(
        "What is the average price level of French restaurants?",
        "What is the average rating of Italian restaurants?",
        &avg,
        &["French".into()],
        &columns()
    )
    .is_some());
    assert_eq!(
        doubt(
            "Average rating of the French restaurants?",
            "What is the average rating of Italian restaurants?",
            &avg,
            &["French".into()],
            &columns()
        ),
        None
    );
}

#[test]
fn dates_are_slots_of_their_own() {
    let mut c = cand("Which inspections happened after 2023-04-01?", "SELECT * FROM inspections WHERE inspected_on > '2023-04-01'");
    c.id = 9;
    let o = offer(&c, &[], None);
    assert_eq!(o.sql, "SELECT * FROM inspections WHERE inspected_on > {s1}");
    assert_eq!(o.slots[0].kind, SlotKind::Date);
    let filled = fill(&c.sql, &o, &[], &["2024-01-31".into()], &[None]).unwrap();
    assert_eq!(filled, "SELECT * FROM inspections WHERE inspected_on > '2024-01-31'");
}

#[test]
fn another_table_or_a_word_of_a_condition_is_what_the_template_does_not_hold() {
    let q = "List the names of all states in the guide.";
    let (o, _) = offer_of(q, "SELECT name FROM states");
    let names: Vec<String> = ["states", "cities", "name", "population"].iter().map(|s| s.to_string()).collect();
    let why = doubt("List the names of all cities in the guide.", q, &o, &[], &names).expect("another table");
    assert!(why.contains("\"city\""), "{why}");
    // A word that names nothing of the schema is left to the value lookup.
    let q = "How many chefs are listed?";
    let (o, _) = offer_of(q, "SELECT count(*) FROM chefs");
    assert_eq!(doubt("How many pastry chefs are listed?", q, &o, &[], &names), None);
    assert_eq!(new_words("How many pastry chefs are listed?", q, &o, &[]), ["pastry"]);
    assert!(new_words("How many chefs are in the list?", q, &o, &[]).is_empty());
}

#[test]
fn the_choice_is_constrained_as_the_provider_and_settings_allow() {
    use crate::config::{Mode, Modes, Provider, TemplateChoice};
    use crate::constrain::template_choice;
    let modes = |structured_output, sql_grammar| Modes { structured_output, sql_grammar };
    assert_eq!(template_choice(Provider::OpenAi, modes(Mode::Auto, Mode::Auto)), Some(TemplateChoice::Grammar));
    assert_eq!(template_choice(Provider::Anthropic, modes(Mode::Auto, Mode::Auto)), Some(TemplateChoice::JsonSchema));
    assert_eq!(template_choice(Provider::OpenAi, modes(Mode::Auto, Mode::Off)), Some(TemplateChoice::JsonSchema));
    assert_eq!(template_choice(Provider::Ollama, modes(Mode::Off, Mode::On)), None);
}

#[test]
fn another_grouping_or_a_judgement_is_doubted() {
    let q = "What is the average inspection score per city?";
    let (o, _) = offer_of(q, "SELECT c.name, avg(i.score) FROM inspections i JOIN restaurants r ON r.id = i.restaurant_id JOIN cities c ON c.id = r.city_id GROUP BY c.id, c.name");
    let why = doubt("What is the average inspection score per restaurant?", q, &o, &[], &columns()).expect("another grouping");
    assert!(why.contains("grouped by"), "{why}");
    // The same grouping, worded otherwise, holds.
    assert_eq!(doubt("For every city, what's the mean inspection score?", q, &o, &[], &columns()), None);
    assert_eq!(grouped_by("For each single city, the score by cuisine"), ["city", "cuisin"]);
    // "best" judges; "most" counts.
    let q = "Which restaurant has the most reviews?";
    let (o, _) = offer_of(
        q,
        "SELECT r.name FROM restaurants r JOIN reviews v ON v.restaurant_id = r.id GROUP BY r.id, r.name ORDER BY count(*) DESC LIMIT 1",
    );
    assert!(doubt("Which restaurant has the best reviews?", q, &o, &[], &columns()).is_some());
    assert_eq!(doubt("What restaurant got the most reviews?", q, &o, &[], &columns()), None);
}

#[test]
fn a_name_the_filled_sql_does_not_hold_is_found() {
    let sql = "SELECT full_name FROM chefs WHERE nationality = 'French'";
    assert_eq!(unheld_names("Which chefs work in France?", &[], sql), ["france"]);
    // A name the SQL holds, or a slot's value, is no doubt; nor is the sentence's first word.
    assert!(unheld_names("Which chefs are French?", &[], sql).is_empty());
    assert!(unheld_names("Which restaurants are in Los Angeles?", &["Los Angeles".into()], "SELECT 1").is_empty());
    assert!(unheld_names("France has which chefs?", &[], sql).is_empty());
}

#[test]
fn a_value_written_as_an_initialism_is_a_slot() {
    let mut c = cand(
        "Which Italian restaurants are in LA?",
        "SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'Los Angeles' AND r.cuisine = 'Italian'",
    );
    c.id = 14;
    let lits = find_literals(&c.sql, &catalog()).unwrap();
    let o = offer(&c, &lits, None);
    assert_eq!(o.question, "Which {s2} restaurants are in {s1}?");
    assert_eq!(o.slots[0].written, "LA");
    let vals = vec!["Chicago".to_string(), "Italian".to_string()];
    assert_eq!(doubt("Which Italian restaurants are in Chicago?", &c.question, &o, &vals, &columns()), None);
    assert_eq!(doubt("List LA's Italian restaurants.", &c.question, &o, &["LA".into(), "Italian".into()], &columns()), None);
}

#[test]
fn not_closed_is_open() {
    let q = "How many restaurants are open?";
    let (o, _) = offer_of(q, "SELECT count(*) FROM restaurants WHERE closed IS NULL");
    assert_eq!(doubt("Count the restaurants that have not closed.", q, &o, &[], &columns()), None);
    assert_eq!(doubt("What number of restaurants are currently operating?", q, &o, &[], &columns()), None);
    assert!(doubt("How many restaurants are not open?", q, &o, &[], &columns()).is_some());
}

#[test]
fn a_number_written_as_a_word_is_a_slot_and_either_spelling_fills_it() {
    let q = "What are the three largest cities by population?";
    let (o, _) = offer_of(q, "SELECT name FROM cities ORDER BY population DESC LIMIT 3");
    assert_eq!(o.question, "What are the {s1} largest cities by population?");
    assert_eq!((o.slots[0].kind, o.slots[0].written.as_str()), (SlotKind::Number, "three"));
    assert_eq!(doubt("What are the 3 largest cities by population?", q, &o, &["3".into()], &columns()), None);
    assert_eq!(doubt("Name the five largest cities by population.", q, &o, &["5".into()], &columns()), None);
    // The value must be the question's, in digits or words; the rest must ask the same.
    assert!(doubt("What are the three largest cities by population?", q, &o, &["4".into()], &columns()).is_some());
    assert!(doubt("What are the three smallest cities by population?", q, &o, &["3".into()], &columns()).is_some());
    let q = "How many reviews gave five stars?";
    let (o, _) = offer_of(q, "SELECT count(*) FROM reviews WHERE stars = 5");
    assert_eq!(doubt("Count the 5-star reviews.", q, &o, &["5".into()], &columns()), None);
    assert!(doubt("How many reviews gave fewer than five stars?", q, &o, &["5".into()], &columns()).is_some());
}

#[test]
fn a_short_form_the_verified_question_writes_is_a_slot_for_its_value() {
    let q = "How many cities are in the USA?";
    let (o, _) = offer_of(q, "SELECT count(*) FROM cities WHERE country = 'United States'");
    assert_eq!(o.question, "How many cities are in the {s1}?");
    assert_eq!((o.slots[0].written.as_str(), o.slots[0].original.as_str()), ("USA", "United States"));
    assert_eq!(doubt("What is the number of cities located in the United States?", q, &o, &["United States".into()], &columns()), None);
    assert_eq!(doubt("Count the cities in the USA.", q, &o, &["USA".into()], &columns()), None);
    // The verified spelling stands for the verified value; another value is the memory's to read.
    assert_eq!(verified_spelling(&o.slots[0], "usa").as_deref(), Some("United States"));
    assert_eq!(verified_spelling(&o.slots[0], "UK"), None);
    assert!(doubt("How many cities are outside the USA?", q, &o, &["USA".into()], &columns()).is_some());
    assert!(doubt("What is the total population of the cities in the USA?", q, &o, &["USA".into()], &columns()).is_some());
    // A word the SQL holds is no short form of another of its values.
    let (o, _) = offer_of("Which restaurants named USA are in the United States?", "SELECT name FROM restaurants WHERE name = 'USA'");
    assert!(o.slots.iter().all(|s| s.written != "USA" || s.original == "USA"));
}

#[test]
fn the_verified_value_may_be_chosen_where_the_question_writes_its_initialism() {
    let q = "Which Italian restaurants are in LA?";
    let (o, _) = offer_of(
        q,
        "SELECT r.name FROM restaurants r JOIN cities c ON c.id = r.city_id WHERE c.name = 'Los Angeles' AND r.cuisine = 'Italian'",
    );
    let vals = vec!["Los Angeles".to_string(), "Italian".to_string()];
    assert_eq!(doubt("Show me Italian places in LA.", q, &o, &vals, &columns()), None);
    assert_eq!(written_forms("Show me Italian places in LA.", &o, &vals), ["LA", "Italian"]);
    // An initialism of the chosen value counts as writing it ("SF" for 'San Francisco').
    let vals = vec!["San Francisco".to_string(), "Italian".to_string()];
    assert_eq!(doubt("Which Italian restaurants are in SF?", q, &o, &vals, &columns()), None);
    // A value the question writes in no form is not written.
    assert!(doubt("Which Italian restaurants are in Boston?", q, &o, &vals, &columns()).is_some());
}

#[test]
fn class_words_are_compared_by_the_signature_not_as_column_names() {
    let q = "How many restaurants are open?";
    let (o, _) = offer_of(q, "SELECT count(*) FROM restaurants WHERE closed IS NULL");
    let names: Vec<String> = ["notes", "opened_on", "name"].iter().map(|s| s.to_string()).collect();
    assert_eq!(doubt("Count the restaurants that have not closed.", q, &o, &[], &names), None);
    assert!(doubt("How many restaurants are not open?", q, &o, &[], &names).is_some());
}

#[test]
fn an_initialism_is_written_in_capitals_and_a_stem_is_no_class_word() {
    // "us" is a word, not the USA; "of" is not 'Olive & Fig'.
    let q = "How many cities are in the USA?";
    let (o, _) = offer_of(q, "SELECT count(*) FROM cities WHERE country = 'United States'");
    assert!(doubt("Can you tell us how many cities there are?", q, &o, &["United States".into()], &columns()).is_some());
    let q = "What is the rating of Olive & Fig?";
    let (o, _) = offer_of(q, "SELECT rating FROM restaurants WHERE name = 'Olive & Fig'");
    assert!(doubt("What is the rating of the restaurant my friend likes?", q, &o, &["Olive & Fig".into()], &columns()).is_some());
    // "rating" only shares its stem with the class word "rate": it names a column here.
    let q = "Which restaurant has the highest average guest stars?";
    let (o, _) = offer_of(q, "SELECT name FROM restaurants ORDER BY stars DESC LIMIT 1");
    assert!(doubt("Which restaurant has the highest average rating?", q, &o, &[], &columns()).is_some());
}

#[test]
fn a_name_for_a_value_takes_only_that_name() {
    let q = "Which cities are in Louisiana?";
    let c = cand(q, "SELECT name FROM cities WHERE country = 'LA'");
    let lits = find_literals(&c.sql, &catalog()).unwrap();
    let (index, at, name) = alias_candidate(&c, &lits).expect("an unplaced name and literal");
    assert_eq!((index, name.as_str()), (0, "Louisiana"));
    let o = offer(&c, &lits, Some((index, at)));
    assert!(o.slots[0].name_for_value);
    assert_eq!(o.question, "Which cities are in {s1}?");
    assert_eq!(doubt("List the cities of Louisiana.", q, &o, &["Louisiana".into()], &columns()), None);
    assert_eq!(verified_spelling(&o.slots[0], "louisiana").as_deref(), Some("LA"));
    // "LA" (Los Angeles, or the code itself) and other names are not the slot's.
    assert!(doubt("Which cities are in LA?", q, &o, &["LA".into()], &columns()).is_some());
    assert!(doubt("Which cities are in Texas?", q, &o, &["Texas".into()], &columns()).is_some());
    // Two unplaced names, or none: no candidate.
    let c = cand("Which cities of Louisiana are in Acadiana?", "SELECT name FROM cities WHERE country = 'LA'");
    assert_eq!(alias_candidate(&c, &find_literals(&c.sql, &catalog()).unwrap()), None);
    let c = cand("Which cities are in the state?", "SELECT name FROM cities WHERE country = 'LA'");
    assert_eq!(alias_candidate(&c, &find_literals(&c.sql, &catalog()).unwrap()), None);
}
