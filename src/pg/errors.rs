//! Turning the core's errors into PostgreSQL errors with specific SQLSTATEs, details and hints.
//! Every text is scrubbed of the API key before it leaves.

use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::PgLogLevel;

use pg_ask_core::ask::{AskError, ExecFailure, HostError};
use pg_ask_core::chain::ChainError;
use pg_ask_core::evaluate::SuiteError;
use pg_ask_core::llm::LlmError;

/// Raise an error with a SQLSTATE, a message and (unless empty) a hint. Never returns.
pub fn raise(code: PgSqlErrorCode, message: impl Into<String>, hint: &str) -> ! {
    let r = Raised::new(code, message);
    let r = if hint.is_empty() { r } else { r.hint(hint) };
    r.raise()
}

/// An error on its way out: code, message, detail and hint.
pub struct Raised {
    pub code: PgSqlErrorCode,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl Raised {
    pub fn new(code: PgSqlErrorCode, message: impl Into<String>) -> Raised {
        Raised { code, message: message.into(), detail: None, hint: None }
    }
    pub fn detail(mut self, d: impl Into<String>) -> Raised {
        self.detail = Some(d.into());
        self
    }
    pub fn hint(mut self, h: impl Into<String>) -> Raised {
        self.hint = Some(h.into());
        self
    }

    /// Raise it as an ERROR. Never returns.
    pub fn raise(self) -> ! {
        self.report(PgLogLevel::ERROR);
        unreachable!("ERROR does not return")
    }

    /// Send it to the client as a NOTICE (with its detail and hint) and carry on.
    pub fn notice(self) {
        self.report(PgLogLevel::NOTICE);
    }

    /// Send it as a WARNING and carry on.
    pub fn warning(self) {
        self.report(PgLogLevel::WARNING);
    }

    /// Every text is scrubbed of the configured key: an LLM server may echo it in an error
    /// body, and a statement's error may quote a value that holds it.
    fn report(self, level: PgLogLevel) {
        let key = crate::pg::key::api_key();
        let mut report = ErrorReport::new(self.code, key.scrub(&self.message), "pg_ask");
        if let Some(d) = self.detail {
            report = report.set_detail(key.scrub(&d));
        }
        if let Some(h) = self.hint {
            report = report.set_hint(key.scrub(&h));
        }
        report.report(level);
    }
}

pub fn from_llm(e: &LlmError, stage: &str) -> Raised {
    use PgSqlErrorCode::*;
    let msg = format!("{e} (stage: {stage})");
    match e {
        LlmError::Connect { .. } => Raised::new(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, msg)
            .hint("Check that the LLM server is running and that ask.base_url and ask.provider point at it."),
        LlmError::Timeout { .. } => Raised::new(ERRCODE_CONNECTION_FAILURE, msg)
            .hint("Raise ask.request_timeout, or use a faster model (ask.model)."),
        LlmError::Http { status: 401 | 403, .. } => Raised::new(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION, msg)
            .hint("Set a valid key: ALTER SYSTEM SET ask.api_key = '...' (superuser, pg_ask in shared_preload_libraries), then SELECT pg_reload_conf(). The key is sent only to the ask.base_url set in the server's configuration, or on a superuser's calls."),
        LlmError::Http { status: 404, .. } => Raised::new(ERRCODE_UNDEFINED_OBJECT, msg)
            .hint("Check ask.model (is the model available on the server?) and ask.base_url (the path the provider expects)."),
        LlmError::Http { status: 429, retry_after_s, .. } => {
            let r = Raised::new(ERRCODE_INSUFFICIENT_RESOURCES, msg);
            match retry_after_s {
                Some(s) => r.hint(format!("The server asked to retry after {s} s, later than ask.request_timeout allows; wait, or raise ask.request_timeout.")),
                None => r.hint("The server's rate limit was hit; wait, or raise ask.request_timeout so retries can last longer."),
            }
        }
        e if e.is_context_overflow() => Raised::new(ERRCODE_PROGRAM_LIMIT_EXCEEDED, msg).hint(
            "The prompt does not fit the model's context window: build a schema selection memory (ask.index_schema) or narrow search_path so fewer tables are described, lower ask.max_tokens, or give the server a larger context.",
        ),
        LlmError::Http { status, .. } if *status >= 500 => Raised::new(ERRCODE_SYSTEM_ERROR, msg)
            .hint("The LLM server failed; retries were exhausted within ask.request_timeout."),
        LlmError::Http { .. } => Raised::new(ERRCODE_SYSTEM_ERROR, msg)
            .hint("Check ask.provider, ask.base_url and ask.model."),
        LlmError::Malformed { .. } | LlmError::MissingField { .. } => Raised::new(ERRCODE_PROTOCOL_VIOLATION, msg)
            .hint("Is ask.provider the protocol this server speaks (openai, anthropic, ollama)?"),
        LlmError::Truncated { .. } => Raised::new(ERRCODE_PROTOCOL_VIOLATION, msg)
            .hint("The connection broke mid-response; retry, or check a proxy between PostgreSQL and the LLM server."),
        LlmError::EmptyContent => Raised::new(ERRCODE_NULL_VALUE_NOT_ALLOWED, msg)
            .hint("Raise ask.max_tokens, or try another model (ask.model)."),
        LlmError::Interrupted => Raised::new(ERRCODE_QUERY_CANCELED, "canceling LLM request due to user request"),
        LlmError::Unsupported { .. } => Raised::new(ERRCODE_FEATURE_NOT_SUPPORTED, msg).hint(
            "Set ask.structured_output or ask.sql_grammar to auto (constrain where the server can) or off; the README's settings table says what each provider accepts.",
        ),
        LlmError::TooLarge { .. } => Raised::new(ERRCODE_PROGRAM_LIMIT_EXCEEDED, msg)
            .hint("A superuser can raise ask.max_response_size; otherwise check ask.base_url: is this the server you meant?"),
    }
}

pub fn from_ask(e: &AskError) -> Raised {
    use PgSqlErrorCode::*;
    match e {
        AskError::EmptyQuestion => Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, "the question is empty"),
        AskError::NoTables => Raised::new(ERRCODE_INSUFFICIENT_PRIVILEGE, "there are no tables the current role may read")
            .hint("GRANT SELECT on the tables to ask about to this role."),
        AskError::Host(e) => from_host(e),
        AskError::Ambiguous { question } => Raised::new(ERRCODE_AMBIGUOUS_PARAMETER, format!("the question is ambiguous: {question}"))
            .hint("Rephrase the question with the value you mean, give it in context => '...' (ask() takes one), or SET ask.clarify = off to let the LLM choose."),
        AskError::Llm { stage, source } => from_llm(source, stage),
        AskError::NoSql { attempts, reply } => {
            Raised::new(ERRCODE_INVALID_TEXT_REPRESENTATION, format!("the LLM's reply contained no SQL after {attempts} attempt(s)"))
                .detail(format!("last reply: {reply}"))
                .hint("Rephrase the question, or try another model (ask.model).")
        }
        AskError::Refused { attempts, reason, sql } => Raised::new(
            ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
            format!("the generated SQL was refused after {attempts} attempt(s): {reason}"),
        )
        .detail(format!("last SQL: {sql}"))
        .hint("pg_ask runs only single read-only queries without volatile functions."),
        AskError::Failed { attempts, sqlstate, message, sql } => Raised::new(
            sqlstate_code(sqlstate).unwrap_or(ERRCODE_DATA_EXCEPTION),
            format!("the generated SQL failed after {attempts} attempt(s): {message}"),
        )
        .detail(format!("last SQL: {sql}"))
        .hint("Raise ask.max_attempts, rephrase the question, or try another model (ask.model)."),
        AskError::PromptTooLarge { stage, .. } => Raised::new(ERRCODE_PROGRAM_LIMIT_EXCEEDED, e.to_string())
            .detail(format!("The {stage} prompt holds what cannot be cut (the tables' description, the question, a context given)."))
            .hint("Ask over fewer tables (a schema selection memory: SELECT ask.index_schema(); ask.max_tables), shorten the question or context, or raise ask.max_prompt_tokens within the model's context."),
    }
}

