//! The correction decision, on evidence shaped like the glue's (cosines measured with
//! all-MiniLM-L6-v2; trigram similarities as pg_trgm computes them).

use pg_ask_core::values::decide::{decide, edit_distance, lexical_evidence, Candidate, Comparison, Decision, Evidence, Lexical, Rule};

fn cand(value: &str, cosine: f64, trigram: f64) -> Candidate {
    Candidate { value: value.into(), frequency: 1, cosine: Some(cosine), trigram: Some(trigram) }
}

fn evidence(literal: &str, candidates: Vec<Candidate>) -> Evidence {
    Evidence {
        literal: literal.into(),
        exact: false,
        case_insensitive: None,
        candidates,
        distinct_values: 10,
        closed_set: false,
        all_values: false,
    }
}

fn replaced(e: &Evidence) -> Option<String> {
    match decide(e, Comparison::CaseSensitive).decision {
        Decision::Replace { value, .. } => Some(value),
        _ => None,
    }
}

#[test]
fn lexical_signals() {
    assert_eq!(lexical_evidence("los-angeles", "Los Angeles"), Some(Lexical::SameLettersAndDigits));
    assert_eq!(lexical_evidence("Italian restaurant", "Italian Restaurants"), Some(Lexical::SingularPlural));
    assert_eq!(lexical_evidence("LA", "Los Angeles"), Some(Lexical::Initialism));
    assert_eq!(lexical_evidence("NYC", "New York City"), Some(Lexical::Initialism));
    assert_eq!(lexical_evidence("USA", "United States of America"), Some(Lexical::Initialism));
    assert_eq!(lexical_evidence("United States of America", "usa"), Some(Lexical::Initialism));
    assert_eq!(lexical_evidence("san fran", "San Francisco"), Some(Lexical::WordPrefixes));
    assert_eq!(lexical_evidence("Pasta House", "The Pasta House"), Some(Lexical::WordPrefixes));
    assert_eq!(lexical_evidence("Chcago", "Chicago"), Some(Lexical::Typo));
    assert_eq!(lexical_evidence("United States", "usa"), Some(Lexical::InitialismPrefix));
    assert_eq!(lexical_evidence("Italian", "Italy"), Some(Lexical::SharedStem));
    // No evidence between distinct values.
    assert_eq!(lexical_evidence("Japan", "France"), None);
    assert_eq!(lexical_evidence("Gotham", "Chicago"), None);
    assert_eq!(lexical_evidence("Iran", "Iraq"), None, "too short for a typo");
    assert_eq!(lexical_evidence("Chile", "China"), None);
    assert_eq!(edit_distance("ab", "ba"), 1);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
}

#[test]
fn present_values_stay_and_case_is_fixed_unless_ilike() {
    let mut e = evidence("los angeles", vec![cand("Los Angeles", 1.0, 1.0)]);
    e.exact = true;
    assert_eq!(decide(&e, Comparison::CaseSensitive).decision, Decision::Keep { reason: Rule::Exact });
    e.exact = false;
    e.case_insensitive = Some("Los Angeles".into());
    assert_eq!(replaced(&e).as_deref(), Some("Los Angeles"));
    assert_eq!(decide(&e, Comparison::CaseInsensitive).decision, Decision::Keep { reason: Rule::CaseInsensitive });
    assert_eq!(decide(&e, Comparison::RangeBound).rule, Rule::RangeBound);
}

#[test]
fn variants_are_fixed() {
    let cities = |lit: &str, c: [f64; 4]| {
        evidence(
            lit,
            vec![
                cand("Los Angeles", c[0], 0.1),
                cand("New York", c[1], 0.0),
                cand("San Francisco", c[2], 0.05),
                cand("Chicago", c[3], 0.0),
            ],
        )
    };
    assert_eq!(replaced(&cities("LA", [0.84, 0.55, 0.57, 0.53])).as_deref(), Some("Los Angeles"));
    assert_eq!(replaced(&cities("NYC", [0.63, 0.94, 0.61, 0.62])).as_deref(), Some("New York"));
    assert_eq!(replaced(&cities("san fran", [0.63, 0.5, 0.83, 0.53])).as_deref(), Some("San Francisco"));
    assert_eq!(replaced(&cities("Chcago", [0.21, 0.2, 0.3, 0.32])).as_deref(), Some("Chicago"));

    let countries = |lit: &str, c: [f64; 4]| {
        evidence(
            lit,
            vec![cand("France", c[0], 0.1), cand("Chile", c[1], 0.0), cand("United States", c[2], 0.0), cand("Canada", c[3], 0.0)],
        )
    };
    let t = decide(&countries("French", [0.74, 0.40, 0.45, 0.47]), Comparison::CaseSensitive);
    assert!(matches!(&t.decision, Decision::Replace { value, reason: Rule::Embedding, .. } if value == "France"), "{t:?}");
    assert_eq!(replaced(&countries("USA", [0.6, 0.5, 0.89, 0.78])).as_deref(), Some("United States"));
    let usa = evidence("United States", vec![cand("usa", 0.89, 0.0), cand("Canada", 0.72, 0.0), cand("France", 0.5, 0.0)]);
    assert_eq!(replaced(&usa).as_deref(), Some("usa"));
}

