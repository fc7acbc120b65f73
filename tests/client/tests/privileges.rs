//! pg_ask attacked by roles without privileges: the security review's findings, one test each.
//!
//! Every test here plays an attack against the privilege model of DESIGN.md §4.1 and asserts
//! what must hold afterwards:
//!
//! - code that runs as another role (the value-memory trigger) never takes where data or the
//!   key goes from the writer's session, and its internal entry point is not callable;
//! - workloads and benchmark runs belong to the role that made them: another role neither
//!   replaces, sees, steps nor finishes them, and a workload's "truth" queries never read the
//!   running role's real tables or catalogs;
//! - what pg_ask stores from user tables (the shadow log, the value memory) is read back only
//!   under the table's privileges and row-level security as they are at reading time;
//! - ordinary roles create, comment and drop their own (shadowed) tables with pg_ask installed,
//!   and an operator planted in a writable schema never runs inside pg_ask as the superuser;
//! - a user function declared STABLE is no way past the guard (an allow-list is, set by a
//!   superuser);
//! - responses are bounded, data in prompts cannot close its tag, and embeddings count against
//!   the role's token budget.
//!
//! They run against the test PostgreSQL of `scripts/test.sh` (pg_ask preloaded, trust
//! authentication), several at a time. Every role, table and workload is named `pv_…` and is
//! unique to its test (the benchmark tests share `pv_victim` and `pv_thief`); roles survive
//! runs and are reused. Tests that change server-wide settings or plant objects every session
//! would see take their file's lock exclusively; the others share it (cargo runs the test files
//! one after another).
//!
//! This file holds findings 1 and 2 (the value memory's trigger; workloads and benchmark runs);
//! `privileges_tables.rs` 3 to 5 (what pg_ask stores from tables with row-level security, DDL),
//! `privileges_llm.rs` 6 and 7 (functions in generated SQL, what goes to and comes from the
//! LLM). Their helpers are in `common/mod.rs`.

mod common;

use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use llm_standin::{Reply, Script, StandIn};
use pg_ask_it::{connect, connect_to, use_llm};
use postgres::Client;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// 1. The value memory's trigger

/// A role with INSERT (not SELECT) on a table whose owner keeps its value memory current
/// points its own session's embedding settings at its server, then calls the trigger's entry
/// point directly and writes a row. The entry point is refused, the write still refreshes the
/// memory, with the server's settings, and nothing reaches the writer's server.
#[test]
fn refresh_as_owner_cannot_be_called_and_the_trigger_uses_server_settings() {
    let legit = StandIn::start(Script::reply_always("SELECT 1")).unwrap();
    let attacker = StandIn::start(Script::reply_always("SELECT 1")).unwrap();
    let _x = exclusive();
    let mut su = connect();
    ensure_role("pv_writer");
    must(
        &mut su,
        "creating pv_secret",
        "DROP TABLE IF EXISTS public.pv_secret;
         CREATE TABLE public.pv_secret (id int PRIMARY KEY, secret text);
         INSERT INTO public.pv_secret VALUES (1, 'alpha-secret-1'), (2, 'alpha-secret-2');
         GRANT INSERT ON public.pv_secret TO pv_writer;",
    );
    must(&mut su, "indexing pv_secret's values", "SELECT ask.index_values('public.pv_secret')");
    must(&mut su, "keeping pv_secret's values current", "SELECT ask.keep_values_current('public.pv_secret')");
    let legit_url = format!("{}/v1", legit.url());
    let _reset = server_wide(&[("ask.api_key", KEY), ("ask.base_url", &legit_url)]);

    let mut w = connect_to("pv_writer", "postgres");
    // The writer's own settings; a refusal to set them is a defence too.
    let set_provider = attempt(&mut w, "SET ask.embedding_provider = 'openai'");
    let set_url = attempt(&mut w, &format!("SET ask.embedding_base_url = '{}/v1'", attacker.url()));
    eprintln!("pv_writer's SETs: provider {set_provider:?}, embedding_base_url {set_url:?}");
    let direct = attempt(&mut w, "SELECT ask._refresh_values_as_owner('public.pv_secret'::regclass::oid)");
    let insert = attempt(&mut w, "INSERT INTO public.pv_secret VALUES (3, 'alpha-secret-3')");

    let stolen = attacker.requests();
    for r in &stolen {
        for (name, value) in &r.headers {
            assert!(!value.contains(KEY), "the API key went to pv_writer's server in header {name} of {}", r.path);
        }
    }
    assert!(
        stolen.is_empty(),
        "pv_writer's server received {} requests carrying pv_secret's values, e.g. {:?}",
        stolen.len(),
        stolen.iter().map(|r| r.prompt.chars().take(200).collect::<String>()).collect::<Vec<_>>()
    );
    assert!(is_denied(&direct), "pv_writer called ask._refresh_values_as_owner() directly: {direct:?}");
    insert.unwrap_or_else(|f| panic!("pv_writer's INSERT into pv_secret failed: {f}"));

    // The trigger did refresh, as the owner with the server's settings.
    let found = must(
        &mut su,
        "looking up the new value",
        "SELECT value FROM ask.similar_values('public.pv_secret', 'secret', 'alpha-secret-3', 5)",
    );
    assert!(found.iter().any(|v| v == "alpha-secret-3"), "the trigger did not refresh pv_secret's memory: {found:?}");
}

