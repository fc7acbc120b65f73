//! Scripts: which reply the stand-in gives to which request.

use serde::{Deserialize, Serialize};

/// What the stand-in answers to chat requests. See the crate documentation for the JSON form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Tried in order; the first that matches and has uses left answers.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The reply when no rule answers. Without one, an unmatched request gets a 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Reply>,
    /// A model's context, in tokens of about four characters: a chat request whose prompt text
    /// is larger is answered HTTP 400 "request (N tokens) exceeds the available context size
    /// (M tokens)", as llama.cpp answers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
}

/// One scripted answer and the requests it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Every string must occur (case-sensitively) in the request's prompt text: the system
    /// prompt and all messages, joined by newlines. Empty matches every request.
    #[serde(default)]
    pub contains: Vec<String>,
    /// Every string must occur (case-sensitively) in the text of the request's last message.
    #[serde(default)]
    pub last_contains: Vec<String>,
    /// No string may occur in the text of the request's last message (a first request, not
    /// the repair that repeats it with an error).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_lacks: Vec<String>,
    /// Every name must be a top-level field of the request body (`grammar`,
    /// `response_format`, `tools`, ...): a rule that refuses a constraint answers only
    /// requests that carry it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub has_field: Vec<String>,
    /// The answer.
    pub reply: Reply,
    /// Milliseconds to wait before answering.
    #[serde(default)]
    pub delay_ms: u64,
    /// How many requests this rule may answer before it is skipped; `None` is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

/// The kind of answer a rule gives.
///
/// JSON (externally tagged, snake case): `{"text": "SELECT 1"}`, `"hang"`,
/// `{"status": {"code": 429, "retry_after": 2, "body": ""}}`, `"malformed"`, `"truncated"`,
/// `"empty"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// A normal completion with this content; `{{last}}` is replaced by the last message's text.
    Text(String),
    /// Accept the request and never answer, until the server shuts down (or ten minutes pass);
    /// the request is then answered with a 503.
    Hang,
    /// An HTTP error. An empty `body` is replaced by an error body in the protocol's shape.
    Status {
        code: u16,
        /// Seconds, sent as a `Retry-After` header.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<u64>,
        #[serde(default)]
        body: String,
    },
    /// 200 with content type `application/json` and a body that is not JSON.
    Malformed,
    /// 200 with a well-formed response body cut in the middle (Content-Length matches what is
    /// sent).
    Truncated,
    /// 200 with a well-formed response whose content is the empty string.
    Empty,
    /// Answer an in-context database prompt by executing it on a real PostgreSQL (see
    /// [`crate::oracle`]).
    Oracle(crate::oracle::OracleSpec),
}

impl Script {
    /// A script that answers every chat request with `text`.
    pub fn reply_always(text: &str) -> Script {
        Script { rules: Vec::new(), default: Some(Reply::Text(text.to_owned())), context_tokens: None }
    }

    /// Parses the JSON form of a script.
    pub fn from_json(s: &str) -> Result<Script, String> {
        serde_json::from_str(s).map_err(|e| format!("invalid stand-in script: {e}"))
    }

    /// The JSON form of this script (what [`Script::from_json`] reads).
    pub fn to_json(&self) -> String {
        // Serialising plain strings, numbers and vectors cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Appends a rule (builder style).
    #[must_use]
    pub fn rule(mut self, rule: Rule) -> Script {
        self.rules.push(rule);
        self
    }

    /// Refuses prompts over `tokens` as a server with that context does (builder style).
    #[must_use]
    pub fn context(mut self, tokens: u64) -> Script {
        self.context_tokens = Some(tokens);
        self
    }

    /// Sets the default reply (builder style).
    #[must_use]
    pub fn or_else(mut self, reply: Reply) -> Script {
        self.default = Some(reply);
        self
    }
}

impl Rule {
    /// A rule answering `reply` to requests whose prompt contains every string of `contains`.
    pub fn new(contains: &[&str], reply: Reply) -> Rule {
        Rule {
            contains: contains.iter().map(|s| (*s).to_owned()).collect(),
            last_contains: Vec::new(),
            last_lacks: Vec::new(),
            has_field: Vec::new(),
            reply,
            delay_ms: 0,
            times: None,
        }
    }

