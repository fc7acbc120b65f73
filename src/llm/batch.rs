//! One batch of a resumable run (`CALL ask.benchmark`, `CALL ask.evaluate`): its jobs' requests
//! go out together, at most `ask.concurrency` in flight and grouped by ledger stage; each reply
//! comes back beside its job. [`settle`] hands the replies to the feature to record and stops
//! the run when the service, not the model, failed.

use std::time::Duration;

use pg_ask_core::config::LlmConfig;
use pg_ask_core::llm::{ChatRequest, ChatResponse, LlmError};

use crate::pg::errors;

/// A job's request and what came back.
pub(crate) struct Sent<J> {
    pub job: J,
    pub request: ChatRequest,
    pub reply: Result<ChatResponse, LlmError>,
    pub took: Duration,
}

/// Send every job's request (each written to the ledger under its stage), at most
/// `concurrency` in flight; results in the order of `jobs`. A pending cancel abandons the batch
/// and raises the cancel.
pub(crate) fn send<J>(cfg: &LlmConfig, jobs: Vec<(J, &'static str, ChatRequest)>, concurrency: usize) -> Vec<Sent<J>> {
    let mut stages: Vec<&'static str> = jobs.iter().map(|(_, s, _)| *s).collect();
    stages.sort_unstable();
    stages.dedup();
    let mut slots: Vec<Option<(Result<ChatResponse, LlmError>, Duration)>> = (0..jobs.len()).map(|_| None).collect();
    for stage in stages {
        let members: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].1 == stage).collect();
        let reqs: Vec<ChatRequest> = members.iter().map(|&i| jobs[i].2.clone()).collect();
        for (i, answer) in members.into_iter().zip(super::chat_many(cfg, stage, reqs, concurrency)) {
            slots[i] = Some(answer);
        }
    }
    jobs.into_iter()
        .zip(slots)
        .map(|((job, _, request), slot)| {
            let (reply, took) = slot.expect("every job belongs to one stage");
            Sent { job, request, reply, took }
        })
        .collect()
}

/// Hand each job that got the model's reply (or the model's failure: an empty, cut or
/// malformed answer) to `record`. A failure of the service (unreachable, refusing, not speaking
/// its protocol) says nothing of the model: its job stays pending for a later CALL. When no
/// job could be recorded, the run stops with the service's error and `resume_hint`. Returns
/// how many jobs were recorded.
pub(crate) fn settle<J>(sent: Vec<Sent<J>>, stage: &str, resume_hint: &str, mut record: impl FnMut(Sent<J>)) -> usize {
    let mut recorded = 0;
    let mut service_failure: Option<LlmError> = None;
    for s in sent {
        if let Err(e) = &s.reply {
            if e.is_service_failure() {
                service_failure = Some(e.clone());
                continue;
            }
        }
        record(s);
        recorded += 1;
    }
    if recorded == 0 {
        if let Some(e) = service_failure {
            errors::from_llm(&e, stage).hint(resume_hint).raise();
        }
    }
    recorded
}
