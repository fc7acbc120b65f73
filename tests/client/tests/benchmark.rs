//! In-database benchmarks end to end: the twenty InConDB workloads loaded with
//! ask.load_workload(), CALL ask.benchmark() against the stand-in in oracle mode (it executes
//! every prompt on this PostgreSQL, so a correct pipeline scores 1.0), a degraded oracle that
//! forgets early commands (scores lower), resuming a cancelled run, and the report.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use llm_standin::oracle::OracleSpec;
use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_core::shadow::workload::Workload;
use pg_ask_it::{connect, conninfo, use_llm};
use postgres::Client;

fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/incondb")
}

fn workload_files(n: usize) -> (String, String) {
    let read = |kind: &str| std::fs::read_to_string(datasets().join(format!("{n}_{kind}.json"))).expect("InConDB workload file");
    (read("sql"), read("nl"))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// English sentence → SQL statement over every workload, so the oracle can execute the NL
/// encoding; and the sentences that two workloads use for different statements, which the
/// oracle cannot map (it does not know the workload) and which are excluded from the 1.0.
fn nl_map_and_ambiguous() -> (BTreeMap<String, String>, Vec<String>) {
    let mut map: BTreeMap<String, Option<String>> = BTreeMap::new();
    for n in 1..=20 {
        let (sql, nl) = workload_files(n);
        let w = Workload::from_text(&n.to_string(), &sql, Some(&nl)).unwrap();
        for c in w.commands() {
            if let (Some(sentence), Some(stmt)) = (&c.nl, c.sql()) {
                let stmt = format!("{stmt};");
                map.entry(one_line(sentence))
                    .and_modify(|v| {
                        if v.as_deref() != Some(stmt.as_str()) {
                            *v = None
                        }
                    })
                    .or_insert(Some(stmt));
            }
        }
    }
    let ambiguous = map.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k.clone()).collect();
    (map.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect(), ambiguous)
}

fn nl_map() -> BTreeMap<String, String> {
    nl_map_and_ambiguous().0
}

fn oracle(forget_first: usize) -> StandIn {
    let spec = OracleSpec { conninfo: conninfo(), forget_first, nl_map: nl_map() };
    StandIn::start(Script::default().or_else(Reply::Oracle(spec))).unwrap()
}

fn load_all(c: &mut Client) {
    for n in 1..=20 {
        let (sql, nl) = workload_files(n);
        let summary: String = c
            .query_one("SELECT ask.load_workload($1, $2::text::jsonb, $3::text::jsonb)::text", &[&format!("w{n}"), &sql, &nl])
            .unwrap()
            .get(0);
        let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(summary["skipped"], 0, "workload {n}: {summary}");
    }
}

fn f64_of(c: &mut Client, sql: &str) -> f64 {
    c.query_one(sql, &[]).unwrap().get::<_, Option<f64>>(0).unwrap_or(f64::NAN)
}

