//! The bare model, the baseline every accuracy benchmark reports beside pg_ask: the same model
//! on the same server, given the schema's `CREATE TABLE` statements (with their keys, built from
//! the benchmark database's catalog) and the question in one chat message. The SQL is read from
//! its reply as pg_ask reads a reply ([`pg_ask_core::extract::extract_sql`]), run read-only in
//! the question's schema of the same database, and judged by the comparison `ask.evaluate` uses
//! ([`pg_ask_core::evaluate::judge`]).

use std::collections::HashMap;
use std::time::Duration;

use pg_ask_core::ask::{ExecFailure, Executor};
use pg_ask_core::config::{LlmConfig, Modes, Provider};
use pg_ask_core::evaluate::{asks_for_order, judge, SuiteQuestion};
use pg_ask_core::llm::{chat_all, ChatRequest, Runner};
use pg_ask_core::rows::ResultSet;
use pg_ask_core::secret::Secret;
use pg_ask_core::sqltext::quote_ident;
use postgres::types::Type;
use postgres::{Client, SimpleQueryMessage};
use serde_json::Value;

/// Rows a judged result may have at most, as `ask.evaluate` judges.
const JUDGE_ROW_LIMIT: usize = 100_000;
/// The time one statement of the judge may take.
const STATEMENT_TIMEOUT_MS: u32 = 30_000;

/// Where the bare model is asked, and how.
pub struct Bare {
    pub url: String,
    pub model: String,
    pub max_tokens: u32,
    /// Questions in flight at once.
    pub concurrency: usize,
}

/// One question's outcome for the bare model.
#[derive(Debug, Clone)]
pub struct BareAnswer {
    pub qno: i32,
    pub question: String,
    /// The SQL read from the reply, when any.
    pub sql: Option<String>,
    pub ex: bool,
    /// Whether the question counts (a gold query ran).
    pub judged: bool,
    /// Seconds of the model's call: the SQL-only time.
    pub seconds: f64,
    pub prompt_tokens: u64,
    pub cached_prompt_tokens: u64,
    /// Why it is wrong, when it is.
    pub error: Option<String>,
}

/// The bare model's results over a suite.
pub struct BareRun {
    pub answers: Vec<BareAnswer>,
    /// Whether the server said how many prompt tokens it read from its cache.
    pub cache_reported: bool,
}

impl BareRun {
    pub fn judged(&self) -> usize {
        self.answers.iter().filter(|a| a.judged).count()
    }
    pub fn correct(&self) -> usize {
        self.answers.iter().filter(|a| a.judged && a.ex).count()
    }
    pub fn ex(&self) -> f64 {
        self.correct() as f64 / self.judged().max(1) as f64
    }
    pub fn median_seconds(&self) -> f64 {
        median(self.answers.iter().map(|a| a.seconds).collect())
    }
    pub fn cached_share(&self) -> Option<f64> {
        let prompt: u64 = self.answers.iter().map(|a| a.prompt_tokens).sum();
        let cached: u64 = self.answers.iter().map(|a| a.cached_prompt_tokens).sum();
        self.cache_reported.then(|| cached as f64 / prompt.max(1) as f64)
    }
}

/// The median of `v` (the upper one of an even count, as bench_real reports pg_ask's).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The `CREATE TABLE` statements of the tables of `schema`, in the order they were created,
/// each with its columns (type, `NOT NULL`, the comment as a `--` line before it), primary key,
/// unique and foreign keys, after the table's comment, written as they read with the search
/// path set to the schema (names unqualified): the documentation pg_ask reads from the
/// catalog, given to the bare model too.
pub fn create_tables(c: &mut Client, schema: &str) -> String {
    c.batch_execute(&format!("SET search_path = {}", quote_ident(schema))).unwrap();
    let rows = c
        .query(
            "SELECT coalesce('-- ' || replace(obj_description(c.oid, 'pg_class'), E'\\n', ' ') || E'\\n', '')
                    || format(E'CREATE TABLE %I (\\n%s\\n);', c.relname, array_to_string(
                 array(SELECT format('%s  %I %s%s', coalesce('  -- ' || replace(col_description(c.oid, a.attnum), E'\\n', ' ') || E'\\n', ''),
                                     a.attname, format_type(a.atttypid, a.atttypmod),
                                     CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END)
                       FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum)
                 || array(SELECT '  ' || pg_get_constraintdef(k.oid) FROM pg_constraint k
                          WHERE k.conrelid = c.oid AND k.contype IN ('p', 'u', 'f')
                          ORDER BY position(k.contype IN 'puf'), k.conname),
                 E',\\n'))
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition
             ORDER BY c.oid",
            &[&schema],
        )
        .unwrap();
    c.batch_execute("RESET search_path").unwrap();
    rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n\n")
}

