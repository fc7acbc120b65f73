//! The value memory in PostgreSQL: `ask.index_values()` and `ask.similar_values()`.
//!
//! Privileges: a column's values are only ever read or shown to a role that may SELECT that
//! column; building the memory of a table takes ownership of it; tables with row-level
//! security are skipped unless their owner opts in (`allow_rls => true`), since the memory
//! would show values of rows the policies hide. The memory tables themselves are closed to
//! PUBLIC and read as the extension's owner after those checks.

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use crate::embeddings;
use crate::errors::Raised;

/// Distinct values per column at most (the most frequent are kept).
const VALUE_CAP: i64 = 100_000;
/// Values embedded and written per batch (interrupts are checked between batches).
const BATCH: usize = 512;

fn raise(code: PgSqlErrorCode, msg: String, hint: &str) -> ! {
    let r = Raised::new(code, msg);
    let r = if hint.is_empty() { r } else { r.hint(hint) };
    r.raise(&Default::default())
}

/// Run `f` as the owner of ask.value_memory (the extension's owner), then switch back, also
/// when `f` raises an error (PostgreSQL restores the user id at (sub)transaction abort).
pub(crate) fn as_memory_owner<R>(f: impl FnOnce() -> R) -> R {
    let owner = Spi::get_one::<pg_sys::Oid>("SELECT relowner FROM pg_catalog.pg_class WHERE oid = 'ask.value_memory'::regclass")
        .ok()
        .flatten()
        .unwrap_or_else(|| raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, "ask.value_memory is missing".into(), "Reinstall the extension."));
    as_user(owner, f)
}

/// Run `f` as `owner`, then switch back (at error, transaction abort restores the user).
fn as_user<R>(owner: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    let mut saved_user = pg_sys::Oid::INVALID;
    let mut saved_ctx = 0;
    // SAFETY: the same switch PostgreSQL's own RI triggers make; the previous identity is put
    // back below, and at error by transaction abort.
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut saved_user, &mut saved_ctx);
        pg_sys::SetUserIdAndSecContext(owner, saved_ctx | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32);
    }
    let out = f();
    unsafe { pg_sys::SetUserIdAndSecContext(saved_user, saved_ctx) };
    out
}

/// The schema an extension lives in, quoted, for schema-qualified operators.
pub(crate) fn ext_schema(ext: &str) -> String {
    Spi::get_one_with_args::<String>(
        "SELECT quote_ident(n.nspname) FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = $1",
        &[ext.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| raise(PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT, format!("extension {ext} is not installed"), "CREATE EXTENSION pg_ask CASCADE installs it."))
}

/// A vector in pgvector's text form, `[x,y,...]`.
pub(crate) fn vector_text(v: &[f32]) -> String {
    format!("[{}]", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// A text-like column of `rel` that the caller may read: (attnum, quoted name).
fn readable_text_column(rel: pg_sys::Oid, column: &str) -> (i16, String) {
    let row = Spi::get_three_with_args::<i16, String, bool>(
        "SELECT a.attnum, quote_ident(a.attname),
                pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT')
         FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = $1 AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped
           AND a.atttypid IN (SELECT t.oid FROM pg_catalog.pg_type t
                              WHERE t.typcategory = 'S' OR t.typtype = 'e'
                                 OR t.typname IN ('citext'))",
        &[rel.into(), column.into()],
    );
    match row {
        Ok((Some(attnum), Some(name), Some(true))) => (attnum, name),
        Ok((Some(_), Some(_), _)) => raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("permission denied for column {column}"), ""),
        _ => raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            format!("column \"{column}\" of {} is not a text-like column", relname(rel)),
            "The value memory holds text, varchar, char, enum and citext columns.",
        ),
    }
}

fn relname(rel: pg_sys::Oid) -> String {
    Spi::get_one_with_args::<String>("SELECT $1::regclass::text", &[rel.into()]).ok().flatten().unwrap_or_default()
}

/// Build (or rebuild) the value memory of a table's text-like columns, or of the listed ones.
/// Returns the number of distinct values remembered.
#[pg_extern(name = "_index_values", volatile, parallel_unsafe)]
fn index_values(
    rel: pg_sys::Oid,
    columns: Option<Vec<String>>,
    allow_rls: bool,
) -> i64 {
    let (owner_ok, has_rls) = Spi::get_two_with_args::<bool, bool>(
        "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE'), c.relrowsecurity FROM pg_catalog.pg_class c WHERE c.oid = $1",
        &[rel.into()],
    )
    .unwrap_or((None, None));
    if owner_ok != Some(true) {
        raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("must be owner of table {} to index its values", relname(rel)), "");
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
        None => Spi::connect(|client| {
            client
                .select(
                    "SELECT a.attname::text FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
                     WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
                       AND (t.typcategory = 'S' OR t.typtype = 'e' OR t.typname = 'citext') ORDER BY a.attnum",
                    None,
                    &[rel.into()],
                )
                .map(|rows| rows.filter_map(|r| r.get::<String>(1).ok().flatten()).collect())
                .unwrap_or_default()
        }),
    };
    let provider = format!("{:?}", crate::gucs::embedding_provider()).to_lowercase();
    let mut total = 0i64;
    for name in names {
        total += remember_column(rel, &name, allow_rls, &provider, false).remembered;
    }
    total
}

