//! Lexical scoring of a question against table and schema descriptions.
//!
//! # Tokens
//!
//! [`words`] splits text and identifiers into lower-case words: at every character that is not
//! a letter or digit (so `_`, `.`, spaces, quotes), at camelCase humps (`sbCustJoinDate` →
//! `sb cust join date`, `HTTPServer` → `http server`) and between letters and digits
//! (`day30` → `day 30`). [`tokenize`] then drops one-letter words, numbers of one or two
//! digits, and English stop words
//! (including the verbs questions open with: show, list, find…) and [`stem`]s plurals
//! (`cities` → `city`, `addresses` → `address`, `sales` → `sale`; `status` stays).
//!
//! # Score (BM25F)
//!
//! A description is a [`Document`] of fields: the schema's name, the table's name, column names,
//! comments, values. With `N` documents, `df(t)` the number of documents containing term `t`,
//! `tf(t,d,f)` the occurrences of `t` in field `f` of document `d`, `len(d,f)` the field's
//! length in tokens and `avg(f)` its mean over the documents, field weights `w_f`
//! ([`FieldWeights`]) and the constants [`K1`] and [`B`]:
//!
//! ```text
//! tf'(t,d)   = Σ_f  w_f · tf(t,d,f) / (1 − B + B · len(d,f) / avg(f))
//! idf(t)     = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! s(t,d)     = idf(t) · tf'(t,d) · (K1 + 1) / (K1 + tf'(t,d))
//! score(q,d) = Σ_{t ∈ terms(q)}  max( s(t,d),  PARTIAL · max_{v ∈ partial(t)} s(v,d) )
//! ```
//!
//! `terms(q)` are the question's distinct tokens, plus the stem of each pair of adjacent
//! words written together when some description has it (`check ins` → `checkin`,
//! `zip code` → `zipcode`). `partial(t)` are the terms of names (schema, table, column; not
//! comments or values) that are an abbreviation of `t` (a proper prefix of at least
//! [`MIN_ABBREVIATION`] letters: `cust` for `customer`) or a compound starting or ending
//! with `t` (at least [`MIN_CONTAINED`] letters: `sbdailyprice` for `price`), counted at the
//! discount [`PARTIAL`]. This is what lets identifiers folded to lower case
//! or abbreviated still match, without any hand-written synonym list. Names weigh more than
//! comments through the field weights.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use serde::Serialize;

mod tokens;
pub use crate::text::{identifier_words as words, stem, tokenize};
pub use tokens::{partial_matches, probe_terms};

/// The parts of a description, each with its own weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    /// The schema's name.
    Schema,
    /// A table's name.
    Table,
    /// A column's name.
    Column,
    /// A comment on the schema, a table or a column.
    Comment,
    /// A frequent value of a column.
    Value,
}

/// The number of fields of a document (schema, table, column, comment, value: [`Field`]'s
/// order), the length of the arrays [`DocTerms`] keeps per term and per document.
pub const FIELDS: usize = 5;

impl Field {
    fn index(self) -> usize {
        match self {
            Field::Schema => 0,
            Field::Table => 1,
            Field::Column => 2,
            Field::Comment => 3,
            Field::Value => 4,
        }
    }
}

/// One description, as text by field.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Document {
    pub parts: Vec<(Field, String)>,
}

impl Document {
    pub fn push(&mut self, field: Field, text: impl Into<String>) {
        self.parts.push((field, text.into()));
    }
}

/// The weight of a match in each field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeights {
    pub schema: f64,
    pub table: f64,
    pub column: f64,
    pub comment: f64,
    pub value: f64,
}

impl FieldWeights {
    fn get(&self, i: usize) -> f64 {
        [self.schema, self.table, self.column, self.comment, self.value][i]
    }
}

/// Field weights for ranking tables: a table's own name counts most, then its columns; the
/// schema's name little (every table of the schema shares it).
pub const TABLE_WEIGHTS: FieldWeights = FieldWeights { schema: 0.5, table: 3.0, column: 1.5, comment: 1.0, value: 0.8 };

/// Field weights for ranking schemas: the schema's name, then its tables' names.
pub const SCHEMA_WEIGHTS: FieldWeights = FieldWeights { schema: 3.0, table: 2.0, column: 1.0, comment: 0.8, value: 0.6 };

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalisation, the same for every field.
pub const B: f64 = 0.75;
/// The discount of a partial match (abbreviation or compound) against an exact one.
pub const PARTIAL: f64 = 0.5;
/// The shortest description term taken as an abbreviation of a longer question word.
pub const MIN_ABBREVIATION: usize = 3;
/// The shortest question word looked for inside longer description terms.
pub const MIN_CONTAINED: usize = 4;

