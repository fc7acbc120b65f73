//! Bounded prompts: a question whose SQL ran is answered, or its rows returned, whatever the
//! size of its rows. The stand-in plays a server with an 8,192-token context that refuses
//! larger prompts as llama.cpp does, and records what it was sent; the cases are a 44 KB cell,
//! a 100 MB cell and 1,000 wide rows.

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect_with_notices, use_llm};

/// The server's context, and pg_ask's default bound on a prompt, in the estimate both use.
const CONTEXT: u64 = 8_192;
const DEFAULT_BOUND: usize = 6_000;

fn stand_in() -> StandIn {
    StandIn::start(
        Script::default()
            .context(CONTEXT)
            .rule(Rule::new(&["You answer a question"], Reply::text("{\"answer\": \"ROWS\"}")))
            .rule(Rule::new(&[], Reply::text("```sql\nSELECT repeat('Kabul, ', 6300) AS names\n```")).last(&["one long cell"]))
            .rule(Rule::new(&[], Reply::text("```sql\nSELECT repeat('x', 100000000) AS x\n```")).last(&["huge cell"]))
            .rule(
                Rule::new(
                    &[],
                    Reply::text(
                        "```sql\nSELECT g AS id, repeat('a', 250) AS c1, repeat('b', 250) AS c2, repeat('c', 250) AS c3, repeat('d', 250) AS c4, repeat('e', 250) AS c5, repeat('f', 250) AS c6, repeat('g', 250) AS c7, repeat('h', 250) AS c8 FROM generate_series(1, 1000) AS g\n```",
                    ),
                )
                .last(&["very wide rows"]),
            )
            .rule(
                Rule::new(
                    &[],
                    Reply::text(
                        "```sql\nSELECT g AS id, repeat('a', 120) AS c1, repeat('b', 120) AS c2, repeat('c', 120) AS c3, md5(g::text) AS c4, repeat('d', 120) AS c5 FROM generate_series(1, 1000) AS g\n```",
                    ),
                )
                .last(&["wide rows"]),
            )
            .or_else(Reply::text("```sql\nSELECT name FROM public.it_cities\n```")),
    )
    .unwrap()
}

/// A session pointed at a new stand-in, with the response cache off (each question is asked),
/// whose NOTICEs are collected.
fn session() -> (StandIn, postgres::Client, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let llm = stand_in();
    let (mut c, notices) = connect_with_notices();
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.cache = off").unwrap();
    (llm, c, notices)
}

/// The peak resident memory of the session's backend, in kB (VmHWM).
fn backend_peak_kb(c: &mut postgres::Client) -> u64 {
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap()
}

#[test]
fn every_question_whose_sql_ran_gets_an_answer_or_its_rows_and_no_prompt_passes_the_bound() {
    let (llm, mut c, notices) = session();
    for q in ["one long cell", "huge cell", "wide rows"] {
        let before = llm.requests().len();
        let answer: String = c.query_one("SELECT ask($1)", &[&format!("all of it, {q}")]).unwrap_or_else(|e| panic!("{q}: {e:?}")).get(0);
        assert!(!answer.is_empty(), "{q}");
        let sent = &llm.requests()[before..];
        assert_eq!(sent.len(), 2, "{q}: the SQL and the answer stage");
        for r in sent {
            // The stand-in's prompt text joins the system prompt and the messages by line
            // breaks: a few characters more than pg_ask counts.
            let tokens = r.prompt.len().div_ceil(4);
            assert!(tokens <= DEFAULT_BOUND + 4, "{q}: a prompt of about {tokens} tokens");
        }
        let answer_prompt = &sent[1].prompt;
        match q {
            "one long cell" => assert!(answer_prompt.contains("…[cut: 44100 chars]"), "{q}"),
            "huge cell" => assert!(answer_prompt.contains("chars]") && answer_prompt.len() < 20_000, "{q}"),
            _ => assert!(answer_prompt.contains("more rows not shown (left out to keep the prompt within its size limit)"), "{q}"),
        }
    }
    // The 100 MB cell was read up to ask.max_result_size, and said so.
    let said = notices.lock().unwrap().clone();
    assert!(said.iter().any(|n| n.contains("cut at ask.max_result_size (1024 kB)")), "{said:?}");
    let peak_mb = backend_peak_kb(&mut c) / 1024;
    println!("backend peak resident memory after the 100 MB cell: {peak_mb} MB");
    assert!(peak_mb < 450, "the backend reached {peak_mb} MB");
}

#[test]
fn a_server_that_still_overflows_gets_the_rows_with_a_notice() {
    let (llm, mut c, notices) = session();
    // pg_ask's bound above the server's context: the server refuses the answer prompt.
    c.batch_execute("SET ask.max_prompt_tokens = 100000").unwrap();
    let answer: String = c.query_one("SELECT ask('very wide rows')", &[]).unwrap().get(0);
    // As a table, as many rows as ask.max_result_size (1 MB) let be read of the 2 MB.
    assert!(answer.starts_with(" id ") && answer.trim_end().ends_with("rows)"), "the rows as a table: {answer:.300}");
    let said = notices.lock().unwrap().clone();
    assert!(
        said.iter().any(|n| n.contains("the rows are the answer, without a written one") && n.contains("exceeds its context")),
        "{said:?}"
    );
    let refused = llm.requests().iter().filter(|r| r.prompt.len().div_ceil(4) as u64 > CONTEXT).count();
    assert_eq!(refused, 1, "one answer prompt refused, nothing retried");
    // A bound too small for even one row: the rows again, nothing sent for the answer.
    c.batch_execute("SET ask.max_prompt_tokens = 700").unwrap();
    let before = llm.requests().len();
    let answer: String = c.query_one("SELECT ask('very wide rows')", &[]).unwrap().get(0);
    assert!(answer.trim_end().ends_with("rows)"), "{answer:.300}");
    assert_eq!(llm.requests().len() - before, 1, "only the SQL request");
    assert!(notices.lock().unwrap().iter().any(|n| n.contains("not one row of the result fits in ask.max_prompt_tokens")));
    // A bound the tables' description cannot keep: an error naming the setting.
    c.batch_execute("SET ask.max_prompt_tokens = 256").unwrap();
    let e = c.query_one("SELECT ask('wide rows')", &[]).unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code().code(), "54000");
    assert!(db.message().contains("over ask.max_prompt_tokens (256)") && db.hint().unwrap().contains("ask.max_prompt_tokens"), "{db:?}");
}
