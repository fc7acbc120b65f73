//! The JSON schemas of the stages whose reply has a fixed shape, and reading a structured
//! reply.
//!
//! Each schema is strict (every property required, no others), as OpenAI's strict mode wants.
//! A stage's prompt stays as it is; the schema wraps the reply the prompt asks for (the answer
//! stage's `ROWS` or written answer becomes `{"answer": "..."}`). [`Shape::read`] turns a
//! structured reply into the text the stage's own parser reads; a reply that is not the
//! structured JSON (the server ignored the schema, or none was sent) goes to that parser as it
//! is, which stays the fallback.

use serde_json::{json, Value};

/// A fixed-shape stage's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The answer stage: `{"answer": "ROWS" | written answer}`.
    Answer,
    /// The context switch: `{"answerable": bool, "answer": string}`.
    Context,
    /// The answer over a plan's steps: `{"answer": "ROWS <n>" | written answer}`.
    StepsAnswer,
    /// A retrieval plan: `{"steps": [{"goal", "sql", "schema"}]}`.
    RetrievalPlan,
    /// An `ask.do()` plan: `{"steps": [{"purpose", "sql"}]}`.
    ChainPlan,
    /// A shadow replay's answer to a query: `{"rows": [[...], ...]}`.
    ShadowRows,
    /// A shadow replay's answer to a write: `{"result": "Succeed" | "Fail"}`.
    ShadowOutcome,
}

fn object(properties: Value) -> Value {
    let required: Vec<&String> = properties.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

impl Shape {
    /// The schema's name, as servers want one.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Answer => "answer",
            Shape::Context => "context_decision",
            Shape::StepsAnswer => "steps_answer",
            Shape::RetrievalPlan => "retrieval_plan",
            Shape::ChainPlan => "chain_plan",
            Shape::ShadowRows => "query_result",
            Shape::ShadowOutcome => "write_outcome",
        }
    }

    /// The JSON schema.
    pub fn schema(self) -> Value {
        let string = json!({"type": "string"});
        match self {
            Shape::Answer | Shape::StepsAnswer => object(json!({"answer": string})),
            Shape::Context => object(json!({"answerable": {"type": "boolean"}, "answer": string})),
            Shape::RetrievalPlan => object(json!({
                "steps": {"type": "array", "items": object(json!({"goal": string, "sql": string, "schema": string}))}
            })),
            Shape::ChainPlan => object(json!({
                "steps": {"type": "array", "items": object(json!({"purpose": string, "sql": string}))}
            })),
            Shape::ShadowRows => object(json!({
                "rows": {"type": "array", "items": {"type": "array", "items": {"type": ["string", "number", "boolean", "null"]}}}
            })),
            Shape::ShadowOutcome => object(json!({"result": {"type": "string", "enum": ["Succeed", "Fail"]}})),
        }
    }

    /// The structured reply as the stage's parser reads it, or `None` when `reply` is not a
    /// JSON object of this shape (every required property there, of its type).
    pub fn read(self, reply: &str) -> Option<String> {
        let v: Value = serde_json::from_str(reply.trim()).ok()?;
        let o = v.as_object()?;
        let s = |k: &str| o.get(k).and_then(Value::as_str);
        match self {
            Shape::Answer | Shape::StepsAnswer => s("answer").map(str::to_string),
            Shape::Context => (o.get("answerable")?.is_boolean() && s("answer").is_some()).then(|| reply.trim().to_string()),
            Shape::RetrievalPlan | Shape::ChainPlan => o.get("steps")?.is_array().then(|| reply.trim().to_string()),
            Shape::ShadowRows => o.get("rows").filter(|r| r.is_array()).map(Value::to_string),
            Shape::ShadowOutcome => s("result").filter(|r| matches!(*r, "Succeed" | "Fail")).map(str::to_string),
        }
    }

    /// The text to give the stage's parser, and whether it came from the structured reply.
    /// A structured reply cut at the completion limit inside its text (`{"answer": "There are
    /// …`) gives the text written so far, not the JSON around it.
    pub fn readable(self, reply: &str) -> (String, bool) {
        if let Some(text) = self.read(reply) {
            return (text, true);
        }
        if matches!(self, Shape::Answer | Shape::StepsAnswer) {
            let t = reply.trim_end();
            if let Some(text) = [format!("{t}\"}}"), format!("{t}}}")].iter().find_map(|closed| self.read(closed)) {
                return (text, false);
            }
        }
        (reply.to_string(), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Shape; 7] = [
        Shape::Answer,
        Shape::Context,
        Shape::StepsAnswer,
        Shape::RetrievalPlan,
        Shape::ChainPlan,
        Shape::ShadowRows,
        Shape::ShadowOutcome,
    ];

    /// Every object of every schema is strict: all its properties required, no others.
    fn strict(v: &Value) -> bool {
        match v {
            Value::Object(o) => {
                let ok = match (o.get("properties"), o.get("required")) {
                    (Some(Value::Object(p)), Some(Value::Array(r))) => {
                        p.len() == r.len() && o.get("additionalProperties") == Some(&Value::Bool(false))
                    }
                    (None, None) => true,
                    _ => false,
                };
                ok && o.values().all(strict)
            }
            Value::Array(a) => a.iter().all(strict),
            _ => true,
        }
    }

    #[test]
    fn schemas_are_strict_objects() {
        for s in ALL {
            let schema = s.schema();
            assert_eq!(schema["type"], "object", "{s:?}");
            assert!(strict(&schema), "{s:?}: {schema}");
        }
    }

    #[test]
    fn structured_replies_read_directly_and_others_fall_back() {
        assert_eq!(Shape::Answer.readable(r#" {"answer": "ROWS"} "#), ("ROWS".to_string(), true));
        assert_eq!(Shape::Answer.readable("ROWS"), ("ROWS".to_string(), false));
        assert_eq!(Shape::ShadowRows.read(r#"{"rows": [[1, "a"], [2, null]]}"#).as_deref(), Some(r#"[[1,"a"],[2,null]]"#));
        assert_eq!(Shape::ShadowOutcome.read(r#"{"result": "Fail"}"#).as_deref(), Some("Fail"));
        assert_eq!(Shape::ShadowOutcome.read(r#"{"result": "maybe"}"#), None);
        assert!(Shape::Context.read(r#"{"answerable": false, "answer": ""}"#).is_some());
        assert!(Shape::Context.read(r#"{"answerable": "no"}"#).is_none());
        assert!(Shape::RetrievalPlan.read(r#"{"steps": []}"#).is_some());
        // Cut inside the answer: the text so far, for the parser.
        assert_eq!(Shape::Answer.readable("{\n  \"answer\": \"There are 68 restau"), ("There are 68 restau".to_string(), false));
        // Lenient JSON (a trailing comma) is not the structured reply: the parser reads it.
        assert!(Shape::ChainPlan.read(r#"{"steps": [],}"#).is_none());
    }
}
