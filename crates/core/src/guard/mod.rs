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
//!
//! [`Visitor`]: sqlparser::ast::Visitor

mod deny;
mod refusal;
mod tokens;
mod walk;

use std::ops::ControlFlow;

use sqlparser::ast::{Statement, TableObject, Visit};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, TokenWithSpan, Tokenizer};

use tokens::{check_lexical, check_size, statement_bounds};
use walk::Walker;
pub(crate) use walk::{data_modifying_statement, normalized, normalized_parts, statement_kind};

pub use deny::{forbidden_function_reason, secret_setting, ForbiddenGroup, NamePattern, FORBIDDEN_FUNCTIONS, FORBIDDEN_RELATIONS};
pub use refusal::{Refusal, MAX_SET_OPERATIONS, MAX_TOKENS};
pub(crate) use tokens::OffsetCursor;

/// The hostile-reply corpus (`tests/fixtures/hostile_replies.json`): replies the guard must
/// refuse, at which layer and why, and replies it must let through. The core's tests read it
/// as a file; the glue's in-backend tests take it from here.
#[cfg(feature = "corpus")]
pub const HOSTILE_REPLIES: &str = include_str!("../../tests/fixtures/hostile_replies.json");

/// A statement that passed the parse-level allowlist, with the syntax tree the guard parsed:
/// what comes after (literal correction, its re-check) reads the tree instead of parsing the
/// text again.
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
    /// The statement's syntax tree.
    statement: Statement,
    /// Whether the tree's source locations are those of [`CheckedSql::sql`]: true for a
    /// statement parsed from its own text, false once literals of other lengths were written
    /// into the text ([`crate::values::rewrite::rewrite_checked`]) or the guard trimmed text
    /// before the statement.
    located: bool,
}

/// A checked statement shows as its text.
impl std::fmt::Display for CheckedSql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.sql)
    }
}

impl CheckedSql {
    /// The statement's syntax tree (values as in [`CheckedSql::sql`]).
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    /// The syntax tree when its source locations point into [`CheckedSql::sql`]; `None` when
    /// they point into a text this statement was made from.
    pub fn located(&self) -> Option<&Statement> {
        self.located.then_some(&self.statement)
    }
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

/// [`check_read_only`] of a statement whose tree is already known: `statement` must be what
/// `sql` parses to, and `tokens` its tokens (the caller proved both, as
/// [`crate::values::rewrite::rewrite_checked`] does for a statement whose literals it
/// replaced). The lexical checks and the whole walk run again; the text is not parsed.
pub(crate) fn recheck_read_only(sql: &str, tokens: &[TokenWithSpan], statement: Statement) -> Result<CheckedSql, Refusal> {
    let parsed = checked_tokens(tokens).map(|(start, end)| ParsedOne { statement, start, end })?;
    let query = match &parsed.statement {
        Statement::Query(query) => query,
        other => return Err(Refusal::NotAQuery(statement_kind(other))),
    };
    if let Some(inner) = data_modifying_statement(&query.body) {
        return Err(Refusal::NotAQuery(statement_kind(inner)));
    }
    let mut checked = walk_and_finish(sql, parsed, Walker::default())?;
    checked.located = false;
    Ok(checked)
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

/// One statement, parsed after the same lexical and size checks as [`check_read_only`], but
/// not refused for what it is or calls: for modules that read SQL rather than run it
/// ([`crate::plain`]).
pub(crate) fn parse_statement(sql: &str) -> Result<Statement, Refusal> {
    parse_one(sql).map(|parsed| parsed.statement)
}

/// One statement, parsed, with the source locations of its first and last token.
struct ParsedOne {
    statement: Statement,
    start: Location,
    end: Location,
}

/// The checks every statement goes through before its kind is looked at: it tokenizes, is
/// not empty, not too large, lexically unambiguous, parses, and is exactly one statement.
/// The text is tokenized once; the parser reads those tokens.
fn parse_one(sql: &str) -> Result<ParsedOne, Refusal> {
    #[cfg(test)]
    crate::sqltext::parses::add();
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql).tokenize_with_location().map_err(|e| Refusal::Unparsable(e.to_string()))?;
    let (start, end) = checked_tokens(&tokens)?;
    let mut statements =
        Parser::new(&dialect).with_tokens_with_locations(tokens).parse_statements().map_err(|e| Refusal::Unparsable(e.to_string()))?;
    match statements.len() {
        0 => Err(Refusal::Empty),
        1 => Ok(ParsedOne { statement: statements.remove(0), start, end }),
        many => Err(Refusal::MultipleStatements(many)),
    }
}

/// The checks on a statement's tokens: not empty, not too large, lexically unambiguous; the
/// locations of its first and last token.
fn checked_tokens(tokens: &[TokenWithSpan]) -> Result<(Location, Location), Refusal> {
    let Some(bounds) = statement_bounds(tokens) else {
        return Err(Refusal::Empty);
    };
    check_size(tokens)?;
    check_lexical(tokens)?;
    Ok(bounds)
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
    // The tree's locations count from the text's first character: they are the trimmed
    // text's only when nothing was trimmed before the statement.
    let located = start == 0;
    Ok(CheckedSql { sql: text.to_string(), tables: walker.into_tables(), statement: parsed.statement, located })
}

#[cfg(test)]
mod tests;
