//! Building and refreshing the value memory: `ask.index_values()`, `ask.refresh_values()`,
//! the per-column indexes, embedding in batches.

use super::{BATCH, EXACT_SCAN_MAX, MAX_INDEX_DIMS};
use crate::llm::embeddings;
use crate::pg::errors::raise;
use crate::pg::gucs::current_embedder;
use crate::pg::identity::{as_memory_owner, as_user, role_sql};
use crate::pg::spi::{ext_schema, vector_text};
use crate::pg::spi::{relname, select_rows, OrRaise};
use pg_ask_core::values::diff::ValueDiff;
use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

/// A text-like column of `rel` that the caller may read: (attnum, quoted name).
pub(crate) fn readable_text_column(rel: pg_sys::Oid, column: &str) -> (i16, String) {
    let row = Spi::get_three_with_args::<i16, String, bool>(
        "SELECT a.attnum, pg_catalog.quote_ident(a.attname),
                pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT')
         FROM pg_catalog.pg_attribute a
         WHERE a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attname OPERATOR(pg_catalog.=) $2
           AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
           AND ask._text_base(a.atttypid) IS NOT NULL",
        &[rel.into(), column.into()],
    );
    match row {
        Ok((Some(attnum), Some(name), Some(true))) => (attnum, name),
        Ok((Some(_), Some(_), _)) => {
            raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("permission denied for column {column}"), "")
        }
        _ => raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            format!("column \"{column}\" of {} is not a text-like column", relname(rel)),
            "The value memory holds text, varchar, char, citext and enum columns, and domains over them.",
        ),
    }
}

/// Build (or rebuild) the value memory of a table's text-like columns, or of the listed ones.
/// Returns the number of distinct values remembered.
#[pg_extern(name = "_index_values", volatile, parallel_unsafe)]
pub(crate) fn index_values(rel: pg_sys::Oid, columns: Option<Vec<String>>, allow_rls: bool) -> i64 {
    let (owner_ok, has_rls, plain) = Spi::get_three_with_args::<bool, bool, bool>(
        "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE'), c.relrowsecurity, c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,m}'::pg_catalog.\"char\"[])
           FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[rel.into()],
    )
    .unwrap_or((None, None, None));
    if owner_ok != Some(true) {
        raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("must be owner of table {} to index its values", relname(rel)), "");
    }
    if plain != Some(true) {
        // Reading a view or a foreign table runs code of its owner's choosing, and a refresh
        // may run it again as whoever refreshes.
        raise(
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!("{} is not a table or materialized view: its values are not indexed", relname(rel)),
            "Index the tables a view reads.",
        );
    }
    if has_rls == Some(true) && !allow_rls {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("{} has row-level security: its values are not indexed", relname(rel)),
            "The memory would show values of rows that policies hide. If every role that may SELECT the column may see all its values, pass allow_rls => true.",
        );
    }
    let names: Vec<String> = match columns {
        Some(c) => c,
        None => select_rows(
            "SELECT a.attname::text FROM pg_catalog.pg_attribute a
             WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
               AND ask._text_base(a.atttypid) IS NOT NULL ORDER BY a.attnum",
            &[rel.into()],
            |r| r.get::<String>(1),
        )
        .or_raise("could not list the table's text columns"),
    };
    let mut total = 0i64;
    for name in names {
        total += remember_column(rel, &name, allow_rls, false).remembered;
    }
    total
}

/// What one column's (re)indexing did.
pub(crate) struct Remembered {
    remembered: i64,
    added: i64,
    removed: i64,
}

/// Drop a column's own indexes, if it has any (those it has only: `IF EXISTS` would tell the
/// caller in a NOTICE about every index a small column never had).
pub(crate) fn drop_own_indexes(column_id: i64) {
    let names: Vec<String> = ["hnsw", "trgm", "rev"].iter().map(|k| format!("value_memory_c{column_id}_{k}")).collect();
    let existing: Vec<String> = crate::pg::spi::select_rows(
        "SELECT pg_catalog.format('ask.%I', c.relname) FROM pg_catalog.pg_class c
           JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
          WHERE n.nspname OPERATOR(pg_catalog.=) 'ask' AND c.relname OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.name[])
          ORDER BY c.relname",
        &[names.into()],
        |r| r.get::<String>(1),
    )
    .unwrap();
    if !existing.is_empty() {
        Spi::run(&format!("DROP INDEX {}", existing.join(", "))).unwrap();
    }
}