/// The lexical score of one document, with the question terms that matched (`term`, or
/// `term~description_term` for a partial match), for `ask.explain()`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct LexicalScore {
    pub score: f64,
    pub matched: Vec<Label>,
}

/// How a question term matched a document (`term`, or `term~description_term`): one text per
/// term of a question, shared by every document it matched, which may be every table of a
/// catalog (a word of every table's comment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label(Arc<str>);

impl Label {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Label {
    fn from(s: &str) -> Label {
        Label(s.into())
    }
}

impl From<String> for Label {
    fn from(s: String) -> Label {
        Label(s.into())
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<str> for Label {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl Serialize for Label {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// Occurrences of one term in one document, per field.
#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: usize,
    tf: [u32; FIELDS],
}

/// A BM25F index over a catalog of descriptions (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct LexicalIndex {
    postings: HashMap<String, Vec<Posting>>,
    /// The terms that occur in a name (schema, table, column), sorted: the only ones partial
    /// matches look at, since abbreviations and compounds are a habit of identifiers; with the
    /// number of documents that have each in a name.
    identifiers: BTreeMap<String, u32>,
    lengths: Vec<[u32; FIELDS]>,
    avg_len: [f64; FIELDS],
    weights: FieldWeights,
    /// Statistics of a larger collection these documents were taken from, when scores must
    /// be those of that collection ([`LexicalIndex::with_global`]).
    global: Option<GlobalStats>,
}

/// The statistics of a whole collection of documents, of which an index holds some: how many
/// there are, in how many each term occurs, and the mean length of each field. With them, a
/// document scores in an index of a few candidates as it scores in the whole collection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalStats {
    /// The number of documents of the collection.
    pub documents: usize,
    /// Per term, the number of documents that hold it; a term not listed is counted in the
    /// index's own documents.
    pub df: HashMap<String, u32>,
    /// Per field, the mean length over the collection; `None`: the index's own mean.
    pub avg_len: [Option<f64>; FIELDS],
}

/// One document's terms with their occurrences per field, and its length per field: what
/// indexing needs of it, computed once (a catalog keeps it for tables that do not change).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DocTerms {
    terms: Vec<(String, [u32; FIELDS])>,
    len: [u32; FIELDS],
}

/// A memo of [`tokenize`] by text, for the many names and comments a catalog repeats.
#[derive(Default)]
pub struct Tokens {
    memo: HashMap<String, Rc<[String]>>,
}

impl Tokens {
    fn of(&mut self, text: &str) -> Rc<[String]> {
        if let Some(t) = self.memo.get(text) {
            return t.clone();
        }
        let t: Rc<[String]> = tokenize(text).into();
        self.memo.insert(text.to_string(), t.clone());
        t
    }
}

impl DocTerms {
    /// The terms of `doc`, tokenized through `tokens`.
    pub fn of(doc: &Document, tokens: &mut Tokens) -> DocTerms {
        let mut out = DocTerms::default();
        let mut at: HashMap<String, usize> = HashMap::new();
        for (field, text) in &doc.parts {
            let f = field.index();
            for token in tokens.of(text).iter() {
                out.len[f] += 1;
                match at.get(token.as_str()) {
                    Some(&i) => out.terms[i].1[f] += 1,
                    None => {
                        let mut tf = [0; FIELDS];
                        tf[f] = 1;
                        at.insert(token.clone(), out.terms.len());
                        out.terms.push((token.clone(), tf));
                    }
                }
            }
        }
        out
    }

    /// A document's terms as stored: each term with its occurrences per field, and the
    /// document's length per field (both in [`Field`]'s order).
    pub fn from_stored(terms: Vec<(String, [u32; FIELDS])>, len: [u32; FIELDS]) -> DocTerms {
        DocTerms { terms, len }
    }

    /// Each term with its occurrences per field ([`Field`]'s order).
    pub fn terms(&self) -> &[(String, [u32; FIELDS])] {
        &self.terms
    }

    /// The document's length per field ([`Field`]'s order).
    pub fn lengths(&self) -> [u32; FIELDS] {
        self.len
    }

    /// These terms without the `dropped` field (a table's words but its values).
    pub fn without(&self, dropped: Field) -> DocTerms {
        let d = dropped.index();
        let mut len = self.len;
        len[d] = 0;
        let terms = self
            .terms
            .iter()
            .filter(|(_, tf)| tf.iter().enumerate().any(|(f, &n)| f != d && n > 0))
            .map(|(t, tf)| {
                let mut tf = *tf;
                tf[d] = 0;
                (t.clone(), tf)
            })
            .collect();
        DocTerms { terms, len }
    }

