//! The truths of a benchmark's samples: each sample's commands and query run for real, as the
//! role that runs the benchmark, on the workload's own tables, created empty in the session's
//! temporary schema (or in a scratch schema) inside subtransactions that are always rolled
//! back. A workload is another role's text: its statements may name only the tables it creates,
//! call only allow-listed and non-volatile functions, and its tables use built-in types only.

use std::collections::{BTreeSet, HashSet};
use std::ffi::CString;

use pg_ask_core::shadow::prompting::{Answer, QueryKind};
use pg_ask_core::shadow::run::Truth;
use pg_ask_core::shadow::sampler::Sample;
use pg_ask_core::shadow::workload::{CommandKind, Workload};
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use super::replay::{fail_or_rethrow, outcome_of, run_outcome, Checked};
use super::workload::internal;
use crate::guard;
use crate::pg::backend::TempRelation;
use crate::pg::errors::raise;
use crate::pg::spi::{select_rows, OrRaise};
use crate::pg::subxact::{self, OnSuccess};

/// Whether a workload statement may run in the scratch schema: it names only the workload's own
/// tables, unqualified (the truths are computed as the role that runs the benchmark, which may
/// read tables the workload's author may not).
pub(crate) fn scratch_safe(c: &pg_ask_core::shadow::workload::Command, own: &BTreeSet<String>) -> bool {
    let plain = !matches!(c.kind, CommandKind::CreateTable) || c.sql().is_some_and(pg_ask_core::shadow::workload::is_plain_create_table);
    plain && c.sql().is_some_and(|sql| pg_ask_core::shadow::workload::names_only(sql, own))
}

/// Refuses the benchmark because the workload's scratch tables could run code of another role's
/// as the caller (`why`: [`guard::functions::scratch_refusal`]).
fn refuse_scratch_tables(workload: &str, why: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
        format!("the tables of workload {workload:?} are not used: {why}"),
        "A workload's tables may use built-in types and functions only (and those a superuser lists in ask.allowed_functions).",
    )
}

/// A workload statement run for its truth, as the caller: refused (Fail) when it calls a
/// function off the allow-list or any volatile one, `nextval` included.
fn workload_outcome(sql: &str) -> Answer {
    run_outcome(sql, OnSuccess::Release, Checked::NoVolatile)
}

/// Rows most a truth may have; a benchmark query returning more is cut (and scored as cut).
pub(crate) const TRUTH_ROW_LIMIT: u32 = 100_000;

/// The relations of the session's temporary schema: (oid, name, kind).
fn temp_relations() -> Vec<TempRelation> {
    select_rows(
        "SELECT c.oid, c.relname::text, c.relkind::text FROM pg_catalog.pg_class c WHERE c.relnamespace = pg_catalog.pg_my_temp_schema()",
        &[],
        |r| {
            let (Some(oid), Some(name), Some(kind)) = (r.get::<pg_sys::Oid>(1)?, r.get::<String>(2)?, r.get::<String>(3)?) else {
                return Ok(None);
            };
            Ok(Some((oid, name, kind)))
        },
    )
    .or_raise("could not list the session's temporary relations")
}

/// Drops the tables among `rels` (their sequences go with them).
fn drop_temp_tables<'a>(rels: impl Iterator<Item = &'a TempRelation>) {
    for (_, name, _) in rels.filter(|(_, _, kind)| kind == "r" || kind == "p") {
        Spi::run(&format!("DROP TABLE IF EXISTS pg_temp.{} CASCADE", pg_ask_core::sqltext::quote_ident(name)))
            .unwrap_or_else(|e| internal("could not drop a scratch table", e));
    }
}