/// A lookup of the host that failed: raised with its SQLSTATE (XX000 when it gave none that
/// PostgreSQL knows) and the hint for pg_ask's own tables.
pub fn from_host(e: &HostError) -> Raised {
    let mut r = internal("the database could not be read for the question", &e.message);
    if let Some(code) = sqlstate_code(e.sqlstate) {
        r.code = code;
    }
    r
}

/// A statement pg_ask runs on its own tables failed in a way no user action causes (SPI
/// refused it, a row had an unexpected shape): an incomplete installation or a bug. One
/// SQLSTATE and one hint for all of them.
pub fn internal(what: &str, e: impl std::fmt::Display) -> Raised {
    Raised::new(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, format!("{what}: {e}")).hint(
        "pg_ask could not use its own tables: is the extension installed completely (ALTER EXTENSION pg_ask UPDATE)? Otherwise, please report this as a bug.",
    )
}

impl From<&ChainError> for Raised {
    fn from(e: &ChainError) -> Raised {
        use PgSqlErrorCode::*;
        match e {
            ChainError::Llm { stage, source } => from_llm(source, stage),
            ChainError::Host(e) => from_host(e),
            ChainError::StepFailed { failure, .. } => {
                let code = match failure.as_ref() {
                    ExecFailure::Error { sqlstate, .. } => sqlstate_code(sqlstate).unwrap_or(ERRCODE_DATA_EXCEPTION),
                    ExecFailure::Refused { .. } => ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
                };
                Raised::new(code, e.to_string()).detail(failure.for_llm()).hint("Nothing of the chain was kept.")
            }
            ChainError::Refused { .. } | ChainError::RewriteChangedKind { .. } => {
                Raised::new(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED, e.to_string())
                    .hint("ask.do() runs only SELECT, INSERT, UPDATE and DELETE steps, never DDL.")
            }
            ChainError::TooManySteps { .. } => {
                Raised::new(ERRCODE_PROGRAM_LIMIT_EXCEEDED, e.to_string()).hint("Raise ask.max_steps, or split the instruction.")
            }
            ChainError::NoTables => {
                Raised::new(ERRCODE_INSUFFICIENT_PRIVILEGE, e.to_string()).hint("GRANT the role access to the tables to change.")
            }
            ChainError::EmptyInstruction => Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, e.to_string()),
            _ => Raised::new(ERRCODE_INVALID_TEXT_REPRESENTATION, e.to_string())
                .hint("Rephrase the instruction, or try another model (ask.model)."),
        }
    }
}

