//! The plan way: several candidate schemas, a retrieval plan, and its fallbacks.

use super::*;

/// A scripted host with a schema selection memory of two schemas.
struct Selecting(Scripted, Vec<SchemaCandidate>);
impl Catalog for Selecting {
    fn schema_text(&mut self) -> Result<String, HostError> {
        panic!("the full description is not read when a selection exists")
    }
    fn select_tables(&mut self, _: &Question) -> Result<Option<Selection>, HostError> {
        Ok(Some(Selection { candidates: self.1.clone(), detail: json!({"schemas": ["music", "staff"]}) }))
    }
    fn literals_of(&mut self, sql: &str, schema: Option<&str>) -> Result<Vec<LiteralRef>, HostError> {
        self.0.literals_of(sql, schema)
    }
}
impl Llm for Selecting {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.chat(stage, req)
    }
}
impl Executor for Selecting {
    fn execute(&mut self, sql: &crate::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        self.0.execute(sql)
    }
    fn execute_verified(&mut self, sql: &crate::guard::CheckedSql, schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.0.execute_verified(sql, schema)
    }
}
impl Memory for Selecting {
    crate::no_memory!();
}

fn two_schemas() -> Vec<SchemaCandidate> {
    vec![
        SchemaCandidate { schema: "music".into(), tables: "TABLE music.singer\n  id integer\n".into() },
        SchemaCandidate { schema: "staff".into(), tables: "TABLE staff.employee\n  id integer\n".into() },
    ]
}

#[test]
fn a_plan_over_two_schemas_runs_both_steps_and_compares() {
    let plan = r#"[{"goal": "count singers", "sql": "SELECT count(*) FROM music.singer", "schema": "music"},
                      {"goal": "count employees", "sql": "SELECT count(*) FROM staff.employee", "schema": "staff"}]"#;
    let mut h = Selecting(Scripted::new(&[plan, "There are more employees (5) than singers (3)."]), two_schemas());
    h.0.exec = Box::new(|sql| Ok(count(if sql.contains("singer") { 3 } else { 5 })));
    let out = run(&mut h, "which has more: singers or employees?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(h.0.executed, ["SELECT count(*) FROM music.singer", "SELECT count(*) FROM staff.employee"]);
    assert_eq!(out.answer_text(), "There are more employees (5) than singers (3).");
    assert_eq!(out.sql, "SELECT count(*) FROM music.singer;\nSELECT count(*) FROM staff.employee");
    let plan_prompt = &h.0.seen[0].1.messages[0].content;
    assert!(plan_prompt.contains("<schema name=\"music\">\nTABLE music.singer") && plan_prompt.contains("TABLE staff.employee"));
    let answer_prompt = &h.0.seen[1].1.messages[0].content;
    assert!(answer_prompt.contains("<step n=\"2\" schema=\"staff\">"), "{answer_prompt}");
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["select", "schema", "plan", "plan", "guard", "execute", "guard", "execute", "answer", "answer", "ground"]);
    assert_eq!(out.trace.stages[7].input["step"], 2);
    assert_eq!(out.trace.llm_calls, 2);
}

