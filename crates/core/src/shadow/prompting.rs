//! Chat requests that ask the LLM to act as the database, and parsing of its replies.
//!
//! Following InConDB's method, the LLM is told it is a relational database, is given the
//! schema and the sequence of commands, and must answer the *last* command: a JSON list of
//! result rows for a query, `Succeed` or `Fail` for an INSERT, UPDATE or DELETE. The three
//! promptings:
//!
//! * [`Prompting::ZeroShot`]: all commands in one user turn; answer with nothing else.
//! * [`Prompting::ZeroCot`]: the same, but the model may reason step by step and must put the
//!   answer alone on the last line.
//! * [`Prompting::FewShot`]: each past command is a user turn followed by its *true* result as
//!   an assistant turn (the results come from the caller, who executed the commands), then the
//!   query as the last user turn.
//!
//! The wording is ours, written after the paper's structure (role, task, answer format);
//! InConDB's own texts (`common_sql.json`, `common_nl.json`) can be substituted with
//! [`PromptTexts::from_incondb_json`].
//!
//! Result rows are shown in one convention everywhere (true results of few-shot turns and the
//! format the model is asked for): a JSON list with one element per row, the value itself when
//! the query returns one column (`[1,2,3,5]`, the paper's example) and a list of the column
//! values otherwise (`[[1,"Ann"],[2,"Bob"]]`). [`parse_reply`] accepts that and also lists of
//! objects, Python-style tuples and quotes, code fences, `Answer:` prefixes and prose around
//! the answer; what it cannot read is a [`ReplyError`], which scores 0.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::delta::Encoding;
use crate::llm::{ChatRequest, Message};

/// One result row: JSON scalars (nested arrays/objects are kept as their JSON text).
pub type Row = Vec<Value>;

/// How the LLM is prompted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prompting {
    ZeroShot,
    ZeroCot,
    FewShot,
}

impl Prompting {
    pub const ALL: [Prompting; 3] = [Prompting::ZeroShot, Prompting::ZeroCot, Prompting::FewShot];

    pub fn as_str(self) -> &'static str {
        match self {
            Prompting::ZeroShot => "zero_shot",
            Prompting::ZeroCot => "zero_cot",
            Prompting::FewShot => "few_shot",
        }
    }
}

impl fmt::Display for Prompting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Prompting {
    type Err = PromptError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "zero_shot" | "zeroshot" => Ok(Prompting::ZeroShot),
            "zero_cot" | "zerocot" | "zero_shot_cot" => Ok(Prompting::ZeroCot),
            "few_shot" | "fewshot" => Ok(Prompting::FewShot),
            _ => Err(PromptError::UnknownPrompting(s.to_string())),
        }
    }
}

/// What kind of answer the last command expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryKind {
    /// A query: the answer is a list of rows.
    Select,
    /// An INSERT, UPDATE or DELETE: the answer is Succeed or Fail.
    Modify,
}

/// A command's result: the truth computed by PostgreSQL, or what the LLM answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Result rows of a query, in the order returned.
    Rows(Vec<Row>),
    /// The INSERT, UPDATE or DELETE ran without error (possibly touching no row).
    Succeed,
    /// The statement raised an error.
    Fail,
}

impl Answer {
    pub fn kind(&self) -> QueryKind {
        match self {
            Answer::Rows(_) => QueryKind::Select,
            Answer::Succeed | Answer::Fail => QueryKind::Modify,
        }
    }

    /// Rows from a JSON array of row objects (e.g. `jsonb_agg(t)` of a result) or of row
    /// arrays; object rows keep their key order only if the caller's JSON did (see
    /// [`parse_reply`] for order-preserving parsing of text).
    pub fn rows_from_json(value: &Value) -> Option<Answer> {
        let Value::Array(items) = value else { return None };
        Some(Answer::Rows(items.iter().map(row_from_value).collect()))
    }

    /// The answer as the model is asked to write it: `Succeed`, `Fail`, or a JSON list
    /// (flat when every row has one column).
    pub fn render(&self) -> String {
        match self {
            Answer::Succeed => "Succeed".to_string(),
            Answer::Fail => "Fail".to_string(),
            Answer::Rows(rows) => {
                let items: Vec<Value> = if rows.iter().all(|r| r.len() == 1) {
                    rows.iter().map(|r| r[0].clone()).collect()
                } else {
                    rows.iter().map(|r| Value::Array(r.clone())).collect()
                };
                Value::Array(items).to_string()
            }
        }
    }
}

