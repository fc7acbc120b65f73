//! Parse-level allowlist for LLM-written SQL: the first of the safety layers for generated SQL (the database layer in the glue is the second).
//!
//! [`check_read_only`] accepts exactly one statement, and only if it is a query that reads:
//! `SELECT`, `VALUES`, set operations (`UNION`, `INTERSECT`, `EXCEPT`) and `WITH` whose every
//! common table expression is itself read-only. Everything else is refused with a [`Refusal`]
//! that says why. On top of the statement kind, the whole tree is walked with `sqlparser`'s
//! [`Visitor`], so the rules hold at any depth (CTEs, subqueries in `FROM`, `WHERE` and the
//! select list, set-operation branches, function arguments):
//!
//! * no `INSERT`/`UPDATE`/`DELETE`/`MERGE` anywhere, including data-modifying CTEs;
//! * no `SELECT … INTO` (it creates a table) and no `FOR UPDATE`/`FOR SHARE` (it takes row locks);
//! * no call to a function of [`FORBIDDEN_FUNCTIONS`], whether in an expression or in `FROM`;
//! * no read of a relation of [`FORBIDDEN_RELATIONS`] (settings and credentials), and no
//!   `current_setting()` of a setting that may hold a credential (`ask.api_key`), or of a name
//!   that is not a plain string literal.
//!
//! Two lexical checks close gaps where `sqlparser` and PostgreSQL could read the same text
//! differently (see [`Refusal::AmbiguousStringLiteral`] and
//! [`Refusal::UnicodeEscapeIdentifier`]): the text that is checked is the text that runs, so the
//! guard must not see one statement where the server would see two.
//!
//! [`check_write_step`] is the allowlist of a step of `ask.do()`: the same walk
//! and deny list, widened to a plain `INSERT`, `UPDATE` or `DELETE` (and `nextval` in an
//! `INSERT`); never DDL, `MERGE` or DML hidden under `WITH`.
//!
//! This is defence in depth, not the only line: the database layer then runs the statement in
//! a read-only subtransaction as the calling role, and refuses a plan that calls any volatile
//! function. The deny list therefore names the functions that matter (side effects outside the
//! transaction, denial of service, file and network access, SQL hidden in strings) rather than
//! trying to enumerate every volatile function; a call of a volatile user-defined function is
//! left to the database layer.
//!
//! Statements that `sqlparser` cannot parse are refused as [`Refusal::Unparsable`]; this
//! includes a few harmless forms PostgreSQL accepts, such as a top-level `TABLE t` and
//! `FOR NO KEY UPDATE`. An over-refusal only costs a self-correction round trip; an
//! under-refusal is what this module exists to prevent.

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, ObjectNamePart, Query, Select, SetExpr, Statement,
    TableFactor, TableObject, Value, Visit, Visitor,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

/// The hostile-reply corpus (`tests/fixtures/hostile_replies.json`): replies the guard must
/// refuse, at which layer and why, and replies it must let through. The core's tests read it
/// as a file; the glue's in-backend tests take it from here.
#[cfg(feature = "corpus")]
pub const HOSTILE_REPLIES: &str = include_str!("../tests/fixtures/hostile_replies.json");

/// A statement that passed the parse-level allowlist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedSql {
    /// The statement as given: the source text from its first to its last token, so without
    /// surrounding whitespace, leading or trailing comments, or the terminating `;`. Comments
    /// inside the statement are kept. This exact text is what was checked.
    pub sql: String,
    /// The relations the statement reads, as written (`canary`, `public.canary`,
    /// `"Canary_Log"`), without duplicates, in the order the walk finds them (mostly textual).
    /// Names of common table expressions and of set-returning functions in `FROM` are not
    /// included.
    pub tables: Vec<String>,
}

/// Why a statement was refused. Each variant has a stable [`reason_code`](Refusal::reason_code)
/// for traces and tests, and a message for the person at the `psql` prompt.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `sqlparser` could not read the text (the parser's message is kept).
    #[error("the generated SQL could not be parsed: {0}")]
    Unparsable(String),
    /// Nothing but whitespace, comments and semicolons.
    #[error("no SQL statement was given")]
    Empty,
    /// More than one statement; the count is given.
    #[error("{0} SQL statements were given; exactly one is allowed")]
    MultipleStatements(usize),
    /// The statement is not a query; the statement kind is given (`DELETE`, `COPY`, …).
    #[error("{0} is not allowed: only a single read-only query (SELECT, VALUES or WITH … SELECT) may run")]
    NotAQuery(String),
    /// A statement kind that may not run as a step of `ask.do()` (see [`check_write_step`]):
    /// DDL, `MERGE`, a DML statement under `WITH`, and everything but `SELECT`, `INSERT`,
    /// `UPDATE` and `DELETE`; the kind is given.
    #[error("{0} is not allowed in a step of ask.do(): only SELECT, INSERT, UPDATE or DELETE may run")]
    NotAWriteStep(String),
    /// A common table expression (named) inserts, updates, deletes or merges.
    #[error("the common table expression \"{0}\" modifies data; only read-only WITH queries are allowed")]
    DataModifyingCte(String),
    /// A data-modifying statement (kind given) nested in the query outside a CTE, for instance
    /// a branch of a set operation or a parenthesized subquery in `FROM`.
    #[error("a {0} statement is nested inside the query; only read-only queries are allowed")]
    DataModifyingSubquery(String),
    /// `SELECT … INTO` creates a table.
    #[error("SELECT … INTO creates a table and is not allowed")]
    SelectInto,
    /// `FOR UPDATE`, `FOR SHARE` and their variants lock rows.
    #[error("locking clauses (FOR UPDATE, FOR SHARE) are not allowed")]
    LockingClause,
    /// A call of a function of [`FORBIDDEN_FUNCTIONS`]; the name is given as written.
    #[error("calling {0}() is not allowed in generated SQL{reason}", reason = forbidden_reason_suffix(.0))]
    ForbiddenFunction(String),
    /// A read of a relation of [`FORBIDDEN_RELATIONS`]; the name is given as written.
    #[error("reading {0} is not allowed in generated SQL: it shows server settings or credentials")]
    ForbiddenRelation(String),
    /// `current_setting()` of a setting that may hold a credential (see [`secret_setting`]), or
    /// of a name that is not a string literal; the argument is given as written.
    #[error("current_setting({0}) is not allowed in generated SQL: only settings named by a string literal, and none that may hold a credential")]
    SecretSetting(String),
    /// A string literal that PostgreSQL could read differently from `sqlparser`, so that where
    /// the statement ends would be in doubt: a plain literal in which a backslash precedes a
    /// quote (`'a\''`, `'x\'`, read otherwise when `standard_conforming_strings` is off), or a
    /// dollar quote whose tag starts with a digit (`$1$…$1$`, which PostgreSQL reads as the
    /// parameter `$1`).
    #[error(
        "a string literal is ambiguous (a backslash before a quote, or a dollar-quote tag \
         starting with a digit); use E'…', doubled quotes or $$…$$"
    )]
    AmbiguousStringLiteral,
    /// A `U&"…"` Unicode-escape identifier, which `sqlparser` does not decode, so it could hide
    /// a forbidden name such as `U&"pg\005fsleep"`.
    #[error("Unicode-escape identifiers (U&\"…\") are not allowed in generated SQL")]
    UnicodeEscapeIdentifier,
    /// Larger than the guard checks; see [`MAX_TOKENS`] and [`MAX_SET_OPERATIONS`].
    #[error("the generated SQL has {found} {what}, more than the {limit} the guard accepts")]
    TooLarge {
        /// What was counted: `"tokens"` or `"set operations"`.
        what: &'static str,
        /// How many there are.
        found: usize,
        /// How many are accepted.
        limit: usize,
    },
}