#[test]
fn legitimate_absent_values_are_not_replaced() {
    // 'Japan' among France, Chile, United States: no lexical evidence, no clear margin.
    let e = evidence("Japan", vec![cand("France", 0.62, 0.0), cand("Chile", 0.55, 0.0), cand("United States", 0.58, 0.0)]);
    let t = decide(&e, Comparison::CaseSensitive);
    assert!(!matches!(t.decision, Decision::Replace { .. }), "{t:?}");
    // 'spain' among countries: France 0.70 but Italy 0.68.
    let e = evidence("spain", vec![cand("France", 0.70, 0.0), cand("Italy", 0.68, 0.0), cand("Mexico", 0.68, 0.0)]);
    let t = decide(&e, Comparison::CaseSensitive);
    assert!(matches!(t.decision, Decision::AskLlm { .. }), "{t:?}");
    assert!((t.cosine_margin.unwrap() - 0.02).abs() < 1e-9);
    // 'Gotham' among cities: nothing plausible by the rules; the LLM sees the nearest and may
    // keep it (without an LLM it is kept).
    let e = evidence("Gotham", vec![cand("Chicago", 0.45, 0.0), cand("New York", 0.42, 0.0), cand("Boston", 0.34, 0.0)]);
    let t = decide(&e, Comparison::CaseSensitive);
    assert_eq!(t.rule, Rule::Nearest);
    assert!(matches!(&t.decision, Decision::AskLlm { candidates } if candidates[0] == "Chicago"), "{t:?}");
    assert_eq!(decide(&evidence("x", vec![]), Comparison::CaseSensitive).rule, Rule::NoCandidates);
}

#[test]
fn tied_lexical_evidence_goes_to_the_llm() {
    // 'LA' is the initialism of both; cosine does not separate them.
    let e = evidence("LA", vec![cand("Los Angeles", 0.80, 0.0), cand("Los Altos", 0.78, 0.0)]);
    match decide(&e, Comparison::CaseSensitive).decision {
        Decision::AskLlm { candidates } => assert_eq!(candidates.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn ranking_fuses_and_merges_duplicates_and_trace_serialises() {
    let e = evidence(
        "Chcago",
        vec![
            Candidate { value: "Chicago".into(), frequency: 3, cosine: Some(0.32), trigram: None },
            Candidate { value: "Chicago".into(), frequency: 3, cosine: None, trigram: Some(0.4) },
            cand("Seattle", 0.27, 0.0),
            cand("San Francisco", 0.30, 0.05),
        ],
    );
    let t = decide(&e, Comparison::CaseSensitive);
    assert_eq!(t.ranked.len(), 3);
    assert_eq!(t.ranked[0].value, "Chicago");
    assert_eq!((t.ranked[0].cosine, t.ranked[0].trigram), (Some(0.32), Some(0.4)));
    assert_eq!(t.ranked[0].lexical, Some(Lexical::Typo));
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["decision"]["action"], "replace");
    assert_eq!(json["rule"], "lexical");
    assert_eq!(json["ranked"][0]["lexical"], "typo");
    assert!(json["thresholds"]["embed_min_margin"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_closed_set_never_keeps_an_unknown_value() {
    // 'Gotham' among city names is left alone; among an enum's labels it cannot be stored at all.
    let open = evidence("Gotham", vec![cand("Los Angeles", 0.30, 0.0), cand("Chicago", 0.28, 0.0)]);
    let t = decide(&open, Comparison::CaseSensitive);
    assert_eq!(t.rule, Rule::Nearest);
    let closed = Evidence { closed_set: true, ..open };
    let t = decide(&closed, Comparison::CaseSensitive);
    assert_eq!(t.rule, Rule::ClosedSet);
    match t.decision {
        Decision::AskLlm { candidates } => assert_eq!(candidates.len(), 2),
        d => panic!("{d:?}"),
    }
    // One label only: nothing to choose from.
    let single = Evidence { candidates: vec![cand("active", 0.2, 0.0)], closed_set: true, ..evidence("x", vec![]) };
    assert_eq!(replaced(&single).as_deref(), Some("active"));
    // Clear evidence decides as in an open column.
    let typo = Evidence { closed_set: true, ..evidence("shiped", vec![cand("shipped", 0.8, 0.5), cand("pending", 0.3, 0.0)]) };
    assert_eq!(replaced(&typo).as_deref(), Some("shipped"));
}

#[test]
fn a_column_of_few_values_puts_an_unknown_literal_to_the_llm_with_all_of_them() {
    // 'female' against a sex column of 'F' and 'M' (all-MiniLM-L6-v2 cosines 0.395 and 0.375,
    // pg_trgm 0.125 and 0): neither embedding nor trigrams know what 'F' stands for.
    let sex = Evidence { distinct_values: 2, ..evidence("female", vec![cand("F", 0.395, 0.125), cand("M", 0.375, 0.0)]) };
    assert_eq!(decide(&sex, Comparison::CaseSensitive).rule, Rule::Nearest);
    let listed = Evidence { all_values: true, ..sex };
    let t = decide(&listed, Comparison::CaseSensitive);
    assert_eq!(t.rule, Rule::FewValues);
    match &t.decision {
        Decision::AskLlm { candidates } => assert_eq!(candidates, &["F".to_string(), "M".to_string()]),
        d => panic!("{d:?}"),
    }
    // All of them, beyond the ten an ambiguous literal of a large column is shown with.
    let statuses: Vec<Candidate> = (0..15).map(|i| cand(&format!("status {i}"), 0.2, 0.0)).collect();
    let many = Evidence { all_values: true, distinct_values: 15, ..evidence("paused", statuses) };
    match decide(&many, Comparison::CaseSensitive).decision {
        Decision::AskLlm { candidates } => assert_eq!(candidates.len(), 15),
        d => panic!("{d:?}"),
    }
    // The rules still decide what they can without the LLM, and an exact value stays.
    let typo = Evidence { all_values: true, ..evidence("shiped", vec![cand("shipped", 0.8, 0.5), cand("pending", 0.3, 0.0)]) };
    assert_eq!(replaced(&typo).as_deref(), Some("shipped"));
    let exact = Evidence { exact: true, ..listed };
    assert_eq!(decide(&exact, Comparison::CaseSensitive).rule, Rule::Exact);
}
