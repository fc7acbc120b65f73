//! The verified way: a question answered by a verified query, or shown it as an example.

use super::*;

/// A scripted host with a store of verified queries.
struct Verifying(Scripted, Vec<Candidate>);
scripted_host!(Verifying {
    fn verified(&mut self, _: &Question) -> Result<Vec<Candidate>, HostError> {
        Ok(self.1.clone())
    }
    fn literal_evidence(&mut self, sql: &str) -> Result<Vec<Looked>, HostError> {
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
    assert_eq!(out.answer, Some(AnswerDecision::Rows));
    assert_eq!((out.trace.source, out.trace.verified_id), (Some("verified"), Some(12)));
    let st = &out.trace.stages[0];
    assert_eq!(
        (st.stage, &st.output["source"], &st.output["id"], &st.output["rule"]),
        ("verified", &json!("verified"), &json!(12), &json!("paraphrase"))
    );
}

#[test]
fn another_question_gets_the_verified_one_as_an_example() {
    let mut h =
        Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants WHERE closed_on IS NULL", "ROWS"]), vec![verified_count(0.8)]);
    let out = run(&mut h, "How many restaurants are still open?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 2);
    assert_eq!(out.trace.source, Some("llm"));
    let prompt = &h.0.seen[0].1.messages[0].content;
    assert!(
        prompt.contains(
            "<example>\n<question>How many restaurants are there?</question>\n```sql\nSELECT count(*) FROM public.restaurants\n```"
        ),
        "{prompt}"
    );
    assert_eq!(out.trace.stages[0].output["candidates"][0]["decision"], "example");
    // Off: nothing retrieved, nothing shown.
    let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants", "ROWS"]), vec![verified_count(0.99)]);
    let off = AskConfig { verified: VerifiedUse::Off, ..cfg() };
    let out = run(&mut h, "How many restaurants are there?", &off, Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 2);
    assert!(!h.0.seen[0].1.messages[0].content.contains("<examples>"));
    // Examples only: shown, never answering.
    let mut h = Verifying(Scripted::new(&["SELECT count(*) FROM public.restaurants", "ROWS"]), vec![verified_count(0.99)]);
    let examples = AskConfig { verified: VerifiedUse::Examples, ..cfg() };
    let out = run(&mut h, "How many restaurants are there?", &examples, Goal::Answer).unwrap();
    assert_eq!(out.trace.llm_calls, 2);
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
    assert_eq!(out.trace.source, Some("llm"));
    assert_eq!(out.trace.stages[0].output["candidates"][0]["decision"], "failed");
}