/// The most tokens (other than whitespace and comments) a statement may have.
///
/// Generated queries are far smaller. The limit bounds the depth of the trees `sqlparser`
/// builds in loops rather than by recursion, and so outside its recursion limit: a chain of
/// `n` binary operators (`1 + 1 + …`) is a tree `n` deep, and walking or even dropping a deep
/// enough tree overflows the stack, which in a backend takes the whole server down.
pub const MAX_TOKENS: usize = 10_000;

/// The most set operators (`UNION`, `INTERSECT`, `EXCEPT`) a statement may have: each nests
/// the tree one level deeper, at a higher stack cost than an operator (see [`MAX_TOKENS`]).
pub const MAX_SET_OPERATIONS: usize = 500;

impl Refusal {
    /// A short, stable, machine-readable code for the reason (`"multiple_statements"`, …).
    pub fn reason_code(&self) -> &'static str {
        match self {
            Refusal::Unparsable(_) => "unparsable",
            Refusal::Empty => "empty",
            Refusal::MultipleStatements(_) => "multiple_statements",
            Refusal::NotAQuery(_) => "not_a_query",
            Refusal::NotAWriteStep(_) => "not_a_write_step",
            Refusal::DataModifyingCte(_) => "data_modifying_cte",
            Refusal::DataModifyingSubquery(_) => "data_modifying_subquery",
            Refusal::SelectInto => "select_into",
            Refusal::LockingClause => "locking_clause",
            Refusal::ForbiddenFunction(_) => "forbidden_function",
            Refusal::ForbiddenRelation(_) => "forbidden_relation",
            Refusal::SecretSetting(_) => "secret_setting",
            Refusal::AmbiguousStringLiteral => "ambiguous_string_literal",
            Refusal::UnicodeEscapeIdentifier => "unicode_escape_identifier",
            Refusal::TooLarge { .. } => "too_large",
        }
    }
}

/// How an entry of [`FORBIDDEN_FUNCTIONS`] matches a function name. Names are compared in
/// lower case, without schema and without quotes, so `PG_SLEEP`, `"pg_sleep"` and
/// `pg_catalog.pg_sleep` all match `pg_sleep` (a user function of the same name in another
/// schema is refused too, which is the safe side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamePattern {
    /// The whole name.
    Exact(&'static str),
    /// Every name that starts with this (`pg_sleep` covers `pg_sleep_for`, `pg_sleep_until`).
    Prefix(&'static str),
}

impl NamePattern {
    fn matches(self, lower_name: &str) -> bool {
        match self {
            NamePattern::Exact(name) => lower_name == name,
            NamePattern::Prefix(prefix) => lower_name.starts_with(prefix),
        }
    }
}

/// A group of forbidden functions with the reason they are forbidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForbiddenGroup {
    /// The names of the group.
    pub names: &'static [NamePattern],
    /// Why generated SQL may not call them (shown in the refusal message).
    pub reason: &'static str,
}

use NamePattern::{Exact, Prefix};

/// Functions generated SQL may never call, anywhere in the statement.
///
/// Not listed on purpose: `currval`, `lastval` and `current_setting` only read (the latter is
/// refused for settings that may hold a credential, see [`secret_setting`]);
/// `txid_current_if_assigned` and `pg_current_xact_id_if_assigned` do not assign an id; every
/// other volatile function is left to the database layer's volatility check.
pub const FORBIDDEN_FUNCTIONS: &[ForbiddenGroup] = &[
    ForbiddenGroup { names: &[Prefix("pg_sleep")], reason: "it holds the session and its snapshot for as long as it is told to" },
    ForbiddenGroup {
        names: &[
            Exact("pg_terminate_backend"),
            Exact("pg_cancel_backend"),
            Exact("pg_reload_conf"),
            Prefix("pg_rotate_logfile"),
            Exact("pg_log_backend_memory_contexts"),
            Exact("pg_promote"),
            Exact("pg_switch_wal"),
            Prefix("pg_wal_replay_"),
            Prefix("pg_backup_"),
            Exact("pg_start_backup"),
            Exact("pg_stop_backup"),
            Exact("pg_create_restore_point"),
        ],
        reason: "it acts on other sessions or on the server itself",
    },
    ForbiddenGroup { names: &[Exact("set_config")], reason: "it changes settings of the session (for instance its read-only mode)" },
    ForbiddenGroup { names: &[Exact("nextval"), Exact("setval")], reason: "it changes a sequence, which no rollback undoes" },
    ForbiddenGroup {
        names: &[Exact("txid_current"), Exact("pg_current_xact_id")],
        reason: "it assigns a transaction id, which is a write",
    },
    ForbiddenGroup {
        names: &[Prefix("lo_"), Exact("loread"), Exact("lowrite")],
        reason: "it reads or writes large objects, or copies server files into and out of them",
    },
    ForbiddenGroup {
        names: &[
            Exact("pg_read_file"),
            Exact("pg_read_binary_file"),
            Exact("pg_stat_file"),
            Prefix("pg_ls_"),
            Prefix("pg_file_"),
            Exact("pg_logdir_ls"),
        ],
        reason: "it reads or writes the server's file system",
    },
    ForbiddenGroup {
        names: &[
            Prefix("dblink"),
            Prefix("pg_background"),
            Prefix("query_to_xml"),
            Prefix("cursor_to_xml"),
            Prefix("table_to_xml"),
            Prefix("schema_to_xml"),
            Prefix("database_to_xml"),
            Exact("ts_stat"),
            Exact("ts_rewrite"),
        ],
        reason: "it runs SQL given as text, or on another connection, out of the guard's sight",
    },
    ForbiddenGroup {
        names: &[Prefix("pg_advisory_"), Prefix("pg_try_advisory_")],
        reason: "it takes advisory locks that can outlive the query",
    },
    ForbiddenGroup {
        names: &[Exact("pg_notify"), Prefix("pg_logical_")],
        reason: "it sends notifications, writes WAL messages or consumes replication changes",
    },
    ForbiddenGroup {
        names: &[
            Prefix("pg_create_"),
            Exact("pg_drop_replication_slot"),
            Prefix("pg_copy_"),
            Exact("pg_replication_slot_advance"),
            Prefix("pg_replication_origin_"),
        ],
        reason: "it creates, drops or moves replication slots and origins",
    },
    ForbiddenGroup { names: &[Prefix("pg_stat_reset"), Exact("pg_stat_statements_reset")], reason: "it resets server statistics" },
    ForbiddenGroup {
        names: &[Exact("pg_show_all_settings"), Exact("pg_show_all_file_settings"), Exact("pg_options_to_table")],
        reason: "it reads server settings or stored options, which can hold credentials",
    },
];

