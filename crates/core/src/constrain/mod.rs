//! Constrained output: JSON schemas for the stages whose reply has a fixed shape, and a SQL
//! grammar, derived from the described tables, for SQL generation.
//!
//! A request carries at most one [`Constraint`]. Whether it is sent depends on the provider and
//! on the settings `ask.structured_output` and `ask.sql_grammar` ([`Mode`]): see
//! [`decide`]. A server that answers a constrained request with an HTTP 400 naming the field
//! is remembered ([`remember_refusal`]) for the rest of the backend's life, per base URL, and
//! asked without the constraint from then on (in `auto`).

pub mod clauses;
mod gbnf;
pub mod grammar;
pub mod relax;
pub mod schemas;

use std::collections::HashSet;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{LlmConfig, Provider, TemplateChoice};

pub use crate::config::{Mode, Modes};

impl Modes {
    /// The setting that governs constraints of `kind`.
    pub fn of(self, kind: Kind) -> Mode {
        match kind {
            Kind::JsonSchema => self.structured_output,
            Kind::Grammar => self.sql_grammar,
        }
    }
}

/// Which kind of constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    JsonSchema,
    Grammar,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::JsonSchema => "json_schema",
            Kind::Grammar => "grammar",
        }
    }

    /// The setting that governs it.
    pub fn setting(self) -> &'static str {
        match self {
            Kind::JsonSchema => "ask.structured_output",
            Kind::Grammar => "ask.sql_grammar",
        }
    }
}

/// What a request's reply must look like.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Constraint {
    /// A JSON value matching `schema` (a JSON Schema); `name` names it for the server.
    JsonSchema { name: &'static str, schema: Value },
    /// A text matching a GBNF grammar.
    Grammar { gbnf: String },
}

impl Constraint {
    pub fn kind(&self) -> Kind {
        match self {
            Constraint::JsonSchema { .. } => Kind::JsonSchema,
            Constraint::Grammar { .. } => Kind::Grammar,
        }
    }
}

/// Whether a provider's protocol can carry a kind of constraint at all: JSON schemas on all
/// three (OpenAI `response_format`, Ollama `format`, Anthropic a forced tool); a grammar only on
/// OpenAI-compatible servers (llama.cpp's `grammar` field; other servers refuse or ignore it).
pub fn provider_accepts(provider: Provider, kind: Kind) -> bool {
    match kind {
        Kind::JsonSchema => true,
        Kind::Grammar => provider == Provider::OpenAi,
    }
}

/// How the choice among verified templates is constrained for a provider under the settings
/// ([`crate::config::AskConfig::template_choice`]): a grammar where the provider takes one and
/// `ask.sql_grammar` is not off, otherwise a JSON schema where `ask.structured_output` is not
/// off; `None` (no template step) with both off.
pub fn template_choice(provider: Provider, modes: Modes) -> Option<TemplateChoice> {
    if modes.sql_grammar != Mode::Off && provider_accepts(provider, Kind::Grammar) {
        Some(TemplateChoice::Grammar)
    } else if modes.structured_output != Mode::Off {
        Some(TemplateChoice::JsonSchema)
    } else {
        None
    }
}

/// What to do with a request's constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send it.
    Send,
    /// Send the request without it, for this reason (a word for traces).
    Skip(&'static str),
    /// Do not send the request: the setting is `on` and the constraint cannot be sent.
    Refuse(String),
}

/// Whether a request with a constraint of `kind` carries it, given the provider, the settings
/// and what this backend has learnt of the server.
pub fn decide(cfg: &LlmConfig, kind: Kind) -> Decision {
    let mode = cfg.constraints.of(kind);
    if mode == Mode::Off {
        return Decision::Skip("off");
    }
    if !provider_accepts(cfg.provider, kind) {
        return match mode {
            Mode::On => Decision::Refuse(format!(
                "{} is on, but the {} protocol cannot carry a {}",
                kind.setting(),
                cfg.provider.as_str(),
                if kind == Kind::Grammar { "grammar" } else { "JSON schema" }
            )),
            _ => Decision::Skip("provider"),
        };
    }
    if mode == Mode::Auto && refused_before(&cfg.base_url, kind) {
        return Decision::Skip("refused_before");
    }
    Decision::Send
}

