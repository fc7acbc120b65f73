use super::*;

#[test]
fn identifiers_split_into_words() {
    assert_eq!(identifier_words("sbCustJoinDate"), ["sb", "cust", "join", "date"]);
    assert_eq!(identifier_words("HTTPServer_log"), ["http", "server", "log"]);
    assert_eq!(identifier_words("day30_remission"), ["day", "30", "remission"]);
    assert_eq!(identifier_words("\"Order Items\".unit-price"), ["order", "items", "unit", "price"]);
    assert_eq!(identifier_words("Café Zürich"), ["café", "zürich"]);
    assert_eq!(identifier_words("O'Hare 4.7"), ["o", "hare", "4", "7"]);
}

#[test]
fn the_three_readings_share_one_scanner() {
    let text = "Which of O'Hare's flights cost >= $4.50, editors' picks?";
    let q: Vec<String> = question_words(text).into_iter().map(|w| w.norm).collect();
    assert_eq!(q, ["which", "of", "o'hare's", "flights", "cost", ">", "=", "$", "4.50", "editors", "picks"]);
    // Plain words are the question's without symbols, apostrophes and decimal points.
    assert_eq!(plain_words(text), ["which", "of", "o", "hare", "s", "flights", "cost", "4", "50", "editors", "picks"]);
    let w = &question_words(text)[2];
    assert_eq!(w.text_in(text), "O'Hare's");
}

#[test]
fn plurals_are_stemmed() {
    for (w, s) in [
        ("cities", "city"),
        ("addresses", "address"),
        ("sales", "sale"),
        ("boxes", "box"),
        ("matches", "match"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("class", "class"),
        ("bus", "bus"),
        ("ids", "ids"),
        ("customers", "customer"),
    ] {
        assert_eq!(stem(w), s, "{w}");
    }
    for (w, s) in [("rated", "rat"), ("rating", "rat"), ("reviews", "review"), ("graded", "grad"), ("grade", "grad")] {
        assert_eq!(word_stem(w), s, "{w}");
    }
}

#[test]
fn stop_words_and_single_letters_go() {
    assert_eq!(tokenize("What are the names of all the customers in a city?"), ["name", "customer", "city"]);
}

#[test]
fn identifiers_with_digits_are_also_kept_whole() {
    assert_eq!(tokenize("how many rows in t3_9?"), ["row", "t3_9"]);
    assert_eq!(tokenize("s3.t3_9"), ["s3", "t3_9"]);
    assert_eq!(digit_identifiers("_q2_2024_ revenue 2024"), ["q2_2024"]);
}
