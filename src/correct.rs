//! Value correction from a backend: literals of a checked statement are looked up in the value
//! memory, decided on by the core's rules, and replaced (or put to the LLM).

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use serde_json::{json, Value};

use pg_ask_core::config::LlmConfig;
use pg_ask_core::pipeline::Correction;
use pg_ask_core::selection::unquote;
use pg_ask_core::values::decide::{decide, Candidate, Comparison, Decision, Evidence};
use pg_ask_core::values::literals::{find_literals, Catalog, CatalogColumn, LiteralKind, LiteralRef};
use pg_ask_core::values::prompt::{correction_request, parse_correction, LiteralQuestion};
use pg_ask_core::values::rewrite::{rewrite, Replacement};

use crate::{catalog, embeddings, llm, values};

/// Type names (as format_type writes them) whose columns hold text.
fn text_like(data_type: &str) -> bool {
    let t = data_type.trim_start_matches('"');
    ["text", "character varying", "character", "varchar", "citext", "name", "bpchar"]
        .iter()
        .any(|p| t.starts_with(p))
}

/// The catalog of readable tables for literal resolution, with the session's search path.
fn literal_catalog() -> Result<Catalog, String> {
    let path: Vec<String> = Spi::get_one::<Vec<String>>("SELECT pg_catalog.current_schemas(false)::text[]")
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let mut cat = Catalog::new(path);
    for t in catalog::readable_tables()? {
        let cols = t
            .columns
            .iter()
            .map(|c| CatalogColumn { name: unquote(&c.name), text_like: text_like(&c.data_type) })
            .collect();
        cat.add_table(&unquote(&t.schema), &unquote(&t.name), cols);
    }
    Ok(cat)
}

/// The value-memory column of a literal's column, if it is indexed and readable by the caller:
/// (column id, distinct values).
fn memory_column(lit: &LiteralRef) -> Option<(i64, i64)> {
    let rel = format!("{}.{}", pg_ask_core::sqltext::quote_ident(&lit.table.schema), pg_ask_core::sqltext::quote_ident(&lit.table.table));
    let args: [DatumWithOid; 2] = [rel.as_str().into(), lit.column.as_str().into()];
    let found = Spi::get_three_with_args::<pgrx::pg_sys::Oid, i16, bool>(
        "SELECT a.attrelid, a.attnum, pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT')
         FROM pg_catalog.pg_attribute a WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped",
        &args,
    )
    .ok()?;
    let (Some(relid), Some(attnum), Some(true)) = found else { return None };
    values::as_memory_owner(|| {
        Spi::get_two_with_args::<i64, i64>(
            "SELECT id, distinct_values FROM ask.value_columns WHERE relid = $1 AND attnum = $2",
            &[relid.into(), attnum.into()],
        )
        .ok()
        .and_then(|(id, n)| Some((id?, n?)))
    })
}

/// Everything the decision needs about one literal, read from the memory.
fn evidence(column_id: i64, distinct: i64, lit: &LiteralRef) -> Evidence {
    let core = lit.value.clone();
    let (exact_probe, like) = match &lit.kind {
        LiteralKind::Like { pattern, .. } => (pattern.pattern.clone(), true),
        _ => (lit.value.clone(), false),
    };
    let vector = values::ext_schema("vector");
    let trgm = values::ext_schema("pg_trgm");
    let emb = embeddings::embed_texts(&[core.as_str()]).pop().unwrap_or_default();
    let emb_text = values::vector_text(&emb);
    values::as_memory_owner(|| {
        let exact_sql = if like {
            "SELECT EXISTS (SELECT 1 FROM ask.value_memory WHERE column_id = $1 AND value LIKE $2)"
        } else {
            "SELECT EXISTS (SELECT 1 FROM ask.value_memory WHERE column_id = $1 AND value = $2)"
        };
        let exact = Spi::get_one_with_args::<bool>(exact_sql, &[column_id.into(), exact_probe.as_str().into()])
            .ok()
            .flatten()
            .unwrap_or(false);
        let case_insensitive = Spi::get_one_with_args::<String>(
            "SELECT value FROM ask.value_memory WHERE column_id = $1 AND lower(value) = lower($2) ORDER BY frequency DESC, value LIMIT 1",
            &[column_id.into(), core.as_str().into()],
        )
        .ok()
        .flatten();
        let sql = format!(
            "WITH emb AS (SELECT value FROM ask.value_memory WHERE column_id = $1
                          ORDER BY embedding OPERATOR({vector}.<=>) $2::{vector}.vector LIMIT 10),
                  tri AS (SELECT value FROM ask.value_memory WHERE column_id = $1 AND value OPERATOR({trgm}.%) $3
                          ORDER BY value OPERATOR({trgm}.<->) $3 LIMIT 10)
             SELECT m.value, m.frequency, 1 - (m.embedding OPERATOR({vector}.<=>) $2::{vector}.vector),
                    {trgm}.similarity(m.value, $3)::float8
             FROM (SELECT value FROM emb UNION SELECT value FROM tri) c
             JOIN ask.value_memory m ON m.column_id = $1 AND m.value = c.value"
        );
        let args: [DatumWithOid; 3] = [column_id.into(), emb_text.as_str().into(), core.as_str().into()];
        let candidates = Spi::connect(|client| {
            client
                .select(&sql, None, &args)
                .map(|rows| {
                    rows.filter_map(|r| {
                        Some(Candidate {
                            value: r.get::<String>(1).ok()??,
                            frequency: r.get::<i64>(2).ok()?.unwrap_or(0).max(0) as u64,
                            cosine: r.get::<f64>(3).ok()?,
                            trigram: r.get::<f64>(4).ok()?,
                        })
                    })
                    .collect()
                })
                .unwrap_or_default()
        });
        Evidence { literal: core.clone(), exact, case_insensitive, candidates, distinct_values: distinct.max(0) as u64 }
    })
}

