//! Shadow tables: a row-level trigger captures every INSERT, UPDATE and DELETE of a table into
//! `ask.shadow_log`; `ask.shadow_replay()` shows the captured changes to the LLM, asks it to
//! answer a query as if it were the database, runs the query for real and scores the answer.
//!
//! The capture trigger is on the write path of the user's table, so it does the least it can:
//! rows of common scalar types become jsonb objects built directly, with the values `to_jsonb`
//! gives (other rows go through `to_jsonb` itself, called without the executor), the log's
//! oids are looked up once per backend, and the log row goes straight into the heap
//! (`simple_heap_insert`; the log has no index to maintain). It is an AFTER trigger, so it sees rows as stored (defaults,
//! generated columns, ON CONFLICT outcomes) and a rolled-back change leaves nothing behind.

pub(crate) mod admin;
pub(crate) mod benchmark;
pub(crate) mod capture;
pub(crate) mod catalog;
pub(crate) mod replay;
pub(crate) mod report;
#[cfg(any(test, feature = "pg_test"))]
mod roles_tests;
#[cfg(any(test, feature = "pg_test"))]
mod tests;
pub(crate) mod truth;
pub(crate) mod workload;
