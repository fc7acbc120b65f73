//! Benchmark: a real model (llama.cpp's llama-server, started by `scripts/bench.sh real`) answers
//! the sample database's question suite (`sample/questions.json`) and a slice of the defog suite
//! through `CALL ask.evaluate`, exactly as a user would measure their own model.
//!
//! Reports per suite: execution accuracy (EX), the share of SQL-writing replies from which pg_ask
//! read a statement, repairs per question, tokens per question, where the time went (the model's
//! calls against pg_ask's own work), the model's completion tokens per second, and how the
//! failures end. With `PG_ASK_REAL_CORPUS=DIR` every reply is also written to
//! `DIR/<model>.jsonl` (stage, question, reply), for the parser fixture corpus.
//!
//! Beside pg_ask, on the same questions and server, the bare model (`pg_ask_bench::bare`): the
//! schema's `CREATE TABLE` statements and the question in one message, judged alike; its EX,
//! its median seconds (SQL only) and the questions only one of the two got right
//! (`PG_ASK_REAL_BARE=0` leaves it out). For the sample, `ask()` itself as a user meets it
//! (`pg_ask_bench::asked`): the first `PG_ASK_REAL_ASK` questions (default 48) through
//! `ask.explain()` from new connections, answer stage included.
//!
//! Environment: `PG_ASK_LLM_URL` (the server's OpenAI base URL), `PG_ASK_LLM_MODEL`,
//! `PG_ASK_REAL_DEFOG_PER_DB` (defog questions per database, default 4; `PG_ASK_REAL_DEFOG_SKIP`
//! leaves out the first ones of each database, 0 by default, for a held-out part;
//! `PG_ASK_REAL_DEFOG_CATEGORY=instruct` takes them from one category, here the questions defog
//! gives instructions with; `PG_ASK_REAL_DEFOG_QUESTIONS=1,21` only those of defog's questions,
//! by their line in its file), `PG_ASK_REAL_SUITES`
//! (`sample,defog`; also `ask`: only `ask()` from new connections over the sample, `answers`,
//! `incondb`), `PG_ASK_REAL_LABEL` (added to the run label), `PG_ASK_REAL_MAX_TOKENS`,
//! `PG_ASK_REAL_COMMENTS=0` (defog's column descriptions not loaded as comments; both sides
//! read them by default), `PG_ASK_REAL_EACH=1` (print each question's number and outcome), `PG_ASK_REAL_VALUES=1`
//! (the value memory first, as a DBA would set it up: defog's short text columns, the sample's
//! columns that `scripts/run.sh` indexes), `PG_ASK_REAL_KNOWLEDGE=1` (defog's instructions and
//! glossaries registered once per database as knowledge, none passed with a question; the
//! sample's `sample/knowledge.json` imported; without it, `ask.use_knowledge` is off for the
//! sample), `PG_ASK_REAL_SCHEMA_STYLE` (`ask.schema_style` for pg_ask: `listing`, the default,
//! or `create_table`), `PG_ASK_REAL_FIRST_REPAIR` (`ask.first_repair`: `edit`, `restart`, `plain` or `auto`; the
//! server's default when unset).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use pg_ask_bench::{repo, suites};
use pg_ask_core::constrain::schemas::Shape;
use postgres::Client;
use serde_json::{json, Value};

const DB: &str = "pg_ask_real_bench";
/// Questions in flight at once: `llama-server`'s two slots (scripts/llm.sh).
/// Questions asked at once (`PG_ASK_REAL_CONCURRENCY`, default 2, the server's slots).
fn concurrency() -> usize {
    env("PG_ASK_REAL_CONCURRENCY", "2").parse().expect("PG_ASK_REAL_CONCURRENCY is a number")
}

