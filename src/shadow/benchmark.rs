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
use super::truth::compute_truths;
use super::workload::{internal, require_create_on_database, workload};
use crate::llm::batch;
use crate::pg::errors::raise;
use crate::pg::gucs::{self, LlmOverrides};
use crate::pg::identity::{as_memory_owner, owned_by_caller, role_oid_sql, role_sql};
use crate::pg::spi::{select_rows, OrRaise};
use pg_ask_core::shadow::delta::Encoding;
use pg_ask_core::shadow::prompting::Prompting;
use pg_ask_core::shadow::run::{job_request, next_jobs, Job, JobRecord, Reply, Truth};
use pg_ask_core::shadow::sampler::{sample_one, Sample, SamplerConfig, Target};
use pg_ask_core::shadow::score::{aggregate, TruthClass};
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;
use std::collections::{BTreeMap, HashMap, HashSet};

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
    let read = format!(
        "SELECT {}, started_by::pg_catalog.text FROM ask.benchmark_runs WHERE id OPERATOR(pg_catalog.=) $1",
        role_oid_sql("started_by")
    );
    let owner = as_memory_owner(|| Spi::get_two_with_args::<pg_sys::Oid, String>(&read, &[id.into()]));
    match owner {
        Ok((owner, Some(_))) if owned_by_caller(owner.unwrap_or(pg_sys::Oid::INVALID)) => {}
        Ok((_, Some(name))) => raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("benchmark run {id} belongs to role {name}"),
            "A run is continued and finished only by the role that started it (CALL ask.benchmark), or a superuser.",
        ),
        Ok((_, None)) | Err(pgrx::spi::Error::InvalidPosition) => {
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
        crate::pg::identity::caller().into(),
    ];
    let caller = role_sql(12);
    let (id, resumed) = as_memory_owner(|| {
        let existing = Spi::get_one_with_args::<i64>(
            &format!(
                "SELECT id FROM ask.benchmark_runs
                  WHERE workload = $1 AND length = $2 AND insert_ratio = $3 AND overlap = $4 AND samples = $5
                    AND encodings = $6 AND promptings = $7 AND seed = $8 AND provider = $9 AND model = $10 AND base_url = $11
                    AND status = 'running' AND started_by = {caller}
                  ORDER BY id DESC LIMIT 1"
            ),
            &args,
        )
        .ok()
        .flatten();
        match existing {
            Some(id) => (id, true),
            None => (
                Spi::get_one_with_args::<i64>(
                    &format!(
                        "INSERT INTO ask.benchmark_runs (workload, length, insert_ratio, overlap, samples, encodings, promptings, seed, provider, model, base_url, started_by)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, {caller}) RETURNING id"
                    ),
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
            let (Some(sample), Some(encoding), Some(prompting)) = (row.get::<i32>(1)?, row.get::<String>(2)?, row.get::<String>(3)?) else {
                return Ok(None);
            };
            // A sample of an encoding or prompting this version does not know is not one of its jobs.
            Ok(encoding.parse().ok().zip(prompting.parse().ok()).map(|(encoding, prompting)| Job {
                sample: sample as usize,
                encoding,
                prompting,
            }))
        })
    })
    .or_raise("could not read the benchmark's samples")
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
