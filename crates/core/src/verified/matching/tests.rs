//! Tests of matching a question to a verified one: words, templates, signatures, paraphrases.
use crate::verified::asks::*;

use super::*;

fn lits(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn best_rated_orders_by_the_rating_and_best_reviews_judges() {
    let (best, highest) =
        (signature("What is the best-rated restaurant in the USA?"), signature("Which restaurant has the highest rating?"));
    assert_eq!(best.classes, highest.classes);
    assert!(signature_conflict("What is the best-rated restaurant?", "What is the worst-rated restaurant?").is_some());
    assert!(signature_conflict("Which restaurant has the most reviews?", "Which restaurant has the best reviews?").is_some());
    assert_eq!(content_words("the best-rated restaurant"), ["highest", "rat", "restaurant"]);
}

#[test]
fn grouping_averaging_and_counting_as_people_write_them() {
    let none = |a: &str, b: &str| signature_conflict(a, b).is_none();
    // "by" after a noun groups in a question that aggregates without ranking; after a verb
    // it names an agent, and "every" means all.
    assert!(none("How many restaurants are there per cuisine?", "Give the number of restaurants by cuisine."));
    assert!(!none("How many restaurants are there?", "Give the number of restaurants by cuisine."));
    assert!(!none("How many reviews were written per guest?", "How many reviews were written by guests?"));
    assert!(!none("What is the total population per city in Japan?", "What is the combined population of every city in Japan?"));
    assert!(none("What are the three largest cities by population?", "List the three most populous cities."));
    assert!(none("Which cities are in Japan?", "List every city located in Japan."));
    // "On average, how many" averages; "how many … an average" counts.
    assert!(none(
        "What is the average guest star rating of Trattoria Lucia?",
        "On average, how many stars do guests give Trattoria Lucia?"
    ));
    assert!(!none("Which restaurants have an average rating above 4?", "How many restaurants have an average rating above 4?"));
    assert!(!none(
        "What is the average guest star rating of Trattoria Lucia?",
        "What is the average guest star rating of Trattoria Lucia, and how many reviews does it have?"
    ));
    // "the largest number of" is "the most".
    assert!(none("Which city has the most restaurants?", "Name the city with the largest number of restaurants."));
    assert!(!none("Which city has the fewest restaurants?", "Name the city with the largest number of restaurants."));
    assert!(none("Which city has the fewest restaurants?", "Which city has the smallest number of restaurants?"));
    // … unless the question asks for that number.
    assert!(!none("Which city has the most restaurants?", "What is the largest number of restaurants any city has?"));
    // A number in digits or words is one number, not a name; "I" is no name.
    assert!(none("What are the three largest cities?", "What are the 3 largest cities?"));
    assert!(!none("What are the three largest cities?", "What are the 4 largest cities?"));
    assert!(none("Which restaurants serve Korean food?", "Where can I eat Korean food?"));
    assert!(!none("What are the average stars for cheap mexican places?", "What are the average stars for expensive mexican places?"));
    assert!(none("What are the average stars for cheap mexican places?", "What are the average stars for budget mexican places?"));
}

#[test]
fn asking_when_asks_for_a_time() {
    assert!(signature_conflict("When did cafe du fleuve open?", "Is cafe du fleuve still open?").is_some());
    assert!(signature_conflict("Which restaurants have closed?", "When did the closed restaurants close?").is_some());
    assert_eq!(signature_conflict("When was the latest inspection?", "What is the date of the latest inspection?"), None);
    assert_eq!(signature_conflict("When did the restaurant close?", "On what day did the restaurant close?"), None);
}

#[test]
fn words_keep_offsets_decimals_and_inner_apostrophes() {
    let w = words("What's the editors' rating of 4.7 in Los Angeles?");
    let norms: Vec<_> = w.iter().map(|w| w.norm.as_str()).collect();
    assert_eq!(norms, ["what's", "the", "editors", "rating", "of", "4.7", "in", "los", "angeles"]);
    assert_eq!(&"What's the editors' rating of 4.7 in Los Angeles?"[w[7].start..w[8].end], "Los Angeles");
}

#[test]
fn a_template_fills_its_slots_with_the_new_values() {
    let t = Template::new("Which cities are in Japan?", &lits(&["Japan"]));
    assert_eq!(t.slots(), 1);
    assert_eq!(t.fill("which cities are in France"), Some(vec![(0, "France".to_string())]));
    assert_eq!(t.fill("Which cities are in the United Kingdom?"), Some(vec![(0, "the United Kingdom".to_string())]));
    // Other words: no match.
    assert_eq!(t.fill("Which cities are not in Japan?"), None);
    assert_eq!(t.fill("How many cities are in Japan?"), None);
    // A filler that changes the logic is no value.
    assert_eq!(t.fill("Which cities are in Japan or France?"), None);
    assert_eq!(t.fill("Which cities are in Japan with 2 million people?"), None);
    assert_eq!(t.fill("Which cities are in non-Japan?"), None);
    let t = Template::new("How many orders have a balance above 50?", &lits(&[]));
    assert_eq!(t.fill("How many orders have a balance above -50?"), None);
}

#[test]
fn two_slots_and_a_literal_the_question_does_not_name() {
    let t = Template::new("Which Italian restaurants are in Los Angeles?", &lits(&["Los Angeles", "Italian"]));
    assert_eq!(t.slots(), 2);
    assert_eq!(t.fill("which French restaurants are in San Francisco?"), Some(vec![(1, "French".into()), (0, "San Francisco".into())]));
    // The SQL says 'Los Angeles', the question "LA": no slot, the words must be the same.
    let t = Template::new("Which Italian restaurants are in LA?", &lits(&["Los Angeles", "Italian"]));
    assert_eq!(t.slots(), 1);
    assert_eq!(t.fill("Which Japanese restaurants are in LA?"), Some(vec![(1, "Japanese".into())]));
    assert_eq!(t.fill("Which Japanese restaurants are in NYC?"), None);
}

#[test]
fn a_literal_named_twice_is_no_slot() {
    let t = Template::new("Is Paris in France or is Paris in Texas?", &lits(&["Paris"]));
    assert_eq!(t.slots(), 0);
}

#[test]
fn paraphrases_keep_numbers_logic_names_and_literals() {
    let none = lits(&[]);
    assert_eq!(paraphrase_conflict("How many restaurants are there?", "What is the number of restaurants?", &none), None);
    assert!(paraphrase_conflict("How many restaurants are there?", "How many restaurants are not open?", &none).is_some());
    assert!(paraphrase_conflict("List the top 5 chefs", "List the top 10 chefs", &none).is_some());
    assert!(paraphrase_conflict("Which restaurant has the highest rating?", "Which restaurant has the lowest rating?", &none).is_some());
    assert!(paraphrase_conflict("Restaurants in Chicago?", "Restaurants in Boston?", &none).is_some());
    assert!(paraphrase_conflict("How many reviews were written in 2023?", "How many reviews were written in 2024?", &none).is_some());
    let it = lits(&["Italian"]);
    assert!(paraphrase_conflict("How many italian restaurants are there?", "How many french restaurants are there?", &it).is_some());
    assert_eq!(paraphrase_conflict("How many italian restaurants are there?", "Count the italian restaurants.", &it), None);
    assert!(paraphrase_conflict("Which chefs didn't win an award?", "Which chefs won an award?", &none).is_some());
    // A word one question has and the other has not changes what is asked.
    assert!(paraphrase_conflict("How many chefs are listed?", "How many head chefs are listed?", &none).is_some());
    assert!(paraphrase_conflict("Which restaurant has the most reviews?", "Which restaurant has the best reviews?", &none).is_some());
    assert!(paraphrase_conflict("How many cities are in the USA?", "How many cities are outside the USA?", &none).is_some());
    assert_eq!(paraphrase_conflict("How many chefs are listed?", "Count the chefs.", &none), None);
    // Words that look like phrasing but change what is asked, symbols, and word order.
    assert!(paraphrase_conflict("Which books are checked out?", "Which books are checked in?", &none).is_some());
    assert!(paraphrase_conflict("When was order 17 shipped?", "Where was order 17 shipped?", &none).is_some());
    assert!(paraphrase_conflict("Who manages Alice?", "Who does Alice manage?", &none).is_some());
    assert!(paraphrase_conflict("How many orders have total > 100?", "How many orders have total < 100?", &none).is_some());
    assert_eq!(paraphrase_conflict("How many chefs are listed?", "How many chefs are there in total?", &none), None);
    assert!(paraphrase_conflict("Get the population of the cities", "Get the total population of the cities", &none).is_some());
    assert_eq!(paraphrase_conflict("What are the names of the chefs?", "List the chefs' names.", &none), None);
}