/// The one message the bare model gets: the tables, then the question.
pub fn request(tables: &str, question: &str) -> ChatRequest {
    ChatRequest::new(
        "",
        format!(
            "{tables}\n\nWrite one PostgreSQL query over the tables above that answers this question. Reply with the query only.\n{}",
            question.trim()
        ),
    )
}

/// A suite question as `ask.evaluate` reads it.
struct Asked {
    qno: i32,
    question: String,
    prompt: String,
    gold: String,
    schema: String,
    category: Option<String>,
}

/// Ask the bare model every question of the caller's `suite` (loaded with `ask.load_suite`),
/// `bare.concurrency` at a time, then judge each reply's SQL in the question's schema.
pub fn run(c: &mut Client, suite: &str, bare: &Bare) -> BareRun {
    let questions: Vec<Asked> = c
        .query(
            "SELECT qno, question, gold_sql, coalesce(schema, 'public'), category, instructions
               FROM ask.eval_questions WHERE suite = $1 ORDER BY qno",
            &[&suite],
        )
        .unwrap()
        .iter()
        .map(|r| {
            let question: String = r.get(1);
            let prompt = SuiteQuestion {
                question: question.clone(),
                gold_sql: String::new(),
                gold_alternatives: Vec::new(),
                category: None,
                difficulty: None,
                schema: None,
                instructions: r.get(5),
            }
            .prompt_text();
            Asked { qno: r.get(0), question, prompt, gold: r.get(2), schema: r.get(3), category: r.get(4) }
        })
        .collect();
    let mut tables: HashMap<String, String> = HashMap::new();
    let reqs: Vec<ChatRequest> = questions
        .iter()
        .map(|q| {
            let ddl = tables.entry(q.schema.clone()).or_insert_with(|| create_tables(c, &q.schema));
            request(ddl, &q.prompt)
        })
        .collect();
    let cfg = LlmConfig {
        provider: Provider::OpenAi,
        base_url: bare.url.clone(),
        model: bare.model.clone(),
        api_key: Secret::new(String::new()),
        request_timeout: Duration::from_secs(600),
        temperature: 0.0,
        max_tokens: bare.max_tokens,
        max_response_bytes: 8 << 20,
        constraints: Modes::default(),
    };
    let runner = Runner::new().unwrap();
    let replies = runner.block_on(chat_all(runner.http(), &cfg, reqs, bare.concurrency), &|| false).expect("never interrupted");
    let mut cache_reported = false;
    let answers = questions
        .iter()
        .zip(replies)
        .map(|(q, (reply, took))| {
            let mut a = BareAnswer {
                qno: q.qno,
                question: q.question.clone(),
                sql: None,
                ex: false,
                judged: true,
                seconds: took.as_secs_f64(),
                prompt_tokens: 0,
                cached_prompt_tokens: 0,
                error: None,
            };
            let sql = match reply {
                Ok(r) => {
                    a.prompt_tokens = r.prompt_tokens.unwrap_or(0);
                    cache_reported |= r.cached_prompt_tokens.is_some();
                    a.cached_prompt_tokens = r.cached_prompt_tokens.unwrap_or(0);
                    pg_ask_core::extract::extract_sql(&r.content)
                }
                Err(e) => {
                    a.error = Some(format!("the call failed: {e}"));
                    None
                }
            };
            // No SQL is a wrong answer, like a prediction that does not run.
            let predicted = sql.clone().unwrap_or_default();
            let mut host = ReadOnly { c: &mut *c, schema: &q.schema };
            let judgement = judge(&mut host, &q.gold, &predicted, asks_for_order(&q.question, q.category.as_deref()));
            a.sql = sql;
            a.ex = judgement.ex;
            a.judged = !judgement.error.as_ref().is_some_and(|e| e.is_gold_failure());
            if a.error.is_none() {
                a.error = judgement.error.map(|e| e.to_string());
            }
            a
        })
        .collect();
    BareRun { answers, cache_reported }
}

/// Statements run read-only in a schema, under a statement timeout, their cells typed as
/// `ask()`'s executor types them (numbers and booleans as JSON numbers and booleans, json as
/// JSON, the rest as PostgreSQL's text).
struct ReadOnly<'a> {
    c: &'a mut Client,
    schema: &'a str,
}

