//! Plain configuration structs. The pgrx layer fills them from GUCs (and per-call arguments)
//! once per call ([`AskConfig`] holds every setting `ask()` reads, selection and embeddings
//! included); nothing in the core reads settings on its own.

use std::str::FromStr;
use std::time::Duration;

use crate::secret::Secret;

/// Least cosine between two questions' embeddings for a paraphrase (all-MiniLM-L6-v2): the
/// highest threshold whose recall on the tuning part of the twin-question fixtures is within
/// 0.02 of the best (BENCHMARKS.md, "Verified queries").
pub const PARAPHRASE_MIN_COSINE: f64 = 0.92;

/// Which wire protocol the LLM server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Any OpenAI-compatible `/chat/completions` server: OpenAI, vLLM, llama.cpp, LM Studio,
    /// Ollama's `/v1`.
    OpenAi,
    /// Anthropic's `/v1/messages`.
    Anthropic,
    /// Ollama's native `/api/chat`.
    Ollama,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Ollama => "ollama",
        }
    }
}

impl FromStr for Provider {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Provider::OpenAi),
            "anthropic" => Ok(Provider::Anthropic),
            "ollama" => Ok(Provider::Ollama),
            other => Err(format!("unknown LLM provider \"{other}\" (expected openai, anthropic or ollama)")),
        }
    }
}

/// `ask.structured_output` and `ask.sql_grammar`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Constrain where the provider accepts it; a server that refuses is asked again without.
    #[default]
    Auto,
    /// Always constrain; a provider or server that cannot is an error.
    On,
    /// Never constrain: free text, read by the stage's parser.
    Off,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::On => "on",
            Mode::Off => "off",
        }
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Mode::Auto),
            "on" | "true" => Ok(Mode::On),
            "off" | "false" => Ok(Mode::Off),
            other => Err(format!("unknown mode \"{other}\" (expected auto, on or off)")),
        }
    }
}

/// The two settings together, as the client reads them ([`Modes::of`], in [`crate::constrain`], gives
/// the one that governs a kind of constraint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modes {
    pub structured_output: Mode,
    pub sql_grammar: Mode,
}

/// Everything needed to talk to one LLM endpoint.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub provider: Provider,
    /// Base URL without the protocol's path, e.g. `http://localhost:11434/v1` for an
    /// OpenAI-compatible server, `https://api.anthropic.com` for Anthropic.
    pub base_url: String,
    pub model: String,
    pub api_key: Secret,
    /// Upper bound for one call including retries.
    pub request_timeout: Duration,
    pub temperature: f64,
    pub max_tokens: u32,
    /// Bytes of a response read at most (`ask.max_response_size`).
    pub max_response_bytes: usize,
    /// `ask.structured_output` and `ask.sql_grammar`.
    pub constraints: Modes,
}

impl LlmConfig {
    /// A configuration no call is made with, for a host that only looks things up (no
    /// endpoint: a call with it fails to connect, and nothing of the settings is read).
    pub fn unused() -> LlmConfig {
        LlmConfig {
            provider: Provider::OpenAi,
            base_url: String::new(),
            model: String::new(),
            api_key: Secret::new(String::new()),
            request_timeout: Duration::from_secs(1),
            temperature: 0.0,
            max_tokens: 1,
            max_response_bytes: 0,
            constraints: Modes::default(),
        }
    }

    /// The full URL of the chat endpoint for this provider.
    pub fn chat_url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.provider {
            Provider::OpenAi => format!("{base}/chat/completions"),
            Provider::Anthropic => {
                if base.ends_with("/v1") {
                    format!("{base}/messages")
                } else {
                    format!("{base}/v1/messages")
                }
            }
            Provider::Ollama => {
                let base = base.strip_suffix("/v1").unwrap_or(base);
                format!("{base}/api/chat")
            }
        }
    }
}

/// `ask.max_prompt_tokens`' default: well inside an 8,192-token context with the answer
/// stage's completion limit, for tokenizers that read data more densely than four
/// characters a token.
pub const DEFAULT_MAX_PROMPT_TOKENS: usize = 6_000;

/// The SQL attempts per question a caller may ask for (`ask.max_attempts` and the per-call
/// `max_attempts`): the first one plus repairs.
pub const MAX_ATTEMPTS: std::ops::RangeInclusive<i32> = 1..=20;

/// Candidates a question may draw at most (`ask.candidates`).
pub const MAX_CANDIDATES: u32 = 7;

