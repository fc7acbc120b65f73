//! InConDB's sampler: (command sequence, query) pairs drawn from a workload.
//!
//! A sample is a sequence of `length` (l) data-changing commands followed by one *query*, the
//! command the LLM must answer: a SELECT of one of the ten categories, or an INSERT, UPDATE or
//! DELETE. The parameters, as we read the paper:
//!
//! * **l, length**: the number of commands before the query.
//! * **b, insert ratio**: `round(b · l)` of them are INSERTs; the other `l − round(b · l)` are
//!   DELETEs or UPDATEs, each drawn from the union of the workload's delete and update lists
//!   (so their mix follows the workload).
//! * **o, overlap**: `round(o · l)` of the commands *overlap* the query, the rest do not. A
//!   command overlaps the query when it writes a table the query names (for a SELECT, the
//!   tables in its FROM/JOIN clauses and subqueries; for an INSERT/UPDATE/DELETE query, its
//!   target and any table it reads). Overlap is defined on tables, not rows: which rows a
//!   command touches depends on the data and is only known by executing it. The overlapping
//!   commands are split between inserts and modifications in proportion to their counts.
//!
//! When a pool runs short (e.g. every command of the workload touches the tables of a
//! three-table query, so nothing can be non-overlapping), the sampler takes what exists from
//! the other pool of the same kind and records the overlap it actually achieved. Commands are
//! drawn without replacement while a pool lasts, then the pool is reshuffled and reused. The
//! sequence is shuffled uniformly, so inserts, deletes and updates interleave.
//!
//! Targets (the kinds of queries) are assigned round-robin over [`SamplerConfig::targets`], so a
//! run covers the ten categories evenly; the query is drawn uniformly from its category.
//! Only translated commands are used (with the NL encoding, only commands with a sentence).
//!
//! Sample `i` depends only on the workload, the configuration and `i` (its generator is seeded
//! with a hash of the seed and `i`), so an interrupted run can regenerate any sample. The
//! generator is SplitMix64, implemented here so that a seed means the same samples in every
//! release.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::delta::Encoding;
use super::workload::{Command, CommandKind, SelectCategory, Workload};

/// The kind of the query of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "operation", content = "category")]
pub enum Target {
    Select(SelectCategory),
    Insert,
    Update,
    Delete,
}

impl Target {
    /// The ten SELECT categories, then INSERT, UPDATE and DELETE.
    pub fn all() -> Vec<Target> {
        let mut all: Vec<Target> = SelectCategory::ALL.into_iter().map(Target::Select).collect();
        all.extend([Target::Insert, Target::Update, Target::Delete]);
        all
    }

    /// `select`, `insert`, `update` or `delete`.
    pub fn operation(self) -> &'static str {
        match self {
            Target::Select(_) => "select",
            Target::Insert => "insert",
            Target::Update => "update",
            Target::Delete => "delete",
        }
    }

    pub fn category(self) -> Option<SelectCategory> {
        match self {
            Target::Select(c) => Some(c),
            _ => None,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Select(c) => write!(f, "select/{c}"),
            other => f.write_str(other.operation()),
        }
    }
}

/// Sampler parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplerConfig {
    /// l: commands before the query.
    pub length: usize,
    /// b: fraction of the commands that are INSERTs, in [0, 1].
    pub insert_ratio: f64,
    /// o: fraction of the commands that overlap the query, in [0, 1].
    pub overlap: f64,
    /// Number of samples.
    pub samples: usize,
    pub seed: u64,
    /// Query kinds, assigned round-robin; [`Target::all`] for the paper's setting.
    pub targets: Vec<Target>,
    /// Only commands usable in this encoding are drawn.
    pub encoding: Encoding,
}

/// A reference to one command of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CommandRef {
    pub kind: CommandKind,
    pub index: usize,
}

impl CommandRef {
    /// The command in its workload.
    pub fn resolve<'w>(&self, workload: &'w Workload) -> Option<&'w Command> {
        let list = match self.kind {
            CommandKind::CreateTable => &workload.create_tables,
            CommandKind::Insert => &workload.inserts,
            CommandKind::Delete => &workload.deletes,
            CommandKind::Update => &workload.updates,
            CommandKind::Select(c) => workload.selects.get(&c)?,
        };
        list.get(self.index)
    }
}

/// One (command sequence, query) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Position in the run (0-based).
    pub index: usize,
    pub target: Target,
    pub commands: Vec<CommandRef>,
    pub query: CommandRef,
    /// Fraction of `commands` that overlap the query (may differ from the requested o when a
    /// pool ran short).
    pub achieved_overlap: f64,
    /// Fraction of `commands` that are INSERTs.
    pub achieved_insert_ratio: f64,
}

