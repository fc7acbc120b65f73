//! pg_ask: ask the database questions in plain language, from SQL.
//!
//! This crate is the thin pgrx layer. Everything that needs no running PostgreSQL — prompts,
//! LLM clients, SQL analysis, the pipeline itself — is in the `pg_ask_core` crate.

use pgrx::prelude::*;

mod ask;
mod chain;
mod clarify;
mod evaluate;
mod guard;
mod llm;
mod pg;
mod schema;
mod selection;
mod shadow;
mod values;
mod verified;

::pgrx::pg_module_magic!(name, version);

pgrx::extension_sql_file!("../sql/ledger.sql", name = "ledger", bootstrap);
pgrx::extension_sql_file!("../sql/cache.sql", name = "llm_cache", requires = ["ledger"]);
pgrx::extension_sql_file!("../sql/values.sql", name = "value_memory_tables", requires = ["ledger"]);
pgrx::extension_sql_file!("../sql/shadow.sql", name = "shadow_tables", requires = ["ledger"]);
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
pgrx::extension_sql_file!("../sql/schema_memory.sql", name = "schema_memory_tables", requires = ["value_memory_tables"]);
pgrx::extension_sql_file!("../sql/verified.sql", name = "verified_tables", requires = ["llm_cache"]);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pg::gucs::note_preloading();
    pg::gucs::init();
    schema::init();
    shadow::capture::init();
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