/// Relations generated SQL may never read: they show server settings, stored settings or
/// credentials (`ask.api_key` above all, whoever the caller is). Matched like function names:
/// lower case, without schema or quotes.
pub const FORBIDDEN_RELATIONS: &[&str] = &[
    "pg_settings",
    "pg_file_settings",
    "pg_db_role_setting",
    "pg_user_mappings",
    "pg_user_mapping",
    "pg_authid",
    "pg_shadow",
    "pg_hba_file_rules",
    "pg_ident_file_mappings",
];

/// Whether a setting name (any case) may hold a credential, so that `current_setting()` may not
/// read it in generated SQL: `ask.api_key`, and any name that speaks of a key, password,
/// secret, token or credential.
pub fn secret_setting(name: &str) -> bool {
    let lower = name.trim().to_lowercase();
    ["key", "password", "passwd", "secret", "token", "credential"].iter().any(|word| lower.contains(word))
}

/// Why `name` (a bare function name, any case, without schema or quotes) is forbidden, or
/// `None` when generated SQL may call it.
pub fn forbidden_function_reason(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    FORBIDDEN_FUNCTIONS.iter().find(|group| group.names.iter().any(|pattern| pattern.matches(&lower))).map(|group| group.reason)
}

/// `": <reason>"` for a function name as written (possibly qualified and quoted), for the
/// message of [`Refusal::ForbiddenFunction`].
fn forbidden_reason_suffix(written: &str) -> String {
    let bare = written.rsplit('.').next().unwrap_or(written).trim_matches('"');
    forbidden_function_reason(bare).map(|reason| format!(": {reason}")).unwrap_or_default()
}

/// Checks that `sql` is exactly one read-only query that calls no forbidden function.
///
/// On success the statement is returned as given (trimmed, see [`CheckedSql::sql`]) together
/// with the relations it reads. The text is never rewritten: what was checked is what runs.
pub fn check_read_only(sql: &str) -> Result<CheckedSql, Refusal> {
    let parsed = parse_one(sql)?;
    let query = match &parsed.statement {
        Statement::Query(query) => query,
        other => return Err(Refusal::NotAQuery(statement_kind(other))),
    };
    // `WITH x AS (…) INSERT …` parses as a query whose body is the INSERT.
    if let Some(inner) = data_modifying_statement(&query.body) {
        return Err(Refusal::NotAQuery(statement_kind(inner)));
    }
    walk_and_finish(sql, parsed, Walker::default())
}

/// Checks that `sql` may run as one step of a chain of memory (`ask.do()`).
///
/// The write allowlist is the read-only one of [`check_read_only`] widened by exactly three
/// statement kinds, everything else being the same walk with the same deny list:
///
/// * a read-only query, under every rule of [`check_read_only`];
/// * a plain `INSERT` (with `VALUES` or a read-only query as source, `ON CONFLICT` and
///   `RETURNING` allowed), `UPDATE` (with `FROM`) or `DELETE` (with `USING`).
///
/// Refused besides what [`check_read_only`] refuses anywhere in the tree (data-modifying CTEs
/// and subqueries, `SELECT … INTO`, locking clauses, forbidden functions, ambiguous literals):
/// DDL and every other statement kind, `MERGE`, and a DML statement under a `WITH` (`WITH x AS
/// (…) DELETE …`), all as [`Refusal::NotAWriteStep`]. The one exception to the deny list is
/// `nextval`, which an `INSERT` may call (to take ids from a sequence); anywhere else it is
/// refused as before.
///
/// In the result, [`CheckedSql::tables`] also lists the table an `INSERT` writes, first;
/// the targets of `UPDATE` and `DELETE` are found by the walk like any other relation.
pub fn check_write_step(sql: &str) -> Result<CheckedSql, Refusal> {
    let parsed = parse_one(sql)?;
    let mut walker = Walker::default();
    match &parsed.statement {
        Statement::Query(query) => {
            if let Some(inner) = data_modifying_statement(&query.body) {
                return Err(Refusal::NotAWriteStep(format!("WITH … {}", statement_kind(inner))));
            }
        }
        Statement::Insert(insert) => {
            walker.allow_nextval = true;
            if let TableObject::TableName(name) = &insert.table {
                walker.add_relation(name.to_string(), normalized_parts(name));
            }
        }
        Statement::Update(_) | Statement::Delete(_) => {}
        other => return Err(Refusal::NotAWriteStep(statement_kind(other))),
    }
    walk_and_finish(sql, parsed, walker)
}

/// One statement, parsed, with the source locations of its first and last token.
struct ParsedOne {
    statement: Statement,
    start: Location,
    end: Location,
}

