//! Recall of the selection from a stored lexical index, as `ask()` makes it when
//! `ask.selection_index` is on (lexical, embeddings off): the index is built from the
//! catalog's tables as the memory stores them (names and comments), each question reads the
//! postings of its rarer words, the best [`STORED_CANDIDATES`] tables and the tables their
//! foreign keys join (referenced tables, junction tables of two candidates) make the
//! candidates' catalog, scored with the whole index's statistics, and the selection is the
//! one `ask()` makes over it (the best schemas with evidence, their best tables).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{as_asked, covers, EvalCase};
use crate::selection::fuse::{Catalog, Cosines, Fusion, SelectError};
use crate::selection::lexical::{DocTerms, GlobalStats, FIELDS};
use crate::selection::retrieve::{candidates, fetch_terms, probe_terms, rank_stored};
use crate::selection::TableProfile;

/// The best tables by the stored index that are described per question (the glue's
/// `CANDIDATES`, with `ask.max_tables` 10; 30 gave the same recall on defog, alone and with
/// 10,000 generated tables).
pub const STORED_CANDIDATES: usize = 20;

/// The stored index of a catalog: postings per word, each table's lengths, the name words.
struct Index {
    postings: HashMap<String, Vec<(usize, [u32; FIELDS])>>,
    lengths: Vec<[u32; FIELDS]>,
    names: BTreeMap<String, u32>,
    avg_len: [Option<f64>; FIELDS],
}

fn index(catalog: &Catalog) -> Index {
    let mut postings: HashMap<String, Vec<(usize, [u32; FIELDS])>> = HashMap::new();
    let mut lengths = Vec::new();
    let mut names = BTreeMap::new();
    for (i, (n, _)) in catalog.table_descriptions().enumerate() {
        let terms = catalog.stored_terms(&n).expect("a table of the catalog");
        lengths.push(terms.lengths());
        for (t, tf) in terms.terms() {
            postings.entry(t.clone()).or_default().push((i, *tf));
            if tf[..3].iter().any(|&x| x > 0) {
                *names.entry(t.clone()).or_insert(0) += 1;
            }
        }
    }
    let mut avg_len = [None; FIELDS];
    if !lengths.is_empty() {
        for (f, a) in avg_len.iter_mut().enumerate().take(FIELDS - 1) {
            *a = Some(lengths.iter().map(|l| f64::from(l[f])).sum::<f64>() / lengths.len() as f64);
        }
    }
    Index { postings, lengths, names, avg_len }
}

/// Table recall@10 as `ask()` selects from the stored index, over the questions with gold
/// tables: (hits, questions, mean candidates described).
pub fn stored_recall(catalog: &Catalog, cases: &[EvalCase]) -> Result<(usize, usize, f64), SelectError> {
    let ix = index(catalog);
    let names: Vec<String> = catalog.table_descriptions().map(|(n, _)| n).collect();
    let by_name: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let (mut hits, mut questions, mut described) = (0, 0, 0usize);
    for case in cases.iter().filter(|c| !c.gold.is_empty()) {
        questions += 1;
        let probe = probe_terms(&case.question, &ix.names);
        let df: HashMap<String, u32> = probe.iter().filter_map(|t| ix.postings.get(t).map(|p| (t.clone(), p.len() as u32))).collect();
        let stats = GlobalStats { documents: ix.lengths.len(), df: df.clone(), avg_len: ix.avg_len };
        let mut docs: BTreeMap<usize, Vec<(String, [u32; FIELDS])>> = BTreeMap::new();
        for t in fetch_terms(&df, ix.lengths.len()) {
            for (d, tf) in ix.postings.get(&t).into_iter().flatten() {
                docs.entry(*d).or_default().push((t.clone(), *tf));
            }
        }
        let docs: Vec<(usize, DocTerms)> = docs.into_iter().map(|(d, terms)| (d, DocTerms::from_stored(terms, ix.lengths[d]))).collect();
        let ranked = rank_stored(&case.question, &docs, &stats);
        let mut picked: BTreeSet<usize> = candidates(&ranked, STORED_CANDIDATES).into_iter().collect();
        // Join neighbours: referenced tables, and tables with keys to two candidates.
        let first: Vec<usize> = picked.iter().copied().collect();
        for &i in &first {
            for fk in &catalog.tables()[i].table.foreign_keys {
                if let Some(&j) = by_name.get(fk.references.as_str()) {
                    picked.insert(j);
                }
            }
        }
        for (j, p) in catalog.tables().iter().enumerate() {
            let linked: BTreeSet<&str> = p
                .table
                .foreign_keys
                .iter()
                .map(|fk| fk.references.as_str())
                .filter(|r| by_name.get(r).is_some_and(|i| first.contains(i)))
                .collect();
            if linked.len() >= 2 {
                picked.insert(j);
            }
        }
        described += picked.len();
        let profiles: Vec<TableProfile> = picked.iter().map(|&i| catalog.tables()[i].clone()).collect();
        let small =
            Catalog::new(profiles, &catalog.schemas().iter().map(|s| s.profile.clone()).collect::<Vec<_>>()).with_table_stats(stats);
        let none = Cosines::new();
        let top = as_asked(&small, &case.question, &none, &none, Fusion::default())?;
        hits += usize::from(covers(&case.gold, &top));
    }
    Ok((hits, questions, if questions == 0 { 0.0 } else { described as f64 / questions as f64 }))
}