static REFUSED: Mutex<Option<HashSet<(String, Kind)>>> = Mutex::new(None);

fn refused_before(base_url: &str, kind: Kind) -> bool {
    let guard = REFUSED.lock().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().is_some_and(|s| s.contains(&(normalized_url(base_url), kind)))
}

/// Remember that the server at `base_url` refused a constraint of `kind`.
pub fn remember_refusal(base_url: &str, kind: Kind) {
    let mut guard = REFUSED.lock().unwrap_or_else(|e| e.into_inner());
    guard.get_or_insert_with(HashSet::new).insert((normalized_url(base_url), kind));
}

fn normalized_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Whether an HTTP error message says the server does not accept the request's constraint:
/// a 400 or 422 whose message names the field that carried it (`response_format`,
/// `json_schema`, `format`, `tools`, `tool_choice`, `grammar`).
pub fn is_constraint_refusal(status: u16, message: &str, kind: Kind) -> bool {
    if !matches!(status, 400 | 422) {
        return false;
    }
    let m = message.to_ascii_lowercase();
    let fields: &[&str] = match kind {
        Kind::JsonSchema => &["response_format", "json_schema", "format", "tools", "tool_choice", "input_schema"],
        Kind::Grammar => &["grammar"],
    };
    fields.iter().any(|f| m.contains(f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;
    use std::time::Duration;

    fn cfg(provider: Provider, structured_output: Mode, sql_grammar: Mode, url: &str) -> LlmConfig {
        LlmConfig {
            provider,
            base_url: url.into(),
            model: "m".into(),
            api_key: Secret::default(),
            request_timeout: Duration::from_secs(1),
            temperature: 0.0,
            max_tokens: 10,
            max_response_bytes: 1 << 20,
            constraints: Modes { structured_output, sql_grammar },
        }
    }

    #[test]
    fn modes_parse() {
        assert_eq!("AUTO".parse::<Mode>(), Ok(Mode::Auto));
        assert_eq!(" off".parse::<Mode>(), Ok(Mode::Off));
        assert!("sometimes".parse::<Mode>().unwrap_err().contains("auto, on or off"));
    }

    #[test]
    fn what_each_provider_gets() {
        use Mode::*;
        let u = "http://decide.test/v1";
        assert_eq!(decide(&cfg(Provider::OpenAi, Auto, Auto, u), Kind::Grammar), Decision::Send);
        assert_eq!(decide(&cfg(Provider::Anthropic, Auto, Auto, u), Kind::JsonSchema), Decision::Send);
        assert_eq!(decide(&cfg(Provider::Anthropic, Auto, Auto, u), Kind::Grammar), Decision::Skip("provider"));
        assert!(
            matches!(decide(&cfg(Provider::Ollama, Auto, On, u), Kind::Grammar), Decision::Refuse(m) if m.contains("ask.sql_grammar is on"))
        );
        assert_eq!(decide(&cfg(Provider::OpenAi, Off, Auto, u), Kind::JsonSchema), Decision::Skip("off"));
    }

    #[test]
    fn a_refusal_is_remembered_per_server_in_auto_only() {
        use Mode::*;
        let u = "http://remember.test/v1/";
        remember_refusal(u, Kind::Grammar);
        assert_eq!(decide(&cfg(Provider::OpenAi, Auto, Auto, "HTTP://remember.test/v1"), Kind::Grammar), Decision::Skip("refused_before"));
        assert_eq!(decide(&cfg(Provider::OpenAi, Auto, On, u), Kind::Grammar), Decision::Send);
        assert_eq!(decide(&cfg(Provider::OpenAi, Auto, Auto, u), Kind::JsonSchema), Decision::Send);
        assert_eq!(decide(&cfg(Provider::OpenAi, Auto, Auto, "http://other.test/v1"), Kind::Grammar), Decision::Send);
    }

    #[test]
    fn refusals_name_the_field() {
        assert!(is_constraint_refusal(400, "Unrecognized request argument supplied: grammar", Kind::Grammar));
        assert!(is_constraint_refusal(400, "'response_format.type' must be 'json_object' or 'text'", Kind::JsonSchema));
        assert!(!is_constraint_refusal(400, "the request exceeds the available context size", Kind::Grammar));
        assert!(!is_constraint_refusal(500, "grammar", Kind::Grammar));
    }
}