/// `PG_ASK_REAL_DEFOG_QUESTIONS`: only these of defog's questions (their line numbers in its
/// file, 1 to 210, comma-separated), for a change that reaches a known few.
fn defog_questions() -> Option<Vec<i32>> {
    let list = std::env::var("PG_ASK_REAL_DEFOG_QUESTIONS").ok().filter(|l| !l.trim().is_empty())?;
    Some(list.split(',').map(|n| n.trim().parse().expect("PG_ASK_REAL_DEFOG_QUESTIONS lists numbers")).collect())
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn database() -> Client {
    // Defog's column descriptions as comments unless PG_ASK_REAL_COMMENTS=0: pg_ask reads
    // them from the catalog, the bare model in its CREATE TABLE statements.
    pg_ask_bench::database_with(DB, env("PG_ASK_REAL_COMMENTS", "1") != "0")
}

/// What one question's trace says: SQL-writing replies and how many were read as SQL, the
/// milliseconds of pg_ask's own stages (everything but the LLM calls: description, selection,
/// guard, value correction, execution), and each call's (stage, reply).
#[derive(Default)]
struct Calls {
    sql_replies: usize,
    sql_read: usize,
    repairs: usize,
    own_ms: f64,
    replies: Vec<(String, String)>,
    /// Statements executed, and of them those that named a table, column or schema that does
    /// not exist (SQLSTATE 42P01, 42703, 3F000).
    executed: usize,
    unknown_names: usize,
    /// SQLSTATEs of the executed statements that failed.
    failed_states: Vec<String>,
    /// Whether the first attempt's statement ran without an error.
    first_ran: bool,
    /// SQL calls generated under the grammar; grammar builds and their milliseconds and bytes.
    constrained_sql: usize,
    grammars: usize,
    grammar_ms: f64,
    grammar_bytes: usize,
    /// Fixed-shape stages' replies: read from the structured JSON, or by the free-text parser.
    shaped_structured: usize,
    shaped_text: usize,
    /// Prompt tokens of the calls, and of them those the server read from its cache.
    prompt_tokens: u64,
    cached_prompt_tokens: u64,
    /// Whether the question's last executed statement named what does not exist.
    ended_on_missing_name: bool,
}

fn calls_of(trace: &Value) -> Calls {
    let mut out = Calls::default();
    let stages = trace["stages"].as_array().cloned().unwrap_or_default();
    for (i, st) in stages.iter().enumerate() {
        let Some(reply) = st["output"]["reply"].as_str() else {
            out.own_ms += st["ms"].as_f64().unwrap_or(0.0);
            match st["stage"].as_str() {
                Some("execute") => {
                    out.executed += 1;
                    let state = st["output"]["sqlstate"].as_str().unwrap_or("");
                    let missing = matches!(state, "42P01" | "42703" | "3F000");
                    out.unknown_names += usize::from(missing);
                    out.ended_on_missing_name = missing;
                    if !state.is_empty() {
                        out.failed_states.push(state.to_string());
                    }
                    out.first_ran |= st["attempt"] == 1 && st["output"]["rows"].is_number();
                }
                Some("grammar") => {
                    out.grammars += 1;
                    out.grammar_ms += st["ms"].as_f64().unwrap_or(0.0);
                    out.grammar_bytes += st["output"]["bytes"].as_u64().unwrap_or(0) as usize;
                }
                _ => {}
            }
            continue;
        };
        match st["output"]["read"].as_str() {
            Some("structured") => out.shaped_structured += 1,
            Some(_) => out.shaped_text += 1,
            None => {}
        }
        out.prompt_tokens += st["prompt_tokens"].as_u64().unwrap_or(0);
        out.cached_prompt_tokens += st["output"]["cached_prompt_tokens"].as_u64().unwrap_or(0);
        let stage = st["stage"].as_str().unwrap_or_default().to_string();
        if stage == "generate" || stage == "repair" {
            out.sql_replies += 1;
            out.constrained_sql += usize::from(st["output"]["constrained"] == "grammar");
            out.repairs += usize::from(stage == "repair");
            // A reply SQL was read from goes to the guard next, under the same attempt.
            if stages[i + 1..]
                .iter()
                .take_while(|s| s["output"]["reply"].is_null())
                .any(|s| s["stage"] == "guard" && s["attempt"] == st["attempt"] && s["output"]["reason"] != "repeats_reply")
            {
                out.sql_read += 1;
            }
        }
        out.replies.push((stage, reply.to_string()));
    }
    out
}

fn main() {
    let model = env("PG_ASK_LLM_MODEL", "smollm2");
    let url = std::env::var("PG_ASK_LLM_URL").expect("PG_ASK_LLM_URL: the model server's OpenAI base URL (scripts/bench.sh real sets it)");
    let label = format!("{model}{}", env("PG_ASK_REAL_LABEL", ""));
    let suites = env("PG_ASK_REAL_SUITES", "sample,defog");
    let mut c = database();
    let server = format!(
        "SET ask.provider = 'openai'; SET ask.base_url = '{url}'; SET ask.model = '{model}'; SET ask.schema_style = {};{}
         SET ask.candidates = {}; SET ask.concurrency = {}; SET ask.request_timeout = 300000; SET ask.max_tokens = {};
         SET client_min_messages = warning",
        env("PG_ASK_REAL_SCHEMA_STYLE", "listing"),
        std::env::var("PG_ASK_REAL_FIRST_REPAIR").map(|r| format!(" SET ask.first_repair = {r};")).unwrap_or_default(),
        env("PG_ASK_REAL_CANDIDATES", "1"),
        concurrency(),
        env("PG_ASK_REAL_MAX_TOKENS", "1024")
    );
    c.batch_execute(&server).unwrap();
    let mut corpus = std::env::var("PG_ASK_REAL_CORPUS").ok().map(|dir| {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::OpenOptions::new().create(true).append(true).open(Path::new(&dir).join(format!("{model}.jsonl"))).unwrap()
    });

    println!("model {model} at {url}, run label {label}");
    let modes = env("PG_ASK_REAL_CONSTRAINTS", "off");
    for mode in modes.split(',') {
        let (structured, grammar) = match mode {
            "off" => ("off", "off"),
            "auto" => ("auto", "auto"),
            "json" => ("on", "off"),
            "grammar" => ("on", "on"),
            other => panic!("unknown constraint mode {other} (off, auto, json, grammar)"),
        };
        let constraints = format!("SET ask.structured_output = {structured}; SET ask.sql_grammar = {grammar}");
        c.batch_execute(&constraints).unwrap();
        let settings = format!("{server}; {constraints}");
        let label = if modes.contains(',') || mode != "off" { format!("{label}-{mode}") } else { label.clone() };
        println!("\n#### constraints: {mode} (ask.structured_output = {structured}, ask.sql_grammar = {grammar})");
        for suite in suites.split(',') {
            run_suite(&mut c, suite, &label, &Baseline { url: &url, model: &model, settings: &settings }, corpus.as_mut());
        }
    }
}

/// The server and settings a suite runs with, for the bare model beside pg_ask and for
/// `ask()` from new connections.
struct Baseline<'a> {
    url: &'a str,
    model: &'a str,
    settings: &'a str,
}