impl From<&SuiteError> for Raised {
    fn from(e: &SuiteError) -> Raised {
        let hint = match e {
            SuiteError::Gold { .. } => "Gold SQL may list alternatives separated by ; and column choices as {a.x, a.y}; braces must balance.",
            _ => "Give a JSON array of objects, each with \"question\" and \"gold_sql\" (or \"query\"), and optionally \"schema\", \"category\", \"difficulty\", \"instructions\".",
        };
        Raised::new(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, e.to_string()).hint(hint)
    }
}

impl From<&AskError> for Raised {
    fn from(e: &AskError) -> Raised {
        from_ask(e)
    }
}

pub fn config(message: impl Into<String>) -> Raised {
    Raised::new(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, message)
}

/// The PgSqlErrorCode for a five-character SQLSTATE, if PostgreSQL knows it.
pub fn sqlstate_code(s: impl AsRef<str>) -> Option<PgSqlErrorCode> {
    let s = s.as_ref();
    let b = s.as_bytes();
    if b.len() != 5 {
        return None;
    }
    let six = |c: u8| ((c.wrapping_sub(b'0')) & 0x3F) as i32;
    let packed = six(b[0]) | (six(b[1]) << 6) | (six(b[2]) << 12) | (six(b[3]) << 18) | (six(b[4]) << 24);
    let code = PgSqlErrorCode::from(packed);
    // Unknown codes come back as XX000.
    (code as isize != PgSqlErrorCode::ERRCODE_INTERNAL_ERROR as isize || s == "XX000").then_some(code)
}

/// The SQLSTATE of an error code, as the core takes it.
pub fn sqlstate_of(code: PgSqlErrorCode) -> pg_ask_core::sqlstate::SqlState {
    pg_ask_core::sqlstate::SqlState::or_internal(&sqlstate_text(code))
}

/// The five-character SQLSTATE of an error code.
pub fn sqlstate_text(code: PgSqlErrorCode) -> String {
    let mut v = code as i32;
    let mut s = String::with_capacity(5);
    for _ in 0..5 {
        s.push(((v & 0x3F) as u8 + b'0') as char);
        v >>= 6;
    }
    s
}