    /// Also requires every string of `last_contains` in the last message.
    #[must_use]
    pub fn last(mut self, last_contains: &[&str]) -> Rule {
        self.last_contains = last_contains.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Also requires none of `last_lacks` in the last message.
    #[must_use]
    pub fn unless(mut self, last_lacks: &[&str]) -> Rule {
        self.last_lacks = last_lacks.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Waits `ms` milliseconds before answering.
    #[must_use]
    pub fn delay(mut self, ms: u64) -> Rule {
        self.delay_ms = ms;
        self
    }

    /// Answers at most `n` requests, then is skipped.
    #[must_use]
    pub fn times(mut self, n: u32) -> Rule {
        self.times = Some(n);
        self
    }

    fn matches(&self, prompt: &str, last: &str, fields: &[&str]) -> bool {
        self.contains.iter().all(|s| prompt.contains(s.as_str()))
            && self.last_contains.iter().all(|s| last.contains(s.as_str()))
            && !self.last_lacks.iter().any(|s| last.contains(s.as_str()))
            && self.has_field.iter().all(|f| fields.contains(&f.as_str()))
    }
}

impl Reply {
    /// `Reply::Text` from anything string-like.
    pub fn text(content: impl Into<String>) -> Reply {
        Reply::Text(content.into())
    }

    /// An HTTP error with this status code, no `Retry-After` and the protocol's error body.
    pub fn status(code: u16) -> Reply {
        Reply::Status { code, retry_after: None, body: String::new() }
    }
}

/// The reply chosen for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    Reply { reply: Reply, delay_ms: u64 },
    NoMatch,
}

/// A script together with how often each rule has been used.
#[derive(Debug, Default)]
pub(crate) struct ScriptState {
    script: Script,
    used: Vec<u32>,
}

impl ScriptState {
    pub(crate) fn new(script: Script) -> ScriptState {
        let used = vec![0; script.rules.len()];
        ScriptState { script, used }
    }

    /// Picks the reply for a request and counts the use of the rule that gives it.
    /// The reply to a request with this prompt text, last message and top-level body fields.
    pub(crate) fn choose(&mut self, prompt: &str, last: &str, fields: &[&str]) -> Choice {
        if let Some(context) = self.script.context_tokens {
            let tokens = (prompt.len() as u64).div_ceil(4);
            if tokens > context {
                let body = format!(
                    "{{\"error\":{{\"code\":400,\"message\":\"request ({tokens} tokens) exceeds the available context size ({context} tokens), try increasing it\",\"type\":\"exceed_context_size_error\"}}}}"
                );
                return Choice::Reply { reply: Reply::Status { code: 400, retry_after: None, body }, delay_ms: 0 };
            }
        }
        for (rule, used) in self.script.rules.iter().zip(self.used.iter_mut()) {
            let has_uses_left = rule.times.is_none_or(|n| *used < n);
            if has_uses_left && rule.matches(prompt, last, fields) {
                *used += 1;
                return Choice::Reply { reply: rule.reply.clone(), delay_ms: rule.delay_ms };
            }
        }
        match &self.script.default {
            Some(reply) => Choice::Reply { reply: reply.clone(), delay_ms: 0 },
            None => Choice::NoMatch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(choice: Choice) -> String {
        match choice {
            Choice::Reply { reply: Reply::Text(t), .. } => t,
            other => panic!("expected a text reply, got {other:?}"),
        }
    }

    #[test]
    fn first_matching_rule_with_uses_left_answers() {
        let script = Script::default()
            .rule(Rule::new(&["cities"], Reply::status(429)).times(1))
            .rule(Rule::new(&["cities"], Reply::text("SELECT 1")))
            .rule(Rule::new(&[], Reply::text("catch-all")));
        let mut state = ScriptState::new(script);
        assert_eq!(state.choose("list cities", "list cities", &[]), Choice::Reply { reply: Reply::status(429), delay_ms: 0 });
        assert_eq!(text(state.choose("list cities", "", &[])), "SELECT 1");
        assert_eq!(text(state.choose("list cities", "", &[])), "SELECT 1");
        assert_eq!(text(state.choose("other", "", &[])), "catch-all");
    }

    #[test]
    fn last_contains_and_default() {
        let script = Script::default().rule(Rule::new(&["schema"], Reply::text("fix")).last(&["error"])).or_else(Reply::text("plain"));
        let mut state = ScriptState::new(script);
        assert_eq!(text(state.choose("schema\nerror: x\nagain", "again", &[])), "plain");
        assert_eq!(text(state.choose("schema\nagain\nerror: x", "error: x", &[])), "fix");
        assert_eq!(ScriptState::new(Script::default()).choose("a", "a", &[]), Choice::NoMatch);
    }

    #[test]
    fn json_round_trip_and_short_forms() {
        let json = r#"{
            "rules": [
                {"contains": ["a"], "reply": {"status": {"code": 429, "retry_after": 2}}, "times": 1},
                {"last_contains": ["b"], "reply": "hang", "delay_ms": 5},
                {"reply": {"text": "x {{last}}"}}
            ],
            "default": "empty"
        }"#;
        let script = Script::from_json(json).expect("valid script");
        assert_eq!(script.rules[0].reply, Reply::Status { code: 429, retry_after: Some(2), body: String::new() });
        assert_eq!(script.rules[0].times, Some(1));
        assert_eq!(script.rules[1].reply, Reply::Hang);
        assert_eq!(script.rules[1].delay_ms, 5);
        assert!(script.rules[2].contains.is_empty());
        assert_eq!(script.default, Some(Reply::Empty));
        assert_eq!(Script::from_json(&script.to_json()), Ok(script));
        assert!(Script::from_json(r#"{"rules": [{"reply": "bogus"}]}"#).is_err());
        assert!(Script::from_json(r#"{"rulez": []}"#).is_err());
    }
}