fn run_suite(c: &mut Client, suite: &str, label: &str, base: &Baseline<'_>, mut corpus: Option<&mut std::fs::File>) {
    let model = base.model;
    let _n = match suite {
        // The answer stage alone, over the sample database.
        "answers" => {
            suites::load_sample(c);
            println!("\n== answers");
            return answer_stage(c);
        }
        // InConDB's Table 1 with the real model: a few workloads through CALL ask.benchmark.
        "incondb" => return incondb(c, model),
        // ask() alone, answer included, over the sample's questions from new connections.
        "ask" => {
            suites::load_sample(c);
            return ask_from_new_connections(c, base, env("PG_ASK_REAL_EACH", "0") == "1");
        }
        "sample" => {
            let n = suites::load_sample(c);
            // The knowledge the sample ships (sample/knowledge.json), as run.sh imports it.
            if env("PG_ASK_REAL_KNOWLEDGE", "0") == "1" {
                let doc = std::fs::read_to_string(repo().join("sample/knowledge.json")).unwrap();
                let items: i32 = c.query_one("SELECT ask.import_knowledge($1::text::jsonb)", &[&doc]).unwrap().get(0);
                println!("the sample's knowledge imported: {items} items");
            } else {
                c.batch_execute("SET ask.use_knowledge = off").unwrap();
            }
            // As run.sh sets the sample up: its categorical columns in the value memory.
            if env("PG_ASK_REAL_VALUES", "0") == "1" {
                let started = std::time::Instant::now();
                let specs = pg_ask_bench::run_sh_value_columns();
                for (table, columns) in &specs {
                    c.query_one("SELECT ask.index_values($1::text::regclass, $2::text[])", &[&format!("public.{table}"), columns]).unwrap();
                }
                println!(
                    "value memory of the sample's {} tables (run.sh's columns) built in {:.0} s",
                    specs.len(),
                    started.elapsed().as_secs_f64()
                );
            }
            n
        }
        "defog" => {
            let n = suites::load_defog(
                c,
                env("PG_ASK_REAL_DEFOG_PER_DB", "4").parse().unwrap(),
                env("PG_ASK_REAL_DEFOG_SKIP", "0").parse().unwrap(),
                std::env::var("PG_ASK_REAL_DEFOG_CATEGORY").ok().filter(|c| !c.is_empty()).as_deref(),
                defog_questions().as_deref(),
            );
            c.batch_execute("SET ask.use_knowledge = on").unwrap();
            if env("PG_ASK_REAL_KNOWLEDGE", "0") == "1" {
                let items = suites::defog_knowledge(c);
                println!("defog's instructions and glossaries registered once per database: {items} knowledge items; none per question");
            }
            // As a DBA would set pg_ask up: the short text columns (names, codes, categories)
            // in the value memory, so that descriptions list their values and literals are
            // corrected against them. Once per run.
            if env("PG_ASK_REAL_VALUES", "0") == "1"
                && c.query_one("SELECT count(*) FROM ask.value_columns", &[]).unwrap().get::<_, i64>(0) == 0
            {
                let started = std::time::Instant::now();
                let schemas: Vec<String> = c
                    .query("SELECT DISTINCT schema FROM ask.eval_questions WHERE suite = 'defog'", &[])
                    .unwrap()
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                c.batch_execute("ANALYZE").unwrap();
                for schema in &schemas {
                    pg_ask_bench::index_short_text(c, schema);
                }
                println!("value memory of {} schemas' short text columns built in {:.0} s", schemas.len(), started.elapsed().as_secs_f64());
            }
            n
        }
        other => panic!("unknown suite {other} (sample, defog, answers, incondb, ask)"),
    };
    // The bare model alone (PG_ASK_REAL_PG_ASK=0): its side of the comparison does not depend
    // on pg_ask's code, so a change to pg_ask need not run it again, nor the other way round.
    if env("PG_ASK_REAL_PG_ASK", "1") == "0" {
        return bare_model(c, suite, base, &BTreeMap::new(), env("PG_ASK_REAL_EACH", "0") == "1");
    }
    let first_call: i64 = ledger_mark(c);
    let started = std::time::Instant::now();
    c.batch_execute(&format!("CALL ask.evaluate('{suite}', '{label}')")).unwrap_or_else(|e| panic!("evaluate {suite}: {e:?}"));
    let wall = started.elapsed().as_secs_f64();
    let rows = c
        .query(
            "SELECT q.question, r.outcome, r.ex, r.tokens, r.ms, r.error, to_jsonb(r)->>'trace', r.qno FROM ask.eval_results r
               JOIN ask.eval_questions q USING (owner, suite, qno) WHERE r.suite = $1 AND r.run_label = $2 ORDER BY r.qno",
            &[&suite, &label],
        )
        .unwrap();
    // The model's side, from the ledger: every call of the run, its milliseconds (prompt
    // processing and generation, as the server took them) and the tokens it counted.
    let (calls, llm_ms, completion) = ledger_since(c, first_call);
    let (mut correct, mut judged, mut tokens, mut ms, mut own_ms) = (0, 0, 0i64, 0.0, 0.0);
    let (mut sql_replies, mut sql_read, mut repairs) = (0, 0, 0);
    let (mut executed, mut unknown_names, mut first_ran, mut constrained_sql) = (0, 0, 0, 0);
    let (mut grammars, mut grammar_ms, mut grammar_bytes) = (0, 0.0, 0);
    let (mut prompt_tokens, mut cached_tokens, mut ended_missing) = (0u64, 0u64, 0usize);
    let mut seconds: Vec<f64> = Vec::new();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let each = env("PG_ASK_REAL_EACH", "0") == "1";
    let mut states: BTreeMap<String, usize> = BTreeMap::new();
    let mut verdicts: BTreeMap<i32, bool> = BTreeMap::new();
    for r in &rows {
        let (question, outcome, ex): (String, String, bool) = (r.get(0), r.get(1), r.get(2));
        let trace: Value = serde_json::from_str(&r.get::<_, Option<String>>(6).unwrap_or_else(|| "{}".into())).unwrap();
        let calls = calls_of(&trace);
        tokens += r.get::<_, i64>(3);
        ms += r.get::<_, f64>(4);
        seconds.push(r.get::<_, f64>(4) / 1000.0);
        prompt_tokens += calls.prompt_tokens;
        cached_tokens += calls.cached_prompt_tokens;
        ended_missing += usize::from(calls.ended_on_missing_name && !ex);
        own_ms += calls.own_ms;
        sql_replies += calls.sql_replies;
        sql_read += calls.sql_read;
        repairs += calls.repairs;
        executed += calls.executed;
        unknown_names += calls.unknown_names;
        first_ran += usize::from(calls.first_ran);
        for s in &calls.failed_states {
            *states.entry(s.clone()).or_default() += 1;
        }
        constrained_sql += calls.constrained_sql;
        grammars += calls.grammars;
        grammar_ms += calls.grammar_ms;
        grammar_bytes += calls.grammar_bytes;
        if outcome != "gold_failed" {
            judged += 1;
            correct += usize::from(ex);
            verdicts.insert(r.get(7), ex);
        }
        let kind = match (outcome.as_str(), r.get::<_, Option<String>>(5)) {
            ("prediction_error", Some(e)) => format!("prediction_error: {}", error_kind(&e)),
            (o, _) => o.to_string(),
        };
        if each {
            println!("  question {:>3}  {kind}  {}", r.get::<_, i32>(7), question.lines().next().unwrap_or_default());
        }
        *outcomes.entry(kind).or_default() += 1;
        if let Some(f) = corpus.as_mut() {
            for (stage, reply) in &calls.replies {
                writeln!(f, "{}", json!({"model": model, "suite": suite, "stage": stage, "question": question, "reply": reply})).unwrap();
            }
        }
    }
    let q = rows.len().max(1) as f64;
    println!("\n== {suite}: {} questions, {:.0} s wall", rows.len(), wall);
    println!("EX                                {:.3} ({correct} of {judged} judged)", correct as f64 / judged.max(1) as f64);
    println!(
        "SQL read from replies             {:.3} ({sql_read} of {sql_replies} generate/repair replies)",
        sql_read as f64 / sql_replies.max(1) as f64
    );
    println!(
        "SQL naming only existing names    {:.3} ({} of {executed} executed statements; {constrained_sql} of {sql_replies} replies under the grammar)",
        (executed - unknown_names) as f64 / executed.max(1) as f64,
        executed - unknown_names
    );
    println!("first replies that ran            {:.3} ({first_ran} of {})", first_ran as f64 / q, rows.len());
    println!("executed statements that failed   {states:?} (by SQLSTATE)");
    if grammars > 0 {
        println!(
            "grammar build                     {:.2} ms, {:.0} KB (mean of {grammars})",
            grammar_ms / grammars as f64,
            grammar_bytes as f64 / grammars as f64 / 1024.0
        );
    }
    println!("repairs per question              {:.2}", repairs as f64 / q);
    println!("ended on a missing name           {:.3} ({ended_missing} of {})", ended_missing as f64 / q, rows.len());
    seconds.sort_by(f64::total_cmp);
    println!("seconds per question, median      {:.2}", seconds.get(seconds.len() / 2).copied().unwrap_or(0.0));
    println!(
        "cached prompt tokens              {:.3} ({cached_tokens} of {prompt_tokens} prompt tokens read from the server's cache)",
        cached_tokens as f64 / prompt_tokens.max(1) as f64
    );
    println!("tokens per question               {:.0}", tokens as f64 / q);
    println!(
        "seconds per question              {:.2} ({calls} LLM calls: model {:.2} s, pg_ask's own stages {:.1} ms, per question; {} at a time)",
        ms / q / 1000.0,
        llm_ms / q / 1000.0,
        own_ms / q,
        concurrency()
    );
    println!(
        "completion tokens per second      {:.1} (per call, prompt processing included)",
        completion as f64 / (llm_ms / 1000.0).max(1e-9)
    );
    for (k, v) in outcomes {
        println!("  {v:>4}  {k}");
    }
    // The bare model on the same questions and server (DESIGN.md §4.2).
    if env("PG_ASK_REAL_BARE", "1") == "1" {
        bare_model(c, suite, base, &verdicts, each);
    }
    if suite == "sample" {
        ask_from_new_connections(c, base, each);
        answer_stage(c);
    }
}

