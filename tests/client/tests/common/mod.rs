//! Helpers of the privilege tests (`privileges.rs`, `privileges_tables.rs`,
//! `privileges_llm.rs`): roles, the lock that lets them run several at a time, statements whose
//! failure is the point, and server-wide settings put back afterwards.

// Each test file uses some of these.
#![allow(dead_code)]

use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread;
use std::time::{Duration, Instant};

use llm_standin::Recorded;
use pg_ask_it::{connect, message, sqlstate};
use postgres::{Client, SimpleQueryMessage};

/// The LLM API key set server-wide by the tests that need one.
pub const KEY: &str = "sk-pv-Qm3XvT8bLw2RkZ9p";

/// SQLSTATE insufficient_privilege.
pub const DENIED: &str = "42501";

// ---------------------------------------------------------------------------------------------
// Running several tests at once

/// Tests that change server-wide settings, or plant an object every session resolves names
/// against, hold this exclusively; every other test holds it shared.
pub static CLUSTER: RwLock<()> = RwLock::new(());

pub fn shared() -> RwLockReadGuard<'static, ()> {
    CLUSTER.read().unwrap_or_else(PoisonError::into_inner)
}

pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    CLUSTER.write().unwrap_or_else(PoisonError::into_inner)
}

/// Catalog changes to shared objects (roles, the ACLs of schema public and of the database)
/// one at a time: two sessions granting on the same object at once may fail with "tuple
/// concurrently updated".
pub static SETUP: Mutex<()> = Mutex::new(());

/// Runs `sql` as the superuser, one such setup at a time.
pub fn setup_sql(sql: &str) {
    let _one = SETUP.lock().unwrap_or_else(PoisonError::into_inner);
    let mut c = connect();
    c.batch_execute(sql).unwrap_or_else(|e| panic!("setting up ({sql}): {}", message(&e)));
}

/// A role that may log in, without any attribute; created unless a previous run left it.
pub fn ensure_role(name: &str) {
    setup_sql(&format!(
        "DO $$ BEGIN
           IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '{name}') THEN CREATE ROLE {name} LOGIN; END IF;
         END $$;
         ALTER ROLE {name} LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOBYPASSRLS;"
    ));
}

/// A role that may create tables in schema public.
pub fn ensure_table_owner(name: &str) {
    ensure_role(name);
    setup_sql(&format!("GRANT CREATE ON SCHEMA public TO {name}"));
}

// ---------------------------------------------------------------------------------------------
// Statements whose failure is the point

/// A statement's error, as the client saw it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SQLSTATE {}: {}", self.code, self.message)
    }
}

/// The rows a statement returned (each row's columns as text, joined by " | "), or its error.
pub type Outcome = Result<Vec<String>, Failure>;

/// Runs `sql` (simple query protocol, one or more statements) and returns what came back.
pub fn attempt(c: &mut Client, sql: &str) -> Outcome {
    match c.simple_query(sql) {
        Ok(messages) => Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => {
                    Some((0..row.len()).map(|i| row.get(i).unwrap_or("NULL").to_string()).collect::<Vec<_>>().join(" | "))
                }
                _ => None,
            })
            .collect()),
        Err(e) => Err(Failure { code: sqlstate(&e), message: message(&e) }),
    }
}

/// Runs `sql`, which must succeed (`what` says what it is, for the panic message).
pub fn must(c: &mut Client, what: &str, sql: &str) -> Vec<String> {
    attempt(c, sql).unwrap_or_else(|f| panic!("{what} failed ({f}): {sql}"))
}

/// Whether the statement failed with insufficient_privilege.
pub fn is_denied(o: &Outcome) -> bool {
    matches!(o, Err(f) if f.code == DENIED)
}

/// The single integer a counting statement returned.
pub fn count(c: &mut Client, sql: &str) -> Result<i64, Failure> {
    attempt(c, sql).map(|rows| rows.first().and_then(|r| r.parse().ok()).unwrap_or_else(|| panic!("{sql} returned {rows:?}")))
}

/// How many rows a role sees with `sql` (a count): an insufficient_privilege error means none.
pub fn visible(c: &mut Client, sql: &str) -> i64 {
    match count(c, sql) {
        Ok(n) => n,
        Err(f) if f.code == DENIED => 0,
        Err(f) => panic!("{sql}: {f}"),
    }
}

/// Every recorded request whose prompt contains `needle`.
pub fn prompts_with<'a>(requests: &'a [Recorded], needle: &str) -> Vec<&'a Recorded> {
    requests.iter().filter(|r| r.prompt.contains(needle)).collect()
}

/// The SQL reply of a stand-in: `sql` in a fenced block.
pub fn fenced(sql: &str) -> String {
    format!("```sql\n{sql}\n```")
}

// ---------------------------------------------------------------------------------------------
// Server-wide settings

/// Sets settings server-wide (`ALTER SYSTEM`, reload) and puts them back when dropped, even
/// when an assertion fails; both wait until a new session sees the change.
pub struct ServerWide {
    before: Vec<(String, String)>,
}

/// What a new session shows for `name`.
pub fn shown(name: &str) -> String {
    connect().query_one(&format!("SHOW {name}"), &[]).unwrap().get(0)
}

/// What `SHOW name` prints once `value` is set: the key is masked.
pub fn expected_show(name: &str, value: &str) -> String {
    if name == "ask.api_key" {
        "********".into()
    } else {
        value.into()
    }
}

/// Waits (up to ten seconds) until new sessions show `wanted`; false if they never did.
pub fn wait_for(wanted: &[(String, String)]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if wanted.iter().all(|(name, value)| shown(name) == *value) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

pub fn server_wide(settings: &[(&str, &str)]) -> ServerWide {
    let before: Vec<(String, String)> = settings.iter().map(|(name, _)| (name.to_string(), shown(name))).collect();
    let guard = ServerWide { before };
    let mut c = connect();
    // One statement at a time: ALTER SYSTEM refuses to run in the implicit transaction of a
    // multi-statement query.
    for (name, value) in settings {
        c.batch_execute(&format!("ALTER SYSTEM SET {name} = '{value}'"))
            .unwrap_or_else(|e| panic!("ALTER SYSTEM SET {name}: {}", message(&e)));
    }
    c.batch_execute("SELECT pg_reload_conf()").unwrap();
    let wanted: Vec<(String, String)> = settings.iter().map(|(n, v)| (n.to_string(), expected_show(n, v))).collect();
    assert!(wait_for(&wanted), "the reload never reached new sessions: {wanted:?}");
    guard
}

impl Drop for ServerWide {
    fn drop(&mut self) {
        let mut c = connect();
        for (name, _) in &self.before {
            let _ = c.batch_execute(&format!("ALTER SYSTEM RESET {name}"));
        }
        let _ = c.batch_execute("SELECT pg_reload_conf()");
        let _ = wait_for(&self.before);
    }
}
