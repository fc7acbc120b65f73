//! The verified query store in a backend: retrieval for `ask()` (through the caller's own
//! view, which row-level security limits to verified queries over tables it may read), the
//! literal resolution the store's decisions need, running a verified query in its schema,
//! and counting uses.

pub(crate) mod admin;
pub(crate) mod feedback;
#[cfg(any(test, feature = "pg_test"))]
mod tests;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;

use pg_ask_core::verified::Candidate;

use crate::llm::embeddings;
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::{ext_schema, select_rows, vector_text, OrRaise};

/// Verified queries retrieved per question: the best by embedding and the best by trigrams.
const RETRIEVE: i64 = 8;

/// The verified queries most like `question` among those the caller may see, best first:
/// the [`RETRIEVE`] nearest by the questions' embeddings (when embeddings are on and the
/// stored one is of the same model) and the [`RETRIEVE`] most alike by trigrams, each with
/// both scores. No query but one `EXISTS` when the caller sees none, and none before the
/// extension's SQL objects are at 0.2.0 (an upgrade in progress).
/// SQL that is true when the verifier `verifier` (an expression of its role's OID) is one the
/// current role trusts to answer its questions without the model: itself, a superuser, the
/// extension's owner, or — for a role that is not a superuser — a role it was made a member
/// of by a superuser (every grant on the way recorded with a superuser as its grantor). A
/// membership another role granted (a role with CREATEROLE making the caller a member of a
/// role it created) is not trust. One rule for answers, templates and suggestions.
pub(crate) fn trusted_verifier(verifier: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM pg_catalog.pg_roles r
                  WHERE r.oid OPERATOR(pg_catalog.=) {verifier}
                    AND (r.rolsuper
                         OR r.oid OPERATOR(pg_catalog.=) (SELECT me.oid FROM pg_catalog.pg_roles me WHERE me.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
                         OR r.oid OPERATOR(pg_catalog.=) (SELECT extowner FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'pg_ask')
                         OR (NOT (SELECT me.rolsuper FROM pg_catalog.pg_roles me WHERE me.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
                             AND r.oid OPERATOR(pg_catalog.=) ANY (ARRAY(
                                 WITH RECURSIVE granted(role) AS (
                                     SELECT m.roleid FROM pg_catalog.pg_auth_members m
                                       JOIN pg_catalog.pg_roles g ON g.oid OPERATOR(pg_catalog.=) m.grantor AND g.rolsuper
                                      WHERE m.member OPERATOR(pg_catalog.=) (SELECT me.oid FROM pg_catalog.pg_roles me WHERE me.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
                                     UNION
                                     SELECT m.roleid FROM pg_catalog.pg_auth_members m
                                       JOIN granted ON m.member OPERATOR(pg_catalog.=) granted.role
                                       JOIN pg_catalog.pg_roles g ON g.oid OPERATOR(pg_catalog.=) m.grantor AND g.rolsuper)
                                 SELECT role FROM granted)))))"
    )
}

pub(crate) fn candidates(asked: &pg_ask_core::ask::Question, embedder: Option<&(String, String)>) -> Result<Vec<Candidate>, String> {
    let question = asked.text();
    // Between installing a new library and ALTER EXTENSION pg_ask UPDATE, there is no store.
    if !crate::pg::version::sql_at_least("0.2.0") {
        return Ok(Vec::new());
    }
    let any = Spi::get_one::<bool>("SELECT EXISTS (SELECT 1 FROM ask.verified_queries)").map_err(|e| e.to_string())?;
    if any != Some(true) {
        return Ok(Vec::new());
    }
    let vector = ext_schema("vector");
    let trgm = ext_schema("pg_trgm");
    let embedding = embedder.map(|_| asked.embedding(embeddings::embed_one).to_vec());
    let model = embedder.map(|(_, m)| m.clone());
    let dims = embedding.as_ref().map(|v| v.len() as i32);
    let trusted = trusted_verifier("v.verified_by_role");
    let sql = format!(
        "WITH scored AS (
             SELECT v.id, v.question, v.sql, v.schema::text, v.verified_by::text,
{trusted} AS trusted,
                    CASE WHEN $2::text IS NOT NULL AND v.embedding_model = $2 AND {vector}.vector_dims(v.embedding) = $3
                         THEN (1 - (v.embedding OPERATOR({vector}.<=>) $1::{vector}.vector))::float8 END AS cosine,
                    {trgm}.similarity(v.question, $4)::float8 AS trigram
             FROM ask.verified_queries v
             -- The policy's condition again: a role that bypasses row-level security sees no more.
             WHERE ask._verified_readable(v.tables))
         SELECT * FROM (
             (SELECT * FROM scored WHERE cosine IS NOT NULL ORDER BY cosine DESC LIMIT $5)
             UNION
             (SELECT * FROM scored ORDER BY trigram DESC LIMIT $5)) best
         ORDER BY coalesce(cosine, trigram) DESC, id"
    );
    let args: [DatumWithOid; 5] =
        [embedding.as_deref().map(vector_text).into(), model.into(), dims.into(), question.into(), RETRIEVE.into()];
    let rows = Spi::connect(|client| {
        client.select(&sql, None, &args).map(|rows| {
            rows.filter_map(|r| {
                Some(Candidate {
                    id: r.get::<i64>(1).ok()??,
                    question: r.get::<String>(2).ok()??,
                    sql: r.get::<String>(3).ok()??,
                    schema: r.get::<String>(4).ok()?,
                    verified_by: r.get::<String>(5).ok()??,
                    trusted: r.get::<bool>(6).ok()?.unwrap_or(false),
                    cosine: r.get::<f64>(7).ok()?,
                    trigram: r.get::<f64>(8).ok()?.unwrap_or(0.0),
                })
            })
            .collect::<Vec<_>>()
        })
    });
    rows.map_err(|e| e.to_string())
}

