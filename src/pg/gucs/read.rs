//! The typed readers of pg_ask's settings, and the core's config structs built from them.
//! Where pg_ask works as another role than the session's, the settings that say where data and
//! the key go are read from the server's configuration (`pg::server_wide`).

use std::ffi::CString;
use std::path::PathBuf;

use pgrx::guc::{GucEnum, GucSetting};
use pgrx::pg_sys;

use pg_ask_core::config::{AskConfig, GrammarUse, LlmConfig, Provider, VerifiedUse};
use pg_ask_core::constrain::Modes;

use super::*;
use crate::pg::server_wide::{self as sw, Int, Text};

fn string(setting: &GucSetting<Option<CString>>) -> String {
    setting.get().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

pub fn provider() -> Provider {
    let ordinal = sw::int(Int::Provider, PROVIDER.get().to_ordinal(), GucProvider::OpenAi.to_ordinal());
    match GucProvider::from_ordinal(ordinal) {
        GucProvider::OpenAi => Provider::OpenAi,
        GucProvider::Anthropic => Provider::Anthropic,
        GucProvider::Ollama => Provider::Ollama,
    }
}

pub fn base_url() -> String {
    sw::text(Text::BaseUrl, string(&BASE_URL))
}

pub fn model() -> String {
    sw::text(Text::Model, string(&MODEL))
}

pub use crate::pg::key::api_key;

/// `value` with the configured key scrubbed from every string in it (for traces stored or
/// returned: they hold the model's replies and error texts).
pub fn scrub_json(value: serde_json::Value) -> serde_json::Value {
    let key = api_key();
    if key.is_empty() {
        return value;
    }
    serde_json::from_str(&key.scrub(&value.to_string())).unwrap_or(serde_json::Value::Null)
}

pub(crate) use crate::pg::server_wide::api_key_for;

pub fn embedding_provider() -> EmbeddingProvider {
    let ordinal = sw::int(Int::EmbeddingProvider, EMBEDDING_PROVIDER.get().to_ordinal(), EmbeddingProvider::Local.to_ordinal());
    EmbeddingProvider::from_ordinal(ordinal)
}

pub fn embedding_model() -> String {
    sw::text(Text::EmbeddingModel, string(&EMBEDDING_MODEL))
}

pub fn embedding_base_url() -> String {
    let own = sw::text(Text::EmbeddingBaseUrl, string(&EMBEDDING_BASE_URL));
    if own.is_empty() {
        base_url()
    } else {
        own
    }
}

pub fn allow_writes() -> bool {
    ALLOW_WRITES.get()
}

pub fn max_steps() -> u32 {
    MAX_STEPS.get().max(1) as u32
}

pub fn max_tables() -> usize {
    MAX_TABLES.get().max(1) as usize
}

pub fn concurrency() -> usize {
    CONCURRENCY.get().max(1) as usize
}

pub fn max_values_per_column() -> i64 {
    sw::int(Int::MaxValuesPerColumn, MAX_VALUES_PER_COLUMN.get(), MAX_VALUES_PER_COLUMN_DEFAULT).max(1) as i64
}

/// `ask.schema_style`.
pub fn schema_style() -> pg_ask_core::schema::Style {
    match SCHEMA_STYLE.get() {
        GucSchemaStyle::Listing => pg_ask_core::schema::Style::Listing,
        GucSchemaStyle::CreateTable => pg_ask_core::schema::Style::CreateTable,
    }
}

/// `ask.max_listed_values` (0: none listed).
pub fn max_listed_values() -> i64 {
    MAX_LISTED_VALUES.get().max(0) as i64
}

pub fn model_path() -> String {
    string(&MODEL_PATH)
}

/// `ask.cache`, and for how long a reply is reused.
pub fn cache() -> Option<std::time::Duration> {
    CACHE.get().then(|| std::time::Duration::from_secs(CACHE_TTL.get().max(1) as u64))
}

/// `ask.max_tokens_per_day`, when set.
pub fn max_tokens_per_day() -> Option<u64> {
    let v = MAX_TOKENS_PER_DAY.get();
    (v > 0).then_some(v as u64)
}

pub fn request_timeout() -> std::time::Duration {
    std::time::Duration::from_millis(sw::int(Int::RequestTimeout, REQUEST_TIMEOUT.get(), REQUEST_TIMEOUT_MS).max(100) as u64)
}

/// `ask.max_tokens`: completion tokens at most per call.
pub fn max_tokens() -> u32 {
    sw::int(Int::MaxTokens, MAX_TOKENS.get(), MAX_TOKENS_DEFAULT).max(16) as u32
}

/// `ask.max_response_size` in bytes.
pub fn selection_index() -> bool {
    SELECTION_INDEX.get()
}

pub fn explain_prompts() -> bool {
    EXPLAIN_PROMPTS.get()
}

pub fn max_prompt_tokens() -> usize {
    MAX_PROMPT_TOKENS.get().max(256) as usize
}

pub fn max_result_bytes() -> usize {
    MAX_RESULT_SIZE.get().max(1) as usize * 1024
}

pub fn max_response_bytes() -> usize {
    MAX_RESPONSE_SIZE.get().max(64) as usize * 1024
}

/// `ask.allowed_functions`: the schema-qualified names listed, lower-cased where unquoted.
pub fn allowed_functions() -> Vec<String> {
    string(&ALLOWED_FUNCTIONS).split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect()
}

pub fn statement_timeout_ms() -> i32 {
    STATEMENT_TIMEOUT.get()
}

/// `ask.sql_in_words`.
pub fn sql_in_words() -> bool {
    SQL_IN_WORDS.get()
}

/// `ask.use_knowledge`.
pub fn use_knowledge() -> bool {
    USE_KNOWLEDGE.get()
}

pub fn row_limit() -> u32 {
    ROW_LIMIT.get().max(1) as u32
}

/// Per-call overrides of the LLM settings (named arguments of the SQL functions).
#[derive(Debug, Default, Clone)]
pub struct LlmOverrides {
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub temperature: Option<f64>,
}

/// The LLM settings in force, with per-call overrides applied.
pub fn llm_config(o: &LlmOverrides) -> Result<LlmConfig, String> {
    let provider = match &o.provider {
        Some(p) => p.parse::<Provider>()?,
        None => provider(),
    };
    if let Some(t) = o.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(format!("temperature {t} is out of range (0 to 2)"));
        }
    }
    let base_url = o.base_url.clone().unwrap_or_else(base_url);
    if base_url.trim().is_empty() {
        return Err("ask.base_url is empty".into());
    }
    let model = o.model.clone().unwrap_or_else(model);
    if model.trim().is_empty() {
        return Err("ask.model is empty".into());
    }
    Ok(LlmConfig {
        provider,
        api_key: api_key_for(&base_url),
        base_url,
        model,
        request_timeout: request_timeout(),
        temperature: o.temperature.unwrap_or_else(|| TEMPERATURE.get()),
        max_tokens: max_tokens(),
        max_response_bytes: max_response_bytes(),
        constraints: Modes { structured_output: STRUCTURED_OUTPUT.get().into(), sql_grammar: SQL_GRAMMAR.get().into() },
    })
}

