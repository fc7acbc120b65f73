//! The model's choice among the templates offered: the request (templates and question, the
//! reply constrained by a GBNF grammar or the same choice as a JSON schema) and the reply read
//! back as a [`Choice`].

use serde_json::{json, Value};

use super::{Offer, SlotKind};
use crate::constrain::Constraint;
use crate::llm::ChatRequest;
use crate::prompt::data;
use crate::verified::asks::MAX_TEXT_SLOT;

/// The request: the templates, the question, and the choice's constraint (`grammar`: a GBNF
/// grammar, for servers that take one; otherwise the same choice as a JSON schema).
pub fn request(question: &str, offers: &[Offer], grammar: bool) -> ChatRequest {
    let system = "You match a question to verified SQL templates. A template fits only if the question asks exactly what \
its verified question asks, and differs at most in the values written in the template's slots {s1}, {s2}, ... \
Any other difference means it does not fit: another column or table, another aggregate (count, sum, average, \
maximum, minimum), another comparison or its direction, a negation, another order, limit or grouping, or a \
condition more or less. When a template fits, fill each slot with the value the question names, as the question \
writes it. When none fits, choose 0. Reply with JSON only.";
    let mut text = String::from("<templates>\n");
    for (i, o) in offers.iter().enumerate() {
        text.push_str(&format!(
            "{}. Question: {}\n   SQL: {}\n",
            i + 1,
            data(&o.question),
            data(&o.sql.split_whitespace().collect::<Vec<_>>().join(" "))
        ));
        for s in &o.slots {
            let what = match (s.kind, &s.column) {
                (SlotKind::Text, Some(c)) => format!("a value of {}", data(c)),
                (SlotKind::Pattern, Some(c)) => format!("words matched in {}", data(c)),
                (SlotKind::Number, _) => "a number".to_string(),
                (SlotKind::Date, _) => "a date, YYYY-MM-DD".to_string(),
                _ => "a value".to_string(),
            };
            text.push_str(&format!("   {{{}}}: {what} (verified with {:?})\n", s.name, data(&s.original)));
        }
    }
    text.push_str("</templates>\n");
    text.push_str(&format!("<question>{}</question>\n", data(question)));
    text.push_str("Reply {\"template\": N, \"slots\": {...}} with the number of the template that fits and its slots' values, or {\"template\": 0, \"slots\": {}} when none fits.");
    let req = ChatRequest::new(system, text).limit(120);
    if grammar {
        req.constrain(Constraint::Grammar { gbnf: gbnf(offers) })
    } else {
        req.json_schema("template_choice", schema(offers))
    }
}

fn gbnf_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The grammar of the choice: "none", or one of the templates with each slot of its type.
pub fn gbnf(offers: &[Offer]) -> String {
    let mut alternatives = vec![gbnf_literal("{\"template\": 0, \"slots\": {}}")];
    let mut rules = Vec::new();
    for (i, o) in offers.iter().enumerate() {
        let n = i + 1;
        let mut parts = vec![gbnf_literal(&format!("{{\"template\": {n}, \"slots\": {{"))];
        for (k, s) in o.slots.iter().enumerate() {
            let sep = if k == 0 { "" } else { ", " };
            parts.push(gbnf_literal(&format!("{sep}\"{}\": ", s.name)));
            parts.push(
                match s.kind {
                    SlotKind::Text | SlotKind::Pattern => "text",
                    SlotKind::Number => "number",
                    SlotKind::Date => "date",
                }
                .to_string(),
            );
        }
        parts.push(gbnf_literal("}}"));
        rules.push(format!("t{n} ::= {}", parts.join(" ")));
        alternatives.push(format!("t{n}"));
    }
    format!(
        "root ::= {}\n{}\ntext ::= \"\\\"\" [^\"\\\\\\x00-\\x1f]{{1,{MAX_TEXT_SLOT}}} \"\\\"\"\nnumber ::= [0-9]{{1,12}} (\".\" [0-9]{{1,6}})?\ndate ::= \"\\\"\" [0-9]{{4}} \"-\" [0-9]{{2}} \"-\" [0-9]{{2}} \"\\\"\"\n",
        alternatives.join(" | "),
        rules.join("\n")
    )
}

/// The same choice as a JSON schema (one alternative per template, and "none").
pub fn schema(offers: &[Offer]) -> Value {
    let object = |template: usize, slots: Value| {
        let names: Vec<String> = slots.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        json!({
            "type": "object",
            "properties": {
                "template": {"type": "integer", "enum": [template]},
                "slots": {"type": "object", "properties": slots, "required": names, "additionalProperties": false}
            },
            "required": ["template", "slots"],
            "additionalProperties": false
        })
    };
    let mut any = vec![object(0, json!({}))];
    for (i, o) in offers.iter().enumerate() {
        let slots: serde_json::Map<String, Value> = o
            .slots
            .iter()
            .map(|s| {
                let t = match s.kind {
                    SlotKind::Number => json!({"type": "number"}),
                    SlotKind::Date => json!({"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}),
                    _ => json!({"type": "string", "maxLength": MAX_TEXT_SLOT}),
                };
                (s.name.clone(), t)
            })
            .collect();
        any.push(object(i + 1, Value::Object(slots)));
    }
    json!({"type": "object", "properties": {"choice": {"anyOf": any}}, "required": ["choice"], "additionalProperties": false})
}

/// What the model chose.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// No template fits.
    None,
    /// The template at this index of the offers, with each slot's value (in slot order).
    Template { index: usize, values: Vec<String> },
    /// The reply is not a choice (the server ignored the constraint, or the reply was cut).
    Unreadable(String),
}

/// Reads the model's reply (with or without the JSON schema's outer `choice`).
pub fn parse(reply: &str, offers: &[Offer]) -> Choice {
    let Some(v) = crate::json::lenient(reply) else {
        return Choice::Unreadable("not JSON".into());
    };
    let v = v.get("choice").cloned().unwrap_or(v);
    let Some(n) = v.get("template").and_then(|t| t.as_u64().or_else(|| t.as_str().and_then(|s| s.trim().parse().ok()))) else {
        return Choice::Unreadable("no template number".into());
    };
    if n == 0 {
        return Choice::None;
    }
    let Some(offer) = usize::try_from(n).ok().and_then(|n| offers.get(n - 1)) else {
        return Choice::Unreadable(format!("template {n} was not offered"));
    };
    let slots = v.get("slots").cloned().unwrap_or(Value::Null);
    let mut values = Vec::new();
    for s in &offer.slots {
        let value = match slots.get(&s.name) {
            Some(Value::String(t)) => t.trim().to_string(),
            Some(Value::Number(x)) => x.to_string(),
            _ => return Choice::Unreadable(format!("no value for {}", s.name)),
        };
        values.push(value);
    }
    Choice::Template { index: (n - 1) as usize, values }
}
