//! A benchmark run's pure steps: which answers are still to get, the request for each, and the
//! record of each reply scored against its truth. The glue reads what is done, computes the
//! truths in PostgreSQL, sends the requests and inserts the records; everything it decides with
//! is here.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::delta::Encoding;
use super::prompting::{parse_reply, Answer, PastCommand, PromptError, Prompting, QueryKind, ReplayPrompt};
use super::sampler::Sample;
use super::score::{has_order_by, score_sample, TruthClass};
use super::workload::Workload;
use crate::constrain::schemas::Shape;
use crate::llm::ChatRequest;

/// One answer a run needs: sample `sample` in one encoding and prompting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Job {
    pub sample: usize,
    pub encoding: Encoding,
    pub prompting: Prompting,
}

/// The next at most `batch` jobs of a run that are not `done`, in the run's order: by sample,
/// then encoding, then prompting, as the run lists them.
pub fn next_jobs(samples: usize, encodings: &[Encoding], promptings: &[Prompting], done: &HashSet<Job>, batch: usize) -> Vec<Job> {
    let mut jobs = Vec::with_capacity(batch.min(samples * encodings.len() * promptings.len()));
    for sample in 0..samples {
        for &encoding in encodings {
            for &prompting in promptings {
                let job = Job { sample, encoding, prompting };
                if !done.contains(&job) {
                    if jobs.len() == batch {
                        return jobs;
                    }
                    jobs.push(job);
                }
            }
        }
    }
    jobs
}

/// The true results of a sample, as PostgreSQL computed them.
#[derive(Debug, Clone, PartialEq)]
pub struct Truth {
    /// Succeed or Fail of every command before the query.
    pub past: Vec<Answer>,
    pub query: Answer,
    pub query_kind: QueryKind,
}

/// The replay request of `job`: the sample's commands, each with its true outcome, then the
/// query, over the workload's tables in the job's encoding.
pub fn job_request(workload: &Workload, schema: &[String], job: Job, sample: &Sample, truth: &Truth) -> Result<ChatRequest, PromptError> {
    let text = |c: &super::sampler::CommandRef| c.resolve(workload).and_then(|c| c.text(job.encoding)).unwrap_or_default();
    let history: Vec<PastCommand> =
        sample.commands.iter().zip(&truth.past).map(|(c, result)| PastCommand { command: text(c), result: Some(result.clone()) }).collect();
    let query = text(&sample.query);
    let req = ReplayPrompt {
        encoding: job.encoding,
        prompting: job.prompting,
        schema,
        history: &history,
        query: &query,
        initially_empty: true,
        texts: None,
    }
    .build()?;
    // Zero-shot chain of thought reasons before its answer: no schema there.
    Ok(match job.prompting {
        Prompting::ZeroCot => req,
        _ => req.shaped(reply_shape(truth.query_kind)),
    })
}

/// The structured reply to a query of `kind`.
pub fn reply_shape(kind: QueryKind) -> Shape {
    match kind {
        QueryKind::Select => Shape::ShadowRows,
        QueryKind::Modify => Shape::ShadowOutcome,
    }
}

/// A reply read as an answer to a query and scored against the truth.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The answer read from the reply; `None` when it could not be read (it then scores 0).
    pub answer: Option<Answer>,
    /// Why the reply could not be read.
    pub error: Option<String>,
    pub score: f64,
    /// Whether the reply was the structured JSON of its shape (read without the free-text
    /// parser).
    pub structured: bool,
}

impl Scored {
    /// Read `reply` as the answer to a query of `kind` and score it against `truth`
    /// (order-aware when the query has ORDER BY).
    pub fn read(reply: &str, kind: QueryKind, truth: &Answer, query_sql: Option<&str>) -> Scored {
        let (text, structured) = reply_shape(kind).readable(reply);
        let parsed = parse_reply(&text, kind);
        let ordered = query_sql.is_some_and(has_order_by);
        let score = score_sample(truth, parsed.as_ref().ok(), ordered);
        match parsed {
            Ok(answer) => Scored { answer: Some(answer), error: None, score, structured },
            Err(e) => Scored { answer: None, error: Some(e.to_string()), score, structured },
        }
    }

    /// No usable reply (the model's reply was empty, cut or malformed at the protocol level).
    pub fn failed(error: String) -> Scored {
        Scored { answer: None, error: Some(error), score: 0.0, structured: false }
    }
}

/// An answer as stored and shown: rows as arrays, `"Succeed"` or `"Fail"`.
pub fn answer_json(a: &Answer) -> Value {
    match a {
        Answer::Rows(rows) => Value::Array(rows.iter().map(|r| Value::Array(r.clone())).collect()),
        Answer::Succeed => json!("Succeed"),
        Answer::Fail => json!("Fail"),
    }
}

