//! Helpers of the in-backend tests (`cargo pgrx test`), shared by every feature's `tests.rs`:
//! a stand-in LLM server started inside the test's backend, the sample tables, error capture.

use llm_standin::{Reply, Rule, Script, StandIn};
use pgrx::pg_sys::panic::CaughtError;
use pgrx::prelude::*;

use crate::pg::errors::sqlstate_text;
use crate::pg::subxact::{self, OnSuccess};

pub(crate) const SAMPLE: &str = "
    CREATE TABLE public.cities (id int PRIMARY KEY, name text NOT NULL, state text);
    COMMENT ON TABLE public.cities IS 'Cities we know';
    COMMENT ON COLUMN public.cities.name IS 'full city name';
    CREATE TABLE public.restaurants (id int PRIMARY KEY, name text NOT NULL,
        city_id int REFERENCES public.cities(id), cuisine text);
    CREATE TABLE public.secrets (id int PRIMARY KEY, payroll text);
    INSERT INTO public.cities VALUES (1, 'Los Angeles', 'CA'), (2, 'San Francisco', 'CA');
    INSERT INTO public.restaurants VALUES (1, 'Roma', 1, 'Italian'), (2, 'Le Petit', 2, 'French'),
        (3, 'Trattoria', 1, 'Italian');";

pub(crate) const ITALIAN_SQL: &str = "```sql\nSELECT r.name FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id\nWHERE c.name = 'Los Angeles' AND r.cuisine = 'Italian' ORDER BY r.name;\n```";

/// Embeddings from the stand-in server (deterministic pseudo-embeddings of `dim` dimensions)
/// through the openai protocol.
pub(crate) fn standin_embeddings(dim: usize) -> StandIn {
    let s = StandIn::start(Script::default()).expect("start the stand-in server");
    s.set_embedding_dim(dim);
    Spi::run(&format!(
        "SET ask.embedding_provider = 'openai'; SET ask.embedding_model = 'pseudo-{dim}'; SET ask.embedding_base_url = '{}/v1'",
        s.url()
    ))
    .unwrap();
    s
}

/// A stand-in server answering with `script`, and ask.base_url pointing at it.
pub(crate) fn llm(script: Script) -> StandIn {
    let s = StandIn::start(script).expect("start the stand-in LLM server");
    Spi::run(&format!("SET ask.base_url = '{}/v1'", s.url())).unwrap();
    s
}

/// SQL generation for `question` answers `sql`; the answer stage answers `answer`.
pub(crate) fn pipeline_script(question: &str, sql: &str, answer: &str) -> Script {
    Script::default()
        .rule(Rule::new(&["<schema>", question], Reply::text(sql)))
        .rule(Rule::new(&["<result", question], Reply::text(answer)))
}

pub(crate) fn setup() {
    Spi::run(SAMPLE).unwrap();
}

/// The SQLSTATE, message, detail and hint of the error `sql` raises (it must raise one).
pub(crate) fn error_report_of(sql: &str) -> (String, String, Option<String>, Option<String>) {
    error_report(sql).expect("expected an error")
}

/// The SQLSTATE, message, detail and hint of the error `sql` raises, or `None` when it runs
/// (its effects rolled back either way).
pub(crate) fn error_report(sql: &str) -> Option<(String, String, Option<String>, Option<String>)> {
    let sql = sql.to_string();
    match subxact::run(OnSuccess::RollBack, move || Spi::run(&sql).unwrap()) {
        Ok(()) => None,
        Err(CaughtError::PostgresError(r)) | Err(CaughtError::ErrorReport(r)) => {
            Some((sqlstate_text(r.sql_error_code()), r.message().to_string(), r.detail().map(str::to_string), r.hint().map(str::to_string)))
        }
        Err(e @ CaughtError::RustPanic { .. }) => e.rethrow(),
    }
}

/// The SQLSTATE, message and hint of the error `sql` raises (it must raise one).
pub(crate) fn error_of(sql: &str) -> (String, String, Option<String>) {
    let (code, message, _, hint) = error_report_of(sql);
    (code, message, hint)
}

/// The URL of a stand-in that was just shut down: nothing listens there.
pub(crate) fn closed_url() -> String {
    let s = StandIn::start(Script::default()).unwrap();
    let url = s.url();
    s.shutdown();
    url
}

pub(crate) fn one<T: pgrx::FromDatum + pgrx::IntoDatum>(sql: &str) -> T {
    Spi::get_one::<T>(sql).unwrap().expect("a non-null value")
}

/// The select stage of `ask.explain(question)`, the stand-in answering every prompt (a plan
/// over several schemas gets no plan, so the best schema is asked).
pub(crate) fn select_stage(question: &str) -> serde_json::Value {
    let _s = llm(Script::default()
        .rule(Rule::new(&["retrieval steps"], Reply::text("no plan")))
        .rule(Rule::new(&["<schema>"], Reply::text("SELECT 1 AS one")))
        .rule(Rule::new(&["<result"], Reply::text("one"))));
    let trace: pgrx::JsonB = one(&format!("SELECT ask.explain('{question}')"));
    let stages = trace.0["stages"].as_array().unwrap();
    stages.iter().find(|s| s["stage"] == "select").map(|s| s["output"].clone()).unwrap_or_else(|| panic!("no select stage: {}", trace.0))
}
