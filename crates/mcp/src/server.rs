//! The MCP server handler: lists the tools and runs each call as one transaction on the
//! session's connection, as the session's role.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
use tokio_postgres::Row;
use tokio_util::sync::CancellationToken;

use crate::args::Limits;
use crate::db::{DbError, Session};
use crate::tools::{self, Name};

/// Who an HTTP request authenticated as: set on the request by the HTTP layer from its
/// bearer token, read here at each tool call.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The token's line in the token file (logs name it; never the token).
    pub line: usize,
    pub config: tokio_postgres::Config,
}

/// Who holds a place among the live sessions (and its token's share): no one (given back),
/// the request admitted to open a session, or the session it opened.
pub const GIVEN_BACK: u8 = 0;
pub const OPENING: u8 = 1;
pub const OPEN: u8 = 2;

/// Gives a place back if `holder` still holds it (`state` is `holder`): once, whoever asks
/// first, the request that was admitted, the session's last handler or the gate that saw the
/// session deleted.
pub fn give_back(state: &AtomicU8, holder: u8, live: &AtomicUsize, token: Option<&AtomicUsize>) -> bool {
    if state.compare_exchange(holder, GIVEN_BACK, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return false;
    }
    live.fetch_sub(1, Ordering::SeqCst);
    if let Some(token) = token {
        token.fetch_sub(1, Ordering::SeqCst);
    }
    true
}

/// One live HTTP session, counted until its place is given back: when the client deletes the
/// session (at once, though the session's worker may end later) or when the last clone of its
/// handler is dropped (an idle session closed), whichever comes first.
#[derive(Debug)]
pub struct SessionSlot {
    live: Arc<AtomicUsize>,
    token: Option<Arc<AtomicUsize>>,
    state: Arc<AtomicU8>,
}

impl SessionSlot {
    pub fn new(live: Arc<AtomicUsize>) -> SessionSlot {
        live.fetch_add(1, Ordering::SeqCst);
        SessionSlot { live, token: None, state: Arc::new(AtomicU8::new(OPEN)) }
    }

    /// The slot of a session whose place the HTTP gate already counted, among all sessions and
    /// among its token's (`token`), when it admitted the request that opens it; `state` is that
    /// admission's, taken over from the request (None if the request gave it back already).
    pub fn admitted(live: Arc<AtomicUsize>, token: Arc<AtomicUsize>, state: Arc<AtomicU8>) -> Option<SessionSlot> {
        state.compare_exchange(OPENING, OPEN, Ordering::SeqCst, Ordering::SeqCst).ok()?;
        Some(SessionSlot { live, token: Some(token), state })
    }
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        give_back(&self.state, OPEN, &self.live, self.token.as_deref());
    }
}

/// Whose connection a session uses.
enum Binding {
    /// Stdio: the one connection string of the command line.
    Fixed(Arc<Session>),
    /// HTTP: bound to the principal of the session's first tool call; calls with another
    /// token are refused.
    PerToken(OnceLock<(usize, Arc<Session>)>),
}

/// The handler of one MCP session.
#[derive(Clone)]
pub struct Handler {
    binding: Arc<Binding>,
    limits: Arc<Limits>,
    /// HTTP sessions are session-based (protocol versions with `initialize`), since each one
    /// holds a database connection.
    sessions_only: bool,
    _slot: Option<Arc<SessionSlot>>,
}

impl Handler {
    /// The stdio handler, connecting with `config`.
    pub fn stdio(config: tokio_postgres::Config, limits: Limits) -> Handler {
        let session = Arc::new(Session::new(config, limits.statement_timeout));
        Handler { binding: Arc::new(Binding::Fixed(session)), limits: Arc::new(limits), sessions_only: false, _slot: None }
    }

    /// A new HTTP session's handler.
    pub fn http(limits: Arc<Limits>, slot: SessionSlot) -> Handler {
        Handler { binding: Arc::new(Binding::PerToken(OnceLock::new())), limits, sessions_only: true, _slot: Some(Arc::new(slot)) }
    }

