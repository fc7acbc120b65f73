//! `ask.structured_output` and `ask.sql_grammar` against the stand-in LLM server: what each
//! request carries (`auto`: a free first query and first repair, the grammar for the last
//! attempt after a query that named what does not exist), a server that refuses a constraint (asked again without it, and not
//! asked with it again in the session), and `on` turning a refusal into SQLSTATE 0A000.

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, sqlstate, use_llm};
use serde_json::Value;

const SQL: &str = "```sql\nSELECT name FROM public.it_cities\n```";
/// A query whose rows (two, of four columns) the answer stage asks the model about: fewer or
/// narrower rows are said without a call.
const WIDE: &str = "```sql\nSELECT id, name, name AS city, id AS code FROM public.it_cities\n```";
/// A query naming a column that does not exist (42703).
const MISSING: &str = "```sql\nSELECT nme FROM public.it_cities\n```";

/// A stand-in that refuses requests carrying `field` (HTTP 400 naming it, as OpenAI does), and
/// otherwise answers SQL and, for the answer stage, ROWS.
fn refusing(field: &str) -> StandIn {
    let mut refuse = Rule::new(
        &[],
        Reply::Status {
            code: 400,
            retry_after: None,
            body: format!("{{\"error\":{{\"message\":\"Unrecognized request argument supplied: {field}\"}}}}"),
        },
    );
    refuse.has_field = vec![field.to_string()];
    StandIn::start(
        Script::default()
            .rule(refuse)
            .rule(Rule::new(&["You answer a question"], Reply::text("ROWS")))
            .rule(Rule::new(&[], Reply::text(MISSING)).last(&["missing first"]).unless(&["cannot be used"]))
            .or_else(Reply::text(WIDE)),
    )
    .unwrap()
}

fn explain(c: &mut postgres::Client, q: &str) -> Value {
    serde_json::from_str(&c.query_one("SELECT ask.explain($1)::text", &[&q]).unwrap().get::<_, String>(0)).unwrap()
}

fn stage<'a>(trace: &'a Value, name: &str) -> &'a Value {
    trace["stages"].as_array().unwrap().iter().find(|s| s["stage"] == name).unwrap_or_else(|| panic!("no {name} stage: {trace}"))
}

#[test]
fn each_request_carries_its_constraint_and_the_trace_says_so() {
    let llm = StandIn::start(
        Script::default().rule(Rule::new(&["You answer a question"], Reply::text("{\"answer\": \"ROWS\"}"))).or_else(Reply::text(WIDE)),
    )
    .unwrap();
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.sql_grammar = on").unwrap();
    let trace = explain(&mut c, "list the cities");
    let sent = llm.requests();
    assert_eq!(sent.len(), 2, "{trace}");
    // SQL generation: a grammar naming the described table, no JSON schema.
    let grammar = sent[0].body["grammar"].as_str().expect("the SQL request carries a grammar");
    assert!(grammar.contains("it_cities") && grammar.starts_with("ws ::="), "{grammar:.200}");
    assert!(sent[0].body.get("response_format").is_none());
    assert_eq!(stage(&trace, "generate")["output"]["constrained"], "grammar");
    let g = stage(&trace, "grammar");
    assert!(g["output"]["bytes"].as_u64().unwrap() > 1000 && g["output"]["branches"].as_u64().unwrap() >= 1, "{g}");
    // The answer stage: its JSON schema, read from the structured reply.
    assert_eq!(sent[1].body["response_format"]["type"], "json_schema");
    assert_eq!(sent[1].body["response_format"]["json_schema"]["name"], "answer");
    let answer = stage(&trace, "answer");
    assert_eq!((answer["output"]["constrained"].as_str(), answer["output"]["read"].as_str()), (Some("json_schema"), Some("structured")));

    // Auto (the default): the first query is the model's own; it ran, so no grammar was built.
    c.batch_execute("RESET ask.sql_grammar").unwrap();
    let trace = explain(&mut c, "list the cities");
    let sent = &llm.requests()[2..];
    assert_eq!(sent.len(), 2, "{trace}");
    assert!(sent[0].body.get("grammar").is_none(), "the first query is written freely in auto");
    assert_eq!(stage(&trace, "generate")["output"]["unconstrained"], "free_first");
    assert!(trace["stages"].as_array().unwrap().iter().all(|s| s["stage"] != "grammar"), "{trace}");

    // Off: neither is sent, and the trace says why.
    c.batch_execute("SET ask.structured_output = off; SET ask.sql_grammar = off").unwrap();
    let trace = explain(&mut c, "list the cities");
    let sent = &llm.requests()[4..];
    assert!(sent.iter().all(|r| r.body.get("grammar").is_none() && r.body.get("response_format").is_none()));
    assert!(trace["stages"].as_array().unwrap().iter().all(|s| s["stage"] != "grammar"), "no grammar is built when it is off");
    assert_eq!(stage(&trace, "answer")["output"]["unconstrained"], "off");
    // A reply of the schema's shape is read as such, asked for or not.
    assert_eq!(stage(&trace, "answer")["output"]["read"], "structured");
    assert!(trace["answer"].as_str().unwrap().contains("Los Angeles"), "{trace}");
}

