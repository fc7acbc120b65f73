//! In-database benchmarks of the LLM as an in-context database (InConDB): workloads, the
//! `CALL ask.benchmark(...)` procedure's steps, and the comparison report.
//!
//! The procedure (SQL, in sql/benchmark.sql) starts or resumes a run, then calls
//! `ask._benchmark_step(run)` and COMMITs until nothing is left: every step scores a batch of
//! answers and commits them, so a cancelled or crashed run keeps what it finished and the
//! same CALL resumes it. Within a step the truths are computed in PostgreSQL (a scratch schema
//! inside a subtransaction that is always rolled back) and the LLM calls go out together,
//! `ask.concurrency` at a time.

use super::report::report_rows;
use super::workload::{internal, require_create_on_database, workload};
use crate::guard;
use crate::llm::batch;
use crate::pg::errors::raise;
use crate::pg::gucs::{self, LlmOverrides};
use crate::pg::identity::as_memory_owner;
use crate::pg::spi::select_rows;
use crate::pg::subxact::{self, OnSuccess};
use crate::shadow::replay::{fail_or_rethrow, outcome_of};
use pg_ask_core::shadow::delta::Encoding;
use pg_ask_core::shadow::prompting::{Answer, Prompting, QueryKind};
use pg_ask_core::shadow::run::{job_request, next_jobs, Job, JobRecord, Reply, Truth};
use pg_ask_core::shadow::sampler::{sample_one, Sample, SamplerConfig, Target};
use pg_ask_core::shadow::score::{aggregate, TruthClass};
use pg_ask_core::shadow::workload::{CommandKind, Workload};
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ffi::CString;

pub(crate) struct Run {
    workload: String,
    config: SamplerConfig,
    encodings: Vec<Encoding>,
    promptings: Vec<Prompting>,
    provider: String,
    model: String,
    base_url: String,
}

pub(crate) fn parse_list<T: std::str::FromStr>(items: &[String], what: &str, hint: &str) -> Vec<T> {
    if items.is_empty() {
        raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, format!("no {what} given"), hint);
    }
    let mut seen = HashSet::new();
    items
        .iter()
        .filter(|s| seen.insert(s.trim().to_ascii_lowercase()))
        .map(|s| {
            s.parse().unwrap_or_else(|_| raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, format!("unknown {what} {s:?}"), hint))
        })
        .collect()
}

pub(crate) const ENCODING_HINT: &str = "Encodings are 'sql' and 'nl'.";

pub(crate) const PROMPTING_HINT: &str = "Promptings are 'zero_shot', 'zero_cot' and 'few_shot'.";

/// The sampler's settings for a run: every query kind, round-robin.
pub(crate) fn sampler_config(length: i32, insert_ratio: f64, overlap: f64, samples: i32, seed: i32, encoding: Encoding) -> SamplerConfig {
    SamplerConfig {
        length: length as usize,
        insert_ratio,
        overlap,
        samples: samples as usize,
        seed: seed as u32 as u64,
        targets: Target::all(),
        encoding,
    }
}

/// Refuses unless the caller started run `id` (or is a superuser): a run's samples, scores and
/// status are its role's.
pub(crate) fn require_own_run(id: i64) {
    let owner = as_memory_owner(|| {
        Spi::get_one_with_args::<String>(
            "SELECT started_by::pg_catalog.text FROM ask.benchmark_runs WHERE id OPERATOR(pg_catalog.=) $1",
            &[id.into()],
        )
    });
    match owner {
        Ok(Some(owner)) if crate::pg::identity::owned_by_caller(&owner) => {}
        Ok(Some(owner)) => raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("benchmark run {id} belongs to role {owner}"),
            "A run is continued and finished only by the role that started it (CALL ask.benchmark), or a superuser.",
        ),
        Ok(None) | Err(pgrx::spi::Error::InvalidPosition) => {
            raise(PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT, format!("benchmark run {id} does not exist"), "")
        }
        Err(e) => internal("could not read the run", e),
    }
}