#[test]
fn a_plans_answer_over_its_bound_or_the_servers_context_is_the_last_steps_rows() {
    let plan = r#"[{"goal": "list singers", "sql": "SELECT * FROM music.singer", "schema": "music"},
                      {"goal": "list employees", "sql": "SELECT * FROM staff.employee", "schema": "staff"}]"#;
    let wide = |sql: &str| {
        let columns: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
        let tag = if sql.contains("singer") { "s" } else { "e" };
        Ok(ResultSet { columns, rows: vec![vec![json!(tag.repeat(1_000)); 20]; 5], truncated: false, size_cut: false })
    };
    // Over ask.max_prompt_tokens: no answer call.
    let mut h = Selecting(Scripted::new(&[plan]), two_schemas());
    h.0.exec = Box::new(wide);
    let out = run(&mut h, "who is there?", &AskConfig { max_prompt_tokens: 2_000, ..cfg() }, Goal::Answer).unwrap();
    assert_eq!((out.answer, out.sql.as_str(), h.0.seen.len()), (Some(AnswerDecision::Rows), "SELECT * FROM staff.employee", 1));
    assert!(out.trace.notices[0].contains("the steps' rows do not fit"), "{:?}", out.trace.notices);
    // The server refuses it as larger than its context.
    let mut h = Selecting(Scripted::new(&[plan]), two_schemas());
    h.0.exec = Box::new(wide);
    h.0.replies.push_back(Err(LlmError::Http {
        url: "u".into(),
        status: 400,
        message: "the request exceeds the available context size".into(),
        retry_after_s: None,
    }));
    let roomy = AskConfig { max_prompt_tokens: 1_000_000, ..cfg() };
    let out = run(&mut h, "who is there?", &roomy, Goal::Answer).unwrap();
    assert_eq!((out.answer, out.result.rows[0][0].as_str().map(|s| &s[..1])), (Some(AnswerDecision::Rows), Some("e")));
    assert!(out.trace.notices[0].contains("exceeds its context"), "{:?}", out.trace.notices);
    // Any other failure of the call is the question's error.
    let mut h = Selecting(Scripted::new(&[plan]), two_schemas());
    h.0.exec = Box::new(wide);
    h.0.replies.push_back(Err(LlmError::EmptyContent));
    assert!(matches!(run(&mut h, "who is there?", &roomy, Goal::Answer).unwrap_err().0, AskError::Llm { .. }));
}

#[test]
fn a_failing_step_is_repaired_and_one_step_rows_can_be_the_answer() {
    let plan = r#"[{"goal": "list singers", "sql": "SELECT nme FROM music.singer", "schema": "music"},
                      {"goal": "count employees", "schema": "staff"}]"#;
    let mut h =
        Selecting(Scripted::new(&[plan, "SELECT name FROM music.singer", "SELECT count(*) FROM staff.employee", "ROWS 1"]), two_schemas());
    h.0.exec = Box::new(|sql| {
        if sql.contains("nme") {
            Err(ExecFailure::Error { sqlstate: "42703".into(), message: "column \"nme\" does not exist".into(), detail: None, hint: None })
        } else {
            Ok(one_row())
        }
    });
    let out = run(&mut h, "list singers", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.answer, Some(AnswerDecision::Rows));
    assert_eq!(out.sql, "SELECT name FROM music.singer");
    // The repair conversation is about the step's goal over its schema's tables.
    let repair = &h.0.seen[1];
    assert_eq!(repair.0, "repair");
    assert!(repair.1.messages[0].content.contains("TABLE music.singer") && repair.1.messages[0].content.contains("<question>list singers"));
    // A step without SQL gets it generated over its schema.
    assert_eq!(h.0.seen[2].0, "generate");
    assert!(h.0.seen[2].1.messages[0].content.contains("TABLE staff.employee"));
}

#[test]
fn an_unreadable_plan_falls_back_to_the_best_schema_and_one_schema_needs_no_plan() {
    let mut h = Selecting(Scripted::new(&["I would look at singers.", "SELECT count(*) FROM music.singer", "ROWS"]), two_schemas());
    let out = run(&mut h, "how many singers?", &cfg(), Goal::Answer).unwrap();
    assert_eq!(out.sql, "SELECT count(*) FROM music.singer");
    assert!(out.trace.stages.iter().any(|s| s.stage == "plan" && s.output["fallback"] == "music"));

    let mut h = Selecting(Scripted::new(&["SELECT count(*) FROM music.singer", "ROWS"]), two_schemas()[..1].to_vec());
    let out = run(&mut h, "how many singers?", &cfg(), Goal::Sql).unwrap();
    assert_eq!(h.0.seen[0].0, "generate");
    assert!(h.0.seen[0].1.messages[0].content.starts_with("<schema>\nTABLE music.singer\n  id integer\n</schema>"));
    let stages: Vec<_> = out.trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, ["select", "schema", "generate", "guard", "execute"]);
}
