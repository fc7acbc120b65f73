//! Shadow tables: the LLM as an in-context database (after InConDB, "Can Language Models
//! Enable In-Context Database?", Pan et al., 2024).
//!
//! Everything here is pure: the pgrx glue captures changes, runs statements and calls the
//! LLM; these modules decide what the LLM sees and how its answers are judged.
//!
//! | stage | module |
//! |---|---|
//! | the captured delta log and its two encodings (SQL statements, English sentences) | [`delta`] |
//! | chat requests for zero-shot, zero-shot chain-of-thought and few-shot; reply parsing | [`prompting`] |
//! | the paper's metric (Jaccard, prefix-Jaccard, β and α weighting) | [`score`] |
//! | InConDB workloads (JSON format) and their MySQL → PostgreSQL translation | [`workload`] |
//! | the (length, insert ratio, overlap) sampler of (command sequence, query) pairs | [`sampler`] |
//! | the self-contained HTML comparison report | [`report`] |
//! | a benchmark run's next jobs, their requests and their scored records | [`run`] |

pub mod delta;
pub mod prompting;
pub mod replay;
pub mod report;
pub mod run;
pub mod sampler;
pub mod score;
pub mod workload;

pub use delta::{DeltaEntry, Encoding, Operation, TableName};
pub use prompting::{Answer, Prompting, QueryKind};