#[test]
fn oracle_scores_one_on_every_workload_and_a_forgetful_one_scores_less() {
    let mut c = connect();
    load_all(&mut c);
    let llm = oracle(0);
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.concurrency = 8").unwrap();
    let started = Instant::now();
    for n in 1..=20 {
        // Thirteen samples: every SELECT category and INSERT, UPDATE, DELETE once.
        c.batch_execute(&format!(
            "CALL ask.benchmark('w{n}', 6, 0.5, 0.5, 13, ARRAY['sql','nl'], ARRAY['zero_shot','zero_cot','few_shot'], 7)"
        ))
        .unwrap_or_else(|e| panic!("workload {n}: {}", pg_ask_it::message(&e)));
    }
    let elapsed = started.elapsed();
    let all_below = c.query("SELECT run, workload, encoding, prompting, sample, query, truth::text, answer::text, score, error FROM ask.benchmark_results WHERE score < 1 AND workload ~ '^w[0-9]+$' ORDER BY run, sample", &[]).unwrap();
    // Documented exclusion: NL queries whose sentence stands for different statements in two
    // workloads (the oracle cannot tell which one it is given).
    let ambiguous = nl_map_and_ambiguous().1;
    let (excluded, rows): (Vec<_>, Vec<_>) =
        all_below.into_iter().partition(|r| r.get::<_, String>(2) == "nl" && ambiguous.contains(&one_line(&r.get::<_, String>(5))));
    eprintln!("{} answers excluded: ambiguous NL sentences ({} such sentences over the 20 workloads)", excluded.len(), ambiguous.len());
    for r in &rows {
        eprintln!(
            "below 1: run {} {} {} {} sample {}: {} truth {} answer {:?} score {} error {:?}",
            r.get::<_, i64>(0),
            r.get::<_, String>(1),
            r.get::<_, String>(2),
            r.get::<_, String>(3),
            r.get::<_, i32>(4),
            r.get::<_, String>(5),
            r.get::<_, String>(6),
            r.get::<_, Option<String>>(7),
            r.get::<_, f64>(8),
            r.get::<_, Option<String>>(9)
        );
    }
    let total: i64 = c.query_one("SELECT count(*) FROM ask.benchmark_results WHERE workload ~ '^w[0-9]+$'", &[]).unwrap().get(0);
    assert_eq!(total, 20 * 13 * 2 * 3);
    eprintln!("{total} answers in {elapsed:?}");
    assert!(rows.is_empty(), "{} of {total} oracle answers scored below 1", rows.len());
    let done: i64 =
        c.query_one("SELECT count(*) FROM ask.benchmark_runs WHERE status = 'done' AND workload ~ '^w[0-9]+$'", &[]).unwrap().get(0);
    assert_eq!(done, 20);

    // Table 1: one row per prompting × encoding, every operation 1 (NL SELECTs up to the
    // excluded answers).
    let t1 =
        c.query("SELECT prompting, encoding, \"select\", \"insert\", \"update\", \"delete\", mean FROM ask.benchmark_table1", &[]).unwrap();
    assert_eq!(t1.len(), 6);
    for r in &t1 {
        let nl = r.get::<_, String>(1) == "nl";
        for i in 2..7 {
            let v = r.get::<_, Option<f64>>(i).unwrap();
            let exact = !nl || i == 3 || i == 4 || i == 5;
            assert!(if exact { v == 1.0 } else { v > 0.97 }, "table 1 {}/{} column {i}: {v}", r.get::<_, String>(0), r.get::<_, String>(1));
        }
    }
    let t2_nulls: i64 = c
        .query_one("SELECT count(*) FROM ask.benchmark_table2 WHERE no_filtering IS NULL OR three_table IS NULL OR ranking IS NULL", &[])
        .unwrap()
        .get(0);
    assert_eq!(t2_nulls, 0);
    let by_param =
        f64_of(&mut c, "SELECT min(score) FROM ask.benchmark_by_parameter WHERE parameter = 'length' AND value = 6 AND encoding = 'sql'");
    assert_eq!(by_param, 1.0);

    // A model that forgets the first commands does worse, on the same samples.
    let forgetful = oracle(4);
    use_llm(&mut c, &forgetful.url());
    c.batch_execute("SET ask.model = 'forgetful'").unwrap();
    for n in [1, 5, 9, 13] {
        c.batch_execute(&format!("CALL ask.benchmark('w{n}', 6, 0.5, 0.5, 13, ARRAY['sql'], ARRAY['few_shot'], 7)")).unwrap();
    }
    let worse = f64_of(&mut c, "SELECT mean FROM ask.benchmark_table1 WHERE model = 'forgetful'");
    let best =
        f64_of(&mut c, "SELECT mean FROM ask.benchmark_table1 WHERE model <> 'forgetful' AND prompting = 'few_shot' AND encoding = 'sql'");
    eprintln!("forgetful oracle: {worse:.3} vs {best:.3}");
    assert!(worse < 0.95 && best == 1.0, "forgetful {worse} vs oracle {best}");

    // The report: one self-contained page.
    let html: String = c.query_one("SELECT ask.benchmark_report_html()", &[]).unwrap().get(0);
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg") && html.contains("forgetful"));
    assert!(!html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http"));
}

#[test]
fn a_cancelled_run_keeps_its_answers_and_resumes() {
    let mut c = connect();
    let (sql, nl) = workload_files(3);
    c.execute("SELECT ask.load_workload('resume', $1::text::jsonb, $2::text::jsonb)", &[&sql, &nl]).unwrap();
    // Slow answers, so the cancel lands mid-run.
    let spec = OracleSpec { conninfo: conninfo(), forget_first: 0, nl_map: BTreeMap::new() };
    let slow = StandIn::start(Script::default().rule(Rule::new(&[], Reply::Oracle(spec.clone())).delay(150))).unwrap();
    use_llm(&mut c, &slow.url());
    c.batch_execute("SET ask.concurrency = 2").unwrap();
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let call = "CALL ask.benchmark('resume', 4, 0.5, 0.5, 20, ARRAY['sql'], ARRAY['few_shot','zero_shot'], 1)";
    let worker = thread::spawn(move || {
        let r = c.batch_execute(call);
        (c, r)
    });
    let mut watcher = connect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done: Option<i64> =
            watcher.query_one("SELECT max(done) FROM ask.benchmark_progress WHERE workload = 'resume'", &[]).unwrap().get(0);
        if done.unwrap_or(0) >= 8 {
            break;
        }
        assert!(Instant::now() < deadline, "the run made no progress");
        thread::sleep(Duration::from_millis(50));
    }
    watcher.execute("SELECT pg_cancel_backend($1)", &[&pid]).unwrap();
    let (mut c, r) = worker.join().unwrap();
    let e = r.expect_err("the CALL was cancelled");
    assert_eq!(pg_ask_it::sqlstate(&e), "57014");
    let kept: i64 = c.query_one("SELECT done FROM ask.benchmark_progress WHERE workload = 'resume'", &[]).unwrap().get(0);
    assert!((8..40).contains(&kept), "{kept} answers kept");

    // The same CALL (same LLM settings) resumes the same run and finishes it; the server now
    // answers without delay.
    slow.set_script(Script::default().or_else(Reply::Oracle(spec)));
    c.batch_execute(call).unwrap();
    let (runs, done, status): (i64, i64, String) = {
        let r = c.query_one("SELECT count(*), max(done), max(status) FROM ask.benchmark_progress WHERE workload = 'resume'", &[]).unwrap();
        (r.get(0), r.get(1), r.get(2))
    };
    assert_eq!((runs, done, status.as_str()), (1, 40, "done"));
    let dupes: i64 = c
        .query_one("SELECT count(*) - count(DISTINCT (sample, prompting)) FROM ask.benchmark_samples s JOIN ask.benchmark_runs r ON r.id = s.run_id WHERE r.workload = 'resume'", &[])
        .unwrap()
        .get(0);
    assert_eq!(dupes, 0);
}