/// Give a large column its own partial indexes: HNSW over its embeddings (as halfvec of its
/// dimension), pg_trgm GIN over its values, and a btree over its reversed lower-cased values
/// (sort neighbours from the end; the shared `value_memory_lower` serves them from the start).
/// Run as the memory's owner.
pub(crate) fn create_own_indexes(column_id: i64, dims: Option<i32>) {
    let vector = ext_schema("vector");
    let trgm = ext_schema("pg_trgm");
    Spi::run(&format!(
        "CREATE INDEX IF NOT EXISTS value_memory_c{column_id}_trgm ON ask.value_memory
         USING gin (value {trgm}.gin_trgm_ops) WHERE column_id = {column_id}"
    ))
    .unwrap();
    Spi::run(&format!(
        "CREATE INDEX IF NOT EXISTS value_memory_c{column_id}_rev ON ask.value_memory
         (reverse(lower(value)) COLLATE \"C\") WHERE column_id = {column_id}"
    ))
    .unwrap();
    if let Some(d) = dims {
        Spi::run(&format!(
            "CREATE INDEX IF NOT EXISTS value_memory_c{column_id}_hnsw ON ask.value_memory
             USING hnsw ((embedding::{vector}.halfvec({d})) {vector}.halfvec_cosine_ops) WHERE column_id = {column_id}"
        ))
        .unwrap();
    }
}

/// Embed one batch, checking that every vector has the column's dimension (set by the first
/// batch) and that the dimension can be indexed.
pub(crate) fn embed_batch(texts: &[&str], dims: &mut Option<usize>) -> Vec<Vec<f32>> {
    let vectors = embeddings::embed_texts(texts);
    if vectors.len() != texts.len() {
        raise(
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("the embedding provider returned {} vectors for {} texts", vectors.len(), texts.len()),
            "",
        );
    }
    for v in &vectors {
        let d = *dims.get_or_insert(v.len());
        if v.len() != d || d == 0 {
            raise(
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                format!("the embedding provider returned vectors of {} and {d} dimensions", v.len()),
                "Every value of a column must be embedded by the same model.",
            );
        }
        if d > MAX_INDEX_DIMS {
            raise(
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!("embeddings of {d} dimensions cannot be indexed (at most {MAX_INDEX_DIMS})"),
                "pgvector's HNSW index takes at most 4000 dimensions (as halfvec): choose a smaller ask.embedding_model (many OpenAI models accept fewer dimensions), use ask.embedding_provider = 'local', or 'off' for trigram matching only.",
            );
        }
    }
    vectors
}

/// Read a column's distinct values and bring its memory up to date: rebuilt from scratch, or
/// (`incremental`) only new values embedded and vanished ones dropped, frequencies updated.
/// An incremental update under other embedding settings than the column's rebuilds it.
pub(crate) fn remember_column(rel: pg_sys::Oid, name: &str, allow_rls: bool, incremental: bool) -> Remembered {
    let vector = ext_schema("vector");
    let (attnum, quoted) = readable_text_column(rel, name);
    let cap = crate::pg::gucs::max_values_per_column();
    let distinct_sql = format!(
        "SELECT v, count(*)::bigint FROM (SELECT {quoted}::text AS v FROM {} WHERE {quoted} IS NOT NULL) s
         GROUP BY v ORDER BY count(*) DESC, v LIMIT {}",
        relname(rel),
        cap + 1
    );
    let mut values: Vec<(String, i64)> =
        select_rows(&distinct_sql, &[], |r| Ok(r.get::<String>(1)?.zip(r.get::<i64>(2)?))).or_raise("could not read the column's values");
    let capped = values.len() as i64 > cap;
    values.truncate(cap as usize);
    let n = values.len();
    let embedder = current_embedder();
    let (provider, model) = match &embedder {
        Some((p, m)) => (p.clone(), Some(m.clone())),
        None => ("off".to_string(), None),
    };
    // The column's memory before this update: id, embedder and dimension.
    let before = as_memory_owner(|| {
        Spi::get_three_with_args::<i64, String, String>(
            "SELECT id, embedding_provider, coalesce(embedding_model, '') FROM ask.value_columns WHERE relid = $1 AND attnum = $2",
            &[rel.into(), attnum.into()],
        )
        .ok()
    });
    let same_embedder = matches!(&before, Some((Some(_), Some(p), Some(m))) if *p == provider && *m == model.clone().unwrap_or_default());
    if incremental && before.is_some() && !same_embedder {
        notice!(
            "pg_ask: {}.{} was embedded under other embedding settings than the current ones; rebuilding its memory",
            relname(rel),
            name
        );
    }
    let incremental = incremental && same_embedder;
    if !incremental {
        if let Some((Some(old_id), _, _)) = before {
            as_memory_owner(|| drop_own_indexes(old_id));
        }
    }
    let indexer = crate::pg::identity::caller();
    let record = format!(
        "INSERT INTO ask.value_columns (relid, attnum, distinct_values, capped, allow_rls, embedding_provider, embedding_model, indexed_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, {})
         ON CONFLICT (relid, attnum) DO UPDATE SET distinct_values = EXCLUDED.distinct_values,
            capped = EXCLUDED.capped, allow_rls = EXCLUDED.allow_rls,
            embedding_provider = EXCLUDED.embedding_provider, embedding_model = EXCLUDED.embedding_model,
            indexed_at = now(), indexed_by = EXCLUDED.indexed_by
         RETURNING id",
        role_sql(8)
    );
    let column_id = as_memory_owner(|| {
        Spi::get_one_with_args::<i64>(
            &record,
            &[
                rel.into(),
                attnum.into(),
                (n as i64).into(),
                capped.into(),
                allow_rls.into(),
                provider.as_str().into(),
                model.clone().into(),
                indexer.into(),
            ],
        )
        .ok()
        .flatten()
        .expect("value_columns row")
    });
    let mut removed = 0i64;
    let to_embed: Vec<(String, i64)> = if incremental {
        let stored: Vec<String> = as_memory_owner(|| {
            select_rows("SELECT value FROM ask.value_memory WHERE column_id = $1", &[column_id.into()], |r| r.get::<String>(1))
        })
        .or_raise("could not read the value memory");
        let diff = ValueDiff::between(&stored, &values);
        removed = diff.vanished.len() as i64;
        let vals: Vec<String> = values.iter().map(|(v, _)| v.clone()).collect();
        let freqs: Vec<i64> = values.iter().map(|(_, f)| *f).collect();
        as_memory_owner(|| {
            Spi::run_with_args(
                "DELETE FROM ask.value_memory WHERE column_id = $1 AND value = ANY($2)",
                &[column_id.into(), diff.vanished.into()],
            )
            .unwrap();
            Spi::run_with_args(
                "UPDATE ask.value_memory m SET frequency = u.f FROM unnest($2::text[], $3::bigint[]) AS u(v, f)
                 WHERE m.column_id = $1 AND m.value = u.v AND m.frequency <> u.f",
                &[column_id.into(), vals.into(), freqs.into()],
            )
            .unwrap();
        });
        diff.new
    } else {
        as_memory_owner(|| Spi::run_with_args("DELETE FROM ask.value_memory WHERE column_id = $1", &[column_id.into()]).unwrap());
        values
    };
    let mut dims: Option<usize> = as_memory_owner(|| {
        Spi::get_one_with_args::<i32>("SELECT dims FROM ask.value_columns WHERE id = $1", &[column_id.into()]).ok().flatten()
    })
    .filter(|_| incremental && embedder.is_some())
    .map(|d| d as usize);
    let added = to_embed.len();
    for (i, chunk) in to_embed.chunks(BATCH).enumerate() {
        pgrx::check_for_interrupts!();
        let vals: Vec<String> = chunk.iter().map(|(v, _)| v.clone()).collect();
        let freqs: Vec<i64> = chunk.iter().map(|(_, f)| *f).collect();
        let embs: Vec<Option<String>> = if embedder.is_some() {
            let texts: Vec<&str> = chunk.iter().map(|(v, _)| v.as_str()).collect();
            embed_batch(&texts, &mut dims).iter().map(|e| Some(vector_text(e))).collect()
        } else {
            vec![None; chunk.len()]
        };
        let args: [DatumWithOid; 4] = [column_id.into(), vals.into(), freqs.into(), embs.into()];
        as_memory_owner(|| {
            Spi::run_with_args(
                &format!(
                    "INSERT INTO ask.value_memory (column_id, value, frequency, embedding)
                     SELECT $1, u.v, u.f, u.e::{vector}.vector FROM unnest($2::text[], $3::bigint[], $4::text[]) AS u(v, f, e)"
                ),
                &args,
            )
            .unwrap()
        });
        if added > BATCH * 4 && (i + 1) % 4 == 0 {
            notice!("pg_ask: {}.{}: {} of {} values embedded", relname(rel), name, ((i + 1) * BATCH).min(added), added);
        }
    }
    let dims = dims.map(|d| d as i32);
    let own = n as i64 > EXACT_SCAN_MAX;
    as_memory_owner(|| {
        Spi::run_with_args(
            "UPDATE ask.value_columns SET dims = $2, own_indexes = $3 WHERE id = $1",
            &[column_id.into(), dims.into(), own.into()],
        )
        .unwrap();
        if own {
            if added > BATCH * 4 {
                notice!("pg_ask: {}.{}: building the nearest-neighbour and trigram indexes of {n} values", relname(rel), name);
            }
            create_own_indexes(column_id, dims);
            // Fresh statistics after a large write, so that the planner takes the column's own
            // indexes right away (autovacuum's ANALYZE may come much later).
            if added as i64 > EXACT_SCAN_MAX {
                Spi::run("ANALYZE ask.value_memory").unwrap();
            }
        } else {
            drop_own_indexes(column_id);
        }
    });
    if capped {
        notice!("pg_ask: {}.{} has more than {cap} distinct values; the {cap} most frequent are remembered", relname(rel), name);
    }
    Remembered { remembered: n as i64, added: added as i64, removed }
}

/// Bring the value memory up to date with the tables' current values: new values are embedded
/// and added, vanished ones dropped, frequencies updated; memory of dropped tables and columns
/// is removed. `rel` NULL: every indexed table the caller owns. Returns values added + removed.
#[pg_extern(name = "_refresh_values", volatile, parallel_unsafe)]
pub(crate) fn refresh_values(rel: Option<pg_sys::Oid>) -> i64 {
    // Memory of dropped tables or columns goes first (nothing can be served from it anyway).
    let gone: Vec<i64> = as_memory_owner(|| {
        let ids: Vec<i64> = Spi::connect_mut(|client| {
            client
                .update(
                    "DELETE FROM ask.value_columns vc WHERE NOT EXISTS (
                         SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = vc.relid AND a.attnum = vc.attnum AND NOT a.attisdropped)
                     RETURNING id",
                    None,
                    &[],
                )
                .map(|rows| rows.filter_map(|r| r.get::<i64>(1).ok().flatten()).collect())
                .unwrap_or_default()
        });
        for id in &ids {
            drop_own_indexes(*id);
        }
        ids
    });
    let purged = gone.len();
    if purged > 0 {
        notice!("pg_ask: forgot the values of {purged} dropped column(s)");
    }
    let columns: Vec<(pg_sys::Oid, String, bool)> = as_memory_owner(|| {
        select_rows(
            "SELECT vc.relid, a.attname::text, vc.allow_rls FROM ask.value_columns vc
             JOIN pg_catalog.pg_attribute a ON a.attrelid = vc.relid AND a.attnum = vc.attnum
             WHERE $1::oid IS NULL OR vc.relid = $1 ORDER BY vc.relid, vc.attnum",
            &[rel.into()],
            |r| {
                let (Some(relid), Some(name), Some(allow_rls)) = (r.get::<pg_sys::Oid>(1)?, r.get::<String>(2)?, r.get::<bool>(3)?) else {
                    return Ok(None);
                };
                Ok(Some((relid, name, allow_rls)))
            },
        )
    })
    .or_raise("could not read the value memory's columns");
    let mut changed = 0;
    for (relid, name, allow_rls) in columns {
        if !crate::pg::spi::owns(relid) {
            if rel.is_some() {
                raise(
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    format!("must be owner of table {} to refresh its values", relname(relid)),
                    "",
                );
            }
            continue;
        }
        // As the table's owner: a superuser's refresh of every table must not read another
        // role's table with superuser rights (the owner's own rights suffice, and the settings
        // that say where values go are then the server's).
        let owner = Spi::get_one_with_args::<pg_sys::Oid>(
            "SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
            &[relid.into()],
        )
        .ok()
        .flatten()
        .unwrap_or_else(|| raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, format!("no table with oid {relid:?}"), ""));
        // SAFETY: reads the backend's current user id.
        let r = if owner == unsafe { pg_sys::GetUserId() } {
            remember_column(relid, &name, allow_rls, true)
        } else {
            as_user(owner, || remember_column(relid, &name, allow_rls, true))
        };
        changed += r.added + r.removed;
    }
    changed
}

