//! Which tables a question's selection describes, from a lexical index stored in the database:
//! the candidate policy, over a narrow [`SelectionStore`] the glue implements with SPI reads.
//!
//! A new connection cannot describe 10,000 tables to answer one question; [`find`] reads a few
//! rows of the stored index ([`super::retrieve`] says which and why) and describes only:
//!
//! 1. the best tables by words that the caller may read: the ranked tables are checked against
//!    the caller's privileges in order, [`READABLE_CHECKED`] times as many as taken, before
//!    anything is described, so that tables it cannot read, however well their names match,
//!    take no candidate's place; at most `take` ([`CANDIDATES`], or twice `max_tables`) of
//!    them, none scoring far under the best ([`super::retrieve::candidates`]);
//! 2. relations DDL touched since they were indexed that share a word with the question
//!    ([`touched_terms`]): never because they were touched, so that one role's DDL adds
//!    nothing to other roles' questions but the candidates their own words find;
//! 3. the join neighbours of those (the tables their foreign keys reference, and junction
//!    tables referencing two of them, at most [`MAX_REFERRERS`]);
//! 4. the nearest tables by embedding, once the question's embedding is there (it is computed
//!    while 1–3 are read), with their junction tables;
//! 5. when fewer than wanted could be described (a readable table may still be left out: a
//!    partition, a member of an extension), the next readable ones by words, in at most
//!    [`ROUNDS`] rounds.
//!
//! The candidates' catalog ([`super::Catalog::with_table_stats`]: scored with the whole
//! index's statistics) then ranks and picks as the whole catalog's would.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;
use std::time::Instant;

use super::lexical::{DocTerms, GlobalStats, FIELDS};
use super::retrieve::{candidates, common_limit, fetch_terms, probe_terms, rank_stored};
use super::{unquote, Catalog, ColumnValues, SchemaProfile, TableProfile};
use crate::schema::Table;

/// At least this many of the best tables by the stored index are described per question (and
/// twice `max_tables` when that is more): recall as `ask()` selects is the same with 20 and 30
/// on defog with 10,000 generated tables beside it (`selection_recall --scale`).
pub const CANDIDATES: usize = 20;
/// At most this many rounds of candidates are described when too few of them are readable.
pub const ROUNDS: usize = 3;
/// At most this many tables whose foreign keys reference two candidates are described with
/// them.
pub const MAX_REFERRERS: usize = 50;
/// Of the ranked tables, this many times the candidates taken are checked for the caller's
/// privileges (in order), and twice as many kept.
pub const READABLE_CHECKED: usize = 8;
/// When a window of ranked tables holds too few the caller may read (another role's tables,
/// made to hold the question's words, crowd it), the next window is checked, up to this many
/// windows in all.
pub const READABLE_WINDOWS: usize = 8;
/// When every word of a question is common in the index (tables that look alike: the same
/// columns in every tenant's schema), at most this many tables' postings are read, those with
/// the question's words most often in their names: reading every posting of words that most
/// tables hold costs a scan of the index and tells the tables apart no better.
pub const COMMON_ONLY_READ: usize = 400;
/// Of the relations DDL touched, this many times the candidates taken are read from the notes
/// before the caller's privileges are checked.
pub const TOUCHED_READ: usize = 8;

/// The stored index's statistics and name words as read at one version of the memory.
#[derive(Clone, Debug, Default)]
pub struct IndexStats {
    /// The memory's version they were read at.
    pub version: i64,
    /// Tables in the index; 0 when the memory holds a table stored without its words.
    pub documents: usize,
    /// Per field, the mean length over the index.
    pub avg_len: [Option<f64>; FIELDS],
    /// The words that occur in a name, with how many tables have them there.
    pub names: BTreeMap<String, u32>,
}

/// What selection reads of the database, each a few rows: the stored lexical index, the
/// caller's privileges, live descriptions, foreign keys, the nearest by embedding and the
/// value memory. The glue answers with the caller's privileges (and the memory's reads as its
/// owner); tests answer from a fake.
pub trait SelectionStore {
    /// A relation's key (its oid).
    type Key: Copy + Eq + Hash + Ord;
    /// The document frequencies of `terms` in the index (terms it does not hold are left out).
    fn document_frequencies(&mut self, terms: &[String]) -> HashMap<String, u32>;
    /// The stored postings of `terms`, by table: each table's words among them, and its
    /// lengths; with `limit`, only those of the `limit` tables that hold `terms` most often in
    /// their names (schema, table and column names), ties by key.
    fn postings(&mut self, terms: &[String], limit: Option<usize>) -> Vec<(Self::Key, DocTerms)>;
    /// Relations DDL touched since they were indexed that share one of `terms`, most shared
    /// words first, at most `limit`, whoever may read them.
    fn touched(&mut self, terms: &[String], limit: usize) -> Vec<Self::Key>;
    /// Of `keys`, in their order, the first `limit` the caller may read a column of (in a
    /// schema it may use).
    fn readable_first(&mut self, keys: &[Self::Key], limit: usize) -> Vec<Self::Key>;
    /// The relations `keys` described live with the caller's privileges (those it cannot read,
    /// and those selection leaves out, are not returned).
    fn describe(&mut self, keys: Vec<Self::Key>) -> Vec<(Self::Key, Table)>;
    /// The relations the foreign keys of `tables` reference, and (at most `max_referrers`)
    /// those with foreign keys to two of `anchors`, not among `known`.
    fn neighbours(
        &mut self,
        tables: &[(Self::Key, Table)],
        anchors: &[Self::Key],
        known: &[Self::Key],
        max_referrers: usize,
    ) -> Vec<Self::Key>;
    /// The tables the caller may read whole whose stored embedding is nearest `question`,
    /// at most `limit`.
    fn nearest(&mut self, question: &[f32], limit: usize) -> Vec<Self::Key>;
    /// The frequent values of the readable columns of `tables`, by qualified name.
    fn values(&mut self, tables: &[(Self::Key, Table)]) -> HashMap<String, Vec<ColumnValues>>;
    /// The schemas' comments.
    fn schema_profiles(&mut self) -> Vec<SchemaProfile>;
}

