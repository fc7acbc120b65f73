//! Schema selection memory, retrieval plans, the context switch and grounded answers
//! (steps 1, 2 and 7 of `ask()`; after Qin et al., "Relational Database Augmented Large
//! Language Model", and GTR-T).
//!
//! Real databases have hundreds of tables in many schemas; the SQL-generation prompt must carry
//! only what the question needs. Everything here is pure: the glue reads the catalog, stores
//! descriptions and their embeddings with pgvector, asks pgvector for cosines and calls the LLM;
//! these modules decide what is described, how candidates are ranked and what the LLM is told.
//!
//! | stage | module |
//! |---|---|
//! | text descriptions of tables and schemas, for embedding and for lexical scoring | [`describe`] |
//! | BM25F lexical scoring of a question against descriptions | [`lexical`] |
//! | candidates from a lexical index stored in the database, read only in part | [`retrieve`] |
//! | fusion of embedding cosines and lexical scores; `select_tables` / `select_schemas` | [`fuse`] |
//! | the refinement / retrieval-plan prompt and its parsing | [`plan`] |
//! | the context-switch prompt and the multi-step answer prompt | [`context`] |
//! | offline evaluation: DDL to tables, gold tables from gold SQL, recall@k (feature `recall`) | `recall` |
//!
//! # The flow in `ask()`
//!
//! 1. With a `context`, [`context::context_request`]; when [`context::parse_context`] says the
//!    context answers the question, no SQL runs.
//! 2. [`fuse::Catalog::select_schemas`] ranks the schemas; per candidate schema,
//!    [`fuse::Catalog::select_tables`] picks the tables (plus those their foreign keys need),
//!    which [`crate::schema::render`] describes.
//! 3. [`plan::plan_request`] gets the question and those descriptions; [`plan::parse_plan`]
//!    turns the reply into validated (goal, SQL, schema) steps.
//! 4. Each step goes through the single-schema pipeline (value correction, guarded execution,
//!    self-correction).
//! 5. [`context::steps_answer_request`]: either one step's rows are the answer, or a short
//!    answer grounded in every step's SQL and result.

pub mod context;
pub mod describe;
pub mod find;
pub mod fuse;
pub mod lexical;
pub mod plan;
#[cfg(feature = "recall")]
pub mod recall;
pub mod retrieve;

pub use describe::{ColumnValues, SchemaProfile, TableProfile};
/// Candidate schemas `ask()` describes tables from at most (the retrieval-plan stage is shown
/// these).
pub const PLAN_SCHEMAS: usize = 3;

pub use fuse::{
    AskedSelection, Catalog, Cosines, Fusion, PickReason, Renewal, SchemaPick, ScoreParts, SelectError, SelectOptions, TablePick,
};
pub use lexical::{DocTerms, Field, GlobalStats, Label, LexicalIndex, LexicalScore};
pub use plan::{Plan, PlanCandidate, PlanError, PlanStep};

pub(crate) use crate::prompt::data;

/// User-written text (comments, values) flattened to one line and cut to `max` characters, so
/// that it cannot pose as part of a prompt's or a description's structure.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let mut s: String = flat.chars().take(max).collect();
        s.push('…');
        s
    } else {
        flat
    }
}

/// An identifier as `quote_ident` wrote it, unquoted: `"Order Items"` → `Order Items`,
/// `orders` → `orders`. Text that is not a quoted identifier comes back as it is.
pub fn unquote(ident: &str) -> String {
    match ident.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => ident.to_string(),
    }
}

/// Splits a possibly quoted, possibly schema-qualified name (`s."My Table"`) at the dots that
/// are outside quotes, and unquotes each part.
pub fn split_qualified(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut in_quotes = false;
    for c in name.chars() {
        match c {
            '"' => {
                in_quotes = !in_quotes;
                current.push(c);
            }
            '.' if !in_quotes => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    parts.push(current);
    parts.iter().map(|p| unquote(p.trim())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unquoted_and_split_outside_quotes() {
        assert_eq!(unquote("\"Order \"\"Items\"\"\""), "Order \"Items\"");
        assert_eq!(unquote("orders"), "orders");
        assert_eq!(split_qualified("s.\"My.Table\""), ["s", "My.Table"]);
        assert_eq!(split_qualified("t"), ["t"]);
    }

    #[test]
    fn data_cannot_close_a_tag() {
        assert_eq!(data("a </question> b < c"), "a &lt;/question> b < c");
        assert_eq!(one_line("a\n  b", 10), "a b");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }
}
