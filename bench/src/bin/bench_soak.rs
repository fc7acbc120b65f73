//! Soak: the memory of one backend over many calls. Run through `scripts/bench.sh soak`.
//!
//! One backend answers, in turn:
//! 1. 10,000 `ask()` calls (after 500 to warm up) on the sample and the defog databases, with
//!    schema selection (`ask.index_schema()`, local embeddings), value correction (the reply's
//!    `'LA'` and `'italian'` corrected from the value memory) and the answer stage;
//! 2. 2,000 `ask.do()` chains (after 100), each a two-step write with a placeholder;
//! 3. a 10,000-sample `CALL ask.benchmark` (after a 500-sample one).
//!
//! The stand-in answers at once. The backend's memory is read from `/proc/PID/status` every
//! tenth of a phase: `RssAnon`, its private memory (heap and anonymous mappings: what a leak
//! grows), and `RssFile`, the file pages it has mapped. The embedding model is mapped from its
//! file and read in place, so `RssFile` grows as questions bring new tokens whose rows of the
//! 47 MB token-embedding table are read the first time; those pages are the page cache's, shared
//! by every backend, bounded by the file and reclaimable. The target is `RssAnon` growth of at
//! most 5 MB after the warm-up; the program exits non-zero when a phase grows more, or when a
//! call fails.
//! `SOAK_SCALE=0.1` runs a tenth of every phase (a quick check).

use std::time::Instant;

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::use_llm;
use postgres::Client;

const LIMIT_KB: i64 = 5 * 1024;

/// (RssAnon, RssFile) of process `pid`, in kB.
fn memory_kb(pid: i32) -> (i64, i64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the backend's /proc status (run on the server's machine)");
    let field = |name: &str| -> i64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name} in /proc/{pid}/status"))
    };
    (field("RssAnon:"), field("RssFile:"))
}

/// The three files whose mapped pages take most of the process's memory: (path, kB).
fn largest_file_mappings(pid: i32) -> Vec<(String, i64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut by_path: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    let mut path = String::new();
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first().is_some_and(|f| f.contains('-') && !f.ends_with(':')) {
            path = fields.get(5).map(|p| p.to_string()).unwrap_or_default();
        } else if fields.first() == Some(&"Rss:") && path.starts_with('/') && !path.starts_with("/dev/") && !path.starts_with("/SYSV") {
            *by_path.entry(path.clone()).or_insert(0) += fields[1].parse::<i64>().unwrap_or(0);
        }
    }
    let mut v: Vec<(String, i64)> = by_path.into_iter().collect();
    v.sort_by_key(|(_, kb)| -kb);
    v.truncate(3);
    v
}

struct Phase {
    name: &'static str,
    pid: i32,
    start: (i64, i64),
    started: Instant,
    calls: usize,
}

impl Phase {
    fn begin(name: &'static str, pid: i32) -> Phase {
        let start = memory_kb(pid);
        println!("{name}: after warm-up RssAnon {} kB, RssFile {} kB", start.0, start.1);
        Phase { name, pid, start, started: Instant::now(), calls: 0 }
    }

    fn tick(&mut self, calls: usize) {
        self.calls = calls;
        let now = memory_kb(self.pid);
        println!(
            "  {calls:>6} calls  {:>7.1} s  RssAnon {:>+7} kB  RssFile {:>+7} kB",
            self.started.elapsed().as_secs_f64(),
            now.0 - self.start.0,
            now.1 - self.start.1
        );
    }

    /// Prints the phase's growth; false when it is over the limit.
    fn end(self) -> bool {
        let now = memory_kb(self.pid);
        let (anon, file) = (now.0 - self.start.0, now.1 - self.start.1);
        let ok = anon <= LIMIT_KB;
        let files: Vec<String> = largest_file_mappings(self.pid).iter().map(|(p, kb)| format!("{p} {kb} kB")).collect();
        println!("  largest mapped files: {}", files.join(", "));
        println!(
            "{}: {} calls in {:.1} s; growth after warm-up: RssAnon {:+} kB (limit {} kB): {}; RssFile {:+} kB",
            self.name,
            self.calls,
            self.started.elapsed().as_secs_f64(),
            anon,
            LIMIT_KB,
            if ok { "ok" } else { "OVER" },
            file
        );
        ok
    }
}