    /// The terms of a document made of `own` and `members` without their `dropped` field (a
    /// schema's own words and its tables' words but their schema's name).
    pub fn merged<'a>(own: DocTerms, members: impl IntoIterator<Item = &'a DocTerms>, dropped: Field) -> DocTerms {
        let d = dropped.index();
        let mut out = own;
        let mut at: HashMap<String, usize> = out.terms.iter().enumerate().map(|(i, (t, _))| (t.clone(), i)).collect();
        for m in members {
            for (f, n) in m.len.iter().enumerate() {
                if f != d {
                    out.len[f] += n;
                }
            }
            for (term, tf) in &m.terms {
                let mut tf = *tf;
                tf[d] = 0;
                if tf.iter().all(|&n| n == 0) {
                    continue;
                }
                match at.get(term.as_str()) {
                    Some(&i) => (0..FIELDS).for_each(|f| out.terms[i].1[f] += tf[f]),
                    None => {
                        at.insert(term.clone(), out.terms.len());
                        out.terms.push((term.clone(), tf));
                    }
                }
            }
        }
        out
    }
}

impl LexicalIndex {
    /// Index `docs`; scores come back in the same order.
    pub fn new(docs: &[Document], weights: FieldWeights) -> LexicalIndex {
        let mut tokens = Tokens::default();
        let terms: Vec<DocTerms> = docs.iter().map(|d| DocTerms::of(d, &mut tokens)).collect();
        LexicalIndex::from_terms(&terms.iter().collect::<Vec<_>>(), weights)
    }

    /// Index documents already split into terms; scores come back in the same order.
    pub fn from_terms(docs: &[&DocTerms], weights: FieldWeights) -> LexicalIndex {
        let mut index = LexicalIndex {
            postings: HashMap::new(),
            identifiers: BTreeMap::new(),
            lengths: Vec::new(),
            avg_len: [0.0; FIELDS],
            weights,
            global: None,
        };
        for (i, doc) in docs.iter().enumerate() {
            index.add(i, doc);
        }
        index.measure(docs);
        index
    }

    /// This index, made the index of `docs`: `previous[i]` is the number in this index of a
    /// document with the same terms as `docs[i]`, if there is one, and `old` are this index's
    /// documents. Only the documents that are new or changed are indexed again, and the others
    /// are renumbered; the result scores as [`LexicalIndex::from_terms`] of `docs` does.
    pub fn renewed(mut self, old: &[&DocTerms], previous: &[Option<usize>], docs: &[&DocTerms]) -> LexicalIndex {
        let mut new_of_old: Vec<Option<usize>> = vec![None; old.len()];
        for (i, j) in previous.iter().enumerate() {
            if let Some(j) = *j {
                new_of_old[j] = Some(i);
            }
        }
        for (j, doc) in old.iter().enumerate() {
            if new_of_old[j].is_none() {
                self.remove(j, doc);
            }
        }
        for list in self.postings.values_mut() {
            for p in list.iter_mut() {
                p.doc = new_of_old[p.doc].expect("the postings of documents not kept were removed");
            }
        }
        for (i, doc) in docs.iter().enumerate() {
            if previous[i].is_none() {
                self.add(i, doc);
            }
        }
        self.measure(docs);
        self
    }

    fn add(&mut self, i: usize, doc: &DocTerms) {
        for (term, tf) in &doc.terms {
            // The first three fields are names: schema, table, column.
            if tf[..3].iter().any(|&n| n > 0) {
                match self.identifiers.get_mut(term.as_str()) {
                    Some(n) => *n += 1,
                    None => {
                        self.identifiers.insert(term.clone(), 1);
                    }
                }
            }
            match self.postings.get_mut(term.as_str()) {
                Some(p) => p.push(Posting { doc: i, tf: *tf }),
                None => {
                    self.postings.insert(term.clone(), vec![Posting { doc: i, tf: *tf }]);
                }
            }
        }
    }

    fn remove(&mut self, j: usize, doc: &DocTerms) {
        for (term, tf) in &doc.terms {
            if tf[..3].iter().any(|&n| n > 0) {
                if let Some(n) = self.identifiers.get_mut(term.as_str()) {
                    *n -= 1;
                    if *n == 0 {
                        self.identifiers.remove(term.as_str());
                    }
                }
            }
            if let Some(list) = self.postings.get_mut(term.as_str()) {
                list.retain(|p| p.doc != j);
                if list.is_empty() {
                    self.postings.remove(term.as_str());
                }
            }
        }
    }