/// What one column's (re)indexing did.
struct Remembered {
    remembered: i64,
    added: i64,
    removed: i64,
}

/// Read a column's distinct values and bring its memory up to date: rebuilt from scratch, or
/// (`incremental`) only new values embedded and vanished ones dropped, frequencies updated.
fn remember_column(rel: pg_sys::Oid, name: &str, allow_rls: bool, provider: &str, incremental: bool) -> Remembered {
    let vector = ext_schema("vector");
    let (attnum, quoted) = readable_text_column(rel, name);
    let distinct_sql = format!(
        "SELECT v, count(*)::bigint FROM (SELECT {quoted}::text AS v FROM {} WHERE {quoted} IS NOT NULL) s
         GROUP BY v ORDER BY count(*) DESC, v LIMIT {}",
        relname(rel),
        VALUE_CAP + 1
    );
    let mut values: Vec<(String, i64)> = Spi::connect(|client| {
        client
            .select(&distinct_sql, None, &[])
            .map(|rows| rows.filter_map(|r| Some((r.get::<String>(1).ok()??, r.get::<i64>(2).ok()??))).collect())
            .unwrap_or_default()
    });
    let capped = values.len() as i64 > VALUE_CAP;
    values.truncate(VALUE_CAP as usize);
    let n = values.len();
    let column_id = as_memory_owner(|| {
        Spi::get_one_with_args::<i64>(
            "INSERT INTO ask.value_columns (relid, attnum, distinct_values, capped, allow_rls, embedding_provider)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (relid, attnum) DO UPDATE SET distinct_values = EXCLUDED.distinct_values,
                capped = EXCLUDED.capped, allow_rls = EXCLUDED.allow_rls,
                embedding_provider = EXCLUDED.embedding_provider, indexed_at = now(), indexed_by = session_user
             RETURNING id",
            &[rel.into(), attnum.into(), (n as i64).into(), capped.into(), allow_rls.into(), provider.into()],
        )
        .ok()
        .flatten()
        .expect("value_columns row")
    });
    let mut removed = 0i64;
    let to_embed: Vec<(String, i64)> = if incremental {
        let current: std::collections::HashSet<&str> = values.iter().map(|(v, _)| v.as_str()).collect();
        let stored: Vec<String> = as_memory_owner(|| {
            Spi::connect(|client| {
                client
                    .select("SELECT value FROM ask.value_memory WHERE column_id = $1", None, &[column_id.into()])
                    .map(|rows| rows.filter_map(|r| r.get::<String>(1).ok().flatten()).collect())
                    .unwrap_or_default()
            })
        });
        let vanished: Vec<String> = stored.iter().filter(|v| !current.contains(v.as_str())).cloned().collect();
        removed = vanished.len() as i64;
        let stored: std::collections::HashSet<String> = stored.into_iter().collect();
        let vals: Vec<String> = values.iter().map(|(v, _)| v.clone()).collect();
        let freqs: Vec<i64> = values.iter().map(|(_, f)| *f).collect();
        as_memory_owner(|| {
            Spi::run_with_args(
                "DELETE FROM ask.value_memory WHERE column_id = $1 AND value = ANY($2)",
                &[column_id.into(), vanished.into()],
            )
            .unwrap();
            Spi::run_with_args(
                "UPDATE ask.value_memory m SET frequency = u.f FROM unnest($2::text[], $3::bigint[]) AS u(v, f)
                 WHERE m.column_id = $1 AND m.value = u.v AND m.frequency <> u.f",
                &[column_id.into(), vals.into(), freqs.into()],
            )
            .unwrap();
        });
        values.into_iter().filter(|(v, _)| !stored.contains(v)).collect()
    } else {
        as_memory_owner(|| Spi::run_with_args("DELETE FROM ask.value_memory WHERE column_id = $1", &[column_id.into()]).unwrap());
        values
    };
    let added = to_embed.len();
    for (i, chunk) in to_embed.chunks(BATCH).enumerate() {
        pgrx::check_for_interrupts!();
        let texts: Vec<&str> = chunk.iter().map(|(v, _)| v.as_str()).collect();
        let vectors = embeddings::embed_texts(&texts);
        let vals: Vec<String> = chunk.iter().map(|(v, _)| v.clone()).collect();
        let freqs: Vec<i64> = chunk.iter().map(|(_, f)| *f).collect();
        let embs: Vec<String> = vectors.iter().map(|e| vector_text(e)).collect();
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
    if capped {
        notice!("pg_ask: {}.{} has more than {VALUE_CAP} distinct values; the {VALUE_CAP} most frequent are remembered", relname(rel), name);
    }
    Remembered { remembered: n as i64, added: added as i64, removed }
}

/// Bring the value memory up to date with the tables' current values: new values are embedded
/// and added, vanished ones dropped, frequencies updated; memory of dropped tables and columns
/// is removed. `rel` NULL: every indexed table the caller owns. Returns values added + removed.
#[pg_extern(name = "_refresh_values", volatile, parallel_unsafe)]
fn refresh_values(rel: Option<pg_sys::Oid>) -> i64 {
    // Memory of dropped tables or columns goes first (nothing can be served from it anyway).
    let purged = as_memory_owner(|| {
        Spi::get_one::<i64>(
            "WITH gone AS (DELETE FROM ask.value_columns vc WHERE NOT EXISTS (
                 SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = vc.relid AND a.attnum = vc.attnum AND NOT a.attisdropped)
             RETURNING 1) SELECT count(*) FROM gone",
        )
        .ok()
        .flatten()
        .unwrap_or(0)
    });
    if purged > 0 {
        notice!("pg_ask: forgot the values of {purged} dropped column(s)");
    }
    let columns: Vec<(pg_sys::Oid, String, bool)> = as_memory_owner(|| {
        Spi::connect(|client| {
            client
                .select(
                    "SELECT vc.relid, a.attname::text, vc.allow_rls FROM ask.value_columns vc
                     JOIN pg_catalog.pg_attribute a ON a.attrelid = vc.relid AND a.attnum = vc.attnum
                     WHERE $1::oid IS NULL OR vc.relid = $1 ORDER BY vc.relid, vc.attnum",
                    None,
                    &[rel.into()],
                )
                .map(|rows| {
                    rows.filter_map(|r| Some((r.get::<pg_sys::Oid>(1).ok()??, r.get::<String>(2).ok()??, r.get::<bool>(3).ok()??)))
                        .collect()
                })
                .unwrap_or_default()
        })
    });
    let provider = format!("{:?}", crate::gucs::embedding_provider()).to_lowercase();
    let mut changed = 0;
    for (relid, name, allow_rls) in columns {
        let owner = Spi::get_one_with_args::<bool>(
            "SELECT pg_catalog.pg_has_role(relowner, 'USAGE') FROM pg_catalog.pg_class WHERE oid = $1",
            &[relid.into()],
        )
        .ok()
        .flatten()
        .unwrap_or(false);
        if !owner {
            if rel.is_some() {
                raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, format!("must be owner of table {} to refresh its values", relname(relid)), "");
            }
            continue;
        }
        let r = remember_column(relid, &name, allow_rls, &provider, true);
        changed += r.added + r.removed;
    }
    changed
}

