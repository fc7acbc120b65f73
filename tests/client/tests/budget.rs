//! The token budget (`ask.max_tokens_per_day`) holds across sessions and transactions. A role
//! whose budget is one call's worst case (its prompt and whole completion limit) is let make
//! one call, whether it asks from four sessions at once, from a read-only transaction or from
//! one it rolls back: its spending is reserved before a call is sent, under one lock, and
//! kept outside the caller's transaction.

mod common;

use std::sync::{Arc, Barrier};
use std::time::{SystemTime, UNIX_EPOCH};

use common::{must, setup_sql, shared};
use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, connect_to, message, sqlstate, use_llm};
use postgres::Client;

const QUESTION: &str = "list the budget items";

/// A stand-in that takes 1.5 s over each generation, so that calls of several sessions are in
/// flight at once.
fn stand_in() -> StandIn {
    StandIn::start(
        Script::default()
            .rule(Rule::new(&["<schema>"], Reply::text("```sql\nSELECT name FROM public.budget_items\n```")).delay(1500))
            .or_else(Reply::text("ROWS")),
    )
    .unwrap()
}

/// A new role (its own name each run: the budget of the day is kept per role) that may read
/// only `public.budget_items`, so that nothing but that table is described to the model. The
/// table holds a row: a query that returned nothing would be asked again, a second call.
fn new_role(what: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
    let role = format!("bud_{what}_{}_{nanos}", std::process::id());
    setup_sql(&format!(
        "CREATE TABLE IF NOT EXISTS public.budget_items (name text);
         INSERT INTO public.budget_items SELECT 'rent' WHERE NOT EXISTS (SELECT FROM public.budget_items);
         CREATE ROLE {role} LOGIN;
         GRANT SELECT ON public.budget_items TO {role};"
    ));
    role
}

fn session(role: &str, llm: &StandIn) -> Client {
    let mut c = connect_to(role, "postgres");
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.cache = off").unwrap();
    c
}

/// The worst case of one `ask.sql(QUESTION)` for `role`, as the budget refuses it at 1 token;
/// then the role's budget is set to exactly that (for its new sessions).
fn budget_of_one_call(role: &str, llm: &StandIn) -> u64 {
    let need = worst_case(role, llm, QUESTION);
    setup_sql(&format!("ALTER ROLE {role} SET ask.max_tokens_per_day = {need}"));
    need
}

/// The worst case of one `ask.sql(question)` for `role`, as the budget refuses it at 1 token.
fn worst_case(role: &str, llm: &StandIn, question: &str) -> u64 {
    setup_sql(&format!("ALTER ROLE {role} SET ask.max_tokens_per_day = 1"));
    let e = session(role, llm).query_one("SELECT ask.sql($1)", &[&question]).expect_err("refused at 1 token");
    assert_eq!(sqlstate(&e), "53000", "{}", message(&e));
    let msg = message(&e);
    assert!(msg.contains("0 of 1 tokens spent or reserved"), "{msg}");
    msg.rsplit("could spend up to ").next().and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("{msg}"))
}

fn drop_role(role: &str) {
    setup_sql(&format!("REVOKE ALL ON public.budget_items FROM {role}; DROP ROLE {role}"));
}

#[test]
fn four_sessions_at_once_get_one_call_of_a_budget_of_one() {
    let _shared = shared();
    let _ = connect();
    let llm = stand_in();
    let role = new_role("par");
    budget_of_one_call(&role, &llm);
    let before = llm.requests().len();
    let start = Arc::new(Barrier::new(4));
    let outcomes: Vec<Result<String, String>> = (0..4)
        .map(|_| {
            let mut c = session(&role, &llm);
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                c.query_one("SELECT ask.sql($1)", &[&QUESTION]).map(|r| r.get::<_, String>(0)).map_err(|e| sqlstate(&e))
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let admitted = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(admitted, 1, "one call fits the budget: {outcomes:?}");
    assert!(outcomes.iter().all(|o| o.as_ref().map_or_else(|code| code == "53000", |_| true)), "{outcomes:?}");
    assert_eq!(llm.requests().len() - before, 1, "one generation reached the server");
    drop_role(&role);
}

/// A call whose reply says it spent more than the call reserved (a prompt the server's
/// tokenizer cuts finer than pg_ask's estimate of four bytes a token: the stand-in counts each
/// word, and "a a a ..." is two bytes a word) counts in full: with a budget of two calls'
/// reservations, the second call is refused once the first has spent more than one.
#[test]
fn spending_past_a_reservation_counts_against_the_next_call() {
    let _shared = shared();
    let _ = connect();
    let llm = stand_in();
    let role = new_role("over");
    let question = format!("{}{QUESTION}", "a ".repeat(2500));
    setup_sql(&format!("ALTER ROLE {role} SET ask.max_tokens = 64"));
    let need = worst_case(&role, &llm, &question);
    setup_sql(&format!("ALTER ROLE {role} SET ask.max_tokens_per_day = {}", 2 * need));
    let mut c = session(&role, &llm);
    c.query_one("SELECT ask.sql($1)", &[&question]).unwrap_or_else(|e| panic!("the first call: {}", message(&e)));
    let spent: i64 = c
        .query_one("SELECT sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0))::bigint FROM ask.llm_calls", &[])
        .unwrap()
        .get(0);
    assert!(spent as u64 > need, "the first call spent {spent}, no more than the {need} it reserved: the case is not made");
    let e = c.query_one("SELECT ask.sql($1)", &[&question]).map(|_| ()).expect_err(&format!(
        "BROKE: a second call of up to {need} tokens was let through after the first spent {spent} of a budget of {}",
        2 * need
    ));
    assert_eq!(sqlstate(&e), "53000", "{}", message(&e));
    drop(c);
    drop_role(&role);
}

#[test]
fn a_read_only_or_rolled_back_call_is_paid_for() {
    let _shared = shared();
    let _ = connect();
    let llm = stand_in();
    for (what, begin, end) in [("ro", "BEGIN READ ONLY", "COMMIT"), ("rb", "BEGIN", "ROLLBACK")] {
        let role = new_role(what);
        budget_of_one_call(&role, &llm);
        let mut c = session(&role, &llm);
        must(&mut c, begin, begin);
        let sql: String = c.query_one("SELECT ask.sql($1)", &[&QUESTION]).unwrap_or_else(|e| panic!("{what}: {}", message(&e))).get(0);
        assert!(sql.contains("budget_items"), "{what}: {sql}");
        must(&mut c, end, end);
        // Nothing of it is in the ledger (read-only: not written; rolled back: undone)...
        let rows: i64 = c.query_one("SELECT count(*) FROM ask.llm_calls", &[]).unwrap().get(0);
        assert_eq!(rows, 0, "{what}: the ledger has no row of the call");
        // ... but the budget counted it: the next call is refused, in this session and another.
        for mut s in [c, session(&role, &llm)] {
            let e = s.query_one("SELECT ask.sql($1)", &[&QUESTION]).expect_err("over the budget");
            assert_eq!(sqlstate(&e), "53000", "{what}: {}", message(&e));
        }
        drop_role(&role);
    }
}
