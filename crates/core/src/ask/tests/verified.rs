//! The verified way: a question answered by a verified query, or shown it as an example.

use super::*;
use crate::trace::Source;

/// A scripted host with a store of verified queries.
struct Verifying(Scripted, Vec<Candidate>);
scripted_host!(Verifying {
    fn verified(&mut self, _: &Question) -> Result<Vec<Candidate>, HostError> {
        Ok(self.1.clone())
    }
    fn literal_evidence(&mut self, sql: &crate::guard::CheckedSql) -> Result<Vec<Looked>, HostError> {
        self.0.literal_evidence(sql)
    }
    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError> {
        self.0.stored_value(lit, text)
    }
    fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<Ambiguity>, HostError> {
        self.0.ambiguities(question, tables)
    }
});

fn verified_count(cosine: f64) -> Candidate {
    Candidate {
        id: 12,
        question: "How many restaurants are there?".into(),
        sql: "SELECT count(*) FROM public.restaurants".into(),
        schema: None,
        verified_by: "alice".into(),
        trusted: true,
        cosine: Some(cosine),
        trigram: 0.6,
    }
}

#[test]
fn a_verified_question_is_answered_without_the_llm() {
    let mut h = Verifying(Scripted::new(&[]), vec![verified_count(0.95)]);
    h.0.exec = Box::new(|_| Ok(count(9)));
    let out = run(&mut h, "What is the number of restaurants?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 0);
    assert_eq!(h.0.executed, ["SELECT count(*) FROM public.restaurants"]);
    // Said as the answer stage says a count.
    assert_eq!(out.answer_text(), "count: 9");
    assert_eq!((out.trace.source, out.trace.verified_id), (Some(Source::Verified), Some(12)));
    let st = &out.trace.stages[0];
    assert_eq!(
        (st.stage, &st.output["source"], &st.output["id"], &st.output["rule"]),
        ("verified", &json!("verified"), &json!(12), &json!("paraphrase"))
    );
}

#[test]
fn another_question_gets_the_verified_one_as_an_example() {
    let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants WHERE closed_on IS NULL"]), vec![verified_count(0.8)]);
    let out = run(&mut h, "How many restaurants are still open?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 1);
    assert_eq!(out.trace.source, Some(Source::Llm));
    let prompt = &h.0.seen[0].1.messages[0].content;
    assert!(
        prompt.contains(
            "<example>\n<question>How many restaurants are there?</question>\n```sql\nSELECT count(*) FROM public.restaurants\n```"
        ),
        "{prompt}"
    );
    assert_eq!(out.trace.stages[0].output["candidates"][0]["decision"], "example");
    // Off: nothing retrieved, nothing shown.
    let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants"]), vec![verified_count(0.99)]);
    let off = AskConfig { verified: VerifiedUse::Off, ..cfg() };
    let out = run(&mut h, "How many restaurants are there?", &off, Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 1);
    assert!(!h.0.seen[0].1.messages[0].content.contains("<examples>"));
    // Examples only: shown, never answering.
    let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants"]), vec![verified_count(0.99)]);
    let examples = AskConfig { verified: VerifiedUse::Examples, ..cfg() };
    let out = run(&mut h, "How many restaurants are there?", &examples, Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 1);
    assert!(h.0.seen[0].1.messages[0].content.contains("<examples>"));
}

#[test]
fn a_verified_query_that_no_longer_runs_falls_back_to_the_llm() {
    let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants", "ROWS"]), vec![verified_count(0.99)]);
    let mut first = true;
    h.0.exec = Box::new(move |_| {
        if std::mem::take(&mut first) {
            Err(ExecFailure::Error { sqlstate: "42501".into(), message: "permission denied".into(), detail: None, hint: None })
        } else {
            Ok(count(9))
        }
    });
    let out = run(&mut h, "How many restaurants are there?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.trace.source, Some(Source::Llm));
    assert_eq!(out.trace.stages[0].output["candidates"][0]["decision"], "failed");
}

fn verified_rating() -> Candidate {
    Candidate {
        id: 21,
        question: "Which restaurants have a rating above 4.5?".into(),
        sql: "SELECT name FROM public.restaurants WHERE rating > 4.5".into(),
        schema: None,
        verified_by: "alice".into(),
        trusted: true,
        cosine: Some(0.8),
        trigram: 0.5,
    }
}

fn with_templates() -> AskConfig {
    AskConfig { template_choice: Some(TemplateChoice::Grammar), ..cfg() }
}

#[test]
fn the_model_chooses_a_template_and_fills_its_slot() {
    let mut h = Verifying(Scripted::new(&["{\"template\": 1, \"slots\": {\"s1\": 4}}"]), vec![verified_rating()]);
    let out = run(&mut h, "List the restaurants rated above 4", &with_templates(), Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 1, "one call: the choice");
    assert_eq!(h.0.executed, ["SELECT name FROM public.restaurants WHERE rating > 4"]);
    assert_eq!((out.trace.source, out.trace.verified_id), (Some(Source::VerifiedTemplate), Some(21)));
    assert_eq!(out.answer_text(), "name: Roma");
    let (stage, req) = &h.0.seen[0];
    assert_eq!(*stage, "template");
    let Some(Constraint::Grammar { gbnf }) = &req.constraint else { panic!("{:?}", req.constraint) };
    assert!(gbnf.contains("\"s1\\\": \" number"), "{gbnf}");
    assert!(req.messages[0].content.contains("SQL: SELECT name FROM public.restaurants WHERE rating > {s1}"));
    let st = out.trace.stages.iter().find(|s| s.stage == "template").unwrap();
    assert_eq!((&st.output["taken"], &st.output["choice"]["id"]), (&json!(true), &json!(21)));
    assert_eq!(st.output["choice"]["slots"][0], json!({"slot": "s1", "kind": "number", "value": "4"}));
    assert_eq!(st.input["offered"][0]["question"], "Which restaurants have a rating above {s1}?");
}

#[test]
fn none_or_a_doubted_choice_goes_on_to_generation() {
    // None: the template is an example of the generation that follows.
    let mut h = Verifying(
        Scripted::new(&["{\"template\": 0, \"slots\": {}}", "SELECT name FROM public.restaurants WHERE rating < 3"]),
        vec![verified_rating()],
    );
    let out = run(&mut h, "Which restaurants have a rating below 3?", &with_templates(), Goal::Answer).unwrap();
    assert_eq!((out.trace.llm_calls, out.trace.source), (2, Some(Source::Llm)));
    assert!(h.0.seen[1].1.messages[0].content.contains("<example>"));
    // A choice whose value the question does not write, or whose comparison differs: not taken.
    for (asked, reply) in [
        ("List the restaurants rated above 4", "{\"template\": 1, \"slots\": {\"s1\": 3}}"),
        ("Which restaurants have a rating below 4?", "{\"template\": 1, \"slots\": {\"s1\": 4}}"),
    ] {
        let mut h = Verifying(Scripted::new(&[reply, "SELECT name FROM public.restaurants", "ROWS"]), vec![verified_rating()]);
        let out = run(&mut h, asked, &with_templates(), Goal::Answer).unwrap();
        assert_eq!(out.trace.source, Some(Source::Llm), "{asked}");
        let st = out.trace.stages.iter().find(|s| s.stage == "template").unwrap();
        assert_eq!(st.output["taken"], json!(false), "{asked}");
        assert!(st.output["why"].as_str().is_some_and(|w| !w.is_empty()));
        assert_eq!(h.0.executed, ["SELECT name FROM public.restaurants"]);
    }
    // A choice call without a usable reply is recorded and the question goes on; a server
    // that fails ends it, as generation would.
    let mut s = Scripted::new(&["SELECT name FROM public.restaurants", "ROWS"]);
    s.replies.push_front(Err(LlmError::EmptyContent));
    let mut h = Verifying(s, vec![verified_rating()]);
    let out = run(&mut h, "List the restaurants rated above 4", &with_templates(), Goal::Answer).unwrap();
    assert_eq!(out.trace.source, Some(Source::Llm));
    let mut s = Scripted::new(&["SELECT name FROM public.restaurants", "ROWS"]);
    s.replies.push_front(Err(LlmError::Http { url: "u".into(), status: 503, message: "down".into(), retry_after_s: None }));
    let mut h = Verifying(s, vec![verified_rating()]);
    let err = run(&mut h, "List the restaurants rated above 4", &with_templates(), Goal::Answer).unwrap_err().0;
    assert!(matches!(err, AskError::Llm { stage: "template", source: LlmError::Http { status: 503, .. } }), "{err:?}");
    assert_eq!(h.0.seen.len(), 1, "not asked again");
    // Without a constraint the choice is not asked.
    let mut h = Verifying(Scripted::new(&["SELECT name FROM public.restaurants"]), vec![verified_rating()]);
    let out = run(&mut h, "List the restaurants rated above 4", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 1);
    assert!(out.trace.stages.iter().all(|s| s.stage != "template"));
}