/// Makes sure the session's temporary schema holds `w`'s tables, empty, created once per
/// session and workload: creating and dropping them at every step would leave PostgreSQL's
/// caches keyed by their oids (the plans of foreign-key checks among them, a few kB per
/// constraint) to grow for as long as the session lives. Returns the sequences to restart
/// before each sample, or `None` when the tables cannot live there (no TEMP privilege, or a
/// temporary table of the session's own holds a name they need): the caller then uses a
/// scratch schema of its own.
fn scratch_in_temp_schema(w: &Workload) -> Option<Vec<String>> {
    let key = std::iter::once(w.name.as_str()).chain(w.create_tables.iter().filter_map(|c| c.sql())).collect::<Vec<_>>().join("\n");
    let present = temp_relations();
    let kept = crate::pg::backend::with(|b| b.scratch.borrow().as_ref().filter(|(k, _)| *k == key).map(|(_, rels)| rels.clone()));
    let ours = |rels: &[TempRelation]| rels.iter().all(|r| present.contains(r));
    let rels = match kept {
        Some(rels) if !rels.is_empty() && ours(&rels) => rels,
        _ => {
            // Another workload's tables, or ours lost with a rolled-back step: drop what is
            // left of them, then create the workload's.
            let previous = crate::pg::backend::with(|b| b.scratch.take()).map(|(_, rels)| rels).unwrap_or_default();
            drop_temp_tables(previous.iter().filter(|r| present.contains(r)));
            let allowed = Spi::get_one::<bool>("SELECT pg_catalog.has_database_privilege(pg_catalog.current_database(), 'TEMP')")
                .ok()
                .flatten()
                .unwrap_or(false);
            let names: HashSet<String> = w.create_tables.iter().flat_map(|c| c.tables.iter().cloned()).collect();
            let before = temp_relations();
            if !allowed || before.iter().any(|(_, name, _)| names.contains(name)) {
                return None;
            }
            let own = w.own_tables();
            let succeeded = crate::pg::spi::in_schema(Some("pg_temp"), || {
                w.create_tables
                    .iter()
                    .filter(|table| scratch_safe(table, &own))
                    .filter(|table| outcome_of(table.sql().unwrap_or_default(), OnSuccess::Release) == Answer::Succeed)
                    .count()
            });
            let created: Vec<_> = temp_relations().into_iter().filter(|r| !before.contains(r)).collect();
            // Every CREATE that succeeded made a table here (none went to another schema).
            if created.iter().filter(|r| r.2 == "r" || r.2 == "p").count() != succeeded || succeeded == 0 {
                drop_temp_tables(created.iter());
                return None;
            }
            let oids: Vec<pg_sys::Oid> = created.iter().map(|r| r.0).collect();
            if let Some(why) = guard::functions::scratch_refusal(&oids) {
                drop_temp_tables(created.iter());
                refuse_scratch_tables(&w.name, &why);
            }
            crate::pg::backend::with(|b| b.scratch.replace(Some((key, created.clone()))));
            created
        }
    };
    Some(
        rels.iter()
            .filter(|(_, _, kind)| kind == "S")
            .map(|(_, name, _)| format!("ALTER SEQUENCE pg_temp.{} RESTART", pg_ask_core::sqltext::quote_ident(name)))
            .collect(),
    )
}

/// Each sample's truth, in its own subtransaction (always rolled back) after restarting the
/// tables' sequences, so that every sample starts from empty tables, as the LLM is told.
fn truths_of(w: &Workload, samples: &[&Sample], restart: &[String]) -> Vec<Truth> {
    samples
        .iter()
        .map(|sample| {
            match subxact::run(OnSuccess::RollBack, || {
                for stmt in restart {
                    Spi::run(stmt).unwrap_or_else(|e| internal("could not restart a scratch sequence", e));
                }
                sample_truth(w, sample)
            }) {
                Ok(t) => t,
                Err(e) => e.rethrow(),
            }
        })
        .collect()
}