pub(crate) fn load_run(id: i64) -> Run {
    let row = as_memory_owner(|| {
        Spi::connect(|c| {
            let mut rows = c.select(
                "SELECT workload, length, insert_ratio, overlap, samples, encodings, promptings, seed, provider, model, base_url
                   FROM ask.benchmark_runs WHERE id = $1",
                None,
                &[id.into()],
            )?;
            let Some(r) = rows.next() else { return Ok(None) };
            Ok::<_, pgrx::spi::Error>(Some((
                r.get::<String>(1)?.unwrap_or_default(),
                r.get::<i32>(2)?.unwrap_or(0),
                r.get::<f64>(3)?.unwrap_or(0.0),
                r.get::<f64>(4)?.unwrap_or(0.0),
                r.get::<i32>(5)?.unwrap_or(0),
                r.get::<Vec<String>>(6)?.unwrap_or_default(),
                r.get::<Vec<String>>(7)?.unwrap_or_default(),
                r.get::<i32>(8)?.unwrap_or(0),
                r.get::<String>(9)?.unwrap_or_default(),
                r.get::<String>(10)?.unwrap_or_default(),
                r.get::<String>(11)?.unwrap_or_default(),
            )))
        })
    })
    .unwrap_or_else(|e| internal("could not read the run", e));
    let Some((workload, length, insert_ratio, overlap, samples, encodings, promptings, seed, provider, model, base_url)) = row else {
        raise(PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT, format!("benchmark run {id} does not exist"), "")
    };
    let encodings: Vec<Encoding> = parse_list(&encodings, "encoding", ENCODING_HINT);
    Run {
        workload,
        config: sampler_config(length, insert_ratio, overlap, samples, seed, encodings[0]),
        promptings: parse_list(&promptings, "prompting", PROMPTING_HINT),
        encodings,
        provider,
        model,
        base_url,
    }
}

/// Start a run, or find the unfinished run with the same parameters and model to resume.
#[allow(clippy::too_many_arguments)]
#[pg_extern(volatile, parallel_unsafe)]
pub(crate) fn _benchmark_start(
    workload_name: &str,
    length: i32,
    insert_ratio: f64,
    overlap: f64,
    samples: i32,
    encodings: Vec<String>,
    promptings: Vec<String>,
    seed: i32,
) -> i64 {
    crate::pg::subxact::require_nonatomic("ask.benchmark");
    require_create_on_database("run a benchmark");
    if length < 0 || samples <= 0 {
        raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, "length must be >= 0 and samples > 0", "");
    }
    for (name, v) in [("insert_ratio", insert_ratio), ("overlap", overlap)] {
        if !(0.0..=1.0).contains(&v) {
            raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, format!("{name} must be between 0 and 1, not {v}"), "");
        }
    }
    let encs: Vec<Encoding> = parse_list(&encodings, "encoding", ENCODING_HINT);
    let proms: Vec<Prompting> = parse_list(&promptings, "prompting", PROMPTING_HINT);
    let w = workload(workload_name);
    // Every query kind must be drawable in every encoding: fail now rather than mid-run.
    for &encoding in &encs {
        let cfg = sampler_config(length, insert_ratio, overlap, samples, seed, encoding);
        for i in 0..(samples as usize).min(cfg.targets.len()) {
            if let Err(e) = sample_one(&w, &cfg, i) {
                raise(
                    PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("workload {workload_name:?} cannot be sampled with encoding {encoding}: {e}"),
                    if encoding == Encoding::Nl {
                        "The NL encoding needs the workload's NL twin: ask.load_workload(name, spec, nl)."
                    } else {
                        ""
                    },
                );
            }
        }
    }
    let cfg = gucs::llm_config(&LlmOverrides::default()).unwrap_or_else(|m| crate::pg::errors::config(m).raise());
    let provider = cfg.provider.as_str().to_string();
    let encs: Vec<String> = encs.iter().map(|e| e.as_str().to_string()).collect();
    let proms: Vec<String> = proms.iter().map(|p| p.as_str().to_string()).collect();
    let args = vec![
        workload_name.into(),
        length.into(),
        insert_ratio.into(),
        overlap.into(),
        samples.into(),
        encs.clone().into(),
        proms.clone().into(),
        seed.into(),
        provider.clone().into(),
        cfg.model.clone().into(),
        cfg.base_url.clone().into(),
    ];
    let (id, resumed) = as_memory_owner(|| {
        let existing = Spi::get_one_with_args::<i64>(
            "SELECT id FROM ask.benchmark_runs
              WHERE workload = $1 AND length = $2 AND insert_ratio = $3 AND overlap = $4 AND samples = $5
                AND encodings = $6 AND promptings = $7 AND seed = $8 AND provider = $9 AND model = $10 AND base_url = $11
                AND status = 'running' AND started_by = session_user
              ORDER BY id DESC LIMIT 1",
            &args,
        )
        .ok()
        .flatten();
        match existing {
            Some(id) => (id, true),
            None => (
                Spi::get_one_with_args::<i64>(
                    "INSERT INTO ask.benchmark_runs (workload, length, insert_ratio, overlap, samples, encodings, promptings, seed, provider, model, base_url, started_by)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, session_user) RETURNING id",
                    &args,
                )
                .ok()
                .flatten()
                .unwrap_or_else(|| internal("could not start the run", "no id")),
                false,
            ),
        }
    });
    let total = samples as i64 * encs.len() as i64 * proms.len() as i64;
    if resumed {
        let done = done_count(id);
        notice!("pg_ask: resuming benchmark run {id} ({done} of {total} answers done)");
    } else {
        notice!(
            "pg_ask: benchmark run {id}: workload {workload_name}, {samples} samples × {} encodings × {} promptings = {total} LLM calls, model {}",
            encs.len(),
            proms.len(),
            cfg.model
        );
    }
    id
}