/// Why samples cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SamplerError {
    #[error("{name} must be between 0 and 1, got {value}")]
    OutOfRange { name: &'static str, value: f64 },
    #[error("no query kinds to sample")]
    NoTargets,
    #[error("the workload has no usable {0} command")]
    EmptyPool(String),
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and fixed forever.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), by rejection so there is no modulo bias.
    pub fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return (x % n) as usize;
            }
        }
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// Draw `k` items: without replacement while the pool lasts, then from a reshuffled pool.
fn draw<T: Copy>(rng: &mut SplitMix64, pool: &[T], k: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(k);
    if pool.is_empty() {
        return out;
    }
    let mut deck = pool.to_vec();
    while out.len() < k {
        rng.shuffle(&mut deck);
        out.extend(deck.iter().take(k - out.len()).copied());
    }
    out
}

fn usable(command: &Command, encoding: Encoding) -> bool {
    command.text(encoding).is_some()
}

impl SamplerConfig {
    fn validate(&self) -> Result<(), SamplerError> {
        for (name, value) in [("insert_ratio", self.insert_ratio), ("overlap", self.overlap)] {
            if !(0.0..=1.0).contains(&value) {
                return Err(SamplerError::OutOfRange { name, value });
            }
        }
        if self.targets.is_empty() {
            return Err(SamplerError::NoTargets);
        }
        Ok(())
    }
}

/// Draw every sample of a run.
pub fn sample_all(workload: &Workload, config: &SamplerConfig) -> Result<Vec<Sample>, SamplerError> {
    (0..config.samples).map(|i| sample_one(workload, config, i)).collect()
}

/// Draw sample `index` of a run (independent of the others).
pub fn sample_one(workload: &Workload, config: &SamplerConfig, index: usize) -> Result<Sample, SamplerError> {
    config.validate()?;
    let target = config.targets[index % config.targets.len()];
    let mut rng = SplitMix64::new(config.seed ^ (index as u64).wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 0x5EED);

    let refs = |list: &[Command]| -> Vec<CommandRef> {
        list.iter().filter(|c| usable(c, config.encoding)).map(|c| CommandRef { kind: c.kind, index: c.index }).collect()
    };
    let query_pool = match target {
        Target::Select(category) => refs(workload.selects.get(&category).map(Vec::as_slice).unwrap_or(&[])),
        Target::Insert => refs(&workload.inserts),
        Target::Update => refs(&workload.updates),
        Target::Delete => refs(&workload.deletes),
    };
    if query_pool.is_empty() {
        return Err(SamplerError::EmptyPool(target.to_string()));
    }
    let query = query_pool[rng.below(query_pool.len())];
    let query_tables = &query.resolve(workload).expect("query from the workload").tables;
    let overlaps = |r: &CommandRef| r.resolve(workload).is_some_and(|c| !c.tables.is_disjoint(query_tables));

    let inserts = refs(&workload.inserts);
    let mut modifications = refs(&workload.deletes);
    modifications.extend(refs(&workload.updates));

    let l = config.length;
    let n_insert = ((config.insert_ratio * l as f64).round() as usize).min(l);
    let n_modify = l - n_insert;
    let n_overlap = ((config.overlap * l as f64).round() as usize).min(l);
    if n_insert > 0 && inserts.is_empty() {
        return Err(SamplerError::EmptyPool("insert".into()));
    }
    if n_modify > 0 && modifications.is_empty() {
        return Err(SamplerError::EmptyPool("delete or update".into()));
    }
    // Overlapping commands split between the kinds in proportion to their counts.
    let overlap_insert = if l == 0 { 0 } else { (n_overlap as f64 * n_insert as f64 / l as f64).round() as usize };
    let overlap_insert = overlap_insert.min(n_insert).max(n_overlap.saturating_sub(n_modify));
    let overlap_modify = n_overlap - overlap_insert;

    let mut commands = Vec::with_capacity(l);
    for (pool, n, n_over) in [(&inserts, n_insert, overlap_insert), (&modifications, n_modify, overlap_modify)] {
        let (over, rest): (Vec<CommandRef>, Vec<CommandRef>) = pool.iter().partition(|r| overlaps(r));
        // Fall back to the other side when one side is empty.
        let (n_over, n_rest) = match (over.is_empty(), rest.is_empty()) {
            (true, _) => (0, n),
            (_, true) => (n, 0),
            _ => (n_over, n - n_over),
        };
        commands.extend(draw(&mut rng, &over, n_over));
        commands.extend(draw(&mut rng, &rest, n_rest));
    }
    rng.shuffle(&mut commands);

    let ratio = |count: usize| if l == 0 { 0.0 } else { count as f64 / l as f64 };
    let achieved_overlap = ratio(commands.iter().filter(|r| overlaps(r)).count());
    let achieved_insert_ratio = ratio(commands.iter().filter(|r| r.kind == CommandKind::Insert).count());
    Ok(Sample { index, target, commands, query, achieved_overlap, achieved_insert_ratio })
}
