//! Oracle mode: the stand-in answers in-context database prompts (pg_ask's shadow replays and
//! benchmarks) correctly, by executing the commands it receives against a real PostgreSQL.
//!
//! The prompt is read the way pg_ask writes it: the tables after "The database has these
//! tables" in the system prompt; the commands either numbered in one user message
//! (zero-shot, zero-shot chain of thought) or one per user turn (few-shot), the last being
//! the query. Everything runs in a scratch schema inside a transaction that is rolled back.
//! English commands (the NL encoding) are mapped back to SQL through `nl_map`.
//!
//! `forget_first` makes a degraded oracle: it ignores that many of the first commands, as a
//! model with a short memory would.

// Without the `oracle` feature only the prompt reading is compiled in.
#![cfg_attr(not(feature = "oracle"), allow(dead_code, unused_imports))]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How the oracle reaches PostgreSQL and what it forgets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OracleSpec {
    /// A libpq-style connection string (`host=/tmp port=5432 user=postgres dbname=postgres`).
    pub conninfo: String,
    /// Ignore this many of the first commands (a degraded oracle).
    #[serde(default)]
    pub forget_first: usize,
    /// English sentence (whitespace collapsed) → SQL statement, for the NL encoding.
    #[serde(default)]
    pub nl_map: BTreeMap<String, String>,
}

