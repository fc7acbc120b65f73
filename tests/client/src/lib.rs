//! Client-side integration tests of pg_ask: several sessions, cancellation, timeouts. They run
//! against a PostgreSQL with the extension installed, found through `PG_ASK_IT_HOST` (socket
//! directory or host) and `PG_ASK_IT_PORT`; `scripts/test.sh` starts one for them.

use std::sync::Once;

use postgres::{Client, NoTls};

/// The connection string of the test PostgreSQL (superuser `postgres`, database `postgres`).
pub fn conninfo() -> String {
    let host = std::env::var("PG_ASK_IT_HOST").expect("PG_ASK_IT_HOST: where the test PostgreSQL listens");
    let port = std::env::var("PG_ASK_IT_PORT").unwrap_or_else(|_| "5432".into());
    format!("host={host} port={port} user=postgres dbname=postgres")
}

/// A new session as the superuser `postgres` in the database `postgres`.
pub fn connect() -> Client {
    let mut c = connect_as_is();
    setup(&mut c);
    c
}

/// A connection to the test PostgreSQL as it is, pg_ask not reinstalled (a benchmark that keeps
/// what an earlier run built).
pub fn connect_as_is() -> Client {
    let info = conninfo();
    Client::connect(&info, NoTls).unwrap_or_else(|e| panic!("connect to the test PostgreSQL ({info}): {e}"))
}

/// A new session as `user` in `dbname`, nothing set up (the test cluster trusts local
/// connections, so any existing role may log in).
pub fn connect_to(user: &str, dbname: &str) -> Client {
    let host = std::env::var("PG_ASK_IT_HOST").expect("PG_ASK_IT_HOST: where the test PostgreSQL listens");
    let port = std::env::var("PG_ASK_IT_PORT").unwrap_or_else(|_| "5432".into());
    let info = format!("host={host} port={port} user={user} dbname={dbname}");
    Client::connect(&info, NoTls).unwrap_or_else(|e| panic!("connect to the test PostgreSQL ({info}): {e}"))
}

static SETUP: Once = Once::new();

fn setup(c: &mut Client) {
    SETUP.call_once(|| {
        c.batch_execute(
            "DROP EXTENSION IF EXISTS pg_ask CASCADE;
             CREATE EXTENSION pg_ask CASCADE;
             DROP TABLE IF EXISTS it_cities;
             CREATE TABLE it_cities (id int PRIMARY KEY, name text NOT NULL);
             INSERT INTO it_cities VALUES (1, 'Los Angeles'), (2, 'San Francisco');",
        )
        .expect("set up the test database");
    });
}

/// A new session as the superuser `postgres`, set up as [`connect`] does, whose NOTICEs are
/// collected.
pub fn connect_with_notices() -> (Client, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let _ = connect(); // the shared setup
    let host = std::env::var("PG_ASK_IT_HOST").expect("PG_ASK_IT_HOST: where the test PostgreSQL listens");
    let port: u16 = std::env::var("PG_ASK_IT_PORT").unwrap_or_else(|_| "5432".into()).parse().expect("PG_ASK_IT_PORT is a port");
    let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = notices.clone();
    let client = postgres::Config::new()
        .host(&host)
        .port(port)
        .user("postgres")
        .dbname("postgres")
        .notice_callback(move |n| sink.lock().unwrap_or_else(|e| e.into_inner()).push(n.message().to_string()))
        .connect(NoTls)
        .expect("connect to the test PostgreSQL");
    (client, notices)
}

/// A new database `db` (dropped first if it exists) with the sample of `sample/sample.sql`
/// loaded and pg_ask created; a session in it as the superuser `postgres`.
pub fn sample_database(db: &str) -> Client {
    let mut admin = connect_as_is();
    // Two statements, not one batch: DROP DATABASE cannot run in a transaction block.
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).expect("drop the database");
    admin.batch_execute(&format!("CREATE DATABASE {db}")).expect("create the database");
    let mut c = connect_to("postgres", db);
    let sample = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/sample.sql"))
        .expect("read sample/sample.sql");
    c.batch_execute(&sample).expect("load sample/sample.sql");
    c.batch_execute("CREATE EXTENSION pg_ask CASCADE").expect("create pg_ask");
    c
}

/// Point the session at a stand-in LLM server.
pub fn use_llm(c: &mut Client, url: &str) {
    c.batch_execute(&format!("SET ask.base_url = '{url}/v1'; SET ask.provider = 'openai'")).unwrap();
}

/// The SQLSTATE of a failed statement.
pub fn sqlstate(e: &postgres::Error) -> String {
    e.code().map(|c| c.code().to_string()).unwrap_or_else(|| format!("no SQLSTATE: {e}"))
}

/// The server's message of a failed statement ("db error" is all `Display` says).
pub fn message(e: &postgres::Error) -> String {
    e.as_db_error().map(|d| d.message().to_string()).unwrap_or_else(|| e.to_string())
}

/// The value at quantile `p` of sorted samples (nearest rank).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Print p50, p95 and max of millisecond samples under `name`.
pub fn report(name: &str, mut v: Vec<f64>) {
    v.sort_by(f64::total_cmp);
    println!(
        "{name:<52} p50 {:>7.2} ms   p95 {:>7.2} ms   max {:>7.2} ms   (n = {})",
        percentile(&v, 0.5),
        percentile(&v, 0.95),
        v[v.len() - 1],
        v.len()
    );
}