#[test]
fn bad_workloads_and_arguments_are_refused_clearly() {
    let mut c = connect();
    let e = c.batch_execute("SELECT ask.load_workload('bad', '{\"insert\": []}')").unwrap_err();
    assert_eq!(pg_ask_it::sqlstate(&e), "22023");
    let e = c.batch_execute("CALL ask.benchmark('nope', 3, 0.5, 0.5, 5, ARRAY['sql'], ARRAY['few_shot'])").unwrap_err();
    assert_eq!(pg_ask_it::sqlstate(&e), "42704");
    let (sql, _) = workload_files(2);
    c.execute("SELECT ask.load_workload('sqlonly', $1::text::jsonb)", &[&sql]).unwrap();
    let e = c.batch_execute("CALL ask.benchmark('sqlonly', 3, 0.5, 0.5, 5, ARRAY['nl'], ARRAY['few_shot'])").unwrap_err();
    assert_eq!(pg_ask_it::sqlstate(&e), "22023");
    assert!(pg_ask_it::message(&e).contains("nl"), "{}", pg_ask_it::message(&e));
    let e = c.batch_execute("CALL ask.benchmark('sqlonly', 3, 1.5, 0.5, 5, ARRAY['sql'], ARRAY['few_shot'])").unwrap_err();
    assert_eq!(pg_ask_it::sqlstate(&e), "22023");
    let e = c.batch_execute("CALL ask.benchmark('sqlonly', 3, 0.5, 0.5, 5, ARRAY['sql'], ARRAY['one_shot'])").unwrap_err();
    assert_eq!(pg_ask_it::sqlstate(&e), "22023");
    // In a transaction block the procedure cannot commit as it goes: it says so before it starts.
    let mut tx = c.transaction().unwrap();
    let e = tx.batch_execute("CALL ask.benchmark('sqlonly', 3, 0.5, 0.5, 5, ARRAY['sql'], ARRAY['few_shot'])").unwrap_err();
    assert_eq!(pg_ask_it::sqlstate(&e), "25001");
    assert!(pg_ask_it::message(&e).contains("cannot run inside a transaction block"), "{}", pg_ask_it::message(&e));
    tx.rollback().unwrap();
    // Several statements in one query string are one transaction too (psql -c "SET ...; CALL ...").
    let e = c
        .batch_execute("SET ask.concurrency = 2; CALL ask.benchmark('sqlonly', 3, 0.5, 0.5, 5, ARRAY['sql'], ARRAY['few_shot'])")
        .unwrap_err();
    assert_eq!(pg_ask_it::sqlstate(&e), "25001");
}