/// The parts of a replay prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayParts {
    pub schema: Vec<String>,
    pub commands: Vec<String>,
    pub query: String,
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Read a replay prompt: the system text and the (role, content) turns after it.
pub fn parse_prompt(system: &str, turns: &[(String, String)]) -> Result<ReplayParts, String> {
    let start = system
        .lines()
        .position(|l| l.starts_with("The database has these tables"))
        .ok_or("not an in-context database prompt (no table list)")?;
    let mut schema = Vec::new();
    let mut buffer = String::new();
    for line in system.lines().skip(start + 1) {
        if line.starts_with("The tables are empty") {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        buffer.push_str(line);
        buffer.push('\n');
        let t = line.trim_end();
        // A statement ends with `;`; an English sentence is one line.
        if t.ends_with(';') || !buffer.trim_start().to_ascii_uppercase().starts_with("CREATE TABLE") {
            schema.push(buffer.trim().to_string());
            buffer.clear();
        }
    }
    if !buffer.trim().is_empty() {
        schema.push(buffer.trim().to_string());
    }

    let users: Vec<&str> = turns.iter().filter(|(r, _)| r == "user").map(|(_, c)| c.as_str()).collect();
    let (commands, query) = match users.as_slice() {
        [only] if only.starts_with("Commands, in order:") => {
            let mut numbered: Vec<String> = only
                .lines()
                .filter_map(|l| {
                    let (n, rest) = l.split_once(". ")?;
                    n.chars().all(|c| c.is_ascii_digit()).then(|| rest.to_string())
                })
                .collect();
            let query = numbered.pop().ok_or("no commands in the prompt")?;
            (numbered, query)
        }
        [before @ .., last] => (before.iter().map(|s| s.to_string()).collect(), last.to_string()),
        [] => return Err("no user message".into()),
    };
    Ok(ReplayParts { schema, commands, query })
}

/// Render rows as the prompt asks: a flat list when every row has one column.
pub fn render_rows(rows: &[Vec<Value>]) -> String {
    let items: Vec<Value> = if rows.iter().all(|r| r.len() == 1) {
        rows.iter().map(|r| r[0].clone()).collect()
    } else {
        rows.iter().map(|r| Value::Array(r.clone())).collect()
    };
    Value::Array(items).to_string()
}

fn is_query(sql: &str) -> bool {
    let head = sql.trim_start().trim_start_matches('(').to_ascii_lowercase();
    head.starts_with("select") || head.starts_with("with") || head.starts_with("values") || head.starts_with("table")
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Answer a replay prompt by executing it.
#[cfg(feature = "oracle")]
pub fn answer(spec: &OracleSpec, system: &str, turns: &[(String, String)]) -> Result<String, String> {
    let parts = parse_prompt(system, turns)?;
    let sql_of = |text: &str| -> String {
        let key = one_line(text);
        spec.nl_map.get(&key).cloned().unwrap_or(key)
    };
    let mut client = postgres::Client::connect(&spec.conninfo, postgres::NoTls).map_err(|e| format!("oracle: cannot connect: {e}"))?;
    let mut tx = client.transaction().map_err(|e| e.to_string())?;
    let schema = format!("standin_oracle_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    tx.batch_execute(&format!("CREATE SCHEMA {schema}; SET LOCAL search_path = {schema}")).map_err(|e| e.to_string())?;
    let run = |tx: &mut postgres::Transaction, sql: &str| -> bool {
        let Ok(mut sp) = tx.savepoint("oracle_step") else { return false };
        match sp.batch_execute(sql) {
            Ok(()) => sp.commit().is_ok(),
            Err(_) => {
                let _ = sp.rollback();
                false
            }
        }
    };
    for table in &parts.schema {
        run(&mut tx, &sql_of(table));
    }
    for command in parts.commands.iter().skip(spec.forget_first) {
        run(&mut tx, &sql_of(command));
    }
    let query = sql_of(&parts.query);
    let out = if is_query(&query) {
        let body = query.trim().trim_end_matches(';');
        let wrapped = format!(
            "SELECT (SELECT json_agg(e.value ORDER BY e.n) FROM json_each(row_to_json(q)) WITH ORDINALITY AS e(key, value, n))::text FROM ({body}) q"
        );
        let Ok(mut sp) = tx.savepoint("oracle_query") else { return Err("oracle: savepoint failed".into()) };
        match sp.query(wrapped.as_str(), &[]) {
            Ok(rows) => {
                let rows: Vec<Vec<Value>> = rows
                    .iter()
                    .map(|r| {
                        let text: Option<String> = r.get(0);
                        match text.and_then(|t| serde_json::from_str::<Value>(&t).ok()) {
                            Some(Value::Array(cells)) => cells,
                            _ => vec![Value::Null],
                        }
                    })
                    .collect();
                render_rows(&rows)
            }
            Err(_) => "[]".to_string(),
        }
    } else if run(&mut tx, &query) {
        "Succeed".to_string()
    } else {
        "Fail".to_string()
    };
    let _ = tx.rollback();
    Ok(out)
}

#[cfg(not(feature = "oracle"))]
pub fn answer(_spec: &OracleSpec, _system: &str, _turns: &[(String, String)]) -> Result<String, String> {
    Err("oracle mode needs llm-standin built with the `oracle` feature".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(r, c)| (r.to_string(), c.to_string())).collect()
    }

    const SYSTEM: &str = "Now pretend you are a relational database.\n\nInstructions...\n\nThe database has these tables:\nCREATE TABLE a (\n  id int PRIMARY KEY\n);\nCREATE TABLE b (x text);\nThe tables are empty before the first command.\n";

    #[test]
    fn reads_zero_shot_prompts() {
        let p = parse_prompt(
            SYSTEM,
            &turns(&[(
                "user",
                "Commands, in order:\n1. INSERT INTO a VALUES (1);\n2. SELECT id FROM a;\nGive the result of command 2, the last one.",
            )]),
        )
        .unwrap();
        assert_eq!(p.schema, ["CREATE TABLE a (\n  id int PRIMARY KEY\n);", "CREATE TABLE b (x text);"]);
        assert_eq!(p.commands, ["INSERT INTO a VALUES (1);"]);
        assert_eq!(p.query, "SELECT id FROM a;");
    }

    #[test]
    fn reads_few_shot_prompts() {
        let p =
            parse_prompt(SYSTEM, &turns(&[("user", "INSERT INTO a VALUES (1);"), ("assistant", "Succeed"), ("user", "SELECT * FROM b;")]))
                .unwrap();
        assert_eq!(p.commands, ["INSERT INTO a VALUES (1);"]);
        assert_eq!(p.query, "SELECT * FROM b;");
        let nl = "Pretend.\nThe database has these tables, created by these commands:\ncreate a table named a with id.\ncreate a table named b.\n";
        let p = parse_prompt(nl, &turns(&[("user", "select everything from a.")])).unwrap();
        assert_eq!(p.schema, ["create a table named a with id.", "create a table named b."]);
        assert!(p.commands.is_empty());
        assert!(parse_prompt("hello", &turns(&[("user", "x")])).is_err());
    }

    #[test]
    fn rows_render_flat_for_one_column() {
        assert_eq!(render_rows(&[vec![Value::from(1)], vec![Value::from(2)]]), "[1,2]");
        assert_eq!(render_rows(&[vec![Value::from(1), Value::from("a")]]), "[[1,\"a\"]]");
        assert_eq!(render_rows(&[]), "[]");
    }
}
