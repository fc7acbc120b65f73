//! Questions to start from: `ask.suggest_questions()` offers a role a few questions it can ask
//! now and that pg_ask answers right — the verified queries of verifiers it trusts (itself,
//! roles it is a member of, superusers, the extension's owner; its own answers marked right
//! with `ask.feedback` among them), over tables it may read; `ask()` answers each of them from
//! its verified query, without the model. Each one's SQL is run first, as the role, through
//! the guard: a query that no longer runs for it is not offered.

use pgrx::pg_sys::errcodes::PgSqlErrorCode::*;
use pgrx::prelude::*;

use pg_ask_core::suggest::{choose, Candidate};

use crate::guard::{self, Limits};
use crate::pg::errors::Raised;
use crate::pg::gucs;
use crate::pg::spi::OrRaise;

/// Candidates read at most.
const READ: i64 = 500;

/// A few questions the calling role can ask now, each answered right by pg_ask (from a
/// verified query it trusts, over tables it may read, whose SQL runs for it); most used first.
#[pg_extern(name = "suggest_questions", volatile, parallel_unsafe)]
fn suggest_questions(
    n: default!(i32, 5),
) -> TableIterator<'static, (name!(question, String), name!(verified_id, i64), name!(tables, Vec<String>))> {
    if !(1..=50).contains(&n) {
        Raised::new(ERRCODE_INVALID_PARAMETER_VALUE, format!("n must be between 1 and 50, not {n}")).raise();
    }
    if !crate::pg::version::sql_at_least("0.2.0") {
        return TableIterator::new(Vec::new());
    }
    let trusted = crate::verified::trusted_verifier("v.verified_by_role");
    let rows: Vec<(Candidate, String, Option<String>)> = crate::pg::spi::select_rows(
        &format!(
            "SELECT v.id, v.question, v.sql, v.schema::pg_catalog.text,
                    coalesce((SELECT u.uses FROM ask.verified_uses u
                              WHERE u.verified_id OPERATOR(pg_catalog.=) v.id
                                AND u.role::pg_catalog.oid OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)), 0),
                    v.verified_by_role::pg_catalog.oid OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER),
                    ARRAY(SELECT t::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.unnest(v.tables) t ORDER BY 1)
             FROM ask.verified_queries v
             WHERE ask._verified_readable(v.tables)
               AND {trusted}
             ORDER BY v.id LIMIT {READ}"
        ),
        &[],
        |r| {
            let (Some(id), Some(question), Some(sql)) = (r.get::<i64>(1)?, r.get::<String>(2)?, r.get::<String>(3)?) else {
                return Ok(None);
            };
            let candidate = Candidate {
                id,
                question,
                uses: r.get::<i64>(5)?.unwrap_or(0),
                own: r.get::<bool>(6)?.unwrap_or(false),
                tables: r.get::<Vec<String>>(7)?.unwrap_or_default(),
            };
            Ok(Some((candidate, sql, r.get::<String>(4)?)))
        },
    )
    .or_raise("could not read the verified queries");
    let candidates: Vec<Candidate> = rows.iter().map(|(c, ..)| c.clone()).collect();
    let limits = Limits { row_limit: gucs::row_limit(), timeout_ms: gucs::statement_timeout_ms() };
    let mut out = Vec::new();
    for chosen in choose(&candidates, candidates.len()) {
        if out.len() >= n as usize {
            break;
        }
        pgrx::check_for_interrupts!();
        let Some((_, sql, schema)) = rows.iter().find(|(c, ..)| c.id == chosen.id) else { continue };
        // Asked now, it is answered by this query, as this role: it must run for it.
        if crate::pg::spi::in_schema(schema.as_deref(), || guard::execute(sql, &limits)).is_err() {
            continue;
        }
        out.push((chosen.question.clone(), chosen.id, chosen.tables.clone()));
    }
    TableIterator::new(out)
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::*;

    fn offered(role: Option<&str>) -> Vec<String> {
        if let Some(r) = role {
            Spi::run(&format!("SET ROLE {r}")).unwrap();
        }
        let out = crate::pg::spi::select_rows("SELECT question FROM ask.suggest_questions(10)", &[], |r| r.get::<String>(1)).unwrap();
        Spi::run("RESET ROLE").unwrap();
        out
    }

    #[pg_test]
    fn suggestions_are_trusted_readable_runnable_verified_questions() {
        setup();
        Spi::run(
            "CREATE ROLE sg_reader; CREATE ROLE sg_nobody; CREATE ROLE sg_other;
             GRANT SELECT ON public.cities, public.restaurants TO sg_reader, sg_other;
             GRANT SELECT ON public.secrets TO sg_other;",
        )
        .unwrap();
        // A superuser's verified queries: trusted by everyone.
        Spi::run("SELECT ask.add_verified('How many cities are there?', 'SELECT count(*) FROM public.cities')").unwrap();
        Spi::run(
            "SELECT ask.add_verified('Which restaurants are Italian?', $$SELECT name FROM public.restaurants WHERE cuisine = 'Italian'$$)",
        )
        .unwrap();
        Spi::run("SELECT ask.add_verified('What payroll is there?', 'SELECT payroll FROM public.secrets')").unwrap();
        // Another role's own: trusted by it, not by the reader.
        Spi::run("SET ROLE sg_other").unwrap();
        Spi::run("SELECT ask.add_verified('How many restaurants are there?', 'SELECT count(*) FROM public.restaurants')").unwrap();
        Spi::run("RESET ROLE").unwrap();
        let reader = offered(Some("sg_reader"));
        assert_eq!(reader.len(), 2, "{reader:?}");
        assert!(reader.iter().all(|q| !q.contains("payroll") && q != "How many restaurants are there?"), "{reader:?}");
        // No privileges: nothing.
        assert!(offered(Some("sg_nobody")).is_empty());
        // The other role: its own first, and the secrets table it may read.
        let other = offered(Some("sg_other"));
        assert_eq!(other.first().map(String::as_str), Some("How many restaurants are there?"), "{other:?}");
        assert!(other.iter().any(|q| q.contains("payroll")), "{other:?}");
        // A query that no longer runs for the role is not offered.
        Spi::run("ALTER TABLE public.cities RENAME COLUMN name TO city_name").unwrap();
        Spi::run("SELECT ask.add_verified('List the city names', 'SELECT city_name FROM public.cities')").unwrap();
        Spi::run("ALTER TABLE public.cities RENAME COLUMN city_name TO name").unwrap();
        assert!(!offered(Some("sg_reader")).iter().any(|q| q.contains("city names")));
        let (code, _, _) = error_of("SELECT * FROM ask.suggest_questions(0)");
        assert_eq!(code, "22023");
        // And asked, a suggestion is answered from its verified query without the model.
        let answer: String = one("SELECT ask('How many cities are there?', base_url => 'http://127.0.0.1:9/v1')");
        assert_eq!(answer, "count: 2");
    }
}