/// The bare model over `suite`'s questions on `base`'s server, reported beside pg_ask's
/// `verdicts` (none when pg_ask did not run).
fn bare_model(c: &mut Client, suite: &str, base: &Baseline<'_>, verdicts: &BTreeMap<i32, bool>, each: bool) {
    let bare = pg_ask_bench::bare::Bare {
        url: base.url.to_string(),
        model: base.model.to_string(),
        max_tokens: env("PG_ASK_REAL_MAX_TOKENS", "1024").parse().unwrap(),
        concurrency: concurrency(),
    };
    let run = pg_ask_bench::bare::run(c, suite, &bare);
    pg_ask_bench::bare::report(&run, verdicts, each);
}

/// `ask()` itself, answer included: the first `PG_ASK_REAL_ASK` sample questions (default 48)
/// through `ask.explain()`, each from a new connection.
fn ask_from_new_connections(c: &mut Client, base: &Baseline<'_>, each: bool) {
    let n: i64 = env("PG_ASK_REAL_ASK", "48").parse().unwrap();
    let questions: Vec<String> = c
        .query("SELECT question FROM ask.eval_questions WHERE suite = 'sample' ORDER BY qno LIMIT $1", &[&n])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !questions.is_empty() {
        pg_ask_bench::asked::report(&pg_ask_bench::asked::ask_each(DB, base.settings, &questions), each);
    }
}