#[test]
fn in_auto_a_query_naming_what_does_not_exist_is_repaired_under_the_grammar() {
    let llm = StandIn::start(
        Script::default()
            .rule(Rule::new(&["You answer a question"], Reply::text("ROWS")))
            .rule(Rule::new(&[], Reply::text(MISSING)).last(&["missing first"]).unless(&["cannot be used"]))
            .or_else(Reply::text(SQL)),
    )
    .unwrap();
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    // Two attempts: the second, a repair and the last attempt, is under the grammar (with more
    // attempts the model's own repair comes first).
    // An edit repair, which tells the failure (`auto` asks a misspelt column afresh).
    c.batch_execute("SET ask.max_attempts = 2; SET ask.first_repair = edit").unwrap();
    let trace = explain(&mut c, "list the cities, missing first");
    assert!(trace.get("error").is_none(), "{trace}");
    let sent = llm.requests();
    assert!(sent[0].body.get("grammar").is_none(), "the first query is the model's own");
    let grammar = sent[1].body["grammar"].as_str().expect("the repair of a missing column carries the grammar");
    assert!(grammar.contains("it_cities"), "{grammar:.200}");
    let stages: Vec<&str> = trace["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(&stages[..8], ["schema", "generate", "guard", "execute", "grammar", "repair", "guard", "execute"], "{trace}");
    assert_eq!(stage(&trace, "repair")["output"]["constrained"], "grammar");
    assert_eq!(trace["final_sql"], "SELECT name FROM public.it_cities");
}

#[test]
fn a_server_that_refuses_the_grammar_is_asked_again_without_it_and_remembered() {
    let llm = refusing("grammar");
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    // An edit repair, which tells the failure (`auto` asks a misspelt column afresh).
    c.batch_execute("SET ask.max_attempts = 2; SET ask.first_repair = edit").unwrap();
    let trace = explain(&mut c, "list the cities, missing first");
    assert!(trace.get("error").is_none(), "{trace}");
    assert_eq!(stage(&trace, "repair")["output"]["unconstrained"], "refused");
    let sent = llm.requests();
    assert!(
        sent[0].body.get("grammar").is_none() && sent[1].body.get("grammar").is_some() && sent[2].body.get("grammar").is_none(),
        "free first, then the repair under the grammar refused and asked again without"
    );
    // The rest of the session does not try again.
    let trace = explain(&mut c, "list the cities again, missing first");
    assert_eq!(stage(&trace, "repair")["output"]["unconstrained"], "refused_before");
    let later = &llm.requests()[sent.len()..];
    assert!(later.iter().all(|r| r.body.get("grammar").is_none()), "the grammar was sent again after a refusal");

    // On: a refusal is an error with its SQLSTATE and hint, in a new session (nothing
    // remembered yet).
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.sql_grammar = on").unwrap();
    let e = c.query_one("SELECT ask('list the cities')", &[]).unwrap_err();
    assert_eq!(sqlstate(&e), "0A000", "{e:?}");
    let db = e.as_db_error().unwrap();
    assert!(db.message().contains("ask.sql_grammar is on") && db.hint().unwrap().contains("auto"), "{db:?}");
}

#[test]
fn a_server_that_refuses_json_schemas_still_answers() {
    let llm = refusing("response_format");
    let mut c = connect();
    use_llm(&mut c, &llm.url());
    c.batch_execute("SET ask.sql_grammar = off").unwrap();
    let answer: String = c.query_one("SELECT ask('list the cities')", &[]).unwrap().get(0);
    assert!(answer.contains("San Francisco"), "{answer}");
    let trace = explain(&mut c, "list the cities");
    assert_eq!(stage(&trace, "answer")["output"]["unconstrained"], "refused_before");
}

#[test]
fn providers_without_grammars() {
    let llm = StandIn::start(Script::default().or_else(Reply::text(SQL))).unwrap();
    let mut c = connect();
    // Ollama's native API takes a JSON schema (format) but no grammar.
    c.batch_execute(&format!("SET ask.provider = 'ollama'; SET ask.base_url = '{}'; SET ask.sql_grammar = on", llm.url())).unwrap();
    let e = c.query_one("SELECT ask.sql('list the cities')", &[]).unwrap_err();
    assert_eq!(sqlstate(&e), "0A000", "{e:?}");
    assert!(llm.requests().is_empty(), "nothing is sent when the constraint cannot be");
    c.batch_execute("SET ask.sql_grammar = auto").unwrap();
    let sql: String = c.query_one("SELECT ask.sql('list the cities')", &[]).unwrap().get(0);
    assert!(sql.contains("it_cities"));
    assert!(llm.requests()[0].body.get("grammar").is_none());
}