/// Count a use of each verified query in `ids` (answered from, or shown as an example) for
/// the calling role only (`ask.verified_uses`, one row per query and role, by OID): no role
/// learns from the counts what another asked. A row another session of the same role holds
/// in an open transaction is not waited for: that use goes uncounted.
pub(crate) fn count_uses(ids: &[i64]) {
    // SAFETY: reads a backend-local flag.
    if ids.is_empty() || unsafe { pgrx::pg_sys::XactReadOnly } {
        return;
    }
    // SAFETY: reads the backend's current user id.
    let role = unsafe { pgrx::pg_sys::GetUserId() };
    let args: [DatumWithOid; 2] = [ids.to_vec().into(), role.into()];
    as_memory_owner(|| {
        Spi::run_with_args(
            "WITH mine AS (SELECT verified_id FROM ask.verified_uses
                            WHERE verified_id OPERATOR(pg_catalog.=) ANY ($1) AND role OPERATOR(pg_catalog.=) $2::pg_catalog.regrole
                              FOR UPDATE SKIP LOCKED),
                  counted AS (UPDATE ask.verified_uses u SET uses = u.uses OPERATOR(pg_catalog.+) 1, last_used = pg_catalog.now()
                               WHERE u.verified_id IN (SELECT verified_id FROM mine) AND u.role OPERATOR(pg_catalog.=) $2::pg_catalog.regrole)
             INSERT INTO ask.verified_uses (verified_id, role, uses, last_used)
             SELECT v.id, $2::pg_catalog.regrole, 1, pg_catalog.now() FROM ask.verified_queries v
              WHERE v.id OPERATOR(pg_catalog.=) ANY ($1)
                AND NOT EXISTS (SELECT FROM ask.verified_uses u
                                 WHERE u.verified_id OPERATOR(pg_catalog.=) v.id AND u.role OPERATOR(pg_catalog.=) $2::pg_catalog.regrole)
             ON CONFLICT (verified_id, role) DO NOTHING",
            &args,
        )
    })
    .unwrap_or_else(|e| warning!("pg_ask: could not count the uses of verified queries: {e}"));
}

/// The relations `tables` (names as the guard read them from a statement) resolve to under
/// the current search path; names that resolve to none (common table expressions, set
/// returning functions) are left out.
pub(crate) fn resolve_tables(tables: &[String]) -> Vec<pgrx::pg_sys::Oid> {
    select_rows(
        "SELECT DISTINCT pg_catalog.to_regclass(n)::oid FROM pg_catalog.unnest($1::text[]) n WHERE pg_catalog.to_regclass(n) IS NOT NULL",
        &[tables.to_vec().into()],
        |r| r.get::<pgrx::pg_sys::Oid>(1),
    )
    .or_raise("could not resolve the tables a query reads")
}
