//! The LLM API key, set the README's way (`ALTER SYSTEM SET ask.api_key`, pg_ask in
//! `shared_preload_libraries`), is unreadable by a role without privileges from the first
//! statement of every session, in a database with the extension and in one without; settings
//! of the key that every role could read are refused; generated SQL never hands it out; and
//! `ask()` still sends it, to the server configured server-wide only.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, connect_to, message, sqlstate};
use postgres::Client;

const KEY: &str = "sk-it-7Hq2ZpLw9RkX4mVb";
const NOBODY: &str = "it_key_nobody";
const NO_EXTENSION_DB: &str = "it_key_noext";

/// Puts the server-wide settings back, even when an assertion fails.
struct ServerWide;

impl Drop for ServerWide {
    fn drop(&mut self) {
        let mut c = connect();
        // One statement at a time: ALTER SYSTEM refuses to run in the implicit transaction
        // of a multi-statement query.
        for sql in ["ALTER SYSTEM RESET ask.api_key", "ALTER SYSTEM RESET ask.base_url", "SELECT pg_reload_conf()"] {
            let _ = c.batch_execute(sql);
        }
    }
}

/// Sets the key and base URL server-wide and waits until new sessions see them.
fn configure_server_wide(c: &mut Client, base_url: &str) -> ServerWide {
    for sql in [
        format!("ALTER SYSTEM SET ask.base_url = '{base_url}'"),
        format!("ALTER SYSTEM SET ask.api_key = '{KEY}'"),
        "SELECT pg_reload_conf()".to_string(),
    ] {
        c.batch_execute(&sql).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut fresh = connect();
        let shown: String = fresh.query_one("SHOW ask.api_key", &[]).unwrap().get(0);
        let url: String = fresh.query_one("SHOW ask.base_url", &[]).unwrap().get(0);
        if shown == "********" && url == base_url {
            return ServerWide;
        }
        assert!(Instant::now() < deadline, "the reload never reached new sessions");
        thread::sleep(Duration::from_millis(50));
    }
}

/// The tests change server-wide settings and share a role: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn prepare(c: &mut Client) {
    c.batch_execute(&format!(
        "DO $$ BEGIN
           IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{NOBODY}') THEN CREATE ROLE {NOBODY} LOGIN; END IF;
         END $$;
         GRANT SELECT ON it_cities TO {NOBODY};"
    ))
    .unwrap();
    let exists: bool = c.query_one("SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", &[&NO_EXTENSION_DB]).unwrap().get(0);
    if !exists {
        c.batch_execute(&format!("CREATE DATABASE {NO_EXTENSION_DB}")).unwrap();
    }
}

/// Every way a role could read a setting, each of which must fail or show no key.
const PROBES: &[&str] = &[
    "SHOW ask.api_key",
    "SELECT current_setting('ask.api_key')",
    "SELECT current_setting('ask.api_key', true)",
    "SELECT concat_ws(' ', name, setting, reset_val, boot_val) FROM pg_settings",
    "SELECT concat_ws(' ', name, setting) FROM pg_file_settings",
    "SELECT setconfig::text FROM pg_db_role_setting",
    "SELECT umoptions::text FROM pg_user_mappings",
    "SHOW ALL",
];

/// Runs `probe` in `c`; returns what it printed, or the error's SQLSTATE.
fn run_probe(c: &mut Client, probe: &str) -> String {
    match c.simple_query(probe) {
        Ok(messages) => {
            let mut out = String::new();
            for m in messages {
                if let postgres::SimpleQueryMessage::Row(row) = m {
                    for i in 0..row.len() {
                        out.push_str(row.get(i).unwrap_or(""));
                        out.push(' ');
                    }
                }
            }
            out
        }
        Err(e) => format!("error {}", sqlstate(&e)),
    }
}

fn assert_no_key(db: &str, when: &str, probe: &str, out: &str) {
    assert!(!out.contains(KEY), "{NOBODY} read the key in {db} ({when}) with {probe:?}: {out}");
}

