//! pg_ask's core: everything that needs no running PostgreSQL.
//!
//! The pgrx layer (the `pg_ask` crate at the top of the repository) reads settings into the
//! plain structs of [`config`], implements [`ask::Host`] with SPI, and turns the error enums
//! here into PostgreSQL errors with specific SQLSTATEs.

pub mod ask;
pub mod chain;
pub mod chart;
pub mod clarify;
pub mod compare;
pub mod config;
pub mod constrain;
pub mod conversation;
pub mod escape;
pub mod evaluate;
pub mod extract;
pub mod grounded;
pub mod guard;
pub mod json;
pub mod knowledge;
pub mod llm;
pub mod plain;
pub mod prompt;
pub mod rows;
pub mod schema;
pub mod secret;
pub mod selection;
pub mod shadow;
pub(crate) mod sqledit;
pub mod sqlstate;
pub mod sqltext;
pub mod suggest;
pub mod text;
pub mod trace;
pub mod values;
pub mod verified;
