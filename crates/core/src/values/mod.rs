//! Data value memory: finding the string literals an LLM compared with columns, deciding which
//! ones do not match what is stored and what to replace them with, and rewriting the SQL.
//!
//! The pipeline stage (step 4 of `ask()`: after generation, before execution) is, per candidate SQL:
//!
//! 1. [`literals::find_literals`] parses the SQL and lists every string literal compared with a
//!    column (`=`, `<>`, `IN`, `= ANY(ARRAY[..])`, `LIKE`/`ILIKE`, `BETWEEN`), resolved through
//!    aliases, joins, subqueries and CTEs to the real `schema.table.column`, using a
//!    [`literals::Catalog`] the glue fills from `pg_catalog`.
//! 2. For each literal the glue asks PostgreSQL whether the value occurs (exactly, then
//!    case-insensitively) and, if not, for candidates from the value memory (pgvector nearest
//!    neighbours and pg_trgm similarity); [`decide::decide`] turns that evidence into a
//!    [`decide::Decision`] with an explainable trace.
//! 3. Clear decisions are applied with [`rewrite::rewrite`]; the rest go to the LLM with
//!    [`prompt::correction_request`], whose reply is accepted by [`prompt::parse_correction_checked`]
//!    only if, literals masked, its syntax tree equals the original ([`rewrite::same_structure`]).
//!
//! [`diff::ValueDiff`] decides what an incremental refresh of a column's memory deletes and embeds.

pub mod correct;
pub mod decide;
pub mod diff;
pub mod literals;
pub mod prompt;
pub mod reading;
pub mod rewrite;