pub(crate) fn done_count(run: i64) -> i64 {
    as_memory_owner(|| {
        Spi::get_one_with_args::<i64>("SELECT count(*) FROM ask.benchmark_samples WHERE run_id = $1", &[run.into()])
            .ok()
            .flatten()
            .unwrap_or(0)
    })
}

/// Whether a workload statement may run in the scratch schema: it names only the workload's own
/// tables, unqualified (the truths are computed as the role that runs the benchmark, which may
/// read tables the workload's author may not).
pub(crate) fn scratch_safe(c: &pg_ask_core::shadow::workload::Command, own: &BTreeSet<String>) -> bool {
    let plain = !matches!(c.kind, CommandKind::CreateTable) || c.sql().is_some_and(pg_ask_core::shadow::workload::is_plain_create_table);
    plain && c.sql().is_some_and(|sql| pg_ask_core::shadow::workload::names_only(sql, own))
}

/// Refuses the benchmark when the workload's scratch tables `rels` could run code of another
/// role's as the caller: a column type that is not built in, a default or check constraint
/// calling a function off the allow-list.
fn require_plain_scratch_tables(workload: &str, rels: &[pg_sys::Oid]) {
    if let Some(why) = guard::functions::scratch_refusal(rels) {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("the tables of workload {workload:?} are not used: {why}"),
            "A workload's tables may use built-in types and functions only (and those a superuser lists in ask.allowed_functions).",
        );
    }
}

/// A workload statement run for its truth, as the caller: refused (Fail) when it calls a
/// function off the allow-list or a volatile one (nextval in an INSERT aside), as a step of
/// ask.do() would be.
fn workload_outcome(sql: &str) -> Answer {
    let Ok(csql) = CString::new(sql) else { return Answer::Fail };
    // SAFETY: one statement analysed, then run in its own SPI session.
    match subxact::run(OnSuccess::Release, move || unsafe {
        if guard::statement_refusal(&csql, false).is_some() {
            return Err("refused".to_string());
        }
        guard::spi_execute(&csql, false, 0)
    }) {
        Ok(Ok(_)) => Answer::Succeed,
        Ok(Err(_)) => Answer::Fail,
        Err(e) => fail_or_rethrow(e),
    }
}

/// Rows most a truth may have; a benchmark query returning more is cut (and scored as cut).
pub(crate) const TRUTH_ROW_LIMIT: u32 = 100_000;

/// A relation of the session's temporary schema: (oid, name, kind).
type TempRelation = (pg_sys::Oid, String, String);

thread_local! {
    /// The workload whose tables this session keeps in its temporary schema for computing
    /// truths (its name and CREATE statements), with every relation that creating them added
    /// there.
    static SCRATCH: std::cell::RefCell<Option<(String, Vec<TempRelation>)>> = const { std::cell::RefCell::new(None) };
}

