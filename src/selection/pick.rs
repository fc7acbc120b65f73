//! The selection `ask()` describes, from a catalog (the caller's whole one, or the candidates
//! the stored index gave) and the question's cosines.

use pg_ask_core::ask::{SchemaCandidate, Selection};
use pg_ask_core::selection::{AskedSelection, Catalog, Cosines, Fusion};
use serde_json::json;

/// The selection of [`super::selection_for`] from a catalog and the question's cosines; `detail`
/// (an object) says how they were found and gets the picks.
pub(super) fn pick(
    question: &str,
    catalog: &Catalog,
    table_cosines: &Cosines,
    schema_cosines: &Cosines,
    max_tables: usize,
    mut detail: serde_json::Value,
) -> Result<Option<Selection>, String> {
    let fusion = Fusion::default();
    let started = std::time::Instant::now();
    let Some(AskedSelection { schemas, tables: picks }) =
        catalog.select_as_asked(question, table_cosines, schema_cosines, max_tables, fusion).map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let mut candidates = Vec::new();
    for s in &schemas {
        let mine: Vec<_> = picks.iter().filter(|p| catalog.table(&p.table).is_some_and(|t| t.schema == s.schema)).cloned().collect();
        if !mine.is_empty() {
            candidates
                .push(SchemaCandidate { schema: s.schema.clone(), tables: crate::values::listed::render(&catalog.picked_tables(&mine)) });
        }
    }
    let ranking_ms = started.elapsed().as_secs_f64() * 1000.0;
    if let Some(d) = detail.as_object_mut() {
        d.insert("memory".into(), json!(true));
        d.insert("ranking_ms".into(), json!(ranking_ms));
        d.insert("described_tables".into(), json!(picks.len()));
        d.insert("described_chars".into(), json!(candidates.iter().map(|c| c.tables.len()).sum::<usize>()));
        d.insert("full_chars".into(), json!(catalog.full_chars()));
        d.insert("fusion".into(), json!(fusion));
        d.insert("schemas".into(), json!(schemas));
        d.insert("tables".into(), json!(picks));
    }
    Ok(Some(Selection { candidates, detail }))
}