/// The probed terms a question looks the touched relations up by: those not common in the
/// index (as [`fetch_terms`] reads postings), and those the index does not hold at all (words
/// of relations created since); all of them when every one is common.
pub fn touched_terms(probe: &[String], df: &HashMap<String, u32>, documents: usize) -> Vec<String> {
    let common = common_limit(documents);
    let rare: Vec<String> = probe.iter().filter(|t| df.get(*t).copied().unwrap_or(0) <= common).cloned().collect();
    if rare.is_empty() {
        probe.to_vec()
    } else {
        rare
    }
}

/// How many of each kind [`find`] read and described.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FoundCounts {
    pub words_probed: usize,
    pub words_read: usize,
    pub postings_tables: usize,
    pub changed_relations: usize,
    pub candidates_described: usize,
    pub join_tables_described: usize,
}

/// Where [`find`]'s time went (milliseconds).
#[derive(Clone, Debug, Default)]
pub struct FoundTimes {
    pub lexical_ms: f64,
    pub describe_ms: f64,
    pub values_ms: f64,
    /// Waiting for the question's embedding, when it was wanted.
    pub embedding_wait_ms: Option<f64>,
}

/// What [`find`] found: the candidates' catalog, the relations described (in catalog order),
/// the touched ones among the candidates, and the question's embedding when it was wanted.
pub struct Found<'q, K> {
    pub catalog: Catalog,
    pub described: Vec<(K, Table)>,
    pub touched: Vec<K>,
    pub question: Option<&'q [f32]>,
    pub counts: FoundCounts,
    pub times: FoundTimes,
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// Of `keys`, in order, those not `seen` yet (now seen).
fn unseen<K: Copy + Eq + Hash>(seen: &mut HashSet<K>, keys: impl IntoIterator<Item = K>) -> Vec<K> {
    keys.into_iter().filter(|k| seen.insert(*k)).collect()
}

/// The join neighbours of `referring` not `seen` yet, described, in key order.
fn describe_joins<S: SelectionStore>(
    store: &mut S,
    referring: &[(S::Key, Table)],
    anchors: &[S::Key],
    known: &[S::Key],
    seen: &mut HashSet<S::Key>,
) -> Vec<(S::Key, Table)> {
    let mut join = unseen(seen, store.neighbours(referring, anchors, known, MAX_REFERRERS));
    join.sort();
    store.describe(join)
}

/// Of the ranked tables, in order, up to twice `take` the caller may read: checked window by
/// window ([`READABLE_CHECKED`] times `take` each, at most [`READABLE_WINDOWS`]), so that tables
/// it cannot read take no place that a readable one would have.
fn readable_ranked<S: SelectionStore>(store: &mut S, ranked: &[(S::Key, f64)], take: usize) -> HashSet<S::Key> {
    let order: Vec<S::Key> = ranked.iter().map(|(k, _)| *k).collect();
    let (want, window) = (2 * take, READABLE_CHECKED * take);
    let mut readable = HashSet::new();
    let mut from = 0;
    for _ in 0..READABLE_WINDOWS {
        if from >= order.len() || readable.len() >= want {
            break;
        }
        let end = order.len().min(from + window);
        readable.extend(store.readable_first(&order[from..end], want - readable.len()));
        from = end;
    }
    readable
}

