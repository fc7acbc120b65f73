//! The tools: their parameters (JSON schemas), the one SQL statement each runs (pg_ask's
//! functions, every value a bound parameter), and how its rows become the tool's result.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// A question to pg_ask, alone or as the next turn of a conversation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The question, in plain language, about the tables the role may read.
    pub question: String,
    /// A conversation id from `conversation_start`: the question is read after that
    /// conversation's earlier turns ("and in Rome?").
    #[serde(default)]
    pub conversation: Option<i64>,
}

/// Feedback on an earlier call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Feedback {
    /// The `call_id` an `ask` or `explain` result gave.
    pub call_id: i64,
    /// Whether that call's SQL answered the question right.
    pub correct: bool,
    /// The corrected SQL, when it was wrong: verified as this role before it is kept. Taken
    /// only when the server runs with `--allow-sql` (and listed only then).
    #[serde(default)]
    pub sql: Option<String>,
}

/// A new conversation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationStart {
    /// A title to find it by in `ask.conversations`.
    #[serde(default)]
    pub title: Option<String>,
}

/// SQL to run through pg_ask's guard.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunSql {
    /// One read-only query (SELECT, VALUES, TABLE, read-only WITH); anything else is refused.
    pub sql: String,
}

/// A query to say in plain words.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainSql {
    /// One query (as the `sql` tool returns it); it is read, never run.
    pub sql: String,
}

/// How many questions to offer.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuggestQuestions {
    /// At most this many (1 to 50; default 5).
    #[serde(default)]
    pub n: Option<i32>,
}

/// No parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

/// Which tool a call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name {
    Ask,
    Sql,
    Rows,
    Explain,
    Feedback,
    ConversationStart,
    Tables,
    RunSql,
    ExplainSql,
    SuggestQuestions,
}

impl Name {
    pub const ALL: [Name; 10] = [
        Name::Ask,
        Name::Sql,
        Name::Rows,
        Name::Explain,
        Name::Feedback,
        Name::ConversationStart,
        Name::Tables,
        Name::RunSql,
        Name::ExplainSql,
        Name::SuggestQuestions,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Name::Ask => "ask",
            Name::Sql => "sql",
            Name::Rows => "rows",
            Name::Explain => "explain",
            Name::Feedback => "feedback",
            Name::ConversationStart => "conversation_start",
            Name::Tables => "tables",
            Name::RunSql => "run_sql",
            Name::ExplainSql => "explain_sql",
            Name::SuggestQuestions => "suggest_questions",
        }
    }

    /// The tool a call names, among those this server offers.
    pub fn find(name: &str, allow_sql: bool) -> Option<Name> {
        Name::ALL.into_iter().find(|n| n.as_str() == name && (allow_sql || *n != Name::RunSql))
    }

    fn description(self, allow_sql: bool) -> &'static str {
        match self {
            Name::Feedback if !allow_sql => "Say whether an earlier call's SQL was right (it becomes a verified query pg_ask reuses) or wrong.",
            Name::Ask => "Ask the database a question in plain language. pg_ask writes SQL over the tables your role may read, checks that it only reads, runs it as your role and answers from the rows. Returns the answer, the SQL that ran, the source of the answer (llm, verified, context, clarify) and a call_id to give feedback on.",
            Name::Sql => "The SQL pg_ask writes (checked, corrected, run once as your role) for a question, without an answer.",
            Name::Rows => "The result rows of the SQL pg_ask writes for a question, as JSON objects (capped; `truncated` says when rows were cut).",
            Name::Explain => "The whole trace of answering a question: every stage with its input, output, tokens and milliseconds; a failed run returns its trace with an `error` entry.",
            Name::Feedback => "Say whether an earlier call's SQL was right (it becomes a verified query pg_ask reuses), or give the corrected SQL.",
            Name::ConversationStart => "Start a conversation: pass the returned id as `conversation` to ask/sql/rows/explain, and follow-up questions are read after the earlier ones.",
            Name::Tables => "The tables and views your role may read, with their descriptions.",
            Name::RunSql => "Run one read-only SQL query through pg_ask's guard, as your role (no writes, no functions with effects); returns the rows as JSON objects (capped).",
            Name::SuggestQuestions => "A few questions your role can ask now that pg_ask answers right: verified queries of verifiers you trust over tables you may read, each checked to run for you first. Returns each question with its verified query's id and tables.",
            Name::ExplainSql => "Say what one SQL query does, in short plain lines someone who does not read SQL can check against the question (tables, joins, filters, groups, order, limit). Read from the query's parse, never run.",
        }
    }

    fn schema(self, allow_sql: bool) -> Arc<JsonObject> {
        use rmcp::handler::server::common::schema_for_type;
        match self {
            Name::Ask | Name::Sql | Name::Rows | Name::Explain => schema_for_type::<Question>(),
            Name::Feedback if allow_sql => schema_for_type::<Feedback>(),
            Name::Feedback => {
                // Without --allow-sql no argument carries SQL: the corrected query is not offered.
                let mut schema = (*schema_for_type::<Feedback>()).clone();
                if let Some(Value::Object(props)) = schema.get_mut("properties") {
                    props.remove("sql");
                }
                Arc::new(schema)
            }
            Name::ConversationStart => schema_for_type::<ConversationStart>(),
            Name::Tables => schema_for_type::<Nothing>(),
            Name::RunSql => schema_for_type::<RunSql>(),
            Name::ExplainSql => schema_for_type::<ExplainSql>(),
            Name::SuggestQuestions => schema_for_type::<SuggestQuestions>(),
        }
    }

    /// The tool's listing, as a server with or without `--allow-sql` offers it.
    pub fn tool(self, allow_sql: bool) -> Tool {
        let mut annotations = ToolAnnotations::new().read_only(!matches!(self, Name::Feedback | Name::ConversationStart));
        annotations = annotations.destructive(false).open_world(false);
        Tool::new(Cow::Borrowed(self.as_str()), Cow::Borrowed(self.description(allow_sql)), self.schema(allow_sql))
            .with_annotations(annotations)
    }
}