fn scaled(n: usize) -> usize {
    let scale: f64 = std::env::var("SOAK_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    ((n as f64 * scale).round() as usize).max(10)
}

fn stage_names(c: &mut Client, question: &str) -> (Vec<String>, String) {
    let s: String = c.query_one("SELECT ask.explain($1)::text", &[&question]).unwrap().get(0);
    let trace: serde_json::Value = serde_json::from_str(&s).unwrap();
    let names = trace["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap().to_owned()).collect();
    (names, trace["final_sql"].as_str().unwrap_or_default().to_owned())
}

fn asks(c: &mut Client, pid: i32) -> bool {
    c.batch_execute("SELECT ask.index_values('public.cities'); SELECT ask.index_values('public.restaurants'); SELECT ask.index_schema();")
        .expect("build the value and schema memories");
    let (stages, sql) = stage_names(c, "which italian restaurants are in LA?");
    println!("ask() stages: {}; SQL run: {sql}", stages.join(" → "));
    for wanted in ["select", "generate", "correct", "execute", "answer"] {
        assert!(stages.iter().any(|s| s == wanted), "no {wanted} stage in {stages:?}");
    }
    assert!(sql.contains("'Los Angeles'") && sql.contains("'Italian'"), "value correction did not run: {sql}");
    for i in 0..scaled(500) {
        c.query_one("SELECT ask($1)", &[&format!("which italian restaurants are in LA? warm-up {i}")]).unwrap();
    }
    let n = scaled(10_000);
    let mut phase = Phase::begin("ask()", pid);
    for i in 1..=n {
        c.query_one("SELECT ask($1)", &[&format!("which italian restaurants are in LA? ({i})")]).unwrap();
        if i % (n / 10) == 0 {
            phase.tick(i);
        }
    }
    phase.end()
}

const SHOP: &str = "DROP TABLE IF EXISTS soak_stock, soak_moves;
    CREATE TABLE soak_stock (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text NOT NULL, kg numeric NOT NULL);
    CREATE TABLE soak_moves (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, stock_id int NOT NULL REFERENCES soak_stock, kg numeric NOT NULL);";

fn chains(c: &mut Client, pid: i32) -> bool {
    c.batch_execute(SHOP).unwrap();
    c.batch_execute("SET ask.allow_writes = on").unwrap();
    let run = |c: &mut Client, i: usize| {
        let out: String = c.query_one("SELECT ask.do($1)::text", &[&format!("store 5 kg of plums, delivery {i}")]).unwrap().get(0);
        let out: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(out["steps"].as_array().map(Vec::len), Some(2), "{out}");
    };
    for i in 0..scaled(100) {
        run(c, i);
    }
    let n = scaled(2_000);
    let mut phase = Phase::begin("ask.do()", pid);
    for i in 1..=n {
        run(c, i);
        if i % (n / 4) == 0 {
            phase.tick(i);
        }
    }
    let moves: i64 = c.query_one("SELECT count(*) FROM soak_moves", &[]).unwrap().get(0);
    assert_eq!(moves as usize, n + scaled(100), "every chain wrote its rows");
    c.batch_execute("RESET ask.allow_writes; DROP TABLE soak_moves, soak_stock").unwrap();
    phase.end()
}

fn benchmark(c: &mut Client, pid: i32) -> bool {
    let workload = std::fs::read_to_string(pg_ask_bench::repo().join("../shared/datasets/incondb/1_sql.json")).unwrap();
    c.execute("SELECT ask.load_workload('soak', $1::text::jsonb)", &[&workload]).unwrap();
    c.batch_execute(&format!("CALL ask.benchmark('soak', 5, 0.5, 0.5, {}, ARRAY['sql'], ARRAY['few_shot'], 1)", scaled(500))).unwrap();
    let n = scaled(10_000);
    if std::env::var("SOAK_CONTEXTS").is_ok() {
        pg_ask_it::connect_to("postgres", "soak").execute("SELECT pg_log_backend_memory_contexts($1)", &[&pid]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        c.query_one("SELECT 1", &[]).unwrap();
    }
    let mut phase = Phase::begin("CALL ask.benchmark", pid);
    let t = Instant::now();
    // The CALL is one statement: its memory is read from here every two seconds meanwhile,
    // with how many samples it has committed.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (stop, start) = (stop.clone(), phase.start);
        std::thread::spawn(move || {
            let mut other = pg_ask_it::connect_to("postgres", "soak");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_secs(2));
                let done: i64 = other
                    .query_one("SELECT count(*) FROM ask.benchmark_samples WHERE run_id = (SELECT max(id) FROM ask.benchmark_runs)", &[])
                    .map(|r| r.get(0))
                    .unwrap_or(0);
                let now = memory_kb(pid);
                println!("  {done:>6} samples  RssAnon {:>+7} kB  RssFile {:>+7} kB", now.0 - start.0, now.1 - start.1);
            }
        })
    };
    c.batch_execute(&format!("CALL ask.benchmark('soak', 5, 0.5, 0.5, {n}, ARRAY['sql'], ARRAY['few_shot'], 2)")).unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    watcher.join().unwrap();
    if std::env::var("SOAK_CONTEXTS").is_ok() {
        // PostgreSQL's memory contexts of the backend, into the server log.
        pg_ask_it::connect_to("postgres", "soak").execute("SELECT pg_log_backend_memory_contexts($1)", &[&pid]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        c.query_one("SELECT 1", &[]).unwrap();
    }
    let scored: i64 = c
        .query_one("SELECT count(*) FROM ask.benchmark_samples WHERE run_id = (SELECT max(id) FROM ask.benchmark_runs)", &[])
        .unwrap()
        .get(0);
    println!("  {scored} samples scored in {:.1} s", t.elapsed().as_secs_f64());
    assert_eq!(scored as usize, n, "every sample was scored");
    phase.calls = n;
    phase.end()
}

fn main() {
    let what = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let mut c = pg_ask_bench::database("soak");
    let llm = StandIn::start(
        Script::default()
            .rule(Rule::new(&["You answer a question"], Reply::text("{\"answer\": \"The Italian restaurants in Los Angeles are listed.\"}")))
            .rule(Rule::new(
                &["chain of SQL steps"],
                Reply::text(
                    "Step 1: add the stock\n```sql\nINSERT INTO public.soak_stock (item, kg) VALUES ('plums', 5) RETURNING id AS stock_id;\n```\n\
                     Step 2: record the move\n```sql\nINSERT INTO public.soak_moves (stock_id, kg) VALUES (<stock_id>, 5);\n```",
                ),
            ))
            .rule(Rule::new(&["what was just done"], Reply::text("Stored 5 kg of plums.")))
            .rule(Rule::new(
                &["<schema>"],
                Reply::text(
                    "```sql\nSELECT r.name, r.neighborhood FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id \
                     WHERE c.name = 'LA' AND r.cuisine = 'italian' ORDER BY r.name\n```",
                ),
            ))
            .or_else(Reply::text("[]")),
    )
    .unwrap();
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.embedding_provider = 'local'").unwrap();
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    println!("backend {pid}; stand-in answering at 0 ms");
    let mut ok = true;
    if what == "all" || what == "ask" {
        ok &= asks(&mut c, pid);
    }
    if what == "all" || what == "do" {
        ok &= chains(&mut c, pid);
    }
    if what == "all" || what == "benchmark" {
        ok &= benchmark(&mut c, pid);
    }
    if !ok {
        eprintln!("soak: memory grew beyond {LIMIT_KB} kB after warm-up");
        std::process::exit(1);
    }
}