/// Everything recorded for one job's reply (a row of `ask.benchmark_samples`).
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub job: Job,
    pub operation: &'static str,
    pub category: Option<&'static str>,
    pub achieved_insert_ratio: f64,
    pub achieved_overlap: f64,
    /// The query as the model saw it.
    pub query: String,
    pub truth: Value,
    pub truth_class: TruthClass,
    pub reply: Option<String>,
    pub answer: Option<Value>,
    pub error: Option<String>,
    pub score: f64,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// What a model said for a job: its reply with the tokens the server counted, or why there
/// is no usable reply.
pub enum Reply<'a> {
    Text { content: &'a str, prompt_tokens: Option<u64>, completion_tokens: Option<u64> },
    Unusable(String),
}

impl JobRecord {
    /// The record of `job`'s reply, scored against `truth`.
    pub fn of(workload: &Workload, job: Job, sample: &Sample, truth: &Truth, reply: Reply<'_>) -> JobRecord {
        let query_cmd = sample.query.resolve(workload);
        let (reply, scored, prompt_tokens, completion_tokens) = match reply {
            Reply::Text { content, prompt_tokens, completion_tokens } => {
                let scored = Scored::read(content, truth.query_kind, &truth.query, query_cmd.and_then(|c| c.sql()));
                (Some(content.to_string()), scored, prompt_tokens, completion_tokens)
            }
            Reply::Unusable(error) => (None, Scored::failed(error), None, None),
        };
        JobRecord {
            job,
            operation: sample.target.operation(),
            category: sample.target.category().map(|c| c.as_str()),
            achieved_insert_ratio: sample.achieved_insert_ratio,
            achieved_overlap: sample.achieved_overlap,
            query: query_cmd.and_then(|c| c.text(job.encoding)).unwrap_or_default(),
            truth: answer_json(&truth.query),
            truth_class: TruthClass::of(&truth.query),
            reply,
            answer: scored.answer.as_ref().map(answer_json),
            error: scored.error,
            score: scored.score,
            prompt_tokens,
            completion_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENC: [Encoding; 2] = [Encoding::Sql, Encoding::Nl];
    const PROMPT: [Prompting; 2] = [Prompting::ZeroShot, Prompting::FewShot];

    #[test]
    fn next_jobs_in_run_order_skipping_done_ones() {
        let done: HashSet<Job> = [
            Job { sample: 0, encoding: Encoding::Sql, prompting: Prompting::ZeroShot },
            Job { sample: 0, encoding: Encoding::Nl, prompting: Prompting::FewShot },
        ]
        .into_iter()
        .collect();
        let jobs = next_jobs(3, &ENC, &PROMPT, &done, 3);
        assert_eq!(
            jobs,
            vec![
                Job { sample: 0, encoding: Encoding::Sql, prompting: Prompting::FewShot },
                Job { sample: 0, encoding: Encoding::Nl, prompting: Prompting::ZeroShot },
                Job { sample: 1, encoding: Encoding::Sql, prompting: Prompting::ZeroShot },
            ]
        );
        // Everything left, when the batch is larger than the rest.
        assert_eq!(next_jobs(3, &ENC, &PROMPT, &done, 100).len(), 3 * 4 - 2);
        // Nothing left.
        let all: HashSet<Job> = next_jobs(3, &ENC, &PROMPT, &HashSet::new(), 100).into_iter().collect();
        assert!(next_jobs(3, &ENC, &PROMPT, &all, 8).is_empty());
        assert!(next_jobs(0, &ENC, &PROMPT, &HashSet::new(), 8).is_empty());
    }

    #[test]
    fn a_reply_is_read_and_scored() {
        let truth = Answer::Rows(vec![vec![json!(1)], vec![json!(2)]]);
        let s = Scored::read("The result is:\n[[1], [2]]", QueryKind::Select, &truth, Some("SELECT id FROM t"));
        assert_eq!(s.score, 1.0);
        assert_eq!(s.error, None);
        let half = Scored::read("[[1]]", QueryKind::Select, &truth, Some("SELECT id FROM t"));
        assert!(half.score > 0.0 && half.score < 1.0, "{half:?}");
        // Order counts when the query orders.
        let reversed = Scored::read("[[2], [1]]", QueryKind::Select, &truth, Some("SELECT id FROM t ORDER BY id"));
        assert!(reversed.score < 1.0, "{reversed:?}");
        let unreadable = Scored::read("", QueryKind::Select, &truth, None);
        assert_eq!((unreadable.answer, unreadable.score), (None, 0.0));
        assert!(unreadable.error.is_some());
        let modify = Scored::read("Succeed", QueryKind::Modify, &Answer::Succeed, None);
        assert_eq!(modify.score, 1.0);
    }

    #[test]
    fn answers_as_json() {
        assert_eq!(answer_json(&Answer::Rows(vec![vec![json!("a"), json!(1)]])), json!([["a", 1]]));
        assert_eq!(answer_json(&Answer::Succeed), json!("Succeed"));
        assert_eq!(answer_json(&Answer::Fail), json!("Fail"));
    }
}
