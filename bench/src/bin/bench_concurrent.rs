//! Concurrent sessions. Run through `scripts/bench.sh concurrent`.
//!
//! 1. 32 pgbench clients call `ask()` at once for 60 s, on the sample and the defog databases
//!    (schema selection, value correction, the answer stage), the stand-in answering every
//!    request after 200 ms. The ideal throughput is `clients / (LLM calls per ask × 0.2 s)`;
//!    the target is 90 % of it, no failed call, and no session ever waiting on a lock (sampled
//!    from `pg_stat_activity` and `pg_locks` every 100 ms during the run).
//! 2. `CALL ask.evaluate` and `CALL ask.benchmark` from four sessions at once, each its own
//!    run: all complete, every question and sample recorded once, and no lock waits.
//!
//! `CONC_CLIENTS`, `CONC_SECONDS` and `CONC_EMBEDDINGS` (`off` by default: trigram value
//! matching and lexical selection; `local` embeds every question in the backend) change the
//! first part. Exits non-zero when a target is missed.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::connect_to;

const DB: &str = "conc";
const DELAY_MS: u64 = 200;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Samples waits of the database's other sessions until `stop`: (samples, lock waits seen,
/// ungranted locks seen, every wait event seen with its count).
fn sample_waits(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<(u64, u64, u64, BTreeMap<String, u64>)> {
    std::thread::spawn(move || {
        let mut c = connect_to("postgres", "postgres");
        let (mut samples, mut lock_waits, mut ungranted) = (0, 0, 0);
        let mut events = BTreeMap::new();
        while !stop.load(Ordering::Relaxed) {
            for row in c
                .query(
                    "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity
                      WHERE datname = $1 AND backend_type = 'client backend' AND wait_event IS NOT NULL AND pid <> pg_backend_pid()",
                    &[&DB],
                )
                .unwrap()
            {
                let event: String = row.get(0);
                if event.starts_with("Lock:") {
                    lock_waits += 1;
                }
                *events.entry(event).or_insert(0) += 1;
            }
            let n: i64 = c
                .query_one(
                    "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE NOT l.granted AND d.datname = $1",
                    &[&DB],
                )
                .unwrap()
                .get(0);
            ungranted += n as u64;
            samples += 1;
            std::thread::sleep(Duration::from_millis(100));
        }
        (samples, lock_waits, ungranted, events)
    })
}

fn report_waits(what: &str, (samples, lock_waits, ungranted, events): (u64, u64, u64, BTreeMap<String, u64>)) -> bool {
    let shown: Vec<String> = events.iter().map(|(e, n)| format!("{e} {n}")).collect();
    println!(
        "{what}: {samples} samples of the sessions' waits: lock waits {lock_waits}, ungranted locks {ungranted}; waits seen: {}",
        if shown.is_empty() { "none".into() } else { shown.join(", ") }
    );
    lock_waits == 0 && ungranted == 0
}

fn pgbench(clients: usize, seconds: u64) -> (f64, u64, u64, String) {
    let script = std::env::temp_dir().join("pg_ask_conc_ask.sql");
    std::fs::write(&script, "\\set q random(1, 1000000000)\nSELECT ask('which italian restaurants are in LA? ' || :q);\n").unwrap();
    let bin = std::env::var("PGBIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into());
    let host = std::env::var("PG_ASK_IT_HOST").unwrap();
    let port = std::env::var("PG_ASK_IT_PORT").unwrap();
    let out = Command::new("runuser")
        .args(["-u", "postgres", "--", &format!("{bin}/pgbench"), "-n", "-h", &host, "-p", &port])
        .args(["-c", &clients.to_string(), "-j", "2", "-T", &seconds.to_string(), "-f"])
        .arg(&script)
        .arg(DB)
        .output()
        .expect("run pgbench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let find = |prefix: &str| -> Option<String> {
        stdout.lines().find_map(|l| l.strip_prefix(prefix)).map(|s| s.split_whitespace().next().unwrap_or("").to_owned())
    };
    let tps: f64 = find("tps = ").and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let done: u64 =
        find("number of transactions actually processed: ").and_then(|s| s.split('/').next().unwrap().parse().ok()).unwrap_or(0);
    let failed: u64 = find("number of failed transactions: ").and_then(|s| s.parse().ok()).unwrap_or(0);
    let errors = stderr.lines().filter(|l| l.contains("ERROR") || l.contains("aborted")).take(5).collect::<Vec<_>>().join("\n");
    if !out.status.success() && errors.is_empty() {
        return (tps, done, failed, format!("pgbench failed: {stderr}"));
    }
    (tps, done, failed, errors)
}

fn asks_at_once(url: &str) -> bool {
    let clients: usize = env_or("CONC_CLIENTS", 32);
    let seconds: u64 = env_or("CONC_SECONDS", 60);
    let embeddings: String = env_or("CONC_EMBEDDINGS", "off".to_string());
    let mut c = connect_to("postgres", DB);
    c.batch_execute(&format!(
        "ALTER DATABASE {DB} SET ask.base_url = '{url}/v1'; ALTER DATABASE {DB} SET ask.provider = 'openai';
         ALTER DATABASE {DB} SET ask.embedding_provider = '{embeddings}';"
    ))
    .unwrap();
    let mut c = connect_to("postgres", DB);
    c.batch_execute("SELECT ask.index_values('public.cities'); SELECT ask.index_values('public.restaurants'); SELECT ask.index_schema();")
        .unwrap();
    let s: String = c.query_one("SELECT ask.explain('which italian restaurants are in LA?')::text", &[]).unwrap().get(0);
    let trace: serde_json::Value = serde_json::from_str(&s).unwrap();
    let calls = trace["llm_calls"].as_u64().unwrap();
    let stages: Vec<&str> = trace["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    println!(
        "one ask(): {calls} LLM calls, {:.0} ms; stages {}; SQL {}",
        trace["ms"].as_f64().unwrap(),
        stages.join(" → "),
        trace["final_sql"]
    );
    let ideal = clients as f64 / (calls as f64 * DELAY_MS as f64 / 1000.0);
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_waits(stop.clone());
    let (tps, done, failed, errors) = pgbench(clients, seconds);
    stop.store(true, Ordering::Relaxed);
    let waits = sampler.join().unwrap();
    let share = tps / ideal;
    println!(
        "{clients} sessions for {seconds} s, embeddings {embeddings}: {done} ask() calls, {tps:.1}/s of an ideal {ideal:.1}/s ({:.1} %), {failed} failed",
        100.0 * share
    );
    if !errors.is_empty() {
        println!("errors:\n{errors}");
    }
    let no_waits = report_waits("ask() at once", waits);
    let logged: i64 = c.query_one("SELECT count(*) FROM ask.questions", &[]).unwrap().get(0);
    println!("call log rows: {logged}");
    share >= 0.9 && failed == 0 && errors.is_empty() && no_waits
}

fn procedures_at_once() -> bool {
    let mut c = connect_to("postgres", DB);
    let questions = std::fs::read_to_string(pg_ask_bench::repo().join("sample/questions.json")).unwrap();
    let total: i32 = c.query_one("SELECT ask.load_suite('conc', $1::text::jsonb)", &[&questions]).unwrap().get(0);
    let workload = std::fs::read_to_string(pg_ask_bench::repo().join("../shared/datasets/incondb/1_sql.json")).unwrap();
    c.execute("SELECT ask.load_workload('conc', $1::text::jsonb)", &[&workload]).unwrap();
    let samples = 200;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_waits(stop.clone());
    let t = Instant::now();
    let sessions: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = connect_to("postgres", DB);
                c.batch_execute("SET ask.concurrency = 4").unwrap();
                let e = c
                    .batch_execute(&format!("CALL ask.evaluate('conc', 'session {i}')"))
                    .err()
                    .map(|e| format!("evaluate in session {i}: {e:?}"));
                let b = c
                    .batch_execute(&format!(
                        "CALL ask.benchmark('conc', 5, 0.5, 0.5, {samples}, ARRAY['sql'], ARRAY['few_shot'], {})",
                        100 + i
                    ))
                    .err()
                    .map(|e| format!("benchmark in session {i}: {e:?}"));
                e.into_iter().chain(b).collect::<Vec<_>>()
            })
        })
        .collect();
    let errors: Vec<String> = sessions.into_iter().flat_map(|s| s.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    let waits = sampler.join().unwrap();
    println!(
        "4 sessions: CALL ask.evaluate ({total} questions) then CALL ask.benchmark ({samples} samples) each, {:.1} s",
        t.elapsed().as_secs_f64()
    );
    for e in &errors {
        println!("  error: {e}");
    }
    // (Results and samples are keyed by run and question or sample: none can be there twice.)
    let (runs, results): (i64, i64) = c
        .query_one("SELECT count(DISTINCT run_label), count(*) FROM ask.eval_results WHERE suite = 'conc'", &[])
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    let (bruns, bsamples): (i64, i64) = c
        .query_one(
            "SELECT count(DISTINCT s.run_id), count(*) FROM ask.benchmark_samples s
               JOIN ask.benchmark_runs r ON r.id = s.run_id WHERE r.workload = 'conc' AND r.status = 'done'",
            &[],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    println!("  evaluate: {runs} runs, {results} results; benchmark: {bruns} finished runs, {bsamples} samples");
    let complete = runs == 4 && results == 4 * total as i64 && bruns == 4 && bsamples == 4 * samples;
    let no_waits = report_waits("procedures at once", waits);
    errors.is_empty() && complete && no_waits
}

fn main() {
    let what = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    drop(pg_ask_bench::database(DB));
    let delay = |r: Rule| r.delay(DELAY_MS);
    let llm = StandIn::start(
        Script::default()
            .rule(delay(Rule::new(
                &["<schema>"],
                Reply::text(
                    "```sql\nSELECT r.name, r.neighborhood FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id \
                     WHERE c.name = 'LA' AND r.cuisine = 'italian' ORDER BY r.name\n```",
                ),
            )))
            .rule(delay(Rule::new(&["You answer a question"], Reply::text("{\"answer\": \"ROWS\"}"))))
            .rule(delay(Rule::new(&[], Reply::text("[]")))),
    )
    .unwrap();
    let mut ok = true;
    if what == "all" || what == "ask" {
        ok &= asks_at_once(&llm.url());
    }
    if what == "all" || what == "procedures" {
        let mut c = connect_to("postgres", DB);
        c.batch_execute(&format!(
            "ALTER DATABASE {DB} SET ask.base_url = '{}/v1'; ALTER DATABASE {DB} SET ask.provider = 'openai'",
            llm.url()
        ))
        .unwrap();
        ok &= procedures_at_once();
    }
    if !ok {
        eprintln!("concurrent sessions: a target was missed");
        std::process::exit(1);
    }
}