/// The checks every statement goes through before its kind is looked at: it tokenizes, is
/// not empty, not too large, lexically unambiguous, parses, and is exactly one statement.
fn parse_one(sql: &str) -> Result<ParsedOne, Refusal> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql).tokenize_with_location().map_err(|e| Refusal::Unparsable(e.to_string()))?;
    let Some((start, end)) = statement_bounds(&tokens) else {
        return Err(Refusal::Empty);
    };
    check_size(&tokens)?;
    check_lexical(&tokens)?;

    let mut statements = Parser::parse_sql(&dialect, sql).map_err(|e| Refusal::Unparsable(e.to_string()))?;
    match statements.len() {
        0 => Err(Refusal::Empty),
        1 => Ok(ParsedOne { statement: statements.remove(0), start, end }),
        many => Err(Refusal::MultipleStatements(many)),
    }
}

/// Walks the whole statement with `walker` and returns the checked text and relations.
fn walk_and_finish(sql: &str, parsed: ParsedOne, mut walker: Walker) -> Result<CheckedSql, Refusal> {
    if let ControlFlow::Break(refusal) = parsed.statement.visit(&mut walker) {
        return Err(refusal);
    }
    if let Some((written, _)) = walker
        .relations
        .iter()
        .find(|(_, parts)| parts.last().is_some_and(|bare| FORBIDDEN_RELATIONS.contains(&bare.to_lowercase().as_str())))
    {
        return Err(Refusal::ForbiddenRelation(written.clone()));
    }
    let mut cursor = OffsetCursor::new(sql);
    let (start, end) = (cursor.offset(parsed.start), cursor.offset(parsed.end));
    let text = &sql[start..end];
    Ok(CheckedSql { sql: text.to_string(), tables: walker.into_tables() })
}

/// The start of the first and the end of the last token that belong to a statement, that is,
/// that are neither whitespace, comments nor semicolons; `None` when there is no such token.
fn statement_bounds(tokens: &[TokenWithSpan]) -> Option<(Location, Location)> {
    let belongs = |t: &&TokenWithSpan| !matches!(t.token, Token::Whitespace(_) | Token::SemiColon | Token::EOF);
    let first = tokens.iter().find(belongs)?;
    let last = tokens.iter().rev().find(belongs)?;
    Some((first.span.start, last.span.end))
}

/// Refuses statements beyond [`MAX_TOKENS`] or [`MAX_SET_OPERATIONS`], before they are parsed.
fn check_size(tokens: &[TokenWithSpan]) -> Result<(), Refusal> {
    let significant = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_)));
    let (mut count, mut set_operations) = (0, 0);
    for t in significant {
        count += 1;
        if matches!(&t.token, Token::Word(w) if w.quote_style.is_none()
            && matches!(w.keyword, Keyword::UNION | Keyword::INTERSECT | Keyword::EXCEPT))
        {
            set_operations += 1;
        }
    }
    let too_large = |what, found, limit| Err(Refusal::TooLarge { what, found, limit });
    if count > MAX_TOKENS {
        return too_large("tokens", count, MAX_TOKENS);
    }
    if set_operations > MAX_SET_OPERATIONS {
        return too_large("set operations", set_operations, MAX_SET_OPERATIONS);
    }
    Ok(())
}

/// The token-level checks for text that `sqlparser` and PostgreSQL could read differently.
fn check_lexical(tokens: &[TokenWithSpan]) -> Result<(), Refusal> {
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) if s.contains("\\'") || s.ends_with('\\') => {
                return Err(Refusal::AmbiguousStringLiteral);
            }
            Token::DollarQuotedString(quoted) if quoted.tag.as_deref().is_some_and(|tag| tag.starts_with(|c: char| c.is_ascii_digit())) => {
                return Err(Refusal::AmbiguousStringLiteral);
            }
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("u") => {
                let next = tokens.get(i + 1).map(|t| &t.token);
                let after = tokens.get(i + 2).map(|t| &t.token);
                if matches!(next, Some(Token::Ampersand)) && matches!(after, Some(Token::Word(w)) if w.quote_style == Some('"')) {
                    return Err(Refusal::UnicodeEscapeIdentifier);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The data-modifying statement a query body consists of, looking through parentheses and
/// set operations: `INSERT`, `UPDATE`, `DELETE` or `MERGE`.
fn data_modifying_statement(body: &SetExpr) -> Option<&Statement> {
    match body {
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) | SetExpr::Merge(s) => Some(s),
        SetExpr::Query(q) => data_modifying_statement(&q.body),
        SetExpr::SetOperation { left, right, .. } => data_modifying_statement(left).or_else(|| data_modifying_statement(right)),
        SetExpr::Select(_) | SetExpr::Values(_) | SetExpr::Table(_) => None,
    }
}

/// The kind of a statement in SQL words (`DELETE`, `CREATE TABLE`, `START TRANSACTION`),
/// derived from its `sqlparser` variant name.
fn statement_kind(statement: &Statement) -> String {
    let debug = format!("{statement:?}");
    let variant: String = debug.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let mut kind = String::with_capacity(variant.len() + 4);
    let mut previous_lower = false;
    for c in variant.chars() {
        if c.is_ascii_uppercase() && previous_lower {
            kind.push(' ');
        }
        previous_lower = c.is_ascii_lowercase();
        kind.push(c.to_ascii_uppercase());
    }
    kind
}

/// The identifier as PostgreSQL resolves it: unquoted names fold to lower case.
fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

/// The parts of a (possibly qualified) name as PostgreSQL resolves them, for de-duplication.
fn normalized_parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(ident) => normalized(ident),
            other => other.to_string(),
        })
        .collect()
}

/// The last part of a (possibly qualified) name, lower-cased, for deny-list matching.
fn bare_name(name: &ObjectName) -> String {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(ident)) => ident.value.to_lowercase(),
        Some(other) => other.to_string().to_lowercase(),
        None => String::new(),
    }
}

/// Refuses a call of a forbidden function; `nextval` passes when `allow_nextval` is set (in
/// the `INSERT` steps of [`check_write_step`]).
fn check_function(name: &ObjectName, allow_nextval: bool) -> ControlFlow<Refusal> {
    let bare = bare_name(name);
    if allow_nextval && bare == "nextval" {
        return ControlFlow::Continue(());
    }
    if forbidden_function_reason(&bare).is_some() {
        ControlFlow::Break(Refusal::ForbiddenFunction(name.to_string()))
    } else {
        ControlFlow::Continue(())
    }
}

