//! CALL ask.evaluate() from a client: the procedure commits after each batch, so a run
//! cancelled halfway keeps its finished batches and the same CALL resumes it; progress comes
//! as NOTICEs; the measured execution accuracy is the one the stand-in LLM was scripted for.
//! Data: defog's restaurants and geography databases and their questions, read from
//! ../shared/datasets/defog (the CSV by the server's COPY).

use std::thread;
use std::time::{Duration, Instant};

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, connect_with_notices, message, sqlstate, use_llm};
use postgres::Client;

const DEFOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/defog");
const WRONG_SQL: &str = "SELECT 'no such answer' AS wrong";

/// Loads a defog database into the schema of its name, and a suite of its questions whose gold
/// SQL is one plain query (no {…} column choices, no alternatives), so the stand-in can answer
/// it as it is. Returns the questions (question, gold SQL) in suite order.
fn load(c: &mut Client, suite: &str, dbs: &[&str]) -> Vec<(String, String)> {
    for db in dbs {
        let text = std::fs::read_to_string(format!("{DEFOG}/{db}.sql")).unwrap();
        c.batch_execute(&format!("DROP SCHEMA IF EXISTS {db} CASCADE; CREATE SCHEMA {db};")).unwrap();
        c.batch_execute(&text.replace("public.", &format!("{db}."))).unwrap();
    }
    let csv = std::fs::canonicalize(format!("{DEFOG}/questions_gen_postgres.csv")).unwrap();
    let list = dbs.iter().map(|d| format!("'{d}'")).collect::<Vec<_>>().join(", ");
    c.batch_execute(&format!(
        "DROP TABLE IF EXISTS pg_temp.it_defog;
         CREATE TEMP TABLE it_defog (n serial, question text, query text, db_name text, query_category text, instructions text);
         COPY it_defog (question, query, db_name, query_category, instructions) FROM '{}' (FORMAT csv, HEADER true);
         DELETE FROM it_defog WHERE db_name NOT IN ({list}) OR query LIKE '%{{%'
             OR position(';' IN rtrim(rtrim(query), ';')) > 0 OR instructions <> '';
         SELECT ask.load_suite('{suite}', (SELECT jsonb_agg(to_jsonb(q) - 'n' ORDER BY n) FROM it_defog q));",
        csv.display()
    ))
    .unwrap();
    c.query("SELECT question, gold_sql FROM ask.eval_questions WHERE owner = current_user::regrole AND suite = $1 ORDER BY qno", &[&suite])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get::<_, String>(1).trim().trim_end_matches(';').to_string()))
        .collect()
}

/// Gold SQL for three questions out of four, wrong SQL for every fourth; each reply after
/// `delay_ms`.
fn script(questions: &[(String, String)], delay_ms: u64) -> (Script, usize) {
    let mut script = Script::default();
    let mut gold = 0;
    for (i, (question, gold_sql)) in questions.iter().enumerate() {
        let key = format!("<question>{}</question>", question.trim());
        let reply = if (i + 1) % 4 == 0 {
            WRONG_SQL.to_string()
        } else {
            gold += 1;
            gold_sql.clone()
        };
        script = script.rule(Rule::new(&[&key], Reply::text(reply)).delay(delay_ms));
    }
    (script, gold)
}

fn results(c: &mut Client, suite: &str, run: &str) -> i64 {
    c.query_one("SELECT count(*) FROM ask.eval_results WHERE suite = $1 AND run_label = $2", &[&suite, &run]).unwrap().get(0)
}

#[test]
fn a_cancelled_run_keeps_its_batches_and_the_same_call_resumes_it() {
    let (mut c, notices) = connect_with_notices();
    let questions = load(&mut c, "it_defog", &["restaurants"]);
    let n = questions.len();
    assert!(n >= 12, "{n} questions");
    let (script, gold) = script(&questions, 300);
    let llm = StandIn::start(script).unwrap();
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.concurrency = 4").unwrap();
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);

    let runner = thread::spawn(move || {
        let err = c.batch_execute("CALL ask.evaluate('it_defog', 'cancelled')").unwrap_err();
        (c, err)
    });
    // Cancel once two batches are committed (visible to another session).
    let mut watcher = connect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while results(&mut watcher, "it_defog", "cancelled") < 8 {
        assert!(Instant::now() < deadline, "no batch was committed");
        thread::sleep(Duration::from_millis(20));
    }
    let ok: bool = watcher.query_one("SELECT pg_cancel_backend($1)", &[&pid]).unwrap().get(0);
    assert!(ok);
    let (mut c, err) = runner.join().unwrap();
    assert_eq!(sqlstate(&err), "57014", "{}", message(&err));
    let kept = results(&mut watcher, "it_defog", "cancelled");
    assert!((8..n as i64).contains(&kept), "{kept} of {n} kept");
    assert_eq!(kept % 4, 0, "whole batches are kept: {kept}");
    assert!(notices.lock().unwrap().iter().any(|m| m.starts_with("pg_ask evaluate: 4/")), "{:?}", notices.lock().unwrap());

    // The same CALL picks up where it stopped.
    notices.lock().unwrap().clear();
    c.batch_execute("CALL ask.evaluate('it_defog', 'cancelled')").unwrap();
    let seen = notices.lock().unwrap().clone();
    assert!(
        seen[0].contains(&format!("resuming run \"cancelled\" of suite \"it_defog\": {} of {n} questions left", n as i64 - kept)),
        "{seen:?}"
    );
    assert!(seen.last().unwrap().starts_with(&format!("pg_ask evaluate: {n}/{n} questions")), "{seen:?}");
    let row = c
        .query_one(
            "SELECT evaluated, pending, judged, correct, ex::text, finished_at IS NOT NULL FROM ask.eval_summary
             WHERE suite = 'it_defog' AND run_label = 'cancelled'",
            &[],
        )
        .unwrap();
    let (evaluated, pending, judged, correct): (i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!((evaluated, pending, judged, correct), (n as i64, 0, n as i64, gold as i64));
    let ex: String = row.get(4);
    assert_eq!(ex, format!("{:.4}", gold as f64 / n as f64));
    assert!(row.get::<_, bool>(5));
    eprintln!("defog restaurants, {n} plain questions: EX {ex} ({gold} gold replies), resumed after {kept} kept");
}

#[test]
fn evaluate_throughput_at_concurrency_1_and_8() {
    // Measured, not asserted: questions per second with a stand-in answering after 200 ms.
    let (mut c, _) = connect_with_notices();
    let questions = load(&mut c, "it_speed", &["geography"]);
    let (script, gold) = script(&questions, 200);
    let llm = StandIn::start(script).unwrap();
    use_llm(&mut c, &llm.url());
    for concurrency in [1, 8] {
        c.batch_execute(&format!("SET ask.concurrency = {concurrency}")).unwrap();
        let label = format!("c{concurrency}");
        let t = Instant::now();
        c.batch_execute(&format!("CALL ask.evaluate('it_speed', '{label}')")).unwrap();
        let took = t.elapsed();
        let row =
            c.query_one("SELECT evaluated, correct FROM ask.eval_summary WHERE suite = 'it_speed' AND run_label = $1", &[&label]).unwrap();
        let (evaluated, correct): (i64, i64) = (row.get(0), row.get(1));
        assert_eq!((evaluated as usize, correct as usize), (questions.len(), gold));
        eprintln!(
            "ask.evaluate, {} questions, 200 ms stand-in, ask.concurrency = {concurrency}: {:.2} s, {:.1} questions/s",
            questions.len(),
            took.as_secs_f64(),
            questions.len() as f64 / took.as_secs_f64()
        );
    }
}