/// The tools listed: all but `run_sql`, which only `--allow-sql` lists.
pub fn listed(allow_sql: bool) -> Vec<Tool> {
    Name::ALL.into_iter().filter(|n| allow_sql || *n != Name::RunSql).map(|n| n.tool(allow_sql)).collect()
}

/// Why a call that carries SQL is refused when the server runs without `--allow-sql`, or
/// None: `run_sql` is not served at all then, and `feedback`'s corrected `sql` would be kept
/// as a verified query and run as the answer to the same question (the client's own SQL).
pub fn sql_refused(feedback: &Feedback, allow_sql: bool) -> Option<String> {
    (feedback.sql.is_some() && !allow_sql).then(|| {
        "feedback: `sql` (a corrected query) is taken only when pg_ask-mcp runs with --allow-sql; \
         give `correct` alone, or ask the operator"
            .to_owned()
    })
}

/// Parses a call's arguments into the tool's parameters, with a message naming the tool.
pub fn parse<T: for<'de> Deserialize<'de>>(name: Name, args: Option<JsonObject>) -> Result<T, String> {
    let value = Value::Object(args.unwrap_or_default());
    serde_json::from_value(value).map_err(|e| format!("invalid arguments for {}: {e}", name.as_str()))
}

/// The statement a question tool runs: with `conversation => $2` only when one is given.
pub fn question_sql(name: Name, in_conversation: bool) -> &'static str {
    match (name, in_conversation) {
        (Name::Ask | Name::Explain, false) => "SELECT ask.explain($1)",
        (Name::Ask | Name::Explain, true) => "SELECT ask.explain($1, conversation => $2)",
        (Name::Sql, false) => "SELECT ask.sql($1)",
        (Name::Sql, true) => "SELECT ask.sql($1, conversation => $2)",
        (_, false) => "SELECT r FROM ask.rows($1) AS r LIMIT $2",
        (_, true) => "SELECT r FROM ask.rows($1, conversation => $3) AS r LIMIT $2",
    }
}

pub const FEEDBACK_SQL: &str = "SELECT ask.feedback($1, $2, $3)";
pub const CONVERSATION_START_SQL: &str = "SELECT ask.conversation_start($1)";
pub const TABLES_SQL: &str = "SELECT schema_name::text, table_name::text, description FROM ask.tables()";
pub const RUN_SQL_SQL: &str = "SELECT r FROM ask.query($1) AS r LIMIT $2";
pub const EXPLAIN_SQL_SQL: &str = "SELECT ask.explain_sql($1)";
pub const CHART_SQL: &str = "SELECT ask.chart($1)";
/// Where a tool's value carries a chart (SVG) until it becomes an image block of the result.
pub const CHART_KEY: &str = "chart_svg";

/// Standard base64 with padding, as MCP's image blocks carry their data.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub const SUGGEST_SQL: &str = "SELECT question, verified_id, tables FROM ask.suggest_questions($1)";