    fn session(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<Session>, String> {
        match &*self.binding {
            Binding::Fixed(s) => Ok(s.clone()),
            Binding::PerToken(cell) => {
                let principal = ctx
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|p| p.extensions.get::<Principal>())
                    .ok_or("the request carries no authenticated token")?;
                let (line, session) = cell.get_or_init(|| {
                    // The operator's record of who uses the server: the token's line, never the token.
                    eprintln!(
                        "pg_ask-mcp: a session of token line {} connects as role {}",
                        principal.line,
                        principal.config.get_user().unwrap_or("(default)")
                    );
                    (principal.line, Arc::new(Session::new(principal.config.clone(), self.limits.statement_timeout)))
                });
                if *line != principal.line {
                    eprintln!("pg_ask-mcp: refused a call with token line {} in a session of token line {line}", principal.line);
                    return Err("this MCP session belongs to another token: start a session of your own".into());
                }
                Ok(session.clone())
            }
        }
    }

    async fn run(
        &self,
        name: Name,
        args: Option<rmcp::model::JsonObject>,
        session: &Session,
        ct: &CancellationToken,
    ) -> Result<(Value, bool), Failure> {
        let cap = self.limits.max_rows;
        let limit = (cap as i64).saturating_add(1);
        match name {
            Name::Ask | Name::Explain | Name::Sql | Name::Rows => {
                let q: tools::Question = tools::parse(name, args).map_err(Failure::Args)?;
                if q.question.trim().is_empty() {
                    return Err(Failure::Args(format!("{}: the question is empty", name.as_str())));
                }
                let sql = tools::question_sql(name, q.conversation.is_some());
                let rows = match (name, q.conversation) {
                    (Name::Rows, None) => session.call(sql, &[&q.question, &limit], ct).await?,
                    (Name::Rows, Some(c)) => session.call(sql, &[&q.question, &limit, &c], ct).await?,
                    (_, None) => session.call(sql, &[&q.question], ct).await?,
                    (_, Some(c)) => session.call(sql, &[&q.question, &c], ct).await?,
                };
                match name {
                    Name::Rows => Ok((tools::capped(json_column(&rows)?, cap), false)),
                    Name::Sql => Ok((json!({ "sql": one::<Option<String>>(&rows)? }), false)),
                    Name::Ask => {
                        let (mut out, failed) = tools::ask_result(&one::<Value>(&rows)?);
                        // The SQL in plain words beside it, for a reader who does not read SQL
                        // (nothing when it cannot be said).
                        if let Some(sql) = out.get("sql").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string) {
                            if let Ok(words) = session.call(tools::EXPLAIN_SQL_SQL, &[&sql], ct).await {
                                if let Ok(Some(text)) = one::<Option<String>>(&words) {
                                    out["sql_in_words"] = json!(text.lines().collect::<Vec<_>>());
                                }
                            }
                            // A chart of the result when it suits one (sent as an image block;
                            // none when ask.chart() draws nothing or fails).
                            let few = out.get("rows").and_then(Value::as_array).is_some_and(|r| r.len() < 2);
                            if !failed && !few {
                                if let Ok(drawn) = session.call(tools::CHART_SQL, &[&sql], ct).await {
                                    if let Ok(Some(svg)) = one::<Option<String>>(&drawn) {
                                        out[tools::CHART_KEY] = json!(svg);
                                    }
                                }
                            }
                        }
                        Ok((out, failed))
                    }
                    _ => {
                        let trace = one::<Value>(&rows)?;
                        let failed = trace.get("error").is_some_and(|e| !e.is_null());
                        Ok((trace, failed))
                    }
                }
            }
            Name::Feedback => {
                let f: tools::Feedback = tools::parse(name, args).map_err(Failure::Args)?;
                if let Some(message) = tools::sql_refused(&f, self.limits.allow_sql) {
                    return Err(Failure::Refused(message));
                }
                let rows = session.call(tools::FEEDBACK_SQL, &[&f.call_id, &f.correct, &f.sql], ct).await?;
                let id = one::<Option<i64>>(&rows)?;
                let note = if id.is_some() { "kept as a verified query" } else { "recorded; nothing was verified" };
                Ok((json!({ "verified_query_id": id, "note": note }), false))
            }
            Name::ConversationStart => {
                let c: tools::ConversationStart = tools::parse(name, args).map_err(Failure::Args)?;
                let rows = session.call(tools::CONVERSATION_START_SQL, &[&c.title], ct).await?;
                Ok((json!({ "conversation": one::<i64>(&rows)? }), false))
            }
            Name::Tables => {
                let _: tools::Nothing = tools::parse(name, args).map_err(Failure::Args)?;
                let rows = session.call(tools::TABLES_SQL, &[], ct).await?;
                let mut tables = Vec::with_capacity(rows.len());
                for r in &rows {
                    let (schema, table, description): (String, String, Option<String>) =
                        (r.try_get(0).map_err(bad_row)?, r.try_get(1).map_err(bad_row)?, r.try_get(2).map_err(bad_row)?);
                    tables.push(json!({ "schema": schema, "table": table, "description": description }));
                }
                Ok((json!({ "tables": tables }), false))
            }
            Name::SuggestQuestions => {
                let q: tools::SuggestQuestions = tools::parse(name, args).map_err(Failure::Args)?;
                let rows = session.call(tools::SUGGEST_SQL, &[&q.n.unwrap_or(5)], ct).await?;
                let mut questions = Vec::with_capacity(rows.len());
                for r in &rows {
                    let (question, id, tables): (String, i64, Vec<String>) =
                        (r.try_get(0).map_err(bad_row)?, r.try_get(1).map_err(bad_row)?, r.try_get(2).map_err(bad_row)?);
                    questions.push(json!({ "question": question, "verified_id": id, "tables": tables }));
                }
                Ok((json!({ "questions": questions }), false))
            }
            Name::ExplainSql => {
                let e: tools::ExplainSql = tools::parse(name, args).map_err(Failure::Args)?;
                let rows = session.call(tools::EXPLAIN_SQL_SQL, &[&e.sql], ct).await?;
                let text = one::<Option<String>>(&rows)?.unwrap_or_default();
                Ok((json!({ "sql_in_words": text.lines().collect::<Vec<_>>() }), false))
            }
            Name::RunSql => {
                let s: tools::RunSql = tools::parse(name, args).map_err(Failure::Args)?;
                let rows = session.call(tools::RUN_SQL_SQL, &[&s.sql, &limit], ct).await?;
                Ok((tools::capped(json_column(&rows)?, cap), false))
            }
        }
    }
}

