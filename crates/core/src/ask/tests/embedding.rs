//! The question embedded once per ask(), whichever capabilities compare it.

use super::*;

/// A host whose verified store and schema selection memory both compare the question's
/// embedding, counting the embeddings made.
struct Embedding(Scripted, std::cell::Cell<u32>);

impl Embedding {
    fn embed(&self, question: &Question) {
        question.embedding(|_| {
            self.1.set(self.1.get() + 1);
            vec![1.0, 0.0]
        });
    }
}

impl Catalog for Embedding {
    fn schema_text(&mut self) -> Result<String, HostError> {
        self.0.schema_text()
    }
    fn select_tables(&mut self, question: &Question) -> Result<Option<Selection>, HostError> {
        self.embed(question);
        Ok(None)
    }
    fn literals_of(&mut self, sql: &str, schema: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
        self.0.literals_of(sql, schema)
    }
}

impl Llm for Embedding {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.chat(stage, req)
    }
}

impl Executor for Embedding {
    fn execute(&mut self, sql: &crate::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        self.0.execute(sql)
    }
    fn execute_verified(&mut self, sql: &crate::guard::CheckedSql, schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.0.execute_verified(sql, schema)
    }
}

impl Memory for Embedding {
    fn literal_evidence(&mut self, sql: &crate::guard::CheckedSql) -> Result<Vec<Looked>, HostError> {
        self.0.literal_evidence(sql)
    }
    fn verified(&mut self, question: &Question) -> Result<Vec<Candidate>, HostError> {
        self.embed(question);
        Ok(Vec::new())
    }
    fn stored_value(&mut self, lit: &LiteralRef, text: &str) -> Result<Option<String>, HostError> {
        self.0.stored_value(lit, text)
    }
    fn ambiguities(&mut self, question: &str, tables: &[String]) -> Result<Vec<Ambiguity>, HostError> {
        self.0.ambiguities(question, tables)
    }
}

#[test]
fn the_question_is_embedded_once_per_ask() {
    let mut h = Embedding(Scripted::new(&["SELECT name FROM public.restaurants", "ROWS"]), std::cell::Cell::new(0));
    run(&mut h, "which restaurants?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(h.1.get(), 1, "the verified queries and the selection share one embedding");
    h.0.replies.extend([Ok("SELECT name FROM public.restaurants".to_string()), Ok("ROWS".to_string())]);
    run(&mut h, "which restaurants?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(h.1.get(), 2, "another ask(), another embedding: nothing is kept between questions");
}

#[test]
fn a_later_question_of_a_conversation_is_embedded_once_too() {
    let last = crate::conversation::Turn {
        turn: 1,
        question: "which restaurants?".into(),
        standalone: "which restaurants?".into(),
        sql: Some("SELECT name FROM public.restaurants".into()),
        columns: vec!["name".into()],
        rows: Some(3),
    };
    // Read by the model, written back as asked: answered as asked, embedded once (the look at
    // its tables before the reading, then the verified queries and the selection).
    let replies = ["How many dishes are there?", "SELECT name FROM public.restaurants", "ROWS"];
    let mut h = Embedding(Scripted::new(&replies), std::cell::Cell::new(0));
    let out = run_in_conversation(&mut h, "How many dishes are there?", std::slice::from_ref(&last), None, &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.trace.reading, Some(crate::conversation::Reading::Standalone));
    assert_eq!(h.1.get(), 1);
    // Rewritten into another question: that one is embedded as well.
    let replies = ["How many restaurants are there?", "SELECT count(*) FROM public.restaurants", "ROWS"];
    let mut h = Embedding(Scripted::new(&replies), std::cell::Cell::new(0));
    let out = run_in_conversation(&mut h, "How many are there?", std::slice::from_ref(&last), None, &cfg(), Goal::Answer).unwrap();
    assert!(matches!(out.trace.reading, Some(crate::conversation::Reading::Rewritten { .. })), "{:?}", out.trace.reading);
    assert_eq!(h.1.get(), 2);
}