/// The trigger's refresh: as the table's owner, who opted in with `ask.keep_values_current()`,
/// whoever wrote to the table.
#[pg_extern(name = "_refresh_values_as_owner", volatile, strict, parallel_unsafe)]
fn refresh_values_as_owner(rel: pg_sys::Oid) -> i64 {
    let owner = Spi::get_one_with_args::<pg_sys::Oid>("SELECT relowner FROM pg_catalog.pg_class WHERE oid = $1", &[rel.into()])
        .ok()
        .flatten()
        .unwrap_or_else(|| raise(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, format!("no table with oid {rel:?}"), ""));
    as_user(owner, || refresh_values(Some(rel)))
}

/// What the value memory finds for a phrase in one column: embedding neighbours and trigram
/// matches, best first, each with its score and the method that found it.
#[pg_extern(name = "_similar_values", volatile, parallel_unsafe)]
fn similar_values(
    rel: pg_sys::Oid,
    col: &str,
    phrase: &str,
    k: i32,
) -> TableIterator<'static, (name!(value, String), name!(score, f64), name!(method, String))> {
    let (attnum, _) = readable_text_column(rel, col);
    let k = k.clamp(1, 1000) as i64;
    let vector = ext_schema("vector");
    let trgm = ext_schema("pg_trgm");
    let embedding = embeddings::embed_texts(&[phrase]).pop().unwrap_or_default();
    let emb_text = vector_text(&embedding);
    let sql = format!(
        "WITH col AS (
             SELECT vc.id FROM ask.value_columns vc
             JOIN pg_catalog.pg_attribute a ON a.attrelid = vc.relid AND a.attnum = vc.attnum AND NOT a.attisdropped
             WHERE vc.relid = $1 AND vc.attnum = $2),
         emb AS (
             SELECT m.value, 1 - (m.embedding OPERATOR({vector}.<=>) $3::{vector}.vector) AS score, 'embedding'::text AS method
             FROM ask.value_memory m WHERE m.column_id = (SELECT id FROM col)
             ORDER BY m.embedding OPERATOR({vector}.<=>) $3::{vector}.vector LIMIT $5),
         tri AS (
             SELECT m.value, {trgm}.similarity(m.value, $4)::float8 AS score, 'trigram'::text AS method
             FROM ask.value_memory m WHERE m.column_id = (SELECT id FROM col)
               AND m.value OPERATOR({trgm}.%) $4
             ORDER BY m.value OPERATOR({trgm}.<->) $4 LIMIT $5)
         SELECT value, score, method FROM (SELECT * FROM emb UNION ALL SELECT * FROM tri) x
         ORDER BY score DESC, value, method"
    );
    let args: [DatumWithOid; 5] = [rel.into(), attnum.into(), emb_text.as_str().into(), phrase.into(), k.into()];
    let rows: Vec<(String, f64, String)> = as_memory_owner(|| {
        Spi::connect(|client| {
            client
                .select(&sql, None, &args)
                .map(|rows| {
                    rows.filter_map(|r| Some((r.get::<String>(1).ok()??, r.get::<f64>(2).ok()??, r.get::<String>(3).ok()??)))
                        .collect()
                })
                .unwrap_or_default()
        })
    });
    TableIterator::new(rows)
}