/// The pipeline's settings; `llm` the call's overrides (the provider decides how the choice
/// among verified templates is constrained).
pub fn ask_config(max_attempts: Option<i32>, llm: &LlmOverrides) -> AskConfig {
    let provider = llm.provider.as_deref().and_then(|p| p.parse::<Provider>().ok()).unwrap_or_else(provider);
    let modes = Modes { structured_output: STRUCTURED_OUTPUT.get().into(), sql_grammar: SQL_GRAMMAR.get().into() };
    AskConfig {
        // (The setting's range is the same; a per-call value was checked by the caller.)
        max_attempts: max_attempts.unwrap_or_else(|| MAX_ATTEMPTS.get()) as u32,
        candidates: CANDIDATES.get().max(1) as u32,
        first_repair: match FIRST_REPAIR.get() {
            GucFirstRepair::Edit => pg_ask_core::config::FirstRepair::Edit,
            GucFirstRepair::Restart => pg_ask_core::config::FirstRepair::Restart,
            GucFirstRepair::Plain => pg_ask_core::config::FirstRepair::Plain,
            GucFirstRepair::Auto => pg_ask_core::config::FirstRepair::Auto,
        },
        row_limit: row_limit(),
        sql_grammar: match SQL_GRAMMAR.get() {
            GucMode::Off => GrammarUse::Off,
            GucMode::Auto => GrammarUse::Repair,
            GucMode::On => GrammarUse::Always,
        },
        verified: match VERIFIED.get() {
            GucVerified::On => VerifiedUse::On,
            GucVerified::Examples => VerifiedUse::Examples,
            GucVerified::Off => VerifiedUse::Off,
        },
        verified_min_cosine: VERIFIED_MIN_COSINE.get(),
        clarify: CLARIFY.get(),
        max_prompt_tokens: max_prompt_tokens(),
        template_choice: pg_ask_core::constrain::template_choice(provider, modes),
        max_tables: max_tables(),
        selection_index: selection_index(),
        embedder: current_embedder(),
        max_result_bytes: max_result_bytes(),
        ..AskConfig::default()
    }
}

/// The embeddings in force: (provider, model), or None when `ask.embedding_provider = off`.
/// The local model is named by its directory.
pub fn current_embedder() -> Option<(String, String)> {
    use EmbeddingProvider as P;
    match embedding_provider() {
        P::Off => None,
        P::Local => Some(("local".into(), model_dir().file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default())),
        P::OpenAi => Some(("openai".into(), embedding_model())),
        P::Ollama => Some(("ollama".into(), embedding_model())),
    }
}

/// The model directory: `ask.model_path`, or the one setup installs under the share directory.
pub fn model_dir() -> PathBuf {
    let configured = model_path();
    if !configured.is_empty() {
        return PathBuf::from(configured);
    }
    let mut buf = [0 as std::ffi::c_char; pg_sys::MAXPGPATH as usize];
    // SAFETY: my_exec_path is set at backend start; get_share_path writes at most MAXPGPATH
    // bytes into buf, NUL-terminated.
    let share = unsafe {
        pg_sys::get_share_path(std::ptr::addr_of!(pg_sys::my_exec_path).cast(), buf.as_mut_ptr());
        std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    };
    PathBuf::from(share).join("extension/pg_ask/models/all-MiniLM-L6-v2")
}