/// What the `ask` tool returns of a trace: the answer, the SQL that ran, the call id, the
/// source, and the error when the run failed. Whether it is an error result is the second.
pub fn ask_result(trace: &Value) -> (Value, bool) {
    let mut out = json!({
        "answer": trace.get("answer").cloned().unwrap_or(Value::Null),
        "sql": trace.get("final_sql").cloned().unwrap_or(Value::Null),
        "call_id": trace.get("call_id").cloned().unwrap_or(Value::Null),
        "source": trace.get("source").cloned().unwrap_or(Value::Null),
    });
    for extra in ["rows", "notices", "reading"] {
        if let Some(v) = trace.get(extra).filter(|v| !v.is_null()) {
            out[extra] = v.clone();
        }
    }
    let error = trace.get("error").filter(|e| !e.is_null()).cloned();
    let failed = error.is_some();
    if let Some(e) = error {
        out["error"] = e;
    }
    (out, failed)
}

/// Rows fetched with a limit one above the cap: the rows kept and whether any were cut.
pub fn capped(mut rows: Vec<Value>, cap: usize) -> Value {
    let truncated = rows.len() > cap;
    rows.truncate(cap);
    let mut out = json!({ "row_count": rows.len(), "truncated": truncated, "rows": rows });
    if truncated {
        out["note"] = json!(format!("only the first {cap} rows are returned"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_as_the_standard_says() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"<svg>\xff"), "PHN2Zz7/");
    }

    #[test]
    fn run_sql_only_when_allowed() {
        let names = |allow| listed(allow).into_iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
        assert!(!names(false).contains(&"run_sql".to_owned()));
        assert!(names(true).contains(&"run_sql".to_owned()));
        assert_eq!(names(false).len(), 9);
        assert!(names(false).contains(&"explain_sql".to_owned()));
        assert_eq!(Name::find("run_sql", false), None);
        assert_eq!(Name::find("run_sql", true), Some(Name::RunSql));
        assert_eq!(Name::find("drop_table", true), None);
    }

    #[test]
    fn schemas_name_their_fields() {
        let t = Name::Ask.tool(false);
        let props = t.input_schema.get("properties").unwrap();
        assert!(props.get("question").is_some() && props.get("conversation").is_some(), "{props}");
        assert_eq!(t.input_schema.get("required").unwrap(), &json!(["question"]));
    }

    #[test]
    fn feedback_takes_sql_only_with_allow_sql() {
        let props = |allow| Name::Feedback.tool(allow).input_schema.get("properties").unwrap().clone();
        assert!(props(true).get("sql").is_some() && props(false).get("sql").is_none());
        assert!(props(false).get("call_id").is_some());
        let args = |v: Value| v.as_object().cloned();
        let f: Feedback = parse(Name::Feedback, args(json!({"call_id": 1, "correct": false, "sql": "SELECT * FROM hr.vault"}))).unwrap();
        assert!(sql_refused(&f, false).unwrap().contains("--allow-sql"));
        assert!(sql_refused(&f, true).is_none());
        let f: Feedback = parse(Name::Feedback, args(json!({"call_id": 1, "correct": true}))).unwrap();
        assert!(sql_refused(&f, false).is_none());
    }

    #[test]
    fn arguments_are_checked() {
        let args = |v: Value| v.as_object().cloned();
        let q: Question = parse(Name::Ask, args(json!({"question": "how many?", "conversation": 3}))).unwrap();
        assert_eq!((q.question.as_str(), q.conversation), ("how many?", Some(3)));
        let e = parse::<Question>(Name::Ask, args(json!({"question": 1}))).unwrap_err();
        assert!(e.starts_with("invalid arguments for ask"), "{e}");
        assert!(parse::<Question>(Name::Sql, None).unwrap_err().contains("question"));
        assert!(parse::<Feedback>(Name::Feedback, args(json!({"call_id": 1, "correct": true, "x": 1}))).is_err());
    }

    #[test]
    fn statements_bind_every_value() {
        for name in [Name::Ask, Name::Sql, Name::Rows, Name::Explain] {
            for conv in [false, true] {
                let sql = question_sql(name, conv);
                assert!(sql.contains("$1") && sql.contains("conversation =>") == conv, "{sql}");
            }
        }
    }

    #[test]
    fn shapes_results() {
        let trace = json!({"answer": "2", "final_sql": "SELECT 2", "call_id": 7, "source": "llm", "stages": []});
        let (out, failed) = ask_result(&trace);
        assert_eq!(out, json!({"answer": "2", "sql": "SELECT 2", "call_id": 7, "source": "llm"}));
        assert!(!failed);
        let (out, failed) = ask_result(&json!({"error": {"message": "permission denied", "sqlstate": "42501"}}));
        assert!(failed && out["error"]["sqlstate"] == "42501");
        let out = capped(vec![json!(1), json!(2), json!(3)], 2);
        assert_eq!(out["rows"], json!([1, 2]));
        assert_eq!(out["truncated"], true);
        assert_eq!(capped(vec![json!(1)], 2)["truncated"], false);
    }
}