/// A context for the context switch: it answers some of the sample's questions, not others.
const CONTEXT: &str = "The guide lists 68 restaurants in 16 cities of the United States, the United Kingdom, \
France, Italy and Japan. Its editors rate restaurants from 1.0 to 5.0.";

/// The fixed-shape stages over the first `PG_ASK_REAL_ANSWERS` sample questions, asked with a
/// context (ask.explain runs the whole pipeline and returns its trace): the context switch
/// (always), and the answer stage (when SQL ran). How their replies were read: from the JSON
/// schema, or by the free-text parser (and whether that found a decision).
fn answer_stage(c: &mut Client) {
    let n: i64 = env("PG_ASK_REAL_ANSWERS", "12").parse().unwrap();
    if n <= 0 {
        return;
    }
    let mut read: BTreeMap<(String, String), usize> = BTreeMap::new();
    let (mut answered, mut unclear) = (0, 0);
    let qs = c.query("SELECT question FROM ask.eval_questions WHERE suite = 'sample' ORDER BY qno LIMIT $1", &[&n]).unwrap();
    for q in &qs {
        let question: String = q.get(0);
        let trace: Value = c
            .query_one("SELECT ask.explain($1, context => $2)::text", &[&question, &CONTEXT])
            .unwrap()
            .get::<_, String>(0)
            .parse()
            .unwrap();
        for st in trace["stages"].as_array().into_iter().flatten() {
            if let Some(how) = st["output"]["read"].as_str() {
                *read.entry((st["stage"].as_str().unwrap_or("").to_string(), how.to_string())).or_default() += 1;
            }
            unclear += usize::from(st["output"]["decision"] == "unclear");
        }
        answered += usize::from(trace["answer"].is_string());
    }
    println!(
        "fixed-shape stages                {answered} of {} questions answered; replies read (stage, how): {read:?}; {unclear} context decisions unclear",
        qs.len()
    );
}