/// The candidates of `question` in the stored index `index` (see the [module
/// documentation](self)), for a selection of `max_tables`. `embedding`, called once after the
/// words' candidates are described, gives the question's embedding when it is wanted (the glue
/// begins it before and waits for it there).
pub fn find<'q, S: SelectionStore>(
    store: &mut S,
    index: &IndexStats,
    question: &str,
    max_tables: usize,
    embedding: impl FnOnce() -> Option<&'q [f32]>,
) -> Found<'q, S::Key> {
    let started = Instant::now();
    let probe = probe_terms(question, &index.names);
    let df = store.document_frequencies(&probe);
    let stats = GlobalStats { documents: index.documents, df: df.clone(), avg_len: index.avg_len };
    let fetch = fetch_terms(&df, index.documents);
    let common = common_limit(index.documents);
    let common_only = fetch.iter().all(|t| df.get(t).copied().unwrap_or(0) > common);
    let mut read = store.postings(&fetch, common_only.then_some(COMMON_ONLY_READ));
    let mut ranked = rank_stored(question, &read, &stats);
    let mut lexical_ms = ms(started);

    // Candidates, in order: the best by words, the touched ones that share a word with the
    // question, the nearest by embedding.
    let started = Instant::now();
    let take = CANDIDATES.max(2 * max_tables);
    let noted = store.touched(&touched_terms(&probe, &df, index.documents), TOUCHED_READ * take);
    let touched = store.readable_first(&noted, take);
    let mut readable = readable_ranked(store, &ranked, take);
    let every: Vec<String> = {
        let mut t: Vec<String> = df.iter().filter(|(_, &n)| n > 0).map(|(t, _)| t.clone()).collect();
        t.sort();
        t
    };
    let crowded = readable.len() < take && ranked.len() > readable.len();
    if crowded && (every.len() > fetch.len() || (common_only && read.len() >= COMMON_ONLY_READ)) {
        // The tables read for the question's rarer words, or the first of those holding its
        // common ones, were mostly ones the caller cannot read (another role's look-alikes
        // made to hold its words): every posting of every word, once.
        let again = Instant::now();
        read = store.postings(&every, None);
        ranked = rank_stored(question, &read, &stats);
        readable = readable_ranked(store, &ranked, take);
        lexical_ms += ms(again);
    }
    let mut seen: HashSet<S::Key> = HashSet::new();
    let ranked_readable: Vec<(S::Key, f64)> = ranked.iter().filter(|(k, _)| readable.contains(k)).copied().collect();
    let chosen = candidates(&ranked_readable, take);
    let wanted = chosen.len().min(max_tables.max(1));
    let first = unseen(&mut seen, chosen.iter().chain(&touched).copied());
    let mut live = store.describe(first);
    // The candidates' join neighbours, and the values of all of them, while the question's
    // vector is computed; those of the nearest are added once it is there.
    let mut anchors: Vec<S::Key> = live.iter().map(|(k, _)| *k).collect();
    let joined = describe_joins(store, &live, &anchors, &anchors, &mut seen);
    // (Join tables are not counted as candidates found below.)
    let join_described = joined.len();
    let mut joins = join_described;
    live.extend(joined);
    let mut describe_ms = ms(started);
    let started = Instant::now();
    let mut values = store.values(&live);
    let schema_profiles = store.schema_profiles();
    let mut values_ms = ms(started);
    let valued = live.len();
    let waited = Instant::now();
    let q = embedding();
    let embedding_wait_ms = q.map(|_| ms(waited));
    let started = Instant::now();
    let before = live.len();
    if let Some(qv) = q {
        let nearest = unseen(&mut seen, store.nearest(qv, take));
        if !nearest.is_empty() {
            live.extend(store.describe(nearest));
        }
    }
    // Too few described: the next readable ones by words.
    let mut next = chosen.len();
    for _ in 0..ROUNDS {
        if live.len() - join_described >= wanted || next >= ranked_readable.len() {
            break;
        }
        let end = ranked_readable.len().min(next + take);
        let more = unseen(&mut seen, ranked_readable[next..end].iter().map(|(k, _)| *k));
        next = end;
        live.extend(store.describe(more));
    }
    if live.len() > before {
        // Junction tables between any two candidates, the first ones included.
        anchors.extend(live[before..].iter().map(|(k, _)| *k));
        let known: Vec<S::Key> = live.iter().map(|(k, _)| *k).collect();
        let joined = describe_joins(store, &live[before..], &anchors, &known, &mut seen);
        joins += joined.len();
        live.extend(joined);
    }
    describe_ms += ms(started);
    let started = Instant::now();
    if live.len() > valued {
        values.extend(store.values(&live[valued..]));
    }
    values_ms += ms(started);
    // In the catalog's order (schema, then name, unquoted), as the whole catalog has them.
    live.sort_by_cached_key(|(_, t)| (unquote(&t.schema), unquote(&t.name)));
    let profiles: Vec<TableProfile> = live
        .iter()
        .map(|(_, t)| {
            let v = values
                .remove(&t.qualified())
                .unwrap_or_default()
                .into_iter()
                .filter(|cv| t.columns.iter().any(|c| c.name == cv.column))
                .collect();
            TableProfile { table: t.clone(), values: v }
        })
        .collect();
    let catalog = Catalog::new(profiles, &schema_profiles).with_table_stats(stats);
    let counts = FoundCounts {
        words_probed: probe.len(),
        words_read: fetch.len(),
        postings_tables: read.len(),
        changed_relations: touched.len(),
        candidates_described: live.len(),
        join_tables_described: joins,
    };
    Found {
        catalog,
        described: live,
        touched,
        question: q,
        counts,
        times: FoundTimes { lexical_ms, describe_ms, values_ms, embedding_wait_ms },
    }
}

#[cfg(test)]
#[path = "find_tests.rs"]
mod tests;
