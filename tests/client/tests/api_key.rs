//! The LLM API key, set the README's way (`ALTER SYSTEM SET ask.api_key`, pg_ask in
//! `shared_preload_libraries`), is unreadable by a role without privileges from the first
//! statement of every session, in a database with the extension and in one without; settings
//! of the key that every role could read are refused; generated SQL never hands it out; and
//! `ask()` still sends it, to the server configured server-wide only. In a cluster of its own
//! without pg_ask preloaded, a key is not stored (every role's next session could read it),
//! and a stored one neither stops the server nor is taken.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, connect_as_is, connect_to, message, sqlstate};
use postgres::{Client, NoTls};

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

/// A throwaway cluster of the test PostgreSQL's major (its binaries, pg_ask as installed for
/// it), run as `postgres`, trusting local connections; stopped and removed when dropped.
struct OwnCluster {
    dir: PathBuf,
    bindir: String,
}

/// Runs a PostgreSQL program as `postgres` (through runuser when the tests run as root).
fn as_postgres(program: &str, args: &[&str]) -> std::process::Output {
    let root = Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false);
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", program]);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args).output().unwrap_or_else(|e| panic!("run {program}: {e}"))
}

impl OwnCluster {
    fn init(name: &str) -> OwnCluster {
        let bindir: String =
            connect_as_is().query_one("SELECT setting FROM pg_catalog.pg_config WHERE name = 'BINDIR'", &[]).unwrap().get(0);
        let dir = std::env::temp_dir().join(format!("pg_ask-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let _ = Command::new("chown").args(["postgres:", dir.to_str().unwrap()]).output();
        let cluster = OwnCluster { dir, bindir };
        let out = as_postgres(&cluster.program("initdb"), &["-D", &cluster.data(), "-A", "trust", "-U", "postgres", "--locale=C"]);
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        cluster
    }

    fn program(&self, name: &str) -> String {
        format!("{}/{name}", self.bindir)
    }

    fn data(&self) -> String {
        self.dir.join("data").to_str().unwrap().to_string()
    }

    /// Starts it, with pg_ask in shared_preload_libraries or without; false when it did not
    /// start.
    fn start(&self, preload: bool) -> bool {
        let mut options = format!("-p 5432 -k {} -c listen_addresses=''", self.dir.display());
        if preload {
            options.push_str(" -c shared_preload_libraries=pg_ask");
        }
        let log = self.dir.join("log");
        as_postgres(&self.program("pg_ctl"), &["-D", &self.data(), "-l", log.to_str().unwrap(), "-w", "-o", &options, "start"])
            .status
            .success()
    }

    fn stop(&self) {
        as_postgres(&self.program("pg_ctl"), &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }

    fn connect(&self, user: &str) -> Client {
        let info = format!("host={} port=5432 user={user} dbname=postgres", self.dir.display());
        Client::connect(&info, NoTls).unwrap_or_else(|e| panic!("connect to the own cluster ({info}): {e}"))
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        as_postgres(&self.program("pg_ctl"), &["-D", &self.data(), "-m", "immediate", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_key_is_not_stored_while_pg_ask_is_not_preloaded() {
    let cluster = OwnCluster::init("unpreloaded");
    assert!(cluster.start(false), "the cluster did not start");
    let mut su = cluster.connect("postgres");
    su.batch_execute(&format!("CREATE ROLE {NOBODY} LOGIN")).unwrap();
    su.batch_execute("LOAD 'pg_ask'").unwrap();
    for sql in [format!("ALTER SYSTEM SET ask.api_key = '{KEY}'"), format!("SET ask.api_key = '{KEY}'")] {
        let err = su.batch_execute(&sql).unwrap_err();
        assert_eq!(sqlstate(&err), "55000", "{sql}: {}", message(&err));
        assert!(message(&err).contains("shared_preload_libraries"), "{sql}: {}", message(&err));
        assert!(!format!("{err:?}").contains(KEY), "the error repeats the key: {err:?}");
        let hint = err.as_db_error().and_then(|d| d.hint()).unwrap_or_default().to_string();
        assert!(hint.contains("shared_preload_libraries") && hint.contains("restart"), "{hint}");
    }
    let stored: String = su.query_one("SELECT pg_catalog.pg_read_file('postgresql.auto.conf')", &[]).unwrap().get(0);
    assert!(!stored.contains(KEY), "the key was stored: {stored}");
    // The first statement of every role's next session cannot print what was never stored.
    su.batch_execute("SELECT pg_catalog.pg_reload_conf()").unwrap();
    for probe in ["SHOW ask.api_key", "SELECT current_setting('ask.api_key', true)"] {
        let out = run_probe(&mut cluster.connect(NOBODY), probe);
        assert_no_key("a cluster without the preload", "first statement", probe, &out);
    }
    // Emptying it is harmless and allowed.
    su.batch_execute("ALTER SYSTEM SET ask.api_key = ''").unwrap();
    su.batch_execute("ALTER SYSTEM RESET ask.api_key").unwrap();
}

#[test]
fn a_stored_key_is_taken_at_start_when_preloaded_and_refused_without() {
    let cluster = OwnCluster::init("stored");
    std::fs::write(
        cluster.dir.join("data/postgresql.auto.conf"),
        format!("# Do not edit this file manually!\n# It will be overwritten by the ALTER SYSTEM command.\nask.api_key = '{KEY}'\n"),
    )
    .unwrap();
    // Preloaded: the key is taken at start and at every reload, and hidden from other roles.
    assert!(cluster.start(true), "the preloaded cluster did not start with a stored key");
    let mut su = cluster.connect("postgres");
    su.batch_execute(&format!("CREATE ROLE {NOBODY} LOGIN")).unwrap();
    let shown: String = su.query_one("SHOW ask.api_key", &[]).unwrap().get(0);
    assert_eq!(shown, "********", "the stored key was not taken");
    su.batch_execute("SELECT pg_catalog.pg_reload_conf()").unwrap();
    thread::sleep(Duration::from_millis(300));
    let shown: String = cluster.connect("postgres").query_one("SHOW ask.api_key", &[]).unwrap().get(0);
    assert_eq!(shown, "********", "the stored key was dropped at a reload");
    assert_eq!(run_probe(&mut cluster.connect(NOBODY), "SHOW ask.api_key"), "error 42501");
    drop(su);
    cluster.stop();
    // Not preloaded: the server starts, and a session that loads pg_ask does not take the key
    // (a WARNING, not an error).
    assert!(cluster.start(false), "the cluster did not start without the preload");
    let mut su = cluster.connect("postgres");
    su.batch_execute("LOAD 'pg_ask'").unwrap();
    let shown: String = su.query_one("SHOW ask.api_key", &[]).unwrap().get(0);
    assert_eq!(shown, "", "a key stored while pg_ask is not preloaded was taken");
}