fn row_from_value(v: &Value) -> Row {
    match v {
        Value::Array(cells) => cells.iter().map(scalar).collect(),
        Value::Object(map) => map.values().map(scalar).collect(),
        other => vec![scalar(other)],
    }
}

/// Nested arrays and objects become their JSON text, so rows hold scalars only.
fn scalar(v: &Value) -> Value {
    match v {
        Value::Array(_) | Value::Object(_) => Value::String(v.to_string()),
        other => other.clone(),
    }
}

/// The fixed texts of the prompts. [`PromptTexts::default_for`] gives pg_ask's wording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTexts {
    /// Who the model is ("you are a relational database ...").
    pub role: String,
    pub zero_shot: String,
    pub zero_cot: String,
    pub few_shot: String,
}

impl PromptTexts {
    /// pg_ask's own prompt texts for an encoding.
    pub fn default_for(encoding: Encoding) -> PromptTexts {
        let (role, commands, command) = match encoding {
            Encoding::Sql => {
                ("Now pretend you are a relational database (PostgreSQL) that executes SQL commands.", "SQL commands", "SQL command")
            }
            Encoding::Nl => {
                ("Now pretend you are a relational database that executes commands written in plain English.", "commands", "command")
            }
        };
        let format = format!(
            "If the last {command} is a query (a SELECT), the answer is a JSON list with one element per result row, \
             in the order the database returns them: the value itself when the query returns one column, \
             as in [1,2,3,5], or a JSON list of the column values otherwise, as in [[1,\"Ann\"],[2,\"Bob\"]]; \
             write [] when no row is returned. If the last {command} is an insert, update or delete, the answer is \
             Succeed when the database executes it without an error (even when it changes no row), or Fail when it \
             raises an error."
        );
        PromptTexts {
            role: role.to_string(),
            zero_shot: format!(
                "The user gives you a sequence of {commands}. Execute all of them, in order. \
                 Output only the result of the last {command}, with no other words and no code fence.\n{format}"
            ),
            zero_cot: format!(
                "The user gives you a sequence of {commands}. Execute all of them, in order. \
                 Let's think step by step: you may first write how each {command} changes the tables. \
                 Then write the result of the last {command} alone on the last line of your reply, \
                 with no other words and no code fence.\n{format}"
            ),
            few_shot: format!(
                "In earlier steps you executed a series of insert, update, delete or select {commands} requested by \
                 the user. They are given to you one by one, each followed by its true result. Then a new {command} \
                 is given. Execute it and output only its result, with no other words and no code fence.\n{format}"
            ),
        }
    }

    /// Texts from InConDB's `common_sql.json` / `common_nl.json` (keys `system_prompt`,
    /// `ZERO-SHOT`, `ZERO-COT`, `FEW-SHOT`, each a list of sentences).
    pub fn from_incondb_json(json: &Value) -> Result<PromptTexts, PromptError> {
        let part = |key: &str| -> Result<String, PromptError> {
            let items =
                json.get(key).and_then(Value::as_array).ok_or_else(|| PromptError::BadPromptTexts(format!("no list under {key:?}")))?;
            let sentences: Option<Vec<&str>> = items.iter().map(|s| s.as_str().map(str::trim)).collect();
            let sentences = sentences.ok_or_else(|| PromptError::BadPromptTexts(format!("{key:?} holds a non-string")))?;
            Ok(sentences.join("\n"))
        };
        Ok(PromptTexts {
            role: part("system_prompt")?,
            zero_shot: part("ZERO-SHOT")?,
            zero_cot: part("ZERO-COT")?,
            few_shot: part("FEW-SHOT")?,
        })
    }
}

/// A command that ran before the query, with its true result (needed for few-shot only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PastCommand {
    pub command: String,
    pub result: Option<Answer>,
}

/// Everything one replay request is built from.
#[derive(Debug, Clone)]
pub struct ReplayPrompt<'a> {
    pub encoding: Encoding,
    pub prompting: Prompting,
    /// The schema: `CREATE TABLE` statements (SQL encoding) or their descriptions (NL).
    pub schema: &'a [String],
    /// The commands before the query, oldest first.
    pub history: &'a [PastCommand],
    /// The command to answer.
    pub query: &'a str,
    /// Whether the tables were empty before the first command of `history` (true in
    /// benchmarks; false when replaying only the last N changes of a live table).
    pub initially_empty: bool,
    /// Prompt texts; `None` for [`PromptTexts::default_for`] the encoding.
    pub texts: Option<&'a PromptTexts>,
}

