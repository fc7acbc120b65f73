//! Faults mid-run. Run through `scripts/bench.sh faults`.
//!
//! 1. The LLM server (the stand-in as a process, answering after 20 ms) is killed with SIGKILL
//!    during `CALL ask.benchmark` and during `CALL ask.evaluate`, and started again on the same
//!    port a second later. The CALL either rides over the gap or stops with the service's error;
//!    the same CALL then finishes the run. Every sample and question is recorded exactly once,
//!    and none carries the outage as the model's answer.
//! 2. PostgreSQL is stopped with `-m immediate` during a benchmark batch and started again:
//!    every answer committed before the stop is still there, and the same CALL finishes the run.
//! 3. A backend is terminated during `ask.index_values()`, first on a column never indexed,
//!    then while a column is indexed again: no half-built memory is left, the earlier memory is
//!    intact, and a lookup answers from it.
//!
//! Needs `PGBIN`, `PG_ASK_BENCH_DATA` (the cluster's data directory) and the `llm-standin`
//! binary beside this one. Exits non-zero when a check fails.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pg_ask_it::connect_to;
use postgres::Client;

const DB: &str = "faults";

fn llm_binary() -> PathBuf {
    std::env::current_exe().unwrap().with_file_name("llm-standin")
}

/// The stand-in as a process on `port` (0: any), every chat answered after `delay_ms`. The
/// caller kills and waits for it.
#[allow(clippy::zombie_processes)]
fn start_llm(port: u16, delay_ms: u64) -> (Child, u16) {
    let dir = std::env::temp_dir();
    let script = dir.join("pg_ask_faults_script.json");
    let port_file = dir.join(format!("pg_ask_faults_port_{}", std::process::id()));
    let _ = std::fs::remove_file(&port_file);
    std::fs::write(
        &script,
        serde_json::json!({"rules": [
            {"contains": ["<schema>"], "reply": {"text": "SELECT count(*) FROM public.restaurants"}, "delay_ms": delay_ms},
            {"contains": [], "reply": {"text": "[]"}, "delay_ms": delay_ms}
        ]})
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(llm_binary())
        .args(["--port", &port.to_string(), "--script"])
        .arg(&script)
        .arg("--port-file")
        .arg(&port_file)
        .stdout(Stdio::null())
        .spawn()
        .expect("start llm-standin (built beside this program)");
    let t = Instant::now();
    loop {
        if let Ok(p) = std::fs::read_to_string(&port_file) {
            return (child, p.trim().parse().unwrap());
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("llm-standin did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn count(c: &mut Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).get(0)
}

/// Waits until `sql` counts at least `n` (from another session), or panics after a minute.
fn wait_for(sql: &str, n: i64) {
    let mut c = connect_to("postgres", DB);
    let t = Instant::now();
    while count(&mut c, sql) < n {
        assert!(t.elapsed() < Duration::from_secs(60), "waited a minute for {sql} to reach {n}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `call` on its own session in a thread: its error, if it failed.
fn call_in_thread(call: String) -> std::thread::JoinHandle<Option<String>> {
    std::thread::spawn(move || {
        let mut c = connect_to("postgres", DB);
        c.batch_execute("SET ask.concurrency = 4").unwrap();
        c.batch_execute(&call).err().map(|e| match e.as_db_error() {
            Some(db) => format!("{} {} (hint: {})", db.code().code(), db.message(), db.hint().unwrap_or("")),
            None => e.to_string(),
        })
    })
}

fn check(ok: &mut bool, what: &str, pass: bool) {
    println!("  [{}] {what}", if pass { "ok" } else { "FAILED" });
    *ok &= pass;
}

const RUN_SAMPLES: &str =
    "SELECT count(*) FROM ask.benchmark_samples s JOIN ask.benchmark_runs r ON r.id = s.run_id WHERE r.workload = 'faults'";

/// Runs `call` on a session of its own, kills the LLM server (SIGKILL) once `progress` counts
/// `at`, starts it again on `port` a second later, and runs the same CALL again if the first
/// one stopped. Returns the new server.
fn kill_during(ok: &mut bool, mut llm: Child, port: u16, call: &str, progress: &str, at: i64, what: &str) -> Child {
    let running = call_in_thread(call.to_string());
    wait_for(progress, at);
    llm.kill().unwrap();
    llm.wait().unwrap();
    let at_kill = count(&mut connect_to("postgres", DB), progress);
    std::thread::sleep(Duration::from_secs(1));
    let (llm, _) = start_llm(port, 20);
    let first = running.join().unwrap();
    println!("  killed at {at_kill} {what}; the CALL {}", first.as_deref().map_or("rode over the gap".into(), |e| format!("stopped: {e}")));
    if first.is_some() {
        let again = call_in_thread(call.to_string()).join().unwrap();
        check(ok, "the same CALL resumes and finishes", again.is_none());
    }
    llm
}

fn llm_killed(ok: &mut bool) {
    let (mut llm, port) = start_llm(0, 20);
    let mut c = connect_to("postgres", DB);
    c.batch_execute(&format!(
        "ALTER DATABASE {DB} SET ask.base_url = 'http://127.0.0.1:{port}/v1'; ALTER DATABASE {DB} SET ask.provider = 'openai';
         ALTER DATABASE {DB} SET ask.max_attempts = 1"
    ))
    .unwrap();

    println!("== the LLM server killed (SIGKILL) during CALL ask.benchmark (400 samples)");
    let call = "CALL ask.benchmark('faults', 5, 0.5, 0.5, 400, ARRAY['sql'], ARRAY['few_shot'], 7)";
    llm = kill_during(ok, llm, port, call, RUN_SAMPLES, 100, "samples");
    // (A sample recorded twice would be a primary-key error: the count says all are there.)
    let (samples, outage): (i64, i64) = c
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE s.error ~* 'connect|refused|unreachable|timed out')
               FROM ask.benchmark_samples s JOIN ask.benchmark_runs r ON r.id = s.run_id WHERE r.workload = 'faults'",
            &[],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    let done = count(&mut c, "SELECT count(*) FROM ask.benchmark_runs WHERE workload = 'faults' AND status = 'done'");
    println!("  {samples} samples, {outage} recording the outage, runs done: {done}");
    check(ok, "all 400 samples there, the run done", samples == 400 && done == 1);
    check(ok, "no sample records the outage as the model's answer", outage == 0);

    println!("== the LLM server killed (SIGKILL) during CALL ask.evaluate");
    let total: i64 = count(&mut c, "SELECT count(*) FROM ask.eval_questions WHERE suite = 'faults'");
    let results = "SELECT count(*) FROM ask.eval_results WHERE suite = 'faults' AND run_label = 'killed'";
    let mut llm = kill_during(ok, llm, port, "CALL ask.evaluate('faults', 'killed')", results, 8, "questions");
    let (n, outage): (i64, i64) = c
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE error ~* 'connect|refused|unreachable|timed out')
               FROM ask.eval_results WHERE suite = 'faults' AND run_label = 'killed'",
            &[],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    println!("  {n} results, {outage} recording the outage");
    check(ok, "every question evaluated", n == total);
    check(ok, "no result records the outage as the model's prediction", outage == 0);
    llm.kill().unwrap();
    llm.wait().unwrap();
}

fn pg_ctl(args: &[&str]) {
    let bin = std::env::var("PGBIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into());
    let data = std::env::var("PG_ASK_BENCH_DATA").expect("PG_ASK_BENCH_DATA: the cluster's data directory");
    let log = format!("{data}.log");
    let status = Command::new("runuser")
        .args(["-u", "postgres", "--", &format!("{bin}/pg_ctl"), "-D", &data, "-l", &log, "-w"])
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "pg_ctl {args:?}");
}

fn postgres_stopped(ok: &mut bool) {
    println!("== PostgreSQL stopped with -m immediate during a benchmark batch (300 samples)");
    let (mut llm, port) = start_llm(0, 50);
    let mut c = connect_to("postgres", DB);
    c.batch_execute(&format!("ALTER DATABASE {DB} SET ask.base_url = 'http://127.0.0.1:{port}/v1'")).unwrap();
    let call = "CALL ask.benchmark('faults', 5, 0.5, 0.5, 300, ARRAY['sql'], ARRAY['zero_shot'], 8)".to_string();
    let samples = "SELECT count(*) FROM ask.benchmark_samples s JOIN ask.benchmark_runs r ON r.id = s.run_id
                    WHERE r.workload = 'faults' AND s.prompting = 'zero_shot'";
    let running = call_in_thread(call.clone());
    wait_for(samples, 60);
    // Committed before the stop: at least what another session sees now.
    let seen = count(&mut c, samples);
    drop(c);
    pg_ctl(&["-m", "immediate", "stop"]);
    let first = running.join().unwrap();
    pg_ctl(&["restart"]);
    let mut c = connect_to("postgres", DB);
    let after = count(&mut c, samples);
    println!("  {seen} samples seen committed before the stop, {after} after the restart; the CALL: {}", first.unwrap_or_default());
    check(ok, "nothing committed is lost", after >= seen);
    let again = call_in_thread(call).join().unwrap();
    check(
        ok,
        &format!("the same CALL resumes and finishes{}", again.as_deref().map(|e| format!(": {e}")).unwrap_or_default()),
        again.is_none(),
    );
    let n = count(&mut c, samples);
    check(ok, &format!("all 300 samples there ({n})"), n == 300);
    llm.kill().unwrap();
    llm.wait().unwrap();
}

/// Starts `ask.index_values(rel)` on its own session and terminates that backend `after` it
/// began; returns the session's error.
fn terminated_index(rel: &str, after: Duration) -> String {
    let mut c = connect_to("postgres", DB);
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let rel = rel.to_owned();
    let running =
        std::thread::spawn(move || c.batch_execute(&format!("SET ask.embedding_provider = 'local'; SELECT ask.index_values('{rel}')")));
    std::thread::sleep(after);
    let mut admin = connect_to("postgres", DB);
    let active: bool = admin
        .query_one("SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query ~ 'index_values')", &[&pid])
        .unwrap()
        .get(0);
    assert!(active, "index_values had finished before the terminate: give it a larger table");
    admin.execute("SELECT pg_terminate_backend($1, 10000)", &[&pid]).unwrap();
    running.join().unwrap().err().map(|e| e.to_string()).unwrap_or_else(|| "finished".into())
}

fn index_terminated(ok: &mut bool) {
    println!("== a backend terminated during ask.index_values()");
    let mut c = connect_to("postgres", DB);
    c.batch_execute(
        "DROP TABLE IF EXISTS fault_values; CREATE TABLE fault_values (id int, label text);
         INSERT INTO fault_values SELECT g, 'label number ' || g FROM generate_series(1, 20000) g;",
    )
    .unwrap();
    let memory =
        "SELECT count(*) FROM ask.value_memory m JOIN ask.value_columns v ON v.id = m.column_id WHERE v.relid = 'fault_values'::regclass";
    let columns = "SELECT count(*) FROM ask.value_columns WHERE relid = 'fault_values'::regclass";
    let error = terminated_index("fault_values", Duration::from_secs(3));
    let (m, v) = (count(&mut c, memory), count(&mut c, columns));
    println!("  first build terminated ({error}); left behind: {v} column entries, {m} values");
    check(ok, "a terminated first build leaves no memory", m == 0 && v == 0);

    // A complete memory of 2,000 values, then the table grows and is indexed again.
    c.batch_execute(
        "DELETE FROM fault_values WHERE id > 2000; SET ask.embedding_provider = 'local'; SELECT ask.index_values('fault_values')",
    )
    .unwrap();
    let before = count(&mut c, memory);
    c.batch_execute("INSERT INTO fault_values SELECT g, 'other label ' || g FROM generate_series(2001, 40000) g").unwrap();
    let error = terminated_index("fault_values", Duration::from_secs(3));
    let after = count(&mut c, memory);
    println!("  rebuild terminated ({error}); values remembered before {before}, after {after}");
    check(ok, "a terminated rebuild leaves the earlier memory as it was", before == 2000 && after == before);
    // A lookup answers from the earlier memory, not from a half-built one.
    let (found, newer): (i64, i64) = c
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE s.value LIKE 'other label%')
               FROM ask.similar_values('fault_values', 'label', 'other label 30000', 10) s",
            &[],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    check(
        ok,
        &format!("a lookup answers from the earlier memory ({found} values, {newer} of the unfinished rebuild)"),
        found > 0 && newer == 0,
    );
    c.batch_execute("DROP TABLE fault_values").unwrap();
}

fn main() {
    let what = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let mut c = pg_ask_bench::database(DB);
    let questions = std::fs::read_to_string(pg_ask_bench::repo().join("sample/questions.json")).unwrap();
    c.execute("SELECT ask.load_suite('faults', $1::text::jsonb)", &[&questions]).unwrap();
    let workload = std::fs::read_to_string(pg_ask_bench::repo().join("../shared/datasets/incondb/1_sql.json")).unwrap();
    c.execute("SELECT ask.load_workload('faults', $1::text::jsonb)", &[&workload]).unwrap();
    drop(c);
    let mut ok = true;
    if what == "all" || what == "llm" {
        llm_killed(&mut ok);
    }
    if what == "all" || what == "postgres" {
        postgres_stopped(&mut ok);
    }
    if what == "all" || what == "index" {
        index_terminated(&mut ok);
    }
    if !ok {
        eprintln!("faults: a check failed");
        std::process::exit(1);
    }
}
