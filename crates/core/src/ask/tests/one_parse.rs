//! One parse per candidate statement: the guard parses what the model wrote, and value
//! correction, its re-check and the hints after a run read that tree.

use super::*;

fn parses_while(run: impl FnOnce()) -> usize {
    let before = crate::sqltext::parses::count();
    run();
    crate::sqltext::parses::count() - before
}

#[test]
fn a_statement_corrected_by_the_rules_is_parsed_once() {
    let mut h = Correcting(Scripted::new(&["SELECT name FROM public.restaurants WHERE city = 'LA'"]), cities(&["Los Angeles"], false));
    let n = parses_while(|| {
        let out = run(&mut h, "q", &cfg(), Goal::Answer).unwrap();
        assert_eq!(out.sql, "SELECT name FROM public.restaurants WHERE city = 'Los Angeles'");
    });
    assert_eq!(h.0.executed, ["SELECT name FROM public.restaurants WHERE city = 'Los Angeles'"]);
    assert_eq!(n, 1, "one candidate, one parse");
}

#[test]
fn a_value_the_model_chose_is_written_in_without_a_parse() {
    let sql = "SELECT name FROM public.restaurants WHERE city = 'Big Apple'";
    let mut h = Correcting(Scripted::new(&[sql, "New York"]), cities(&["New York", "Boston"], true));
    let n = parses_while(|| {
        run(&mut h, "q", &cfg(), Goal::Answer).unwrap();
    });
    assert_eq!(h.0.executed, ["SELECT name FROM public.restaurants WHERE city = 'New York'"]);
    assert_eq!(n, 1);
}

#[test]
fn an_empty_result_is_read_for_an_impossible_condition_from_the_same_tree() {
    // Two candidates: the first returns no rows and names one column equal to two values.
    let first = "SELECT name FROM public.restaurants WHERE city = 'Rome' AND city = 'Paris'";
    let mut h = Scripted::new(&[first, "SELECT name FROM public.restaurants WHERE city = 'Rome'"]);
    h.exec = Box::new(|sql: &str| Ok(if sql.contains("Paris") { names(0) } else { one_row() }));
    let n = parses_while(|| {
        run(&mut h, "q", &cfg(), Goal::Answer).unwrap();
    });
    assert_eq!(h.executed.len(), 2);
    assert_eq!(n, 2, "two candidates, two parses");
}
