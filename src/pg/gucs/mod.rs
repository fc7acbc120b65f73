//! Every setting of pg_ask, in one place: each one's static and its registration in `_PG_init`.
//! They are read through the small typed functions of `read.rs`, which the rest of the glue
//! turns into the core's plain config structs.

use std::ffi::CString;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::{pg_sys, PostgresGucEnum};

use super::server_wide as sw;

mod read;
pub use read::*;

use pg_ask_core::constrain::Mode;

#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum GucProvider {
    #[name = c"openai"]
    OpenAi,
    #[name = c"anthropic"]
    Anthropic,
    #[name = c"ollama"]
    Ollama,
}

/// `ask.structured_output` and `ask.sql_grammar`.
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum GucMode {
    #[name = c"auto"]
    Auto,
    #[name = c"on"]
    On,
    #[name = c"off"]
    Off,
}

/// `ask.verified`.
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum GucVerified {
    #[name = c"on"]
    On,
    #[name = c"examples"]
    Examples,
    #[name = c"off"]
    Off,
}

impl From<GucMode> for Mode {
    fn from(m: GucMode) -> Mode {
        match m {
            GucMode::Auto => Mode::Auto,
            GucMode::On => Mode::On,
            GucMode::Off => Mode::Off,
        }
    }
}

#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum EmbeddingProvider {
    #[name = c"local"]
    Local,
    #[name = c"openai"]
    OpenAi,
    #[name = c"ollama"]
    Ollama,
    #[name = c"off"]
    Off,
}

/// How the SQL prompt writes each described table (`ask.schema_style`).
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum GucSchemaStyle {
    #[name = c"listing"]
    Listing,
    #[name = c"create_table"]
    CreateTable,
}

/// How the first repair is asked for (`ask.first_repair`).
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum GucFirstRepair {
    #[name = c"edit"]
    Edit,
    #[name = c"restart"]
    Restart,
    #[name = c"plain"]
    Plain,
    #[name = c"auto"]
    Auto,
}

/// Wire protocol of the LLM server: openai (any OpenAI-compatible server), anthropic, ollama.
static PROVIDER: GucSetting<GucProvider> = GucSetting::<GucProvider>::new(GucProvider::OpenAi);
/// Base URL of the LLM server. The default is a local Ollama's OpenAI-compatible endpoint.
static BASE_URL: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(BASE_URL_DEFAULT));
const BASE_URL_DEFAULT: &std::ffi::CStr = c"http://localhost:11434/v1";
/// Model name passed to the server.
static MODEL: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"qwen2.5-coder:7b"));
/// Upper bound for one LLM call, retries included (ms).
static REQUEST_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(REQUEST_TIMEOUT_MS);
const REQUEST_TIMEOUT_MS: i32 = 60_000;
/// Sampling temperature.
static TEMPERATURE: GucSetting<f64> = GucSetting::<f64>::new(0.0);
/// Completion tokens at most per LLM call.
static MAX_TOKENS: GucSetting<i32> = GucSetting::<i32>::new(MAX_TOKENS_DEFAULT);
const MAX_TOKENS_DEFAULT: i32 = 1024;
/// SQL attempts per question: the first plus repairs from error messages.
static MAX_ATTEMPTS: GucSetting<i32> = GucSetting::<i32>::new(3);
/// Queries drawn per question and voted on by their results.
static CANDIDATES: GucSetting<i32> = GucSetting::<i32>::new(1);
static FIRST_REPAIR: GucSetting<GucFirstRepair> = GucSetting::<GucFirstRepair>::new(GucFirstRepair::Auto);
/// Rows fetched from generated SQL at most.
static ROW_LIMIT: GucSetting<i32> = GucSetting::<i32>::new(1000);
/// Time limit for running one generated statement (ms, 0 = none beyond statement_timeout).
static STATEMENT_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(10_000);