/// `current_setting(name [, missing_ok])` passes only when `name` is a plain string literal
/// that is not a [`secret_setting`].
fn check_current_setting(function: &Function) -> ControlFlow<Refusal> {
    let first = match &function.args {
        FunctionArguments::List(list) => list.args.first(),
        _ => None,
    };
    let written = first.map(|a| a.to_string()).unwrap_or_default();
    let name = match first {
        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) => match &v.value {
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Some(s.as_str()),
            _ => None,
        },
        _ => None,
    };
    match name {
        Some(name) if !secret_setting(name) => ControlFlow::Continue(()),
        _ => ControlFlow::Break(Refusal::SecretSetting(written)),
    }
}

/// Walks the whole statement, refusing what may not appear anywhere and collecting relations.
#[derive(Default)]
struct Walker {
    /// Statements seen so far; the first is the checked statement itself.
    statements: usize,
    /// Relations read, as written, with their normalized form for de-duplication.
    relations: Vec<(String, Vec<String>)>,
    /// Normalized names of every CTE defined anywhere in the statement.
    cte_names: HashSet<String>,
    /// Whether `nextval` may be called (an `INSERT` step of [`check_write_step`]).
    allow_nextval: bool,
}

impl Walker {
    fn add_relation(&mut self, written: String, normalized_parts: Vec<String>) {
        if !self.relations.iter().any(|(_, parts)| *parts == normalized_parts) {
            self.relations.push((written, normalized_parts));
        }
    }

    /// The relations read, without CTE references. A one-part name that matches a CTE defined
    /// anywhere in the statement is taken for the CTE (scoping is not modelled).
    fn into_tables(self) -> Vec<String> {
        let cte_names = self.cte_names;
        self.relations
            .into_iter()
            .filter(|(_, parts)| !(parts.len() == 1 && cte_names.contains(&parts[0])))
            .map(|(written, _)| written)
            .collect()
    }
}