pgrx::extension_sql!(
    r#"
CREATE FUNCTION index_values(rel regclass, columns text[] DEFAULT NULL, allow_rls boolean DEFAULT false)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _index_values(rel::oid, columns, coalesce(allow_rls, false));
COMMENT ON FUNCTION index_values(regclass, text[], boolean) IS
    'Remember the distinct values of a table''s text-like columns (all, or the listed ones), with embeddings and trigrams, for value correction. Needs ownership of the table.';
CREATE FUNCTION refresh_values(rel regclass DEFAULT NULL)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _refresh_values(rel::oid);
COMMENT ON FUNCTION refresh_values(regclass) IS
    'Bring the value memory up to date: new values added, vanished ones dropped, dropped columns forgotten. NULL: every indexed table the caller owns. Returns values added + removed.';
CREATE FUNCTION _values_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ask._refresh_values_as_owner(TG_RELID);
    RETURN NULL;
END $$;
CREATE FUNCTION keep_values_current(rel regclass, enabled boolean DEFAULT true)
    RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT pg_catalog.pg_has_role((SELECT relowner FROM pg_catalog.pg_class WHERE oid = rel), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table % to keep its values current', rel USING ERRCODE = '42501';
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS ask_values_current ON %s', rel);
    IF enabled THEN
        EXECUTE format('CREATE TRIGGER ask_values_current AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s
                        FOR EACH STATEMENT EXECUTE FUNCTION ask._values_changed()', rel);
    END IF;
END $$;
COMMENT ON FUNCTION keep_values_current(regclass, boolean) IS
    'Opt in (or out) to refreshing a table''s value memory after every writing statement, as the table''s owner. Each refresh reads the indexed columns'' distinct values: meant for small, slowly changing tables.';
CREATE FUNCTION similar_values(rel regclass, col text, phrase text, k int DEFAULT 10)
    RETURNS TABLE (value text, score float8, method text) LANGUAGE sql VOLATILE PARALLEL UNSAFE
    BEGIN ATOMIC SELECT * FROM _similar_values(rel::oid, col, phrase, coalesce(k, 10)); END;
COMMENT ON FUNCTION similar_values(regclass, text, text, int) IS
    'What the value memory finds for a phrase in one column: embedding neighbours and trigram matches, with scores.';
"#,
    name = "value_functions",
    requires = [index_values, similar_values, refresh_values, refresh_values_as_owner]
);