#[test]
fn a_role_without_privileges_never_reads_the_key() {
    let llm = StandIn::start(Script::default().or_else(Reply::text("ROWS"))).unwrap();
    let _serial = one_at_a_time();
    let mut c = connect();
    prepare(&mut c);
    let _reset = configure_server_wide(&mut c, &format!("{}/v1", llm.url()));

    for db in ["postgres", NO_EXTENSION_DB] {
        // Each probe as the first statement of a fresh session.
        for probe in PROBES {
            let mut s = connect_to(NOBODY, db);
            let out = run_probe(&mut s, probe);
            assert_no_key(db, "first statement", probe, &out);
            if probe.starts_with("SHOW ask") || probe.starts_with("SELECT current_setting('ask.api_key')") {
                assert_eq!(out, "error 42501", "{probe} in {db}");
            }
        }
    }
    // After calling pg_ask in the same session, in the database that has it.
    for probe in PROBES {
        let mut s = connect_to(NOBODY, "postgres");
        s.batch_execute("SELECT ask.embed('load pg_ask')").unwrap();
        let out = run_probe(&mut s, probe);
        assert_no_key("postgres", "after calling pg_ask", probe, &out);
    }
}

#[test]
fn settings_every_role_can_read_are_refused() {
    let _serial = one_at_a_time();
    let mut c = connect();
    prepare(&mut c);
    for sql in [
        format!("ALTER DATABASE {NO_EXTENSION_DB} SET ask.api_key = '{KEY}'"),
        format!("ALTER ROLE {NOBODY} SET ask.api_key = '{KEY}'"),
        format!("ALTER ROLE {NOBODY} IN DATABASE postgres SET ask.api_key = '{KEY}'"),
        format!("ALTER ROLE ALL IN DATABASE postgres SET ask.api_key = '{KEY}'"),
        format!("ALTER ROLE ALL SET ask.api_key = '{KEY}'"),
        format!("CREATE FUNCTION it_key_fn() RETURNS int LANGUAGE sql SET ask.api_key = '{KEY}' RETURN 1"),
    ] {
        let err = c.batch_execute(&sql).unwrap_err();
        assert_eq!(sqlstate(&err), "22023", "{sql}: {}", message(&err));
        assert!(message(&err).contains("ask.api_key may not be set per database, per role"), "{sql}: {}", message(&err));
        assert!(!format!("{err:?}").contains(KEY), "the error repeats the key: {err:?}");
        let hint = err.as_db_error().and_then(|d| d.hint()).unwrap_or_default().to_string();
        assert!(hint.contains("ALTER SYSTEM SET ask.api_key"), "{hint}");
    }
    let stored: i64 = c
        .query_one("SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ' ') LIKE '%ask.api_key%'", &[])
        .unwrap()
        .get(0);
    assert_eq!(stored, 0);
    // Emptying it is harmless and allowed.
    c.batch_execute(&format!("ALTER ROLE {NOBODY} SET ask.api_key = ''; ALTER ROLE {NOBODY} RESET ask.api_key")).unwrap();
}

