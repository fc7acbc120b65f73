//! Candidates from a lexical index stored in the database, read only in part.
//!
//! A backend that has not read the caller's catalog yet (a new connection) cannot afford to
//! describe 10,000 tables to answer one question. The schema selection memory therefore keeps,
//! for every table it describes, the [`DocTerms`] of its **names and comments** (never its
//! values): a posting per (term, table) with the term's occurrences per field, each table's
//! field lengths, and a vocabulary with each term's document frequency and how many tables
//! hold it in a name. These are what PostgreSQL's catalogs already show every role, so the
//! statistics tell nobody anything new.
//!
//! A question is then answered in four reads, each of a few rows:
//!
//! 1. [`probe_terms`] (with the vocabulary's name terms, which a backend keeps while the
//!    memory's version stays the same): the question's tokens, adjacent words written
//!    together, and the name terms that abbreviate or compound a token;
//! 2. their document frequencies; [`fetch_terms`] leaves out the common ones (in more than
//!    [`COMMON_SHARE`] of the tables and more than [`COMMON_MIN`] of them), whose postings
//!    are long and whose weight is small: they still count for every candidate found by
//!    another term, since candidates are scored on their whole description;
//! 3. the postings of those terms; [`rank_stored`] scores each table that has one with the
//!    same BM25F as [`super::lexical`], the collection's statistics in place of the fetched
//!    documents' ([`GlobalStats`]);
//! 4. the best of them, in order, are checked against the caller's privileges and described
//!    live; the catalog of those candidates ([`super::Catalog::with_table_stats`]) ranks and
//!    picks as the whole catalog would, values included.
//!
//! The stored index can be behind the catalog (a table created or altered since it was
//! written): the glue keeps a list of the relations DDL touched since, describes them live as
//! candidates of every question, and writes their rows again.

use std::collections::HashMap;

use super::lexical::{DocTerms, GlobalStats, LexicalIndex, TABLE_WEIGHTS};

pub use super::lexical::{partial_matches, probe_terms};

/// A term held by more than this share of the tables (and more than [`COMMON_MIN`] of them)
/// is common: its postings are not read to find candidates.
pub const COMMON_SHARE: f64 = 0.02;
/// Terms of at most this many tables are never common.
pub const COMMON_MIN: u32 = 200;

/// The most tables a term may be held by, among `documents`, and not be common.
pub fn common_limit(documents: usize) -> u32 {
    ((documents as f64 * COMMON_SHARE) as u32).max(COMMON_MIN)
}

/// The terms whose postings to read, of the probed terms that occur (`df`, their document
/// frequencies, among `documents` tables): all but the common ones, or, when every one is
/// common, all of them.
pub fn fetch_terms(df: &HashMap<String, u32>, documents: usize) -> Vec<String> {
    let limit = common_limit(documents);
    let mut present: Vec<(&String, u32)> = df.iter().filter(|(_, &n)| n > 0).map(|(t, &n)| (t, n)).collect();
    present.sort();
    let rare: Vec<String> = present.iter().filter(|(_, n)| *n <= limit).map(|(t, _)| (*t).clone()).collect();
    if rare.is_empty() {
        present.into_iter().map(|(t, _)| t.clone()).collect()
    } else {
        rare
    }
}

/// A candidate whose stored score is below this share of the best one is not described: its
/// few, common words rarely make it one of the tables picked, and each costs a catalog read.
pub const MIN_SHARE_OF_BEST: f64 = 0.1;

/// The tables of `ranked` (best first, as [`rank_stored`] gives them) to describe: at most
/// `take`, none scoring under [`MIN_SHARE_OF_BEST`] of the best.
pub fn candidates<K: Copy>(ranked: &[(K, f64)], take: usize) -> Vec<K> {
    let best = ranked.first().map_or(0.0, |(_, s)| *s);
    ranked.iter().take(take).take_while(|(_, s)| *s >= MIN_SHARE_OF_BEST * best).map(|(k, _)| *k).collect()
}