/// Correct the literals of `sql`. With `llm`, literals the rules leave open go to the LLM with
/// the value-correction prompt, and its SQL is taken only if its structure is unchanged.
pub fn correct(sql: &str, llm_cfg: Option<&LlmConfig>) -> Result<Correction, String> {
    let cat = literal_catalog()?;
    let literals = find_literals(sql, &cat).map_err(|e| e.to_string())?;
    let mut replacements = Vec::new();
    let mut questions = Vec::new();
    let mut traces = Vec::new();
    for lit in &literals {
        let Some((column_id, distinct)) = memory_column(lit) else {
            traces.push(json!({"literal": lit.value, "column": format!("{}.{}", lit.table, lit.column), "decision": "not_indexed"}));
            continue;
        };
        let ev = evidence(column_id, distinct, lit);
        let t = decide(&ev, Comparison::from(&lit.kind));
        match &t.decision {
            Decision::Replace { value, .. } => replacements.push(Replacement::for_literal(lit, value)),
            Decision::AskLlm { candidates } => questions.push(LiteralQuestion {
                literal: ev.literal.clone(),
                table: lit.table.clone(),
                column: lit.column.clone(),
                candidates: candidates.clone(),
            }),
            Decision::Keep { .. } => {}
        }
        let mut tv = serde_json::to_value(&t).unwrap_or(Value::Null);
        tv["column"] = json!(format!("{}.{}", lit.table, lit.column));
        traces.push(tv);
    }
    let mut out = if replacements.is_empty() { sql.to_string() } else { rewrite(sql, &replacements).map_err(|e| e.to_string())? };
    if let (Some(cfg), false) = (llm_cfg, questions.is_empty()) {
        let req = correction_request(&out, &questions);
        match llm::chat(cfg, "correct", &req) {
            Ok(resp) => match parse_correction(&out, &resp.content) {
                Ok(fixed) => out = fixed,
                Err(e) => traces.push(json!({"llm_correction_rejected": e.to_string()})),
            },
            Err(e) => traces.push(json!({"llm_correction_failed": e.to_string()})),
        }
    }
    let changed = out != sql;
    Ok(Correction { sql: out, changed, trace: if literals.is_empty() { Value::Null } else { Value::Array(traces) } })
}

/// Value correction alone: the statement with its literals corrected against the value memory.
#[pg_extern(name = "correct_sql", volatile, parallel_unsafe)]
fn correct_sql(sql: &str, use_llm: default!(bool, true)) -> String {
    let cfg = if use_llm {
        Some(crate::gucs::llm_config(&Default::default()).unwrap_or_else(|m| crate::errors::config(m).raise(&crate::gucs::api_key())))
    } else {
        None
    };
    match correct(sql, cfg.as_ref()) {
        Ok(c) => c.sql,
        Err(e) => crate::errors::Raised::new(pgrx::pg_sys::errcodes::PgSqlErrorCode::ERRCODE_SYNTAX_ERROR, format!("could not correct the statement: {e}"))
            .raise(&Default::default()),
    }
}