impl Executor for ReadOnly<'_> {
    fn execute(&mut self, sql: &pg_ask_core::guard::CheckedSql) -> Result<ResultSet, ExecFailure> {
        let sql = sql.sql.as_str();
        let mut tx = self.c.build_transaction().read_only(true).start().unwrap();
        tx.batch_execute(&format!(
            "SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}; SET LOCAL search_path = {}",
            quote_ident(self.schema)
        ))
        .unwrap();
        let ran = tx.prepare(sql).and_then(|stmt| {
            let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
            let columns: Vec<String> = stmt.columns().iter().map(|c| c.name().to_string()).collect();
            let messages = tx.simple_query(sql)?;
            let mut rows = Vec::new();
            let mut truncated = false;
            for m in messages {
                if let SimpleQueryMessage::Row(r) = m {
                    if rows.len() == JUDGE_ROW_LIMIT {
                        truncated = true;
                        break;
                    }
                    rows.push((0..columns.len()).map(|i| r.get(i).map_or(Value::Null, |t| typed(&types[i], t))).collect());
                }
            }
            Ok(ResultSet { columns, rows, truncated, size_cut: false })
        });
        let _ = tx.rollback();
        ran.map_err(|e| match e.as_db_error() {
            Some(db) => ExecFailure::Error {
                sqlstate: db.code().code().into(),
                message: db.message().to_string(),
                detail: db.detail().map(str::to_string),
                hint: db.hint().map(str::to_string),
            },
            None => ExecFailure::Error { sqlstate: "XX000".into(), message: e.to_string(), detail: None, hint: None },
        })
    }

    fn execute_verified(&mut self, sql: &pg_ask_core::guard::CheckedSql, _schema: Option<&str>) -> Result<ResultSet, ExecFailure> {
        self.execute(sql)
    }
}

/// A cell's JSON value from its type and text, as `ask()`'s executor makes it.
fn typed(t: &Type, text: &str) -> Value {
    match *t {
        Type::BOOL => Value::Bool(text == "t"),
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => {
            text.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(text.into()))
        }
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => match (text.parse::<i64>(), text.parse::<f64>()) {
            (Ok(i), _) => Value::from(i),
            (_, Ok(f)) if f.is_finite() => Value::from(f),
            _ => Value::String(text.into()),
        },
        Type::JSON | Type::JSONB => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())),
        _ => Value::String(text.into()),
    }
}

/// The lines a benchmark prints for the bare model, beside pg_ask's verdicts on the same
/// questions (`pg_ask`: question number → EX, judged questions only).
pub fn report(run: &BareRun, pg_ask: &std::collections::BTreeMap<i32, bool>, each: bool) {
    let n = run.answers.len();
    let read = run.answers.iter().filter(|a| a.sql.is_some()).count();
    println!("\n== the bare model: the schema's CREATE TABLE statements and the question in one message");
    println!("bare model EX                     {:.3} ({} of {} judged)", run.ex(), run.correct(), run.judged());
    println!("bare model seconds, median        {:.2} (SQL only: its one call)", run.median_seconds());
    println!("bare model SQL read from replies  {read} of {n}");
    match run.cached_share() {
        Some(share) => println!(
            "bare model cached prompt tokens   {share:.3} ({} of {})",
            run.answers.iter().map(|a| a.cached_prompt_tokens).sum::<u64>(),
            run.answers.iter().map(|a| a.prompt_tokens).sum::<u64>()
        ),
        None => println!("bare model cached prompt tokens   not reported by the server"),
    }
    let both: Vec<(&BareAnswer, bool)> =
        run.answers.iter().filter(|a| a.judged).filter_map(|a| pg_ask.get(&a.qno).map(|p| (a, *p))).collect();
    let pg_right = both.iter().filter(|(_, p)| *p).count();
    let bare_right = both.iter().filter(|(a, _)| a.ex).count();
    let only_pg: Vec<i32> = both.iter().filter(|(a, p)| *p && !a.ex).map(|(a, _)| a.qno).collect();
    let only_bare: Vec<i32> = both.iter().filter(|(a, p)| !*p && a.ex).map(|(a, _)| a.qno).collect();
    println!(
        "pg_ask minus bare                 {:+.3} EX on {} questions judged for both; right only with pg_ask: {only_pg:?}, only bare: {only_bare:?}",
        (pg_right as f64 - bare_right as f64) / both.len().max(1) as f64,
        both.len()
    );
    if each {
        for a in &run.answers {
            let verdict = if !a.judged {
                "gold_failed"
            } else if a.ex {
                "correct"
            } else {
                "wrong"
            };
            println!(
                "  bare {:>3}  {verdict:<11} {:>5.2} s  {}  {}",
                a.qno,
                a.seconds,
                a.question.lines().next().unwrap_or_default(),
                a.error.as_deref().unwrap_or("").replace('\n', " ").chars().take(100).collect::<String>()
            );
        }
    }
    // Each reply's SQL, for reading pg_ask's misses beside the bare model's.
    if let Ok(path) = std::env::var("PG_ASK_REAL_BARE_SQL") {
        let lines: Vec<String> = run
            .answers
            .iter()
            .map(|a| serde_json::json!({"qno": a.qno, "ex": a.ex, "judged": a.judged, "sql": a.sql, "error": a.error}).to_string())
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap_or_else(|e| eprintln!("PG_ASK_REAL_BARE_SQL {path}: {e}"));
    }
}
