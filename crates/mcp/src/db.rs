//! One MCP session's database connection, and one tool call as one transaction on it.
//!
//! The connection opens at the session's first tool call, as the session's role, and closes
//! with the session. Calls of one session run one at a time: `BEGIN; SET LOCAL
//! statement_timeout`, the statement with bound parameters, `COMMIT` (`ROLLBACK` on any
//! error). A call whose request the client cancels has its backend query cancelled with the
//! connection's cancel token, and is rolled back.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{CancelToken, Client, NoTls, Row};
use tokio_util::sync::CancellationToken;

/// How long a cancelled query is given to end once its backend was told to cancel it.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// Why a call did not return rows.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// PostgreSQL refused or failed the statement.
    #[error("{message}")]
    Postgres { message: String, sqlstate: String, detail: Option<String>, hint: Option<String> },
    /// The database could not be reached, or the connection broke.
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    /// The client cancelled the request; the backend's query was cancelled.
    #[error("the request was cancelled; its query was cancelled on the server")]
    Cancelled,
}

impl DbError {
    fn from_pg(e: tokio_postgres::Error) -> DbError {
        match e.as_db_error() {
            Some(db) => DbError::Postgres {
                message: db.message().to_owned(),
                sqlstate: db.code().code().to_owned(),
                detail: db.detail().map(str::to_owned),
                hint: db.hint().map(str::to_owned),
            },
            None => DbError::Connect(e.to_string()),
        }
    }

    /// The error as the JSON a tool returns: message, SQLSTATE, detail and hint.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            DbError::Postgres { message, sqlstate, detail, hint } => serde_json::json!({
                "error": message, "sqlstate": sqlstate, "detail": detail, "hint": hint,
            }),
            DbError::Connect(_) => serde_json::json!({ "error": self.to_string(), "sqlstate": "08006" }),
            DbError::Cancelled => serde_json::json!({ "error": self.to_string(), "sqlstate": "57014" }),
        }
    }
}

struct Conn {
    client: Client,
    cancel: CancelToken,
    /// Set while a call's transaction is open: a call dropped half-way (its session closed)
    /// leaves it set, and the connection is not used again.
    in_call: bool,
}

/// A session's connection, opened on first use.
pub struct Session {
    config: tokio_postgres::Config,
    statement_timeout: Duration,
    conn: Mutex<Option<Conn>>,
}

impl Session {
    pub fn new(config: tokio_postgres::Config, statement_timeout: Duration) -> Session {
        Session { config, statement_timeout, conn: Mutex::new(None) }
    }

    /// Runs `sql` with `params` in a transaction of its own and returns its rows; cancels the
    /// backend's query and rolls back when `ct` is cancelled first.
    pub async fn call(&self, sql: &str, params: &[&(dyn ToSql + Sync)], ct: &CancellationToken) -> Result<Vec<Row>, DbError> {
        let mut guard = tokio::select! {
            g = self.conn.lock() => g,
            _ = ct.cancelled() => return Err(DbError::Cancelled),
        };
        if guard.as_ref().is_none_or(|c| c.in_call || c.client.is_closed()) {
            if let Some(abandoned) = guard.take().filter(|c| c.in_call) {
                // A call dropped half-way may have left its query running: cancel it.
                let _ = abandoned.cancel.cancel_query(NoTls).await;
            }
            let conn = tokio::select! {
                c = self.connect() => c?,
                _ = ct.cancelled() => return Err(DbError::Cancelled),
            };
            *guard = Some(conn);
        }
        let Some(conn) = guard.as_mut() else {
            return Err(DbError::Connect("no connection".into()));
        };
        conn.in_call = true;
        let result = self.transaction(conn, sql, params, ct).await;
        // ROLLBACK after a failed or cancelled statement; a connection that cannot roll back
        // is dropped and the next call opens another.
        if result.is_err() && conn.client.batch_execute("ROLLBACK").await.is_err() {
            *guard = None;
        } else {
            conn.in_call = false;
        }
        result
    }

    async fn connect(&self) -> Result<Conn, DbError> {
        let (client, connection) = self.config.connect(NoTls).await.map_err(|e| match e.as_db_error() {
            Some(_) => DbError::from_pg(e),
            None => DbError::Connect(e.to_string()),
        })?;
        tokio::spawn(async move {
            // The connection ends when the client is dropped; its error, if any, is seen by
            // the next call as a closed client.
            let _ = connection.await;
        });
        let cancel = client.cancel_token();
        Ok(Conn { client, cancel, in_call: false })
    }

    async fn transaction(
        &self,
        conn: &Conn,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        ct: &CancellationToken,
    ) -> Result<Vec<Row>, DbError> {
        // The timeout is the operator's number, never input: one round trip for both.
        let ms = self.statement_timeout.as_millis();
        conn.client.batch_execute(&format!("BEGIN; SET LOCAL statement_timeout = {ms}")).await.map_err(DbError::from_pg)?;
        let query = conn.client.query(sql, params);
        tokio::pin!(query);
        let rows = tokio::select! {
            r = &mut query => r.map_err(DbError::from_pg)?,
            _ = ct.cancelled() => {
                let _ = conn.cancel.cancel_query(NoTls).await;
                // Wait for the backend to give up the query before the ROLLBACK is sent.
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut query).await;
                return Err(DbError::Cancelled);
            }
        };
        conn.client.batch_execute("COMMIT").await.map_err(DbError::from_pg)?;
        Ok(rows)
    }
}