// ---------------------------------------------------------------------------------------------
// 2. Workloads and benchmark runs

/// Both benchmark roles, allowed to load workloads and run benchmarks (CREATE on the database).
fn benchmark_roles() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        ensure_role("pv_victim");
        ensure_role("pv_thief");
        setup_sql("GRANT CREATE ON DATABASE postgres TO pv_victim, pv_thief");
    });
}

/// A tiny workload in InConDB's format: one table `table (id, secret_col)`, one INSERT,
/// DELETE and UPDATE on it, and every SELECT category holding one of `selects` (in turn), so
/// that a run of four samples draws `selects[0..4]` (the sampler takes the categories in order).
fn tiny_workload(table: &str, selects: &[&str]) -> Value {
    const CATEGORIES: [&str; 10] = [
        "no_filtering",
        "single_filtering",
        "double_filtering",
        "triple_filtering",
        "range_filtering",
        "ranking",
        "count",
        "single_table",
        "double_table",
        "three_table",
    ];
    let select: serde_json::Map<String, Value> =
        CATEGORIES.iter().enumerate().map(|(i, c)| (c.to_string(), json!([selects[i % selects.len()]]))).collect();
    json!({
        "create_tables": [format!("CREATE TABLE {table} (id INT, secret_col VARCHAR(255));")],
        "insert": [format!("INSERT INTO {table} (id, secret_col) VALUES (2, 'scratch-row');")],
        "delete": [format!("DELETE FROM {table} WHERE id = 3;")],
        "update": [format!("UPDATE {table} SET secret_col = 'changed' WHERE id = 2;")],
        "select": select,
    })
}

/// `SELECT ask.load_workload(name, spec)` as text.
fn load_sql(name: &str, spec: &Value) -> String {
    format!("SELECT ask.load_workload('{name}', $pv${spec}$pv$::jsonb)::text")
}

/// pv_victim's own workload `pv_w`, loaded once.
fn victim_workload() {
    static LOADED: OnceLock<()> = OnceLock::new();
    benchmark_roles();
    LOADED.get_or_init(|| {
        let mut v = connect_to("pv_victim", "postgres");
        let spec = tiny_workload("pv_items", &["SELECT id, secret_col FROM pv_items;", "SELECT count(*) FROM pv_items;"]);
        let summary = must(&mut v, "pv_victim loading pv_w", &load_sql("pv_w", &spec));
        let summary: Value = serde_json::from_str(&summary[0]).unwrap();
        assert_eq!(summary["skipped"], 0, "pv_w must load whole: {summary}");
    });
}

/// The benchmark call every test here makes, for `workload` and `seed`.
fn benchmark_call(workload: &str, seed: i32) -> String {
    format!("CALL ask.benchmark('{workload}', 2, 0.5, 0.5, 4, ARRAY['sql'], ARRAY['zero_shot'], {seed})")
}