/// Why a request cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("unknown prompting {0:?}: expected 'zero_shot', 'zero_cot' or 'few_shot'")]
    UnknownPrompting(String),
    #[error("few-shot prompting needs the true result of every past command; command {index} has none")]
    MissingResult { index: usize },
    #[error("the query to replay is empty")]
    EmptyQuery,
    #[error("unusable prompt texts: {0}")]
    BadPromptTexts(String),
}

impl ReplayPrompt<'_> {
    /// Build the chat request.
    pub fn build(&self) -> Result<ChatRequest, PromptError> {
        if self.query.trim().is_empty() {
            return Err(PromptError::EmptyQuery);
        }
        let default_texts;
        let texts = match self.texts {
            Some(t) => t,
            None => {
                default_texts = PromptTexts::default_for(self.encoding);
                &default_texts
            }
        };
        let instructions = match self.prompting {
            Prompting::ZeroShot => &texts.zero_shot,
            Prompting::ZeroCot => &texts.zero_cot,
            Prompting::FewShot => &texts.few_shot,
        };
        let mut system = format!("{}\n\n{}\n\n", texts.role, instructions);
        system.push_str(match self.encoding {
            Encoding::Sql => "The database has these tables:\n",
            Encoding::Nl => "The database has these tables, created by these commands:\n",
        });
        for table in self.schema {
            system.push_str(table.trim());
            system.push('\n');
        }
        if self.initially_empty {
            system.push_str("The tables are empty before the first command.\n");
        }

        match self.prompting {
            Prompting::ZeroShot | Prompting::ZeroCot => {
                let mut user = String::from("Commands, in order:\n");
                let total = self.history.len() + 1;
                for (i, past) in self.history.iter().enumerate() {
                    user.push_str(&format!("{}. {}\n", i + 1, one_line(&past.command)));
                }
                user.push_str(&format!("{total}. {}\n", one_line(self.query)));
                user.push_str(&format!("Give the result of command {total}, the last one."));
                Ok(ChatRequest { system, messages: vec![Message::user(user)], ..Default::default() })
            }
            Prompting::FewShot => {
                let mut messages = Vec::with_capacity(2 * self.history.len() + 1);
                for (index, past) in self.history.iter().enumerate() {
                    let result = past.result.as_ref().ok_or(PromptError::MissingResult { index })?;
                    messages.push(Message::user(one_line(&past.command)));
                    messages.push(Message::assistant(result.render()));
                }
                messages.push(Message::user(one_line(self.query)));
                Ok(ChatRequest { system, messages, ..Default::default() })
            }
        }
    }
}

/// Commands are shown one per line: line breaks inside a command become spaces, so a
/// command's text cannot pose as another numbered command.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why a reply could not be read. It scores 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("the reply is empty")]
    Empty,
    #[error("no JSON list of rows found in the reply (last line: {last_line:?})")]
    NoList { last_line: String },
    #[error("neither Succeed nor Fail found in the reply (last line: {last_line:?})")]
    NoOutcome { last_line: String },
}