/// The relations of the session's temporary schema: (oid, name, kind).
fn temp_relations() -> Vec<TempRelation> {
    select_rows(
        "SELECT c.oid, c.relname::text, c.relkind::text FROM pg_catalog.pg_class c WHERE c.relnamespace = pg_catalog.pg_my_temp_schema()",
        &[],
        |r| Some((r.get::<pg_sys::Oid>(1).ok()??, r.get::<String>(2).ok()??, r.get::<String>(3).ok()??)),
    )
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
    let kept = SCRATCH.with(|s| s.borrow().as_ref().filter(|(k, _)| *k == key).map(|(_, rels)| rels.clone()));
    let ours = |rels: &[TempRelation]| rels.iter().all(|r| present.contains(r));
    let rels = match kept {
        Some(rels) if !rels.is_empty() && ours(&rels) => rels,
        _ => {
            // Another workload's tables, or ours lost with a rolled-back step: drop what is
            // left of them, then create the workload's.
            let previous = SCRATCH.with(|s| s.borrow_mut().take()).map(|(_, rels)| rels).unwrap_or_default();
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
            if guard::functions::scratch_refusal(&oids).is_some() {
                drop_temp_tables(created.iter());
                require_plain_scratch_tables(&w.name, &oids);
            }
            SCRATCH.with(|s| *s.borrow_mut() = Some((key, created.clone())));
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
            |r| r.get::<pg_sys::Oid>(1).ok().flatten(),
        );
        require_plain_scratch_tables(&w.name, &created);
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
            // SAFETY: one statement in its own SPI session; rows copied out. Not SPI's
            // read-only mode: that would read with the statement's snapshot, from before the
            // sample's commands. It calls no function off the allow-list, and no volatile one.
            match subxact::run(OnSuccess::Release, move || unsafe {
                if guard::statement_refusal(&csql, false).is_some() {
                    return Err("refused".to_string());
                }
                guard::spi_execute(&csql, false, TRUTH_ROW_LIMIT)
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

/// Score the next batch of pending answers of `run` and record them. Returns how many were
/// recorded (0: the run is complete).
#[pg_extern(volatile, parallel_unsafe)]
pub(crate) fn _benchmark_step(run: i64) -> i32 {
    require_own_run(run);
    let r = load_run(run);
    let w = workload(&r.workload);
    let cfg = gucs::llm_config(&LlmOverrides {
        provider: Some(r.provider.clone()),
        base_url: Some(r.base_url.clone()),
        model: Some(r.model.clone()),
        temperature: None,
    })
    .unwrap_or_else(|m| crate::pg::errors::config(m).raise());
    let concurrency = gucs::concurrency();

    let done: HashSet<Job> = as_memory_owner(|| {
        select_rows("SELECT sample, encoding, prompting FROM ask.benchmark_samples WHERE run_id = $1", &[run.into()], |row| {
            Some(Job {
                sample: row.get::<i32>(1).ok()?? as usize,
                encoding: row.get::<String>(2).ok()??.parse().ok()?,
                prompting: row.get::<String>(3).ok()??.parse().ok()?,
            })
        })
    })
    .into_iter()
    .collect();
    let jobs = next_jobs(r.config.samples, &r.encodings, &r.promptings, &done, (concurrency * 4).max(8));
    if jobs.is_empty() {
        return 0;
    }

    // Samples and truths, once per (sample, encoding).
    let mut keys: Vec<(usize, Encoding)> = Vec::new();
    let mut samples: Vec<Sample> = Vec::new();
    for job in &jobs {
        if !keys.contains(&(job.sample, job.encoding)) {
            let cfg = SamplerConfig { encoding: job.encoding, ..r.config.clone() };
            samples.push(sample_one(&w, &cfg, job.sample).unwrap_or_else(|e| {
                raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, format!("sample {} cannot be drawn: {e}", job.sample), "")
            }));
            keys.push((job.sample, job.encoding));
        }
    }
    let truths = compute_truths(&w, &samples.iter().collect::<Vec<_>>());
    let drawn: HashMap<(usize, Encoding), (Sample, Truth)> = keys.into_iter().zip(samples.into_iter().zip(truths)).collect();

    let schemas: HashMap<Encoding, Vec<String>> = r.encodings.iter().map(|&e| (e, w.schema(e))).collect();
    let requests = jobs
        .iter()
        .map(|&job| {
            let (sample, truth) = &drawn[&(job.sample, job.encoding)];
            let request =
                job_request(&w, &schemas[&job.encoding], job, sample, truth).unwrap_or_else(|e| internal("could not build the prompt", e));
            (job, "benchmark", request)
        })
        .collect();
    let sent = batch::send(&cfg, requests, concurrency);
    let resume = format!("The answers so far are kept: CALL ask.benchmark(...) again with the same arguments to resume run {run}.");
    let recorded = batch::settle(sent, "benchmark", &resume, |s| {
        let (sample, truth) = &drawn[&(s.job.sample, s.job.encoding)];
        let reply = match &s.reply {
            Ok(resp) => {
                Reply::Text { content: &resp.content, prompt_tokens: resp.prompt_tokens, completion_tokens: resp.completion_tokens }
            }
            Err(e) => Reply::Unusable(e.to_string()),
        };
        insert_record(run, &JobRecord::of(&w, s.job, sample, truth, reply), s.took);
    });

    let (finished, mean) = as_memory_owner(|| {
        Spi::get_two_with_args::<i64, f64>("SELECT count(*), avg(score) FROM ask.benchmark_samples WHERE run_id = $1", &[run.into()])
    })
    .unwrap_or((None, None));
    let total = r.config.samples * r.encodings.len() * r.promptings.len();
    let finished = finished.unwrap_or(0);
    notice!(
        "pg_ask: benchmark run {run}: {finished}/{total} answers ({:.0}%), mean sample score {:.3}",
        100.0 * finished as f64 / total.max(1) as f64,
        mean.unwrap_or(0.0)
    );
    recorded as i32
}

/// One scored answer into `ask.benchmark_samples`.
fn insert_record(run: i64, rec: &JobRecord, took: std::time::Duration) {
    as_memory_owner(|| {
        Spi::run_with_args(
            "INSERT INTO ask.benchmark_samples (run_id, sample, encoding, prompting, operation, category, achieved_insert_ratio,
                 achieved_overlap, query, truth, truth_class, reply, answer, error, score, prompt_tokens, completion_tokens, ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
            &[
                run.into(),
                (rec.job.sample as i32).into(),
                rec.job.encoding.as_str().into(),
                rec.job.prompting.as_str().into(),
                rec.operation.into(),
                rec.category.into(),
                rec.achieved_insert_ratio.into(),
                rec.achieved_overlap.into(),
                rec.query.as_str().into(),
                JsonB(rec.truth.clone()).into(),
                rec.truth_class.as_str().into(),
                rec.reply.clone().into(),
                rec.answer.clone().map(JsonB).into(),
                rec.error.clone().into(),
                rec.score.into(),
                rec.prompt_tokens.map(|t| t as i64).into(),
                rec.completion_tokens.map(|t| t as i64).into(),
                (took.as_secs_f64() * 1000.0).into(),
            ],
        )
        .unwrap_or_else(|e| internal("could not record an answer", e))
    });
}

/// Mark a run done and report its scores per operation.
#[pg_extern(volatile, parallel_unsafe)]
pub(crate) fn _benchmark_finish(run: i64) {
    require_own_run(run);
    as_memory_owner(|| {
        Spi::run_with_args("UPDATE ask.benchmark_runs SET status = 'done', finished_at = now() WHERE id = $1", &[run.into()])
            .unwrap_or_else(|e| internal("could not finish the run", e))
    });
    let rows = report_rows(Some(vec![run]));
    let mut by_op: BTreeMap<&str, Vec<(TruthClass, f64)>> = BTreeMap::new();
    for r in &rows {
        by_op.entry(r.operation.as_str()).or_default().push((r.truth, r.score));
    }
    let parts: Vec<String> = by_op.iter().filter_map(|(op, v)| aggregate(v.iter().copied()).map(|s| format!("{op} {s:.3}"))).collect();
    notice!("pg_ask: benchmark run {run} done: {}", parts.join(", "));
}