/// Where embeddings come from: the local model, an OpenAI-compatible or Ollama server, or off.
static EMBEDDING_PROVIDER: GucSetting<EmbeddingProvider> = GucSetting::<EmbeddingProvider>::new(EmbeddingProvider::Local);
/// Embedding model name for the openai and ollama providers.
static EMBEDDING_MODEL: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"all-minilm"));
/// Base URL of the embedding server (empty: ask.base_url).
static EMBEDDING_BASE_URL: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
/// Directory of the local model (empty: the one setup installs). Superuser-only: it names
/// files on the server.
static MODEL_PATH: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// Whether ask.do() may write.
static ALLOW_WRITES: GucSetting<bool> = GucSetting::<bool>::new(false);
/// Statements per ask.do() chain at most.
static CONCURRENCY: GucSetting<i32> = GucSetting::<i32>::new(8);
static MAX_STEPS: GucSetting<i32> = GucSetting::<i32>::new(10);
/// Distinct values the value memory keeps per column at most (the most frequent).
static MAX_VALUES_PER_COLUMN: GucSetting<i32> = GucSetting::<i32>::new(MAX_VALUES_PER_COLUMN_DEFAULT);
const MAX_VALUES_PER_COLUMN_DEFAULT: i32 = 100_000;
/// Columns of the value memory with at most this many values have them listed in the prompt.
static MAX_LISTED_VALUES: GucSetting<i32> = GucSetting::<i32>::new(20);
static MAX_TABLES: GucSetting<i32> = GucSetting::<i32>::new(10);
static SCHEMA_STYLE: GucSetting<GucSchemaStyle> = GucSetting::<GucSchemaStyle>::new(GucSchemaStyle::Listing);
static STRUCTURED_OUTPUT: GucSetting<GucMode> = GucSetting::<GucMode>::new(GucMode::Auto);
static SQL_GRAMMAR: GucSetting<GucMode> = GucSetting::<GucMode>::new(GucMode::Auto);
static CACHE: GucSetting<bool> = GucSetting::<bool>::new(false);
static VERIFIED: GucSetting<GucVerified> = GucSetting::<GucVerified>::new(GucVerified::On);
static CLARIFY: GucSetting<bool> = GucSetting::<bool>::new(false);
static USE_KNOWLEDGE: GucSetting<bool> = GucSetting::<bool>::new(true);
static SQL_IN_WORDS: GucSetting<bool> = GucSetting::<bool>::new(false);
static EXPLAIN_PROMPTS: GucSetting<bool> = GucSetting::<bool>::new(false);
static SELECTION_INDEX: GucSetting<bool> = GucSetting::<bool>::new(true);
static VERIFIED_MIN_COSINE: GucSetting<f64> = GucSetting::<f64>::new(pg_ask_core::verified::PARAPHRASE_MIN_COSINE);
/// Seconds a cached reply is reused.
static CACHE_TTL: GucSetting<i32> = GucSetting::<i32>::new(86_400);
/// Tokens a role may spend per day (UTC); 0: no limit.
static MAX_TOKENS_PER_DAY: GucSetting<i32> = GucSetting::<i32>::new(0);
/// Functions generated SQL may call besides the built-in ones (superuser-only).
static ALLOWED_FUNCTIONS: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
/// Bytes of an LLM or embedding server's response read at most (kB; superuser-only).
static MAX_RESPONSE_SIZE: GucSetting<i32> = GucSetting::<i32>::new(MAX_RESPONSE_SIZE_DEFAULT_KB);
const MAX_RESPONSE_SIZE_DEFAULT_KB: i32 = 16 * 1024;
static MAX_PROMPT_TOKENS: GucSetting<i32> = GucSetting::<i32>::new(pg_ask_core::prompt::bounds::DEFAULT_MAX_PROMPT_TOKENS as i32);
static MAX_RESULT_SIZE: GucSetting<i32> = GucSetting::<i32>::new(1024);