    /// The documents' lengths and their mean per field.
    fn measure(&mut self, docs: &[&DocTerms]) {
        self.lengths = docs.iter().map(|d| d.len).collect();
        self.means();
    }

    /// The mean length per field: the collection's where [`GlobalStats`] give it, else the
    /// index's own.
    fn means(&mut self) {
        self.avg_len = [0.0; FIELDS];
        if !self.lengths.is_empty() {
            for (f, avg) in self.avg_len.iter_mut().enumerate() {
                *avg = self.lengths.iter().map(|l| f64::from(l[f])).sum::<f64>() / self.lengths.len() as f64;
            }
        }
        if let Some(g) = &self.global {
            for (avg, global) in self.avg_len.iter_mut().zip(g.avg_len) {
                if let Some(v) = global {
                    *avg = v;
                }
            }
        }
    }

    /// This index, scoring as in the collection `stats` describes: its document count, its
    /// terms' document frequencies and its fields' mean lengths replace the index's own.
    pub fn with_global(mut self, stats: GlobalStats) -> LexicalIndex {
        self.global = Some(stats);
        self.means();
        self
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    fn idf(&self, term: &str) -> f64 {
        let own = self.postings.get(term).map_or(0, Vec::len);
        let (n, df) = match &self.global {
            Some(g) => (g.documents.max(self.len()) as f64, g.df.get(term).map_or(own, |&d| (d as usize).max(own)) as f64),
            None => (self.len() as f64, own as f64),
        };
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// `s(t,d)` for every document containing `term`.
    fn term_scores(&self, term: &str) -> Vec<(usize, f64)> {
        let Some(postings) = self.postings.get(term) else { return Vec::new() };
        let idf = self.idf(term);
        postings
            .iter()
            .map(|p| {
                let len = &self.lengths[p.doc];
                let tf: f64 = (0..FIELDS)
                    .filter(|&f| p.tf[f] > 0)
                    .map(|f| {
                        let norm = if self.avg_len[f] > 0.0 { 1.0 - B + B * f64::from(len[f]) / self.avg_len[f] } else { 1.0 };
                        self.weights.get(f) * f64::from(p.tf[f]) / norm
                    })
                    .sum();
                (p.doc, idf * tf * (K1 + 1.0) / (K1 + tf))
            })
            .collect()
    }

    /// The question's terms (see the [module documentation](self)).
    pub fn query_terms(&self, question: &str) -> Vec<String> {
        let mut terms: Vec<String> = Vec::new();
        for t in tokenize(question) {
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        let raw = words(question);
        for pair in raw.windows(2) {
            let joined = stem(&format!("{}{}", pair[0], pair[1]));
            if self.postings.contains_key(&joined) && !terms.contains(&joined) {
                terms.push(joined);
            }
        }
        terms
    }

    /// Identifier terms that partially match `term`: abbreviations of it (proper prefixes) and
    /// compounds that start or end with it.
    fn partial_terms(&self, term: &str) -> Vec<&str> {
        partial_matches(term, &self.identifiers)
    }

    /// The score of every document against `question`, in document order.
    pub fn score(&self, question: &str) -> Vec<LexicalScore> {
        let mut scores = vec![LexicalScore::default(); self.len()];
        // Per term: each document's best contribution and the label it came with (an index in
        // `labels`), and the documents it touched, in the order first touched.
        let mut best: Vec<Option<(f64, usize)>> = vec![None; self.len()];
        let mut touched: Vec<usize> = Vec::new();
        for term in self.query_terms(question) {
            let mut labels: Vec<Label> = vec![Label::from(term.as_str())];
            for (doc, s) in self.term_scores(&term) {
                if best[doc].is_none() {
                    touched.push(doc);
                }
                best[doc] = Some((s, 0));
            }
            for v in self.partial_terms(&term) {
                let mut label: Option<usize> = None;
                for (doc, s) in self.term_scores(v) {
                    let s = PARTIAL * s;
                    let entry = best[doc].get_or_insert_with(|| {
                        touched.push(doc);
                        (0.0, 0)
                    });
                    if s > entry.0 {
                        let l = *label.get_or_insert_with(|| {
                            labels.push(Label::from(format!("{term}~{v}")));
                            labels.len() - 1
                        });
                        *entry = (s, l);
                    }
                }
            }
            for doc in touched.drain(..) {
                if let Some((s, l)) = best[doc].take() {
                    if s > 0.0 {
                        scores[doc].score += s;
                        scores[doc].matched.push(labels[l].clone());
                    }
                }
            }
        }
        scores
    }
}