#[test]
fn ask_sends_the_key_to_the_configured_server_only() {
    let script = || {
        Script::default()
            .rule(Rule::new(&["<schema>", "how many cities"], Reply::text("SELECT count(*) AS n FROM public.it_cities")))
            .rule(Rule::new(&["<result", "how many cities"], Reply::text("ROWS")))
    };
    let configured = StandIn::start(script()).unwrap();
    let elsewhere = StandIn::start(script()).unwrap();
    let _serial = one_at_a_time();
    let mut c = connect();
    prepare(&mut c);
    let _reset = configure_server_wide(&mut c, &format!("{}/v1", configured.url()));

    // A role without privileges beyond the table: the key goes to the configured server, as a
    // bearer token (the openai protocol).
    let mut s = connect_to(NOBODY, "postgres");
    s.batch_execute("SET ask.provider = 'openai'").unwrap();
    let rows = s.query("SELECT ask('how many cities?')", &[]).unwrap();
    assert_eq!(rows.len(), 1);
    let sent = configured.requests();
    assert!(!sent.is_empty());
    for r in &sent {
        assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()), "{}", r.path);
    }

    // The same role pointing pg_ask at a server of its own gets its answer, without the key.
    s.batch_execute(&format!("SET ask.base_url = '{}/v1'", elsewhere.url())).unwrap();
    s.query("SELECT ask('how many cities?')", &[]).unwrap();
    let other = elsewhere.requests();
    assert!(!other.is_empty());
    for r in &other {
        assert_eq!(r.header("authorization"), None, "the key went to a server the role chose");
    }
    // Nor through a per-call override.
    elsewhere.clear_requests();
    s.batch_execute("RESET ask.base_url").unwrap();
    s.query(&format!("SELECT ask('how many cities?', base_url => '{}/v1')", elsewhere.url()), &[]).unwrap();
    assert!(elsewhere.requests().iter().all(|r| r.header("authorization").is_none()));

    // Anthropic's protocol carries it as x-api-key. The server-wide URL is the openai one
    // (with /v1), so the role's session, pointed at the bare URL, sends no key and the server
    // refuses it; a superuser's session sends it.
    configured.clear_requests();
    let mut a = connect_to(NOBODY, "postgres");
    a.batch_execute(&format!("SET ask.provider = 'anthropic'; SET ask.base_url = '{}'", configured.url())).unwrap();
    let err = a.query("SELECT ask('how many cities?')", &[]).unwrap_err();
    assert_eq!(sqlstate(&err), "28000", "{}", message(&err));
    assert!(configured.requests().iter().all(|r| r.header("x-api-key").is_none()));
    let mut su = connect();
    su.batch_execute(&format!("SET ask.provider = 'anthropic'; SET ask.base_url = '{}'", configured.url())).unwrap();
    configured.clear_requests();
    su.query("SELECT ask('how many cities?')", &[]).unwrap();
    let sent = configured.requests();
    assert!(!sent.is_empty());
    for r in &sent {
        assert_eq!(r.header("x-api-key"), Some(KEY), "{}", r.path);
    }
}

#[test]
fn generated_sql_never_hands_the_key_out() {
    let llm = StandIn::start(
        Script::default()
            .rule(Rule::new(
                &["<schema>", "settings directly"],
                Reply::text("SELECT reset_val FROM pg_settings WHERE name = 'ask.api_key'"),
            ))
            .rule(Rule::new(&["<schema>", "what key"], Reply::text("SELECT current_setting('ask.api_key') AS k")))
            .rule(Rule::new(
                &["<schema>", "through a view"],
                Reply::text("SELECT reset_val FROM public.it_key_conf WHERE name = 'ask.api_key'"),
            ))
            .rule(Rule::new(&["<result"], Reply::text("The value is shown above."))),
    )
    .unwrap();
    let _serial = one_at_a_time();
    let mut c = connect();
    prepare(&mut c);
    let _reset = configure_server_wide(&mut c, &format!("{}/v1", llm.url()));
    let mut su = connect();
    // A view over pg_settings or pg_file_settings would not do: pg_settings never lists the
    // key, and pg_file_settings is volatile, so the database layer refuses it. A table someone
    // stored the key in is the way left.
    su.batch_execute(&format!(
        "DROP TABLE IF EXISTS public.it_key_conf;
         CREATE TABLE public.it_key_conf AS SELECT 'ask.api_key'::text AS name, '{KEY}'::text AS reset_val;
         SET ask.max_attempts = 1;"
    ))
    .unwrap();
    // Refused by the guard, for a superuser too.
    for q in ["settings directly", "what key"] {
        let err = su.query_one(&format!("SELECT ask('{q}')"), &[]).unwrap_err();
        assert_eq!(sqlstate(&err), "2F003", "{q}: {}", message(&err));
        assert!(!format!("{err:?}").contains(KEY));
    }
    // The rows come back scrubbed, and the answer stage
    // never sees the key.
    let rows = su.query("SELECT r::text FROM ask.rows('through a view') AS r", &[]).unwrap();
    let text: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
    assert!(!text.is_empty());
    assert!(text.iter().all(|t| !t.contains(KEY) && t.contains("[redacted]")), "{text:?}");
    let answer: String = su.query_one("SELECT ask('through a view')", &[]).unwrap().get(0);
    assert!(!answer.contains(KEY));
    for r in llm.requests() {
        assert!(!r.body.to_string().contains(KEY), "a request body carried the key: {}", r.path);
    }
    su.batch_execute("DROP TABLE public.it_key_conf").unwrap();
}