/// Settings of the text-to-SQL pipeline.
#[derive(Debug, Clone)]
pub struct AskConfig {
    /// Queries drawn per question and voted on by their results (`ask.candidates`): 1, the
    /// first query that runs answers; more, candidates sampled after it until a group of
    /// agreeing results cannot be overtaken ([`crate::ask`]'s vote).
    pub candidates: u32,
    /// How many SQL attempts (the first one plus repairs) before giving up.
    pub max_attempts: u32,
    /// How the first repair is asked for (`ask.first_repair`).
    pub first_repair: FirstRepair,
    /// Rows fetched from the generated SQL at most.
    pub row_limit: u32,
    /// Rows shown to the LLM in the answer prompt at most.
    pub answer_rows: u32,
    /// When SQL generation asks for a grammar of the described tables (`ask.sql_grammar`).
    /// Whether it is sent is the client's decision (a provider that cannot take one is asked
    /// without it in `auto`, refused in `on`).
    pub sql_grammar: GrammarUse,
    /// What verified queries may do (`ask.verified`).
    pub verified: VerifiedUse,
    /// The least cosine between a question and a verified one in other words for the verified
    /// SQL to answer it (`ask.verified_min_cosine`).
    pub verified_min_cosine: f64,
    /// Whether an ambiguity pg_ask can see is put back to the user as a question
    /// (`ask.clarify`) instead of being guessed.
    pub clarify: bool,
    /// Prompt tokens a request may hold at most (`ask.max_prompt_tokens`), estimated as the
    /// token budget does.
    pub max_prompt_tokens: usize,
    /// Whether the trace carries each call's prompt (`ask.explain_prompts`, in `ask.explain()`).
    pub record_prompts: bool,
    /// How the model's choice among verified templates is constrained, or `None` for no
    /// template step ([`crate::verified::choose`]): a grammar where the provider takes one and
    /// `ask.sql_grammar` is not off, otherwise a JSON schema where `ask.structured_output` is
    /// not off. An unconstrained choice is not asked for.
    pub template_choice: Option<TemplateChoice>,
    /// Tables described to the LLM at most, besides those their joins need
    /// (`ask.max_tables`).
    pub max_tables: usize,
    /// Whether tables are selected from the schema selection memory's stored lexical index
    /// (`ask.selection_index`) rather than the whole readable catalog.
    pub selection_index: bool,
    /// The embedder in force, (provider, model), or `None` with embeddings off
    /// (`ask.embedding_provider`, `ask.embedding_model`): what questions are embedded with and
    /// which stored embeddings may be compared with them.
    pub embedder: Option<(String, String)>,
    /// Bytes of a result read at most (`ask.max_result_size`).
    pub max_result_bytes: usize,
}

/// How the choice among verified templates is constrained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateChoice {
    Grammar,
    JsonSchema,
}

/// When SQL generation is constrained by the grammar of the described tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GrammarUse {
    /// Never (`ask.sql_grammar = off`).
    #[default]
    Off,
    /// The model writes its first query and its first repair freely; a later repair, and the
    /// last attempt, are constrained when an earlier query failed in a way the grammar rules
    /// out: it named a table, column or function that does not exist, did not parse, was
    /// refused, or was no SQL at all (`auto`). A constraint then removes only what would fail:
    /// a query the model writes that runs is never forced into the grammar's shapes, and a
    /// question does not end on a name that does not exist.
    Repair,
    /// Every call, the first one too (`on`).
    Always,
}

/// How the first repair after a query that failed is asked for (`ask.first_repair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FirstRepair {
    /// The failed query is shown with why it cannot be used, and a corrected one is asked for
    /// (`edit`).
    Edit,
    /// Why it cannot be used is told, the failed query is not shown, and a query is asked for
    /// again from the question (`restart`): a small model shown its own query edits it, and
    /// what it wrote wrong first often stays. Later repairs are asked as in `edit`.
    Restart,
    /// The question is asked afresh in the fewest words (`plain`): the tables, the knowledge
    /// and the question in one message, without the rules, the failed query or its failure
    /// ([`crate::prompt::plain_request`]). A second view of the question, not an edit of the
    /// first answer. Later repairs are asked as in `edit`.
    Plain,
    /// `edit` when the failure points at what to change — a column read from the wrong table
    /// (a described table has it, and the hint says which: the query needs that one change),
    /// or the guard's refusal (its reason names what may not run) — and `plain` for every
    /// other failure (`auto`): an empty result from a condition no row meets, a type or
    /// function error, a misspelt column or relation. The default.
    #[default]
    Auto,
}

/// What the verified queries of similar questions may do in `ask()` (`ask.verified`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VerifiedUse {
    /// Answer a question that is a verified one without the LLM, and show the others as
    /// examples.
    #[default]
    On,
    /// Only show them to the LLM as examples.
    Examples,
    /// Not retrieved at all (evaluations, which would otherwise be answered from their own
    /// gold SQL).
    Off,
}

impl Default for AskConfig {
    fn default() -> Self {
        AskConfig {
            max_attempts: 3,
            first_repair: FirstRepair::Auto,
            candidates: 1,
            row_limit: 1000,
            answer_rows: 50,
            sql_grammar: GrammarUse::Off,
            verified: VerifiedUse::On,
            verified_min_cosine: PARAPHRASE_MIN_COSINE,
            clarify: false,
            max_prompt_tokens: DEFAULT_MAX_PROMPT_TOKENS,
            record_prompts: false,
            template_choice: None,
            max_tables: 10,
            selection_index: true,
            embedder: None,
            max_result_bytes: 1024 * 1024,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(provider: Provider, base: &str) -> LlmConfig {
        LlmConfig {
            provider,
            base_url: base.into(),
            model: "m".into(),
            api_key: Secret::default(),
            request_timeout: Duration::from_secs(1),
            temperature: 0.0,
            max_tokens: 100,
            max_response_bytes: 1 << 20,
            constraints: Default::default(),
        }
    }

    #[test]
    fn chat_urls() {
        assert_eq!(cfg(Provider::OpenAi, "http://localhost:11434/v1/").chat_url(), "http://localhost:11434/v1/chat/completions");
        assert_eq!(cfg(Provider::Anthropic, "https://api.anthropic.com").chat_url(), "https://api.anthropic.com/v1/messages");
        assert_eq!(cfg(Provider::Anthropic, "https://api.anthropic.com/v1").chat_url(), "https://api.anthropic.com/v1/messages");
        assert_eq!(cfg(Provider::Ollama, "http://localhost:11434/v1").chat_url(), "http://localhost:11434/api/chat");
        assert_eq!(cfg(Provider::Ollama, "http://localhost:11434").chat_url(), "http://localhost:11434/api/chat");
    }

    #[test]
    fn providers_parse() {
        assert_eq!("OpenAI".parse::<Provider>(), Ok(Provider::OpenAi));
        assert_eq!(" ollama ".parse::<Provider>(), Ok(Provider::Ollama));
        assert!("gpt".parse::<Provider>().unwrap_err().contains("unknown LLM provider"));
    }
}