/// The trigger's refresh: as the table's owner, who opted in with `ask.keep_values_current()`,
/// whoever wrote to the table. Not executable by PUBLIC: the trigger function calls it as the
/// extension's owner. It refreshes only a table whose owner opted in (the trigger is there), and
/// as the owner, the user id differs from the writer's session: the embedding settings are the
/// server's (see `pg::server_wide`), so the writer cannot send the values anywhere.
#[pg_extern(name = "_refresh_values_as_owner", volatile, strict, parallel_unsafe)]
pub(crate) fn refresh_values_as_owner(rel: pg_sys::Oid) -> i64 {
    let row = Spi::get_two_with_args::<pg_sys::Oid, bool>(
        "SELECT c.relowner, EXISTS (SELECT FROM pg_catalog.pg_trigger t
                                     WHERE t.tgrelid OPERATOR(pg_catalog.=) c.oid AND t.tgname OPERATOR(pg_catalog.=) 'ask_values_current')
         FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[rel.into()],
    );
    let (owner, opted_in) = match row {
        Ok((Some(owner), Some(opted_in))) => (owner, opted_in),
        _ => raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, format!("no table with oid {rel:?}"), ""),
    };
    if !opted_in {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("the owner of {} has not asked to keep its values current", relname(rel)),
            "The table's owner opts in with ask.keep_values_current(table); ask.refresh_values(table) refreshes it once.",
        );
    }
    as_user(owner, || refresh_values(Some(rel)))
}