impl Visitor for Walker {
    type Break = Refusal;

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<Refusal> {
        self.statements += 1;
        if self.statements > 1 {
            // Only `INSERT`/`UPDATE`/`DELETE`/`MERGE` can nest in a query; CTEs are reported
            // by name in `pre_visit_query`, which runs first.
            return ControlFlow::Break(Refusal::DataModifyingSubquery(statement_kind(statement)));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Refusal> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                if data_modifying_statement(&cte.query.body).is_some() {
                    return ControlFlow::Break(Refusal::DataModifyingCte(cte.alias.name.value.clone()));
                }
                self.cte_names.insert(normalized(&cte.alias.name));
            }
        }
        if !query.locks.is_empty() {
            return ControlFlow::Break(Refusal::LockingClause);
        }
        collect_table_commands(&query.body, self);
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<Refusal> {
        if select.into.is_some() {
            return ControlFlow::Break(Refusal::SelectInto);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<Refusal> {
        match factor {
            // `FROM f(…)` is a function call, not a relation.
            TableFactor::Table { name, args: Some(_), .. } | TableFactor::Function { name, .. } => {
                check_function(name, self.allow_nextval)?
            }
            TableFactor::Table { name, args: None, .. } => self.add_relation(name.to_string(), normalized_parts(name)),
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<Refusal> {
        if let Expr::Function(function) = expr {
            check_function(&function.name, self.allow_nextval)?;
            if bare_name(&function.name) == "current_setting" {
                check_current_setting(function)?;
            }
        }
        ControlFlow::Continue(())
    }
}

/// Records the relations of `TABLE name` commands directly in a query body (parenthesized
/// queries are visited on their own).
fn collect_table_commands(body: &SetExpr, walker: &mut Walker) {
    match body {
        SetExpr::Table(table) => {
            if let Some(name) = &table.table_name {
                let written = match &table.schema_name {
                    Some(schema) => format!("{schema}.{name}"),
                    None => name.clone(),
                };
                let parts = written.split('.').map(str::to_lowercase).collect();
                walker.add_relation(written, parts);
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            collect_table_commands(left, walker);
            collect_table_commands(right, walker);
        }
        _ => {}
    }
}

/// Maps the tokenizer's locations (1-based line and character column, lines split at `\n`
/// only, as `sqlparser` counts them) to byte offsets in the source. Locations asked for in
/// increasing order cost linear time in all; an earlier one restarts from the beginning.
pub(crate) struct OffsetCursor<'a> {
    text: &'a str,
    line: u64,
    column: u64,
    byte: usize,
}

impl<'a> OffsetCursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        OffsetCursor { text, line: 1, column: 1, byte: 0 }
    }

    /// The byte offset of `location`, or the end of the text when it lies beyond.
    pub(crate) fn offset(&mut self, location: Location) -> usize {
        let target = (location.line, location.column);
        if target < (self.line, self.column) {
            *self = OffsetCursor::new(self.text);
        }
        while (self.line, self.column) < target {
            let Some(c) = self.text[self.byte..].chars().next() else {
                break;
            };
            self.byte += c.len_utf8();
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.byte
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(sql: &str) -> Refusal {
        match check_read_only(sql) {
            Ok(checked) => panic!("accepted {sql:?} as {checked:?}"),
            Err(refusal) => refusal,
        }
    }

    fn accepted(sql: &str) -> CheckedSql {
        check_read_only(sql).unwrap_or_else(|r| panic!("refused {sql:?}: {r}"))
    }

    #[test]
    fn accepts_plain_queries() {
        for sql in [
            "SELECT 1",
            "select id, note from canary where note ilike '%a%' order by id limit 5",
            "VALUES (1, 'a'), (2, 'b')",
            "SELECT id FROM canary UNION SELECT id FROM canary_log",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
            "SELECT row_number() OVER (ORDER BY id), count(*) OVER () FROM canary",
            "SELECT * FROM generate_series(1, 3) AS g(x)",
            "SELECT currval('canary_seq'), lastval(), current_setting('work_mem')",
            "SELECT now(), current_date, date_trunc('month', now()) - interval '1 day'",
            "SELECT note FROM canary WHERE note ~ '\\d+'",
            "SELECT 1, 'x' UNION TABLE canary",
        ] {
            accepted(sql);
        }
    }

    #[test]
    fn sql_is_trimmed_but_otherwise_as_given() {
        let checked = accepted("  -- the answer\n SELECT 1 /* one */ ;  -- done\n");
        assert_eq!(checked.sql, "SELECT 1");
        assert_eq!(accepted("SELECT 1 /* one */ + 1").sql, "SELECT 1 /* one */ + 1");
        assert_eq!(accepted("SELECT 'a;b';;").sql, "SELECT 'a;b'");
        assert_eq!(accepted("SELECT 'é' AS \"ü\";").sql, "SELECT 'é' AS \"ü\"");
        assert_eq!(accepted("SELECT 1\nFROM canary\n-- inner\nWHERE id = 1;").sql, "SELECT 1\nFROM canary\n-- inner\nWHERE id = 1");
    }

    #[test]
    fn collects_tables_but_not_ctes_or_functions() {
        let checked = accepted(
            "WITH recent AS (SELECT * FROM canary_log WHERE id > 1) \
             SELECT c.id FROM public.canary c JOIN recent r ON r.id = c.id \
             JOIN \"Canary_Log\" l ON l.id = c.id, generate_series(1, 2) g \
             WHERE c.id IN (SELECT id FROM canary) AND EXISTS (SELECT 1 FROM other.t)",
        );
        assert_eq!(checked.tables, ["canary_log", "public.canary", "\"Canary_Log\"", "canary", "other.t"]);
        let checked = accepted("SELECT * FROM Canary JOIN canary USING (id)");
        assert_eq!(checked.tables, ["Canary"]);
        let checked = accepted("SELECT id, note FROM canary_log UNION TABLE canary");
        assert_eq!(checked.tables.len(), 2);
        assert!(checked.tables.iter().any(|t| t == "canary"));
    }

    #[test]
    fn refuses_empty_input() {
        for sql in ["", "  ", ";", " ; ;", "-- nothing\n", "/* nothing */"] {
            assert_eq!(refusal(sql), Refusal::Empty, "{sql:?}");
        }
    }

    #[test]
    fn refuses_unparsable_text() {
        for sql in ["SELEC 1", "DO $$ BEGIN DELETE FROM canary; END $$", "SELECT 'open"] {
            assert!(matches!(refusal(sql), Refusal::Unparsable(_)), "{sql:?}");
        }
    }

    #[test]
    fn refuses_more_than_one_statement() {
        assert_eq!(refusal("SELECT 1; DROP TABLE canary"), Refusal::MultipleStatements(2));
        assert_eq!(refusal("SELECT 1; -- x\nDROP TABLE canary;"), Refusal::MultipleStatements(2));
        assert_eq!(refusal("SELECT 1 /* ; */; SELECT 2; SELECT 3"), Refusal::MultipleStatements(3));
    }

    #[test]
    fn refuses_statements_that_are_not_queries() {
        for (sql, kind) in [
            ("DELETE FROM canary", "DELETE"),
            ("UPDATE canary SET note = 'x'", "UPDATE"),
            ("INSERT INTO canary VALUES (1, 'x')", "INSERT"),
            ("TRUNCATE canary", "TRUNCATE"),
            ("DROP TABLE canary", "DROP"),
            ("CREATE TABLE t AS SELECT * FROM canary", "CREATE TABLE"),
            ("COPY canary TO PROGRAM 'true'", "COPY"),
            ("EXPLAIN ANALYZE DELETE FROM canary", "EXPLAIN"),
            ("SET work_mem = '1GB'", "SET"),
            ("BEGIN", "START TRANSACTION"),
            ("WITH x AS (SELECT 1) INSERT INTO canary SELECT 1, 'x' FROM x", "INSERT"),
        ] {
            assert_eq!(refusal(sql), Refusal::NotAQuery(kind.to_string()), "{sql:?}");
        }
    }

    #[test]
    fn refuses_data_modifying_ctes_at_any_depth() {
        assert_eq!(refusal("WITH d AS (DELETE FROM canary RETURNING *) SELECT * FROM d"), Refusal::DataModifyingCte("d".into()));
        assert_eq!(
            refusal(
                "SELECT * FROM canary WHERE id IN \
                 (WITH u AS (UPDATE canary SET note = 'x' RETURNING id) SELECT id FROM u)"
            ),
            Refusal::DataModifyingCte("u".into())
        );
        assert_eq!(
            refusal(
                "WITH a AS (SELECT 1), b AS (SELECT 1 UNION ALL \
                 (INSERT INTO canary VALUES (9, 'x') RETURNING 1)) SELECT * FROM b"
            ),
            Refusal::DataModifyingCte("b".into())
        );
    }

    #[test]
    fn refuses_data_modifying_subqueries() {
        assert_eq!(refusal("SELECT * FROM (DELETE FROM canary RETURNING *) AS s"), Refusal::DataModifyingSubquery("DELETE".into()));
        assert_eq!(refusal("SELECT 1 UNION (DELETE FROM canary RETURNING 1)"), Refusal::NotAQuery("DELETE".into()));
    }

    #[test]
    fn refuses_select_into() {
        assert_eq!(refusal("SELECT * INTO copy FROM canary"), Refusal::SelectInto);
        assert_eq!(refusal("SELECT * FROM (SELECT 1 INTO t) AS s"), Refusal::SelectInto);
    }

    #[test]
    fn refuses_locking_clauses() {
        assert_eq!(refusal("SELECT * FROM canary FOR UPDATE"), Refusal::LockingClause);
        assert_eq!(refusal("SELECT (SELECT note FROM canary LIMIT 1 FOR SHARE)"), Refusal::LockingClause);
    }

    #[test]
    fn refuses_forbidden_functions_anywhere_and_however_written() {
        for sql in [
            "SELECT pg_sleep(1)",
            "SELECT PG_SLEEP(1)",
            "SELECT \"pg_sleep\"(1)",
            "SELECT pg_catalog.pg_sleep(1)",
            "SELECT pg_catalog.\"pg_sleep_for\"('1 s')",
            "SELECT * FROM canary WHERE pg_sleep(1) IS NOT NULL",
            "SELECT * FROM pg_sleep(5)",
            "SELECT * FROM canary, LATERAL pg_sleep(1) s",
            "SELECT * FROM canary ORDER BY (SELECT pg_sleep(1))",
            "SELECT count(*) FILTER (WHERE pg_sleep(1) IS NULL) FROM canary",
            "SELECT nextval('canary_seq')",
            "SELECT * FROM nextval('canary_seq')",
            "SELECT setval('canary_seq', 1)",
            "SELECT lo_import('/etc/passwd')",
            "SELECT query_to_xml('delete from canary', true, true, '')",
            "SELECT txid_current()",
            "SELECT pg_advisory_lock(1)",
            "SELECT * FROM dblink('', 'DELETE FROM canary') AS t(x int)",
            "SELECT coalesce(NULL, set_config('default_transaction_read_only', 'off', false))",
        ] {
            assert_eq!(refusal(sql).reason_code(), "forbidden_function", "{sql:?}");
        }
        assert_eq!(refusal("SELECT pg_catalog.pg_sleep(1)"), Refusal::ForbiddenFunction("pg_catalog.pg_sleep".into()));
    }

    #[test]
    fn forbidden_function_message_carries_the_reason() {
        let message = Refusal::ForbiddenFunction("pg_catalog.\"pg_sleep\"".into()).to_string();
        assert!(message.starts_with("calling pg_catalog.\"pg_sleep\"() is not allowed"));
        assert!(message.contains("holds the session"), "{message}");
    }

    #[test]
    fn refuses_settings_and_credentials_however_written() {
        for (sql, code) in [
            ("SELECT current_setting('ask.api_key')", "secret_setting"),
            ("SELECT pg_catalog.current_setting('ASK.API_KEY', true)", "secret_setting"),
            ("SELECT current_setting('ask.' || 'api_key')", "secret_setting"),
            ("SELECT current_setting(name) FROM (VALUES ('x')) v(name)", "secret_setting"),
            ("SELECT 1 WHERE current_setting(E'ask.api_key') <> ''", "secret_setting"),
            ("SELECT setting FROM pg_settings WHERE name = 'ask.api_key'", "forbidden_relation"),
            ("SELECT reset_val FROM pg_catalog.pg_settings", "forbidden_relation"),
            ("SELECT * FROM \"pg_file_settings\"", "forbidden_relation"),
            ("SELECT setconfig FROM pg_db_role_setting", "forbidden_relation"),
            ("SELECT umoptions FROM pg_user_mappings", "forbidden_relation"),
            ("SELECT rolpassword FROM pg_authid", "forbidden_relation"),
            ("SELECT 1 FROM canary WHERE EXISTS (SELECT 1 FROM pg_shadow)", "forbidden_relation"),
            ("TABLE pg_settings", "unparsable"),
            ("SELECT 1 UNION TABLE pg_settings", "forbidden_relation"),
            ("SELECT * FROM pg_show_all_settings()", "forbidden_function"),
            ("SELECT pg_options_to_table(umoptions) FROM canary", "forbidden_function"),
        ] {
            let r = refusal(sql);
            assert_eq!(r.reason_code(), code, "{sql:?}: {r}");
        }
        accepted("SELECT current_setting('server_version_num')::int");
        accepted("SELECT current_setting('search_path', true)");
        assert!(secret_setting("ask.api_key") && secret_setting("my.PASSWORD"));
        assert!(!secret_setting("work_mem"));
    }

    #[test]
    fn deny_list_matching() {
        assert!(forbidden_function_reason("pg_sleep_until").is_some());
        assert!(forbidden_function_reason("LO_EXPORT").is_some());
        assert!(forbidden_function_reason("dblink_exec").is_some());
        assert!(forbidden_function_reason("pg_try_advisory_xact_lock").is_some());
        for allowed in ["currval", "lastval", "lower", "log", "now", "count", "current_setting"] {
            assert_eq!(forbidden_function_reason(allowed), None, "{allowed}");
        }
    }

    #[test]
    fn refuses_literals_that_depend_on_standard_conforming_strings() {
        for sql in
            ["SELECT 'x\\', $$' ; DELETE FROM canary; --$$", "SELECT 'a\\''b'", "SELECT note FROM canary WHERE note = 'ends with \\'"]
        {
            assert_eq!(refusal(sql), Refusal::AmbiguousStringLiteral, "{sql:?}");
        }
        // Escape strings mean the same under any setting.
        accepted("SELECT E'it\\'s'");
        assert_eq!(refusal("SELECT $1$; DELETE FROM canary; SELECT $1$"), Refusal::AmbiguousStringLiteral);
        accepted("SELECT $$a$$, $q$b$q$, $_1$c$_1$");
    }

    #[test]
    fn refuses_unicode_escape_identifiers() {
        assert_eq!(refusal("SELECT U&\"pg\\005fsleep\"(1)"), Refusal::UnicodeEscapeIdentifier);
        // A bitwise AND with spaces is not an escape.
        accepted("SELECT u & 1 FROM (SELECT 3 AS u) AS s");
    }

    #[test]
    fn reason_codes_are_distinct() {
        let all = [
            Refusal::Unparsable(String::new()),
            Refusal::Empty,
            Refusal::MultipleStatements(2),
            Refusal::NotAQuery(String::new()),
            Refusal::NotAWriteStep(String::new()),
            Refusal::DataModifyingCte(String::new()),
            Refusal::DataModifyingSubquery(String::new()),
            Refusal::SelectInto,
            Refusal::LockingClause,
            Refusal::ForbiddenFunction(String::new()),
            Refusal::AmbiguousStringLiteral,
            Refusal::UnicodeEscapeIdentifier,
            Refusal::TooLarge { what: "tokens", found: 2, limit: 1 },
        ];
        let codes: HashSet<_> = all.iter().map(Refusal::reason_code).collect();
        assert_eq!(codes.len(), all.len());
    }

    #[test]
    fn refuses_statements_too_large_to_walk_safely() {
        let unions = vec!["SELECT 1"; MAX_SET_OPERATIONS + 2].join(" UNION ");
        assert_eq!(
            refusal(&unions),
            Refusal::TooLarge { what: "set operations", found: MAX_SET_OPERATIONS + 1, limit: MAX_SET_OPERATIONS }
        );
        let sum = format!("SELECT 1{}", " + 1".repeat(MAX_TOKENS));
        assert_eq!(refusal(&sum).reason_code(), "too_large");
        // Far beyond the limits: refused before parsing, so nothing deep is ever built.
        let sum = format!("SELECT 1{}", " + 1".repeat(200_000));
        assert_eq!(refusal(&sum).reason_code(), "too_large");
    }

    #[test]
    fn deepest_accepted_trees_fit_a_small_stack() {
        // A backend usually has 8 MiB of stack; this runs in 2 MiB, in a debug build, whose
        // frames are the largest.
        let deep = [
            vec!["SELECT 1"; MAX_SET_OPERATIONS + 1].join(" UNION "),
            format!("SELECT 1{}", " + 1".repeat(MAX_TOKENS / 2 - 1)),
            format!("SELECT 1{}", "::int".repeat(MAX_TOKENS / 2 - 1)),
            format!("SELECT true{}", " IS NULL".repeat(MAX_TOKENS / 3 - 1)),
        ];
        let checked = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || deep.iter().map(|sql| check_read_only(sql).is_ok()).collect::<Vec<_>>())
            .expect("spawn")
            .join()
            .expect("no stack overflow");
        assert_eq!(checked, [true; 4]);
    }

    fn write_refusal(sql: &str) -> Refusal {
        match check_write_step(sql) {
            Ok(checked) => panic!("accepted {sql:?} as a write step: {checked:?}"),
            Err(refusal) => refusal,
        }
    }

    fn write_accepted(sql: &str) -> CheckedSql {
        check_write_step(sql).unwrap_or_else(|r| panic!("refused write step {sql:?}: {r}"))
    }

    #[test]
    fn write_steps_accept_plain_dml_and_queries() {
        let checked = write_accepted(
            "INSERT INTO purchases (supplier_id, purchased_on) VALUES (3, '2023-01-01') \
             RETURNING purchase_id;",
        );
        assert_eq!(checked.tables, ["purchases"]);
        assert!(checked.sql.ends_with("RETURNING purchase_id"));
        let checked = write_accepted(
            "INSERT INTO public.stock (fruit_id, qty) SELECT f.fruit_id, 0 FROM fruits f \
             WHERE f.name = 'cherry' ON CONFLICT (fruit_id) DO UPDATE SET qty = stock.qty + 1",
        );
        assert_eq!(checked.tables, ["public.stock", "fruits"]);
        let checked = write_accepted(
            "UPDATE fruits SET stock_kg = stock_kg + s.kg FROM sale_items s \
             WHERE s.fruit_id = fruits.fruit_id AND s.sale_id = 7",
        );
        assert_eq!(checked.tables, ["fruits", "sale_items"]);
        let checked = write_accepted("DELETE FROM sale_items USING sales WHERE sales.sale_id = sale_items.sale_id");
        assert_eq!(checked.tables, ["sale_items", "sales"]);
        write_accepted("SELECT sale_id FROM sales WHERE customer_id = 1");
        write_accepted("WITH s AS (SELECT 1 AS x) SELECT x FROM s");
    }

    #[test]
    fn nextval_only_in_an_insert() {
        write_accepted("INSERT INTO sales (sale_id, customer_id) VALUES (nextval('sales_sale_id_seq'), 2)");
        write_accepted("INSERT INTO sales (sale_id) SELECT nextval('sales_sale_id_seq')");
        for sql in [
            "SELECT nextval('sales_sale_id_seq')",
            "UPDATE sales SET sale_id = nextval('s') WHERE sale_id = 1",
            "DELETE FROM sales WHERE sale_id = nextval('s')",
            "INSERT INTO sales (sale_id) VALUES (setval('s', 1))",
            "INSERT INTO log (x) SELECT pg_sleep(1)",
        ] {
            assert_eq!(write_refusal(sql).reason_code(), "forbidden_function", "{sql:?}");
        }
        // The read-only guard is unchanged.
        assert_eq!(refusal("SELECT nextval('s')").reason_code(), "forbidden_function");
    }

    #[test]
    fn write_steps_refuse_ddl_merge_and_nesting() {
        for (sql, kind) in [
            ("DROP TABLE sales", "DROP"),
            ("CREATE TABLE t (x int)", "CREATE TABLE"),
            ("ALTER TABLE sales ADD COLUMN x int", "ALTER TABLE"),
            ("TRUNCATE sales", "TRUNCATE"),
            ("GRANT ALL ON sales TO public", "GRANT"),
            ("COPY sales FROM '/tmp/x'", "COPY"),
            ("BEGIN", "START TRANSACTION"),
            ("COMMIT", "COMMIT"),
            ("SET role postgres", "SET"),
            (
                "MERGE INTO fruits f USING new_fruits n ON f.name = n.name \
                 WHEN NOT MATCHED THEN INSERT (name) VALUES (n.name)",
                "MERGE",
            ),
            (
                "WITH old AS (SELECT sale_id FROM sales WHERE sale_id = 1) \
                 DELETE FROM sale_items WHERE sale_id IN (SELECT sale_id FROM old)",
                "WITH … DELETE",
            ),
        ] {
            assert_eq!(write_refusal(sql), Refusal::NotAWriteStep(kind.into()), "{sql:?}");
        }
        assert_eq!(
            write_refusal("INSERT INTO archive WITH d AS (DELETE FROM sales RETURNING *) SELECT * FROM d"),
            Refusal::DataModifyingCte("d".into())
        );
        assert_eq!(write_refusal("DELETE FROM sales; DROP TABLE sales"), Refusal::MultipleStatements(2));
        assert_eq!(write_refusal("SELECT * FROM sales FOR UPDATE"), Refusal::LockingClause);
        assert_eq!(write_refusal("SELECT * INTO copy FROM sales"), Refusal::SelectInto);
        assert_eq!(write_refusal("UPDATE sales SET note = 'a\\''b' WHERE true"), Refusal::AmbiguousStringLiteral);
        assert!(write_refusal("").reason_code() == "empty");
        assert!(Refusal::NotAWriteStep("DROP".into()).to_string().contains("only SELECT, INSERT, UPDATE or DELETE"));
    }

    #[test]
    fn offset_cursor_maps_multibyte_columns() {
        let text = "é\nab€c";
        let mut cursor = OffsetCursor::new(text);
        assert_eq!(cursor.offset(Location { line: 2, column: 4 }), "é\nab€".len());
        assert_eq!(cursor.offset(Location { line: 3, column: 1 }), text.len());
        assert_eq!(cursor.offset(Location { line: 1, column: 2 }), "é".len());
    }
}
