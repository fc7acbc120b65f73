//! pg_ask: ask the database questions in plain language, from SQL.
//!
//! This crate is the thin pgrx layer. Everything that needs no running PostgreSQL — prompts,
//! LLM clients, SQL analysis, the pipeline itself — is in the `pg_ask_core` crate.

use pgrx::prelude::*;

mod ask;
mod chain;
mod chart;
mod clarify;
mod conversation;
mod evaluate;
mod guard;
mod knowledge;
mod llm;
mod pg;
mod plain;
mod schema;
mod selection;
mod shadow;
mod suggest;
mod values;
mod verified;

::pgrx::pg_module_magic!(name, version);

// Every SQL object that is not a function pgrx generates from a `#[pg_extern]` comes from a
// file of `sql/`, pulled in here and nowhere else. The order is the one the install script
// follows: pgrx places each file after what it `requires` (the ledger first, then the tables
// of each feature, then the SQL functions and views over the generated functions).
pgrx::extension_sql_file!("../sql/ledger.sql", name = "ledger", bootstrap);
pgrx::extension_sql_file!("../sql/cache.sql", name = "llm_cache", requires = ["ledger"]);
pgrx::extension_sql_file!("../sql/values.sql", name = "value_memory_tables", requires = ["ledger"]);
pgrx::extension_sql_file!("../sql/shadow.sql", name = "shadow_tables", requires = ["ledger"]);
pgrx::extension_sql_file!("../sql/schema_memory.sql", name = "schema_memory_tables", requires = ["value_memory_tables"]);
pgrx::extension_sql_file!("../sql/schema_memory_index.sql", name = "schema_memory_index", requires = ["schema_memory_tables"]);
pgrx::extension_sql_file!("../sql/verified.sql", name = "verified_tables", requires = ["llm_cache"]);
pgrx::extension_sql_file!("../sql/conversations.sql", name = "conversation_tables", requires = ["verified_tables"]);
pgrx::extension_sql_file!("../sql/knowledge.sql", name = "knowledge_tables", requires = ["verified_tables"]);
pgrx::extension_sql_file!(
    "../sql/knowledge_functions.sql",
    name = "knowledge_functions",
    requires = ["knowledge_tables", knowledge::add_knowledge]
);
pgrx::extension_sql_file!("../sql/tables.sql", name = "tables_function", requires = ["ledger"]);
pgrx::extension_sql_file!("../sql/comment_invalidation.sql", name = "comment_invalidation", requires = [schema::invalidate_relation]);
pgrx::extension_sql_file!("../sql/embed_vector.sql", name = "embed_vector", requires = [llm::embeddings::embed_real]);
pgrx::extension_sql_file!(
    "../sql/value_functions.sql",
    name = "value_functions",
    requires = [
        values::build::index_values,
        values::search::similar_values,
        values::build::refresh_values,
        values::build::refresh_values_as_owner,
        values::search::value_lookup
    ]
);
pgrx::extension_sql_file!(
    "../sql/schema_memory_functions.sql",
    name = "schema_memory_functions",
    requires = [selection::functions::index_schema, selection::functions::select_tables, selection::functions::select_schemas]
);
pgrx::extension_sql_file!(
    "../sql/shadow_views.sql",
    name = "shadow_views",
    requires = ["shadow_tables", shadow::admin::_shadow_command, shadow::admin::_shadow_enable, shadow::admin::_shadow_disable]
);
pgrx::extension_sql_file!(
    "../sql/benchmark.sql",
    name = "benchmark",
    requires = [
        "shadow_views",
        shadow::benchmark::_benchmark_start,
        shadow::benchmark::_benchmark_step,
        shadow::benchmark::_benchmark_finish,
        shadow::report::_metric
    ]
);
pgrx::extension_sql_file!(
    "../sql/evaluate.sql",
    name = "evaluation",
    requires = ["ledger", "knowledge_tables", evaluate::load_suite, evaluate::evaluate_begin, evaluate::evaluate_step]
);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pg::key::note_preloading();
    pg::gucs::init();
    pg::backend::init();
    guard::trusted::init();
    guard::planned::init();
    if pg::key::preloaded() {
        llm::budget::init();
        llm::embeddings::preload_tokenizer();
    }
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        // As the README sets pg_ask up: preloaded, so ask.api_key is superuser-only from the
        // start of every session.
        vec!["shared_preload_libraries = 'pg_ask'"]
    }
}