/// The stored tables `docs` (each with the postings that were read of it, and its lengths),
/// best first by their lexical score against `question` in the collection `stats` describes;
/// tables without a score above zero are left out. Ties keep the order given.
pub fn rank_stored<K: Copy>(question: &str, docs: &[(K, DocTerms)], stats: &GlobalStats) -> Vec<(K, f64)> {
    let terms: Vec<&DocTerms> = docs.iter().map(|(_, t)| t).collect();
    let index = LexicalIndex::from_terms(&terms, TABLE_WEIGHTS).with_global(stats.clone());
    let mut ranked: Vec<(usize, f64)> =
        index.score(question).into_iter().enumerate().map(|(i, s)| (i, s.score)).filter(|(_, s)| *s > 0.0).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.into_iter().map(|(i, s)| (docs[i].0, s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Column, Table};
    use crate::selection::{Catalog, Cosines, SelectOptions, TableProfile};
    use std::collections::BTreeMap;

    fn table(schema: &str, name: &str, columns: &[&str], comment: Option<&str>) -> TableProfile {
        TableProfile::new(Table {
            schema: schema.into(),
            name: name.into(),
            kind: "table".into(),
            comment: comment.map(str::to_string),
            columns: columns
                .iter()
                .map(|c| Column { name: c.to_string(), data_type: "text".into(), not_null: false, comment: None })
                .collect(),
            primary_key: vec![],
            foreign_keys: vec![],
        })
    }

    /// A collection, its stored index as the glue keeps it (postings, lengths, vocabulary),
    /// and the statistics the glue reads.
    struct Stored {
        catalog: Catalog,
        postings: HashMap<String, Vec<(usize, [u32; crate::selection::lexical::FIELDS])>>,
        lengths: Vec<[u32; crate::selection::lexical::FIELDS]>,
        names: BTreeMap<String, u32>,
    }

    fn stored(tables: Vec<TableProfile>) -> Stored {
        let catalog = Catalog::new(tables, &[]);
        let mut postings: HashMap<String, Vec<(usize, [u32; 5])>> = HashMap::new();
        let mut lengths = Vec::new();
        let mut names = BTreeMap::new();
        for (i, (n, _)) in catalog.table_descriptions().enumerate() {
            let terms = catalog.stored_terms(&n).unwrap();
            lengths.push(terms.lengths());
            for (t, tf) in terms.terms() {
                postings.entry(t.clone()).or_default().push((i, *tf));
                if tf[..3].iter().any(|&x| x > 0) {
                    *names.entry(t.clone()).or_insert(0) += 1;
                }
            }
        }
        Stored { catalog, postings, lengths, names }
    }

    impl Stored {
        fn stats(&self, probe: &[String]) -> GlobalStats {
            let n = self.lengths.len();
            let mut avg = [None; 5];
            for (f, a) in avg.iter_mut().enumerate().take(4) {
                *a = Some(self.lengths.iter().map(|l| f64::from(l[f])).sum::<f64>() / n as f64);
            }
            let df = probe.iter().map(|t| (t.clone(), self.postings.get(t).map_or(0, |p| p.len() as u32))).collect();
            GlobalStats { documents: n, df, avg_len: avg }
        }

        /// What the glue does: probe, read the rare terms' postings, rank.
        fn retrieve(&self, question: &str) -> Vec<(usize, f64)> {
            let probe = probe_terms(question, &self.names);
            let stats = self.stats(&probe);
            let fetch = fetch_terms(&stats.df, stats.documents);
            let mut docs: BTreeMap<usize, Vec<(String, [u32; 5])>> = BTreeMap::new();
            for t in &fetch {
                for (d, tf) in self.postings.get(t).into_iter().flatten() {
                    docs.entry(*d).or_default().push((t.clone(), *tf));
                }
            }
            let docs: Vec<(usize, DocTerms)> =
                docs.into_iter().map(|(d, terms)| (d, DocTerms::from_stored(terms, self.lengths[d]))).collect();
            rank_stored(question, &docs, &stats)
        }
    }

    fn generated(n: usize) -> Vec<TableProfile> {
        let mut tables = Vec::new();
        for i in 0..n {
            let schema = format!("area{}", i % 10);
            tables.push(table(&schema, &format!("thing{i}"), &["id", "name", "created_at"], Some("records of the area")));
        }
        tables.push(table("area3", "invoices", &["id", "customer_id", "amount"], Some("records of billing")));
        tables.push(table("area4", "cust_accounts", &["id", "opened_on"], Some("records")));
        tables.push(table("area5", "sbdailyprice", &["id", "ticker"], None));
        tables
    }

    #[test]
    fn stored_scores_are_the_whole_catalogs() {
        let s = stored(generated(300));
        let question = "total amount of invoices per customer";
        let got = s.retrieve(question);
        assert_eq!(s.catalog.table_descriptions().nth(got[0].0).unwrap().0, "area3.invoices");
        // The candidates' catalog, scored with the collection's statistics, gives the score
        // the whole catalog gives.
        let whole =
            s.catalog.select_tables(question, &Cosines::new(), &SelectOptions { k: 1, max_join_tables: 0, ..Default::default() }).unwrap();
        let picked: Vec<TableProfile> = got.iter().take(5).map(|(i, _)| s.catalog.tables()[*i].clone()).collect();
        let stats = s.stats(&probe_terms(question, &s.names));
        let small = Catalog::new(picked, &[]).with_table_stats(stats);
        let part =
            small.select_tables(question, &Cosines::new(), &SelectOptions { k: 1, max_join_tables: 0, ..Default::default() }).unwrap();
        assert_eq!(part[0].table, whole[0].table);
        assert!((part[0].parts.lexical - whole[0].parts.lexical).abs() < 1e-9, "{} vs {}", part[0].parts.lexical, whole[0].parts.lexical);
    }

    #[test]
    fn common_terms_are_not_read_but_abbreviations_are() {
        let s = stored(generated(3000));
        let probe = probe_terms("customer accounts opened with records", &s.names);
        assert!(probe.contains(&"cust".to_string()), "{probe:?}");
        let stats = s.stats(&probe);
        let fetch = fetch_terms(&stats.df, stats.documents);
        // 'record' is in every comment: its 3,003 postings are not read.
        assert!(!fetch.contains(&"record".to_string()), "{fetch:?}");
        assert!(fetch.contains(&"cust".to_string()) && fetch.contains(&"account".to_string()), "{fetch:?}");
        let got = s.retrieve("customer accounts opened with records");
        assert_eq!(s.catalog.table_descriptions().nth(got[0].0).unwrap().0, "area4.cust_accounts");
        // A compound that ends with a question word.
        let got = s.retrieve("the daily price of a ticker");
        assert_eq!(s.catalog.table_descriptions().nth(got[0].0).unwrap().0, "area5.sbdailyprice");
        // Only common words: they are read, so there are candidates still.
        let got = s.retrieve("records of the area");
        assert!(got.len() > 100);
    }

    #[test]
    fn values_are_not_stored() {
        let mut p = table("s", "orders", &["status"], None);
        p.values = vec![crate::selection::ColumnValues { column: "status".into(), values: vec!["shipped".into()] }];
        let c = Catalog::new(vec![p], &[]);
        let t = c.stored_terms("s.orders").unwrap();
        assert!(t.terms().iter().all(|(term, _)| term != "shipped"), "{:?}", t.terms());
        assert_eq!(t.lengths()[4], 0);
        assert!(t.terms().iter().any(|(term, _)| term == "status"));
    }
}