/// InConDB workloads `PG_ASK_REAL_WORKLOADS` (default 1,2,3) replayed through the model:
/// `PG_ASK_REAL_INCONDB_SAMPLES` samples each (default 26: two per query kind), five commands
/// before each query, both encodings, zero-shot and few-shot; then the paper's Table 1 as the
/// view `ask.benchmark_table1` shows it, and how the replies were read.
fn incondb(c: &mut Client, model: &str) {
    let dir = repo().join("../shared/datasets/incondb");
    let samples: i32 = env("PG_ASK_REAL_INCONDB_SAMPLES", "26").parse().unwrap();
    let first_call: i64 = ledger_mark(c);
    let started = std::time::Instant::now();
    let mut runs: Vec<i64> = Vec::new();
    for w in env("PG_ASK_REAL_WORKLOADS", "1,2,3").split(',') {
        let sql = std::fs::read_to_string(dir.join(format!("{w}_sql.json"))).unwrap();
        let nl = std::fs::read_to_string(dir.join(format!("{w}_nl.json"))).unwrap();
        let name = format!("w{w}");
        c.execute("SELECT ask.load_workload($1, $2::text::jsonb, $3::text::jsonb)", &[&name, &sql, &nl]).unwrap();
        c.batch_execute(&format!(
            "CALL ask.benchmark('{name}', 5, 0.5, 0.5, {samples}, ARRAY['sql','nl'], ARRAY['zero_shot','few_shot'], 0)"
        ))
        .unwrap_or_else(|e| panic!("benchmark {name}: {e:?}"));
        runs.push(c.query_one("SELECT max(id) FROM ask.benchmark_runs", &[]).unwrap().get(0));
    }
    let wall = started.elapsed().as_secs_f64();
    println!("\n== incondb: workloads {runs:?} (run ids), {samples} samples each, {wall:.0} s wall");
    // The view covers every run of the database, which bench_real makes afresh: run one
    // constraint mode per invocation for this suite.
    let rows = c.query("SELECT to_jsonb(t)::text FROM ask.benchmark_table1 t ORDER BY 1", &[]).unwrap();
    for r in rows {
        println!("  {}", r.get::<_, String>(0));
    }
    let (mut structured, mut read, mut all) = (0, 0, 0);
    for r in c.query("SELECT reply, operation, error IS NULL FROM ask.benchmark_samples WHERE run_id = ANY($1)", &[&runs]).unwrap() {
        let (reply, op, ok): (Option<String>, String, bool) = (r.get(0), r.get(1), r.get(2));
        let shape = if op == "select" { Shape::ShadowRows } else { Shape::ShadowOutcome };
        all += 1;
        read += usize::from(ok);
        structured += usize::from(reply.as_deref().and_then(|t| shape.read(t)).is_some());
    }
    let (calls, llm_ms, completion) = ledger_since(c, first_call);
    println!("replies read as answers            {read} of {all} ({structured} the structured JSON of their shape)");
    println!(
        "LLM calls {calls}, {:.2} s each, {:.1} completion tokens per second per call ({model})",
        llm_ms / calls.max(1) as f64 / 1000.0,
        completion as f64 / (llm_ms / 1000.0).max(1e-9)
    );
}

/// The ledger's last row now: the calls of what runs next come after it.
fn ledger_mark(c: &mut Client) -> i64 {
    c.query_one("SELECT coalesce(max(id), 0) FROM ask.llm_calls", &[]).unwrap().get(0)
}

/// The model's side of the calls after `mark`, from the ledger: how many, their milliseconds
/// (prompt processing and generation, as the server took them) and the completion tokens the
/// server counted.
fn ledger_since(c: &mut Client, mark: i64) -> (i64, f64, i64) {
    let r = c
        .query_one(
            "SELECT count(*), coalesce(sum(ms), 0), coalesce(sum(completion_tokens), 0)::bigint FROM ask.llm_calls WHERE id > $1",
            &[&mark],
        )
        .unwrap();
    (r.get(0), r.get(1), r.get(2))
}

/// A short class of a prediction error, for the summary.
fn error_kind(e: &str) -> String {
    for (needle, kind) in [
        ("contained no SQL", "no SQL"),
        ("was refused", "refused"),
        ("does not exist", "undefined object"),
        ("syntax error", "syntax error"),
        ("failed after", "failed"),
    ] {
        if e.contains(needle) {
            return kind.to_string();
        }
    }
    e.chars().take(60).collect()
}