/// One role loads a workload; another loading one of the same name neither replaces it nor
/// takes it over.
#[test]
fn a_workload_belongs_to_the_role_that_loaded_it() {
    let _s = shared();
    let mut su = connect();
    victim_workload();
    let stored = |su: &mut Client| {
        must(su, "reading pv_w", "SELECT spec::text || ' loaded by ' || loaded_by FROM ask.workloads WHERE name = 'pv_w'")
    };
    let before = stored(&mut su);
    assert_eq!(before.len(), 1);
    assert!(before[0].ends_with("loaded by pv_victim"), "{before:?}");

    let mut thief = connect_to("pv_thief", "postgres");
    let spec = tiny_workload("pv_items", &["SELECT secret_col FROM pv_items WHERE id = 666;"]);
    let taken = attempt(&mut thief, &load_sql("pv_w", &spec));

    assert_eq!(stored(&mut su), before, "pv_thief replaced pv_victim's workload pv_w");
    assert!(matches!(&taken, Err(f) if f.code == DENIED), "pv_thief's load_workload('pv_w') was not refused with 42501: {taken:?}");
}

/// A workload loaded by one role and run by another: its queries may name the runner's real
/// tables (schema-qualified) and the catalogs; the truths stored for the run hold none of it.
#[test]
fn benchmark_truth_never_reads_user_tables() {
    let llm = StandIn::start(Script::reply_always("[]")).unwrap();
    let _s = shared();
    let mut su = connect();
    benchmark_roles();
    must(
        &mut su,
        "creating pv_vsecret",
        "DROP TABLE IF EXISTS public.pv_vsecret;
         CREATE TABLE public.pv_vsecret (id int, secret_col text);
         INSERT INTO public.pv_vsecret VALUES (1, 'vsecret-XYZ');
         GRANT SELECT ON public.pv_vsecret TO pv_victim;",
    );

    // pv_thief's workload: a table of the same name, and queries that read past it.
    let mut thief = connect_to("pv_thief", "postgres");
    let spec = tiny_workload(
        "pv_vsecret",
        &[
            "SELECT id, secret_col FROM public.pv_vsecret;",
            "SELECT rolname, rolpassword FROM pg_authid;",
            "SELECT rolname, rolpassword FROM pg_catalog.pg_authid;",
            "SELECT secret_col FROM public.pv_vsecret WHERE id = 1;",
        ],
    );
    let loaded = attempt(&mut thief, &load_sql("pv_evil", &spec));
    match &loaded {
        Ok(rows) => {
            let summary: Value = serde_json::from_str(&rows[0]).unwrap();
            assert_eq!(summary["skipped"], 0, "the attack's queries must all load, or the test proves nothing: {summary}");
        }
        Err(f) => panic!("loading pv_thief's workload failed ({f}): the test would prove nothing"),
    }

    let mut victim = connect_to("pv_victim", "postgres");
    use_llm(&mut victim, &llm.url());
    let ran = attempt(&mut victim, &benchmark_call("pv_evil", 1));
    // The run goes through: the statements that read past the workload score as failures.
    assert!(ran.is_ok(), "pv_victim's run of pv_evil failed: {ran:?}");

    let leaks = must(
        &mut su,
        "reading the truths",
        "SELECT s.run_id || ' sample ' || s.sample || ': ' || s.query || ' -> ' || s.truth::text
           FROM ask.benchmark_samples s
          WHERE s.truth::text LIKE '%vsecret-XYZ%' OR s.truth::text LIKE '%SCRAM-SHA-256$%' OR s.truth::text ~ 'md5[0-9a-f]{32}'",
    );
    assert!(leaks.is_empty(), "benchmark truths hold the runner's data or password hashes: {leaks:#?}");
    let samples = count(
        &mut su,
        "SELECT count(*) FROM ask.benchmark_samples s JOIN ask.benchmark_runs r ON r.id = s.run_id
          WHERE r.workload = 'pv_evil' AND r.started_by = 'pv_victim'::regrole",
    )
    .unwrap();
    assert_eq!(samples, 4, "pv_victim's run of pv_evil finished without its four answers");
}