/// Why a call gave no result.
enum Failure {
    Args(String),
    /// What the server's options forbid (SQL from the client without `--allow-sql`).
    Refused(String),
    Db(DbError),
}

impl From<DbError> for Failure {
    fn from(e: DbError) -> Failure {
        Failure::Db(e)
    }
}

fn bad_row(e: tokio_postgres::Error) -> Failure {
    Failure::Db(DbError::Postgres { message: format!("unexpected result: {e}"), sqlstate: "XX000".into(), detail: None, hint: None })
}

fn one<T: for<'a> tokio_postgres::types::FromSql<'a>>(rows: &[Row]) -> Result<T, Failure> {
    let row = rows.first().ok_or_else(|| bad_row_msg("no row"))?;
    row.try_get(0).map_err(bad_row)
}

fn bad_row_msg(what: &str) -> Failure {
    Failure::Db(DbError::Postgres { message: format!("unexpected result: {what}"), sqlstate: "XX000".into(), detail: None, hint: None })
}

fn json_column(rows: &[Row]) -> Result<Vec<Value>, Failure> {
    rows.iter().map(|r| r.try_get::<_, Value>(0).map_err(bad_row)).collect()
}

/// A tool error result: a readable text and the same as structured content.
fn error_result(value: Value) -> CallToolResult {
    let mut text = match value.get("sqlstate").and_then(Value::as_str) {
        Some(code) => format!("ERROR {code}: "),
        None => "ERROR: ".to_owned(),
    };
    match value.get("error") {
        Some(Value::String(s)) => text.push_str(s),
        Some(other) => text.push_str(&other.to_string()),
        None => text.push_str(&value.to_string()),
    }
    for (key, label) in [("detail", "DETAIL"), ("hint", "HINT")] {
        if let Some(s) = value.get(key).and_then(Value::as_str) {
            text.push_str(&format!("\n{label}: {s}"));
        }
    }
    let mut result = CallToolResult::structured_error(value);
    result.content = vec![ContentBlock::text(text)];
    result
}