pub fn init() {
    // The settings that decide where data and the key go have a check hook that records
    // their server-wide value (see server_wide.rs).
    // SAFETY: for every *_with_hooks call: called once from _PG_init with static names and
    // descriptions, a static setting of this module, and hooks that are #[pg_guard] functions.
    unsafe {
        GucRegistry::define_enum_guc_with_hooks(
            c"ask.provider",
            c"Wire protocol of the LLM server.",
            c"openai: any OpenAI-compatible /chat/completions server (OpenAI, vLLM, llama.cpp, LM Studio, Ollama's /v1); anthropic: /v1/messages; ollama: /api/chat.",
            &PROVIDER,
            GucContext::Userset,
            GucFlags::default(),
            Some(sw::check_provider),
            None,
            None,
        );
        GucRegistry::define_string_guc_with_hooks(
            c"ask.base_url",
            c"Base URL of the LLM server.",
            c"For openai, the URL up to and including /v1; for anthropic, https://api.anthropic.com; for ollama, http://host:11434.",
            &BASE_URL,
            GucContext::Userset,
            GucFlags::default(),
            Some(sw::check_base_url),
            None,
            None,
        );
        GucRegistry::define_string_guc_with_hooks(
            c"ask.model",
            c"Model name sent to the LLM server.",
            c"",
            &MODEL,
            GucContext::Userset,
            GucFlags::default(),
            Some(sw::check_model),
            None,
            None,
        );
    }
    // The key: only superusers may set it, SHOW never prints it, and it is refused where every
    // role could read it (see `check_api_key`).
    // SAFETY: called once from _PG_init; the name and descriptions are static, the variable is
    // a static owned by this module, and the hooks are plain functions of this module.
    unsafe {
        pg_sys::DefineCustomStringVariable(
            c"ask.api_key".as_ptr(),
            c"API key for the LLM server (superuser only, never shown).".as_ptr(),
            c"Sent as Authorization: Bearer (openai, ollama) or x-api-key (anthropic), only to the base URL set in the server's configuration. Set it with ALTER SYSTEM, with pg_ask in shared_preload_libraries.".as_ptr(),
            crate::pg::key::API_KEY.as_ptr(),
            std::ptr::null(),
            pg_sys::GucContext::PGC_SUSET,
            (GucFlags::SUPERUSER_ONLY | GucFlags::NO_SHOW_ALL).bits(),
            Some(check_api_key),
            None,
            Some(show_masked),
        );
    }
    // SAFETY: as for ask.provider.
    unsafe {
        GucRegistry::define_int_guc_with_hooks(
            c"ask.request_timeout",
            c"Upper bound for one LLM call, retries included.",
            c"",
            &REQUEST_TIMEOUT,
            100,
            3_600_000,
            GucContext::Userset,
            GucFlags::UNIT_MS,
            Some(sw::check_request_timeout),
            None,
            None,
        );
    }
    GucRegistry::define_float_guc(
        c"ask.temperature",
        c"Sampling temperature for LLM calls.",
        c"",
        &TEMPERATURE,
        0.0,
        2.0,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"ask.structured_output",
        c"Constrain fixed-shape replies to their JSON schema.",
        c"auto: where the provider accepts it (openai response_format, ollama format, anthropic a forced tool); a server that refuses is asked again without, and remembered per base URL for the session; on: always, a refusal is an error; off: free text.",
        &STRUCTURED_OUTPUT,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"ask.schema_style",
        c"How the SQL prompt writes each described table: listing (TABLE name, one line per column) or create_table (CREATE TABLE statements).",
        c"Both carry the same names, types, keys, comments and listed values; the SQL grammar is built from either.",
        &SCHEMA_STYLE,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"ask.sql_grammar",
        c"Constrain generated SQL to a grammar of the described tables.",
        c"auto: on OpenAI-compatible servers (llama.cpp's grammar field); a server that refuses is asked again without, and remembered per base URL for the session; on: always, an error where it cannot be sent; off: never.",
        &SQL_GRAMMAR,
        GucContext::Userset,
        GucFlags::default(),
    );
    // SAFETY: as for ask.provider.
    unsafe {
        GucRegistry::define_int_guc_with_hooks(
            c"ask.max_tokens",
            c"Completion tokens at most per LLM call.",
            c"",
            &MAX_TOKENS,
            16,
            1_000_000,
            GucContext::Userset,
            GucFlags::default(),
            Some(sw::check_max_tokens),
            None,
            None,
        );
    }
    GucRegistry::define_int_guc(
        c"ask.max_attempts",
        c"SQL attempts per question: the first one plus repairs from error messages.",
        c"",
        &MAX_ATTEMPTS,
        *pg_ask_core::config::MAX_ATTEMPTS.start(),
        *pg_ask_core::config::MAX_ATTEMPTS.end(),
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"ask.first_repair",
        c"How the first repair after a query that failed is asked for: edit (the failed query shown, a corrected one asked for), restart (why it failed told, the query asked for again from the question), plain (the tables and the question asked afresh, without rules or the failed query) or auto (edit when the failure points at what to change, plain otherwise).",
        c"Later repairs show the failed queries either way.",
        &FIRST_REPAIR,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.candidates",
        c"Queries drawn per question and voted on by their results.",
        c"1: the first query that runs answers. More: once a query has run, candidates are sampled from the same request and run under the guard, grouped by their results, and the largest group with rows answers; drawing stops when no group can be overtaken. Each candidate is an LLM call.",
        &CANDIDATES,
        1,
        pg_ask_core::config::MAX_CANDIDATES as i32,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.row_limit",
        c"Rows fetched from generated SQL at most.",
        c"",
        &ROW_LIMIT,
        1,
        i32::MAX - 1,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.statement_timeout",
        c"Time limit for running one generated statement (0 = no limit beyond statement_timeout).",
        c"",
        &STATEMENT_TIMEOUT,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
    // SAFETY: as for ask.provider.
    unsafe {
        GucRegistry::define_enum_guc_with_hooks(
            c"ask.embedding_provider",
            c"Where embeddings come from.",
            c"local: all-MiniLM-L6-v2 in the backend; openai: an OpenAI-compatible /embeddings server; ollama: /api/embed; off: no embeddings (value matching by trigrams only).",
            &EMBEDDING_PROVIDER,
            GucContext::Userset,
            GucFlags::default(),
            Some(sw::check_embedding_provider),
            None,
            None,
        );
    }
    // SAFETY: as for ask.provider.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"ask.embedding_model",
            c"Embedding model name for the openai and ollama providers.",
            c"",
            &EMBEDDING_MODEL,
            GucContext::Userset,
            GucFlags::default(),
            Some(sw::check_embedding_model),
            None,
            None,
        );
    }
    // SAFETY: as for ask.provider.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"ask.embedding_base_url",
            c"Base URL of the embedding server (empty: ask.base_url).",
            c"",
            &EMBEDDING_BASE_URL,
            GucContext::Userset,
            GucFlags::default(),
            Some(sw::check_embedding_base_url),
            None,
            None,
        );
    }
    GucRegistry::define_string_guc(
        c"ask.model_path",
        c"Directory of the local embedding model (empty: the directory setup installs).",
        c"It must hold model.safetensors, config.json and tokenizer.json.",
        &MODEL_PATH,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"ask.verified",
        c"What verified queries (ask.add_verified, ask.feedback) do in ask().",
        c"on: a question that is a verified one (in other words, or with other values the value memory resolves) is answered from it without an LLM call, and the most similar others are shown to the LLM as examples; examples: only shown; off: not used.",
        &VERIFIED,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_float_guc(
        c"ask.verified_min_cosine",
        c"How alike a question in other words must be to a verified one to be answered from it.",
        c"The least cosine between the two questions' embeddings (with equal numbers, negations, aggregates and names); below it the verified query is only an example. Questions that differ only in values need no embeddings.",
        &VERIFIED_MIN_COSINE,
        0.5,
        1.0,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"ask.sql_in_words",
        c"Whether ask()'s NOTICE with the SQL also says what the SQL does, in plain words (its DETAIL).",
        c"The words come from the statement's parse (ask.explain_sql), not from the model.",
        &SQL_IN_WORDS,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"ask.use_knowledge",
        c"Whether ask() uses the knowledge the database's owners taught (ask.knowledge).",
        c"On: the instructions, metrics, filters, dimensions and synonyms over the tables described for a question that the caller may see go into the SQL prompt, and a metric, filter or dimension named in the SQL is written in as its checked expression. Off: none is used (to measure what they are worth).",
        &USE_KNOWLEDGE,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"ask.clarify",
        c"Ask back instead of guessing when a question is ambiguous in a way pg_ask can see.",
        c"On: a literal the value memory matches equally well as two values or in two columns makes ask() return a question back (ask.explain() shows why); answer it with ask(question, context => '...') or a rephrased question.",
        &CLARIFY,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"ask.allow_writes",
        c"Whether ask.do() may run INSERT, UPDATE and DELETE steps.",
        c"Off by default; set it per role or database (ALTER ROLE ... SET ask.allow_writes = on). The steps run with the caller's privileges.",
        &ALLOW_WRITES,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.max_steps",
        c"Statements per ask.do() chain at most.",
        c"",
        &MAX_STEPS,
        1,
        100,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.max_tables",
        c"Tables ask() describes to the LLM when a schema selection memory exists (ask.index_schema), before the tables their joins need.",
        c"Without a schema selection memory every readable table is described.",
        &MAX_TABLES,
        1,
        1000,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.concurrency",
        c"LLM requests a benchmark or an evaluation keeps in flight at once.",
        c"Lower it for rate-limited providers; 1 sends one request at a time.",
        &CONCURRENCY,
        1,
        64,
        GucContext::Userset,
        GucFlags::default(),
    );
    // SAFETY: as for ask.provider.
    unsafe {
        GucRegistry::define_int_guc_with_hooks(
            c"ask.max_values_per_column",
            c"Distinct values ask.index_values() remembers per column at most.",
            c"A column with more distinct values keeps its most frequent ones (ties by value), with a NOTICE.",
            &MAX_VALUES_PER_COLUMN,
            1,
            100_000_000,
            GucContext::Userset,
            GucFlags::default(),
            Some(sw::check_max_values_per_column),
            None,
            None,
        );
    }
    GucRegistry::define_int_guc(
        c"ask.max_listed_values",
        c"A column whose value memory holds at most this many values has them all listed in the SQL prompt; 0: none listed.",
        c"The model then writes a value as it is stored ('F' for female), and value correction puts a literal that is none of them to the LLM with all of them instead of keeping it unasked.",
        &MAX_LISTED_VALUES,
        0,
        1_000,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"ask.selection_index",
        c"Select ask()'s tables (and rank ask.select_tables()'s) from the schema selection memory's stored lexical index.",
        c"On: a question reads the index rows that share a word with it and describes only the best candidates (with the caller's privileges), so a new connection answers without reading its whole catalog. ask.select_tables() and ask.select_schemas() rank the same candidates. Off: every readable table is described and ranked.",
        &SELECTION_INDEX,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"ask.cache",
        c"Answer an LLM request identical to an earlier one (provider, base URL, model, settings, full prompt) from ask.llm_cache, without a call.",
        c"The ledger marks such calls cached, with the tokens they saved. A prompt holds only what its role may read, so a reply is shared only between roles that send the same request.",
        &CACHE,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.cache_ttl",
        c"How long a cached LLM reply is reused (ask.cache).",
        c"",
        &CACHE_TTL,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"ask.max_tokens_per_day",
        c"Tokens a role may spend on LLM calls per day (UTC), counted from ask.llm_calls; 0: no limit.",
        c"A call that could go over it (its prompt and its whole completion limit) is refused before it is sent, SQLSTATE 53000. Set per role by a superuser: ALTER ROLE name SET ask.max_tokens_per_day = 100000.",
        &MAX_TOKENS_PER_DAY,
        0,
        i32::MAX,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"ask.allowed_functions",
        c"Functions generated SQL may call besides PostgreSQL's built-in ones (superuser only).",
        c"A comma-separated list of schema-qualified names, such as public.similarity, public.my_report. Declared volatility is not a boundary: a function on no list is refused whatever it is declared.",
        &ALLOWED_FUNCTIONS,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.max_response_size",
        c"Size of an LLM or embedding server's response read at most (superuser only).",
        c"A larger response ends the call with SQLSTATE 54000, read no further: a server cannot push the backend out of memory.",
        &MAX_RESPONSE_SIZE,
        64,
        1024 * 1024,
        GucContext::Suset,
        GucFlags::UNIT_KB,
    );
    GucRegistry::define_bool_guc(
        c"ask.explain_prompts",
        c"Whether ask.explain() shows each LLM call's prompt.",
        c"On: every call's stage carries input.prompt, the system prompt and the messages as sent (the key scrubbed), so a wrong description can be told from a wrong model.",
        &EXPLAIN_PROMPTS,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.max_prompt_tokens",
        c"Prompt tokens an LLM request may hold at most (about four characters a token).",
        c"An answer prompt shows its rows' cells cut and drops rows from the end until it fits; a question whose rows cannot be shown at all is answered with its rows and a NOTICE. Keep it under the model's context less ask.max_tokens.",
        &MAX_PROMPT_TOKENS,
        256,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"ask.max_result_size",
        c"Size of a generated query's result read at most.",
        c"Rows past it are not read, a cell larger than it is cut; ask() says so in a NOTICE.",
        &MAX_RESULT_SIZE,
        1,
        1024 * 1024,
        GucContext::Userset,
        GucFlags::UNIT_KB,
    );
    // SAFETY: plain call with a static C string, from _PG_init.
    unsafe { pg_sys::MarkGUCPrefixReserved(c"ask".as_ptr()) };
}

/// ask.api_key's check: refused where every role could read it, as stored per database, per
/// role or in a function (`server_wide::check_api_key`), and while pg_ask was not preloaded
/// (`key::refuse_unless_preloaded`).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn check_api_key(
    newval: *mut *mut std::ffi::c_char,
    extra: *mut *mut std::ffi::c_void,
    source: pg_sys::GucSource::Type,
) -> bool {
    sw::check_api_key(newval, extra, source) && crate::pg::key::refuse_unless_preloaded(newval)
}

/// SHOW ask.api_key: `********` when set, empty when not.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn show_masked() -> *const std::ffi::c_char {
    if crate::pg::key::api_key().is_empty() {
        c"".as_ptr()
    } else {
        c"********".as_ptr()
    }
}
