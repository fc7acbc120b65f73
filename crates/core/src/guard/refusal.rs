//! Why a statement was refused ([`Refusal`]), and the size limits the guard holds it to.

use super::deny::forbidden_reason_suffix;

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
    /// A statement kind that may not run as a step of `ask.do()` (see [`check_write_step`](crate::guard::check_write_step)):
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
    /// A call of a function of [`FORBIDDEN_FUNCTIONS`](crate::guard::FORBIDDEN_FUNCTIONS); the name is given as written.
    #[error("calling {0}() is not allowed in generated SQL{reason}", reason = forbidden_reason_suffix(.0))]
    ForbiddenFunction(String),
    /// A read of a relation of [`FORBIDDEN_RELATIONS`](crate::guard::FORBIDDEN_RELATIONS); the name is given as written.
    #[error("reading {0} is not allowed in generated SQL: it shows server settings or credentials")]
    ForbiddenRelation(String),
    /// `current_setting()` of a setting that may hold a credential (see [`secret_setting`](crate::guard::secret_setting)), or
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