/// A trace whose run failed: its error as the readable text, the whole value as structured
/// content.
fn trace_error_result(value: Value) -> CallToolResult {
    let e = value.get("error").cloned().unwrap_or(Value::Null);
    let message = e.get("message").cloned().unwrap_or_else(|| e.clone());
    let summary = json!({ "error": message, "sqlstate": e.get("sqlstate"), "hint": e.get("hint") });
    let mut result = error_result(summary);
    result.structured_content = Some(value);
    result
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("pg_ask-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "pg_ask answers questions about this PostgreSQL database as your database role: \
                 `tables` lists what you may read, `ask` answers a question with the SQL that ran, \
                 `suggest_questions` offers questions to start from, `explain_sql` says what a query \
                 does in plain words, `conversation_start` gives an \
                 id for follow-up questions, `feedback` marks an answer right or wrong.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.sessions_only {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::listed(self.limits.allow_sql)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        Name::find(name, self.limits.allow_sql).map(|n| n.tool(self.limits.allow_sql))
    }

    async fn call_tool(&self, request: CallToolRequestParams, ctx: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let Some(name) = Name::find(&request.name, self.limits.allow_sql) else {
            let hint = if request.name == "run_sql" { " (the server was started without --allow-sql)" } else { "" };
            return Err(ErrorData::invalid_params(format!("no tool named {:?}{hint}", request.name), None));
        };
        let session = match self.session(&ctx) {
            Ok(s) => s,
            Err(message) => return Ok(error_result(json!({ "error": message, "sqlstate": "28000" })).into()),
        };
        let result = match self.run(name, request.arguments, &session, &ctx.ct).await {
            Ok((mut value, false)) => {
                let chart = value.as_object_mut().and_then(|o| o.remove(tools::CHART_KEY));
                let mut result = CallToolResult::structured(value);
                if let Some(svg) = chart.as_ref().and_then(Value::as_str) {
                    result.content.push(ContentBlock::image(tools::base64(svg.as_bytes()), "image/svg+xml"));
                }
                result
            }
            Ok((value, true)) => trace_error_result(value),
            Err(Failure::Args(message)) => error_result(json!({ "error": message, "sqlstate": "22023" })),
            Err(Failure::Refused(message)) => error_result(json!({ "error": message, "sqlstate": "42501" })),
            Err(Failure::Db(e)) => error_result(e.to_json()),
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nowhere() -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config.host("/nonexistent/pg_ask-mcp-test").port(1).user("mcp_reader").dbname("shop");
        config
    }

    async fn feedback_with_sql(allow_sql: bool) -> Result<(Value, bool), Failure> {
        let handler = Handler::stdio(nowhere(), Limits { allow_sql, ..Limits::default() });
        let session = Session::new(nowhere(), Limits::default().statement_timeout);
        let args = json!({"call_id": 7, "correct": false, "sql": "SELECT * FROM hr.vault"}).as_object().cloned();
        handler.run(Name::Feedback, args, &session, &CancellationToken::new()).await
    }

    /// Without --allow-sql, feedback's corrected SQL is refused before anything reaches the
    /// database (it would be kept as a verified query and run as the answer to the question).
    #[tokio::test]
    async fn feedback_sql_is_refused_without_allow_sql() {
        match feedback_with_sql(false).await {
            Err(Failure::Refused(message)) => assert!(message.contains("--allow-sql"), "{message}"),
            Err(Failure::Db(e)) => panic!("the corrected SQL went to the database: {e}"),
            _ => panic!("the corrected SQL was not refused"),
        }
        // With --allow-sql it goes on to ask.feedback (here: no database to reach).
        assert!(matches!(feedback_with_sql(true).await, Err(Failure::Db(DbError::Connect(_)))));
    }
}
