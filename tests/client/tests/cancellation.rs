//! An LLM request in flight ends promptly on statement_timeout, on a cancel request (what
//! psql sends on Ctrl-C), on pg_cancel_backend and on pg_terminate_backend, and the session
//! stays usable where it survives.

use std::thread;
use std::time::{Duration, Instant};

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, message, sqlstate, use_llm};
use postgres::NoTls;

/// How soon a cancelled request must end: far below the request timeout it would otherwise
/// wait for (a minute), with room for a loaded machine (two model servers and four test
/// threads on two cores). The latencies themselves are printed; they are typically 20-600 ms.
const PROMPTLY: Duration = Duration::from_secs(5);

/// Every question hangs, except "count cities", which is answered.
fn hanging_llm() -> StandIn {
    StandIn::start(
        Script::default()
            .rule(Rule::new(&["<schema>", "count cities"], Reply::text("SELECT count(*) AS n FROM public.it_cities")))
            .or_else(Reply::Hang),
    )
    .unwrap()
}

/// The session is usable and pg_ask in it still works.
fn still_works(c: &mut postgres::Client) {
    let one: i32 = c.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
    let answer: String = c.query_one("SELECT ask('count cities')", &[]).unwrap().get(0);
    assert_eq!(answer, "n: 2");
}

/// Wait until `pid` is running a statement, so that a cancel hits the LLM request.
fn wait_until_active(c: &mut postgres::Client, pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let active: bool = c
            .query_one(
                "SELECT coalesce(bool_or(state = 'active' AND query LIKE 'SELECT ask%'), false) FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .unwrap()
            .get(0);
        if active {
            thread::sleep(Duration::from_millis(200)); // well into the request
            return;
        }
        assert!(Instant::now() < deadline, "the session never started its statement");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn statement_timeout_ends_a_hung_request() {
    let llm = hanging_llm();
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET statement_timeout = 1000").unwrap();
    let t = Instant::now();
    let err = c.query_one("SELECT ask('which cities hang?')", &[]).unwrap_err();
    let took = t.elapsed();
    assert_eq!(sqlstate(&err), "57014", "{}", message(&err));
    assert!(message(&err).contains("statement timeout"), "{}", message(&err));
    eprintln!("statement_timeout 1000 ms ended the request after {} ms", took.as_millis());
    assert!(took >= Duration::from_millis(950) && took < Duration::from_millis(1000) + PROMPTLY, "took {took:?}");
    c.batch_execute("RESET statement_timeout").unwrap();
    still_works(&mut c);
}

#[test]
fn cancel_request_ends_a_hung_request() {
    let llm = hanging_llm();
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let token = c.cancel_token();
    let url = llm.url();
    let asker = thread::spawn(move || {
        let err = c.query_one("SELECT ask('which cities wait for ctrl-c?')", &[]).unwrap_err();
        let ended = Instant::now();
        (c, err, ended, url)
    });
    let mut watcher = connect();
    wait_until_active(&mut watcher, pid);
    // Waiting for the LLM shows as an extension's wait, not as a session on CPU.
    let wait = |w: &mut postgres::Client| -> Option<String> {
        w.query_one("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", &[&pid]).unwrap().get(0)
    };
    assert_eq!(wait(&mut watcher).as_deref(), Some("Extension"));
    let sent = Instant::now();
    token.cancel_query(NoTls).unwrap();
    let (mut c, err, ended, _) = asker.join().unwrap();
    assert_eq!(sqlstate(&err), "57014", "{}", message(&err));
    assert!(message(&err).contains("user request"), "{}", message(&err));
    let latency = ended.duration_since(sent);
    eprintln!("cancel request ended the LLM request after {} ms", latency.as_millis());
    assert!(latency < PROMPTLY, "{latency:?}");
    still_works(&mut c);
    assert_ne!(wait(&mut watcher).as_deref(), Some("Extension"), "the wait ended with the request");
}

#[test]
fn pg_cancel_backend_from_another_session() {
    let llm = hanging_llm();
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let asker = thread::spawn(move || {
        let err = c.query_one("SELECT ask.sql('which cities wait for a cancel?')", &[]).unwrap_err();
        (c, err, Instant::now())
    });
    let mut other = connect();
    wait_until_active(&mut other, pid);
    let sent = Instant::now();
    let ok: bool = other.query_one("SELECT pg_cancel_backend($1)", &[&pid]).unwrap().get(0);
    assert!(ok);
    let (mut c, err, ended) = asker.join().unwrap();
    assert_eq!(sqlstate(&err), "57014", "{}", message(&err));
    let latency = ended.duration_since(sent);
    eprintln!("pg_cancel_backend ended the LLM request after {} ms", latency.as_millis());
    assert!(latency < PROMPTLY, "{latency:?}");
    still_works(&mut c);
}

#[test]
fn pg_terminate_backend_ends_the_session_promptly() {
    let llm = hanging_llm();
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let asker = thread::spawn(move || {
        let err = c.query_one("SELECT ask('which cities wait for the end?')", &[]).unwrap_err();
        (err, Instant::now())
    });
    let mut other = connect();
    wait_until_active(&mut other, pid);
    let sent = Instant::now();
    let ok: bool = other.query_one("SELECT pg_terminate_backend($1)", &[&pid]).unwrap().get(0);
    assert!(ok);
    let (err, ended) = asker.join().unwrap();
    assert!(err.code().map(|c| c.code() == "57P01").unwrap_or(true), "{err}");
    assert!(ended.duration_since(sent) < PROMPTLY);
    // The backend is gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: bool = other.query_one("SELECT count(*) > 0 FROM pg_stat_activity WHERE pid = $1", &[&pid]).unwrap().get(0);
        if !alive {
            break;
        }
        assert!(Instant::now() < deadline, "backend {pid} still alive");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sessions_do_not_wait_for_each_other() {
    // Two sessions whose LLM answers take 1.5 s each: the second session's request reaches the
    // LLM while the first one's is still being answered (if sessions waited for each other, it
    // would come only after the first answer).
    const ANSWER: Duration = Duration::from_millis(1500);
    let llm = StandIn::start(
        Script::default()
            .rule(Rule::new(&["<schema>"], Reply::text("SELECT count(*) AS n FROM public.it_cities")).delay(ANSWER.as_millis() as u64))
            .rule(Rule::new(&["<result"], Reply::text("ROWS"))),
    )
    .unwrap();
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let url = llm.url();
            thread::spawn(move || {
                let mut c = connect();
                use_llm(&mut c, &url);
                let n: i64 = c.query(&format!("SELECT (r->>'n')::bigint FROM ask.rows('count cities {i}') r"), &[]).unwrap()[0].get(0);
                n
            })
        })
        .collect();
    let generation_requests = || llm.requests().iter().filter(|r| r.prompt.contains("<schema>")).count();
    let arrival = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while generation_requests() < n {
            assert!(Instant::now() < deadline, "{n} SQL-generation requests never arrived");
            thread::sleep(Duration::from_millis(5));
        }
        Instant::now()
    };
    let first = arrival(1);
    let second = arrival(2);
    for h in handles {
        assert_eq!(h.join().unwrap(), 2);
    }
    let gap = second - first;
    assert!(gap < ANSWER, "the second session asked {gap:?} after the first, which was answered after {ANSWER:?}");
}