/// A workload's `create_tables` may hold a statement that is no CREATE TABLE (a SELECT calling
/// the author's function), a table whose column default calls it, and statements that advance
/// the author's sequence: none of them runs as the role that runs the benchmark.
#[test]
fn workload_statements_run_nothing_of_the_authors() {
    let llm = StandIn::start(Script::reply_always("[]")).unwrap();
    let _s = shared();
    let mut su = connect();
    benchmark_roles();
    must(
        &mut su,
        "preparing pv_thief's schema",
        "CREATE SCHEMA IF NOT EXISTS pv_thief_s AUTHORIZATION pv_thief;
         GRANT USAGE ON SCHEMA pv_thief_s TO PUBLIC;",
    );
    let mut thief = connect_to("pv_thief", "postgres");
    must(
        &mut thief,
        "pv_thief's traps",
        "DROP TABLE IF EXISTS pv_thief_s.ran; CREATE TABLE pv_thief_s.ran (who text);
         GRANT INSERT ON pv_thief_s.ran TO PUBLIC;
         CREATE OR REPLACE FUNCTION pv_thief_s.pwn() RETURNS int LANGUAGE plpgsql AS
           $$ BEGIN INSERT INTO pv_thief_s.ran VALUES (current_user); RETURN 1; END $$;
         GRANT EXECUTE ON FUNCTION pv_thief_s.pwn() TO PUBLIC;
         DROP SEQUENCE IF EXISTS pv_thief_s.seq; CREATE SEQUENCE pv_thief_s.seq;
         GRANT USAGE ON SEQUENCE pv_thief_s.seq TO PUBLIC;",
    );
    let mut spec = tiny_workload("pv_trapped", &["SELECT id FROM pv_trapped;"]);
    spec["create_tables"] = json!([
        "CREATE TABLE pv_trapped (id INT, secret_col VARCHAR(255));",
        "SELECT pv_thief_s.pwn();",
        "CREATE TABLE pv_defaulted (id INT DEFAULT pv_thief_s.pwn());"
    ]);
    spec["insert"] = json!([
        "INSERT INTO pv_trapped (id, secret_col) SELECT nextval('pv_thief_s.seq'), 'x';",
        "INSERT INTO pv_defaulted (id) VALUES (DEFAULT);"
    ]);
    must(&mut thief, "loading pv_trapped", &load_sql("pv_trapped", &spec));
    let mut victim = connect_to("pv_victim", "postgres");
    use_llm(&mut victim, &llm.url());
    let ran = attempt(&mut victim, &benchmark_call("pv_trapped", 3));
    // The table whose default calls pv_thief's function refuses the whole run.
    match &ran {
        Ok(rows) => panic!("pv_victim's run of pv_trapped went through: {rows:?}"),
        Err(f) => assert!(f.code == "42501" && f.message.contains("pv_thief_s.pwn"), "the run is refused for its tables: {f}"),
    }
    let called = count(&mut su, "SELECT count(*) FROM pv_thief_s.ran").unwrap();
    assert_eq!(called, 0, "pv_thief's function ran as pv_victim during the benchmark");
    let advanced = count(&mut su, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM pv_thief_s.seq").unwrap();
    assert_eq!(advanced, 0, "a workload statement advanced pv_thief's sequence as pv_victim");
}

/// A view runs its owner's code when read: the value memory takes tables and materialized
/// views only, so a superuser's refresh cannot run a role's view function with its rights.
#[test]
fn a_view_is_not_indexed() {
    let _s = shared();
    let mut su = connect();
    ensure_table_owner("pv_dr_owner");
    must(&mut su, "dropping the old view", "DROP VIEW IF EXISTS public.pv_view");
    let mut o = connect_to("pv_dr_owner", "postgres");
    must(&mut o, "pv_dr_owner's view", "CREATE VIEW public.pv_view AS SELECT 'x'::text AS c");
    match attempt(&mut o, "SELECT ask.index_values('public.pv_view')") {
        Ok(rows) => panic!("a view was indexed: {rows:?}"),
        Err(f) => assert_eq!(f.code, "42809", "a view is refused as the wrong kind of object: {}", f.message),
    }
    must(&mut o, "dropping the view", "DROP VIEW public.pv_view");
}

/// One role's runs, their answers and results are invisible to another role, which can
/// neither step nor finish them.
#[test]
fn benchmark_runs_are_private() {
    let llm = StandIn::start(Script::reply_always("[]")).unwrap();
    let hang = StandIn::start(Script::default().or_else(Reply::Hang)).unwrap();
    let _s = shared();
    let mut su = connect();
    victim_workload();

    // A finished run with answers.
    let mut victim = connect_to("pv_victim", "postgres");
    use_llm(&mut victim, &llm.url());
    must(&mut victim, "pv_victim's benchmark run", &benchmark_call("pv_w", 1));

    // A run left unfinished: its LLM never answers, and the CALL is cancelled.
    let mut stuck = connect_to("pv_victim", "postgres");
    use_llm(&mut stuck, &hang.url());
    let pid: i32 = stuck.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let call = benchmark_call("pv_w", 2);
    let worker = thread::spawn(move || {
        let r = stuck.batch_execute(&call);
        (stuck, r)
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let running: i64 = loop {
        let id = su
            .query_opt(
                "SELECT id FROM ask.benchmark_runs WHERE started_by = 'pv_victim'::regrole AND workload = 'pv_w' AND seed = 2 AND status = 'running'
                  ORDER BY id DESC LIMIT 1",
                &[],
            )
            .unwrap()
            .map(|r| r.get::<_, i64>(0));
        if let Some(id) = id {
            break id;
        }
        assert!(Instant::now() < deadline, "pv_victim's second run never started");
        thread::sleep(Duration::from_millis(50));
    };
    su.execute("SELECT pg_cancel_backend($1)", &[&pid]).unwrap();
    let (_stuck, r) = worker.join().unwrap();
    assert!(r.is_err(), "the hung run finished");
    hang.set_script(Script::reply_always("[]"));

    let ids: Vec<i64> = su
        .query("SELECT id FROM ask.benchmark_runs WHERE started_by = 'pv_victim'::regrole", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let ids = format!("'{{{}}}'::bigint[]", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
    let answers = count(&mut su, &format!("SELECT count(*) FROM ask.benchmark_samples WHERE run_id = ANY({ids})")).unwrap();
    assert!(answers > 0, "pv_victim's runs have no answers: nothing to hide");
    let state = |su: &mut Client| -> (String, i64) {
        let r = su
            .query_one(
                "SELECT r.status, (SELECT count(*) FROM ask.benchmark_samples s WHERE s.run_id = r.id) FROM ask.benchmark_runs r WHERE r.id = $1",
                &[&running],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    let before = state(&mut su);
    assert_eq!(before.0, "running");

    let mut thief = connect_to("pv_thief", "postgres");
    must(&mut thief, "bounding pv_thief's statements", "SET statement_timeout = '30s'");
    for (what, sql) in [
        ("runs", "SELECT count(*) FROM ask.benchmark_runs WHERE started_by = 'pv_victim'::regrole".to_string()),
        ("runs", format!("SELECT count(*) FROM ask.benchmark_runs WHERE id = ANY({ids})")),
        ("answers", format!("SELECT count(*) FROM ask.benchmark_samples WHERE run_id = ANY({ids})")),
        (
            "answers",
            "SELECT count(*) FROM ask.benchmark_samples s JOIN ask.benchmark_runs r ON r.id = s.run_id WHERE r.started_by = 'pv_victim'::regrole"
                .to_string(),
        ),
        ("results", format!("SELECT count(*) FROM ask.benchmark_results WHERE run = ANY({ids})")),
    ] {
        let seen = visible(&mut thief, &sql);
        assert_eq!(seen, 0, "pv_thief sees {seen} of pv_victim's benchmark {what}: {sql}");
    }
    let finish = attempt(&mut thief, &format!("SELECT ask._benchmark_finish({running})"));
    let step = attempt(&mut thief, &format!("SELECT ask._benchmark_step({running})"));
    let after = state(&mut su);
    assert_eq!(after, before, "pv_thief changed pv_victim's run {running} (status, answers)");
    assert!(is_denied(&finish), "pv_thief's ask._benchmark_finish({running}) was not refused with 42501: {finish:?}");
    assert!(is_denied(&step), "pv_thief's ask._benchmark_step({running}) was not refused with 42501: {step:?}");
}