/// Read the LLM's reply as the answer of the given kind (see the module documentation).
pub fn parse_reply(reply: &str, kind: QueryKind) -> Result<Answer, ReplyError> {
    let text = reply.replace('\r', "");
    if text.trim().is_empty() {
        return Err(ReplyError::Empty);
    }
    let last_line = last_meaningful_line(&text).unwrap_or_default();
    match kind {
        QueryKind::Select => {
            if let Some(rows) = last_json_list(&text) {
                return Ok(Answer::Rows(rows));
            }
            // The list inside a JSON string: "[\"x\"]".
            if let Ok(inner) = serde_json::from_str::<String>(&last_line) {
                if let Some(rows) = last_json_list(&inner) {
                    return Ok(Answer::Rows(rows));
                }
            }
            // Python-style lists on the last lines: [(1, 'a'), (2, None)].
            for line in text.lines().rev().map(str::trim).filter(|l| l.contains('[')).take(3) {
                let (Some(open), Some(close)) = (line.find('['), line.rfind(']')) else { continue };
                if close < open {
                    continue;
                }
                if let Some(rows) = pythonish_to_json(&line[open..=close]).as_deref().and_then(last_json_list) {
                    return Ok(Answer::Rows(rows));
                }
            }
            Err(ReplyError::NoList { last_line: clip(&last_line) })
        }
        QueryKind::Modify => {
            for line in text.lines().rev() {
                if let Some(outcome) = first_outcome_word(line) {
                    return Ok(outcome);
                }
            }
            Err(ReplyError::NoOutcome { last_line: clip(&last_line) })
        }
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() > 120 {
        let mut out: String = s.chars().take(120).collect();
        out.push('…');
        out
    } else {
        s.to_string()
    }
}

fn last_meaningful_line(text: &str) -> Option<String> {
    text.lines().map(str::trim).rev().find(|l| !l.is_empty() && !l.starts_with("```")).map(str::to_string)
}

/// The first Succeed/Fail word of a line ("Succeed (it would not fail)" is Succeed).
fn first_outcome_word(line: &str) -> Option<Answer> {
    line.split(|c: char| !c.is_ascii_alphabetic()).find_map(|word| match word.to_ascii_lowercase().as_str() {
        "succeed" | "succeeds" | "succeeded" | "success" | "successful" | "successfully" => Some(Answer::Succeed),
        "fail" | "fails" | "failed" | "failure" => Some(Answer::Fail),
        _ => None,
    })
}

/// The JSON list that ends last in the text (the outermost one when several end at the same
/// place), normalised to rows. At most 4096 opening brackets are tried.
fn last_json_list(text: &str) -> Option<Vec<Row>> {
    let starts: Vec<usize> = text.match_indices('[').map(|(i, _)| i).collect();
    let mut best: Option<(usize, usize, Vec<Row>)> = None; // (end, start, rows)
    for &start in starts.iter().rev().take(4096) {
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<ReplyList>();
        if let Some(Ok(list)) = stream.next() {
            let end = start + stream.byte_offset();
            let better = match &best {
                None => true,
                Some((best_end, _, _)) => end >= *best_end,
            };
            if better {
                best = Some((end, start, list.0));
            }
        }
    }
    best.map(|(_, _, rows)| rows)
}

/// A top-level reply list: elements are rows (lists), row objects (key order kept), or
/// single-column scalars.
struct ReplyList(Vec<Row>);

impl<'de> Deserialize<'de> for ReplyList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = ReplyList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON list of rows")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ReplyList, A::Error> {
                let mut rows = Vec::new();
                while let Some(ReplyRow(row)) = seq.next_element()? {
                    rows.push(row);
                }
                Ok(ReplyList(rows))
            }
        }
        d.deserialize_seq(ListVisitor)
    }
}

struct ReplyRow(Row);

impl<'de> Deserialize<'de> for ReplyRow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RowVisitor;
        impl<'de> Visitor<'de> for RowVisitor {
            type Value = ReplyRow;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row: a list, an object or a scalar")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ReplyRow, A::Error> {
                let mut row = Vec::new();
                while let Some(v) = seq.next_element::<Value>()? {
                    row.push(scalar(&v));
                }
                Ok(ReplyRow(row))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReplyRow, A::Error> {
                let mut row = Vec::new();
                while let Some((_, v)) = map.next_entry::<String, Value>()? {
                    row.push(scalar(&v));
                }
                Ok(ReplyRow(row))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ReplyRow, E> {
                Ok(ReplyRow(vec![Value::Bool(v)]))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ReplyRow, E> {
                Ok(ReplyRow(vec![Value::from(v)]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ReplyRow, E> {
                Ok(ReplyRow(vec![Value::from(v)]))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ReplyRow, E> {
                Ok(ReplyRow(vec![Value::from(v)]))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ReplyRow, E> {
                Ok(ReplyRow(vec![Value::String(v.to_string())]))
            }
            fn visit_unit<E: de::Error>(self) -> Result<ReplyRow, E> {
                Ok(ReplyRow(vec![Value::Null]))
            }
        }
        d.deserialize_any(RowVisitor)
    }
}

/// Rewrite a Python literal (`[(1, 'a'), (2, None)]`) as JSON; `None` if it has unbalanced
/// quotes.
fn pythonish_to_json(line: &str) -> Option<String> {
    let mut out = String::with_capacity(line.len() + 8);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let quote = c;
                let mut s = String::new();
                let mut closed = false;
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            s.push(e);
                        }
                    } else if d == quote {
                        closed = true;
                        break;
                    } else {
                        s.push(d);
                    }
                }
                if !closed {
                    return None;
                }
                out.push_str(&Value::String(s).to_string());
            }
            '(' => out.push('['),
            ')' => out.push(']'),
            c if c.is_ascii_alphabetic() => {
                let mut word = String::from(c);
                while let Some(&d) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '_' {
                        word.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push_str(match word.as_str() {
                    "None" | "NULL" | "null" => "null",
                    "True" | "TRUE" | "true" => "true",
                    "False" | "FALSE" | "false" => "false",
                    _ => return None,
                });
            }
            other => out.push(other),
        }
    }
    // A trailing comma inside a tuple, `(1,)`, is not JSON.
    Some(out.replace(",]", "]"))
}
