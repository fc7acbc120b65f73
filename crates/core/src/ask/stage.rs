//! Stage names, as they appear in traces and in the ledger.

pub const SCHEMA: &str = "schema";
pub const GENERATE: &str = "generate";
pub const REPAIR: &str = "repair";
pub const GUARD: &str = "guard";
pub const CORRECT: &str = "correct";
pub const EXECUTE: &str = "execute";
pub const ANSWER: &str = "answer";
/// The context switch: does the supplied context answer the question?
pub const CONTEXT: &str = "context";
/// Schema and table selection from the schema selection memory (no LLM call).
pub const SELECT: &str = "select";
/// The retrieval plan over several candidate schemas: the steps (goal, SQL, schema) to run.
pub const PLAN: &str = "plan";
/// The SQL grammar of the described tables (no LLM call).
pub const GRAMMAR: &str = "grammar";
/// Verified queries of similar questions: retrieved, and perhaps answering (no LLM call).
pub const VERIFIED: &str = "verified";
/// The model's choice among verified templates, and the slots it filled (one LLM call).
pub const TEMPLATE: &str = "template";
/// Ambiguities the value memory shows, and the question back (no LLM call).
pub const CLARIFY: &str = "clarify";
/// A later question of a conversation read in the light of the turn before (one LLM call; none
/// when it names a table of its own, [`crate::conversation::names_another_table`]).
pub const FOLLOW_UP: &str = "follow_up";
/// The written answer checked against the rows (no LLM call).
pub const GROUND: &str = "ground";
/// The knowledge items offered with the question.
pub const KNOWLEDGE: &str = "knowledge";
/// A candidate query sampled for a vote (one LLM call each; `ask.candidates`).
pub const CANDIDATE: &str = "candidate";
/// The candidates grouped by their results, and the one chosen (no LLM call).
pub const VOTE: &str = "vote";
/// A year the question names, compared as one of its days, written as the year (no LLM call;
/// [`super::whole_year`]).
pub const WHOLE_YEAR: &str = "whole_year";
/// A value a follow-up names in place of the turn before's, answered with both, written as the
/// one it names (no LLM call; [`crate::conversation::replaced_not_added`]).
pub const REPLACED: &str = "replaced";
/// A query that read a column its table lacks, run again with the one PostgreSQL's hint names
/// (no LLM call; [`super::named_column`]).
pub const NAMED_COLUMN: &str = "named_column";
/// A query that read a relation that does not exist, run again with the one described table
/// named nearly like it (no LLM call; [`super::named_table`]).
pub const NAMED_TABLE: &str = "named_table";
/// A query that ran and returned nothing (no rows, or only NULL), asked again once; its result
/// answers when no later attempt returns anything (no LLM call itself).
pub const NOTHING: &str = "nothing";
/// A division of two integers written to divide exactly: its dividend cast to `numeric` (no LLM
/// call; [`super::fraction`]).
pub const FRACTION: &str = "fraction";
/// The first rows of a descending sort taken without NULL: `NULLS LAST` written after its
/// `DESC` (no LLM call; [`super::nulls_last`]).
pub const NULLS_LAST: &str = "nulls_last";
/// An inner join that only multiplies rows (nothing but its condition names the table, joined
/// on less than its key, nothing counted) written as the `EXISTS` condition it also is (no LLM
/// call; [`super::fan_out`]).
pub const FAN_OUT: &str = "fan_out";
/// A query that ran with rows but left out a value the question quotes, asked again once; its
/// result answers when no later attempt runs (no LLM call itself; [`super::quoted`]).
pub const QUOTED: &str = "quoted";
/// A query that ran with rows but left out a value the question names and the value memory
/// holds, asked again once; its result answers when no later attempt does better (no LLM call
/// itself; [`super::unasked`]).
pub const NAMED_VALUE: &str = "named_value";
/// A query that ran with rows but compares a column with a value the question does not ask
/// for, asked again once, as [`NAMED_VALUE`] (no LLM call itself; [`super::unasked`]).
pub const UNASKED: &str = "unasked";
/// A query whose result is not in the shape the question asks for (a count where it asks for
/// rows, rows where it asks how many), asked again once as an edit, as [`QUOTED`] (no LLM call
/// itself; [`super::shape`]).
pub const SHAPE: &str = "shape";
/// Month or weekday names in calendar order: a range of them compared by their place in the
/// calendar before the query runs, and a query whose sort orders them as text run again with
/// them in calendar order (no LLM call; [`super::calendar`]).
pub const CALENDAR: &str = "calendar";