/// The truths of several samples, computed on the workload's tables in the session's
/// temporary schema ([`scratch_in_temp_schema`]); failing that, in a scratch schema created
/// inside a subtransaction that is always rolled back.
pub(crate) fn compute_truths(w: &Workload, samples: &[&Sample]) -> Vec<Truth> {
    if let Some(restart) = scratch_in_temp_schema(w) {
        let out = subxact::run(OnSuccess::RollBack, || {
            // The scratch tables before the catalog: a workload table named like a catalog
            // relation is the workload's.
            Spi::run("SELECT pg_catalog.set_config('search_path', 'pg_temp, pg_catalog', true)")
                .unwrap_or_else(|e| internal("could not set the search_path", e));
            truths_of(w, samples, &restart)
        });
        return out.unwrap_or_else(|e| e.rethrow());
    }
    // SAFETY: reads the backend's own pid.
    let pid = unsafe { pg_sys::MyProcPid };
    let out = subxact::run(OnSuccess::RollBack, || {
        let schema = format!("ask_scratch_{pid}");
        Spi::run(&format!("CREATE SCHEMA {schema}")).unwrap_or_else(|e| internal("could not create the scratch schema", e));
        Spi::run_with_args("SELECT pg_catalog.set_config('search_path', $1, true)", &[format!("{schema}, pg_catalog").into()])
            .unwrap_or_else(|e| internal("could not set the search_path", e));
        let own = w.own_tables();
        for table in &w.create_tables {
            if scratch_safe(table, &own) {
                let _ = outcome_of(table.sql().unwrap_or_default(), OnSuccess::Release);
            }
        }
        let created: Vec<pg_sys::Oid> = select_rows(
            "SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE n.nspname OPERATOR(pg_catalog.=) $1",
            &[schema.clone().into()],
            |r| r.get::<pg_sys::Oid>(1),
        )
        .or_raise("could not list the scratch tables");
        if let Some(why) = guard::functions::scratch_refusal(&created) {
            refuse_scratch_tables(&w.name, &why);
        }
        let restart: Vec<String> = Spi::connect(|c| {
            c.select(
                "SELECT format('ALTER SEQUENCE %I.%I RESTART', n.nspname, s.relname) FROM pg_catalog.pg_class s
                   JOIN pg_catalog.pg_namespace n ON n.oid = s.relnamespace WHERE n.nspname = $1 AND s.relkind = 'S'",
                None,
                &[schema.clone().into()],
            )?
            .map(|r| r.get::<String>(1).map(Option::unwrap_or_default))
            .collect::<Result<Vec<_>, _>>()
        })
        .unwrap_or_else(|e| internal("could not list the scratch sequences", e));
        truths_of(w, samples, &restart)
    });
    match out {
        Ok(truths) => truths,
        Err(e) => e.rethrow(),
    }
}

/// One sample's commands and query, run in the scratch schema.
pub(crate) fn sample_truth(w: &Workload, sample: &Sample) -> Truth {
    let query_cmd = sample.query.resolve(w).expect("the sampler draws from the workload");
    let query_kind = match query_cmd.kind {
        CommandKind::Select(_) => QueryKind::Select,
        _ => QueryKind::Modify,
    };
    let own = w.own_tables();
    let past: Vec<Answer> = sample
        .commands
        .iter()
        .map(|r| r.resolve(w).expect("the sampler draws from the workload"))
        .map(|c| if scratch_safe(c, &own) { workload_outcome(c.sql().unwrap_or_default()) } else { Answer::Fail })
        .collect();
    let sql = query_cmd.sql().unwrap_or_default();
    let query = match (scratch_safe(query_cmd, &own), query_kind, CString::new(sql)) {
        (true, QueryKind::Select, Ok(csql)) => {
            // Not SPI's read-only mode: that would read with the statement's snapshot, from
            // before the sample's commands. It calls no function off the allow-list, and no
            // volatile one.
            match subxact::run(OnSuccess::Release, move || {
                // SAFETY: one statement in its own SPI session; rows copied out.
                guard::trusted::only(|| unsafe {
                    if guard::statement_refusal(&csql, false).is_some() {
                        return Err("refused".to_string());
                    }
                    guard::trusted::strictly(|| guard::spi_execute(&csql, false, TRUTH_ROW_LIMIT))
                })
            }) {
                Ok(Ok(out)) => Answer::Rows(out.rows.rows),
                Ok(Err(_)) => Answer::Fail,
                Err(e) => fail_or_rethrow(e),
            }
        }
        (true, QueryKind::Modify, _) => workload_outcome(sql),
        _ => Answer::Fail,
    };
    Truth { past, query, query_kind }
}
