//! Ranking tables and schemas: embedding cosine fused with the lexical score.
//!
//! The glue gets, per table (or schema) description, the cosine between its embedding and the
//! question's from pgvector; [`Catalog`] computes the [lexical](super::lexical) score itself.
//! The two are fused into one ranking by [`Fusion`]:
//!
//! * **Reciprocal rank fusion** (the default; Cormack et al., 2009): each signal ranks the
//!   candidates it has evidence for (a cosine; a lexical score above zero) and a candidate
//!   scores `Σ_signal w_signal / (k + rank_signal)`. Ranks, not raw values, are combined, so
//!   the very different scales of cosines (≈ 0.1–0.7 for MiniLM) and BM25 scores (unbounded)
//!   need no calibration. Ties share the best rank of the tie.
//! * **Normalised weighted sum**: cosines min–max normalised over the candidates, lexical scores
//!   divided by the best one, then `w · cos' + (1 − w) · lex'`. It keeps the size of the gaps,
//!   which helps when one signal is sure and the other is flat.
//!
//! Without embeddings (embedding provider `off`, or an object not yet embedded) the lexical
//! ranking alone decides; without any lexical match, the cosines alone. Names the cosines
//! mention that are not in the catalog (dropped or renamed since they were embedded, or not
//! readable by the calling role) are ignored: the catalog, built from what the role may read
//! now, is the only source of candidates.
//!
//! [`Catalog::select_tables`] then adds the tables the picked tables' foreign keys need for
//! joins, and every pick carries its score parts for `ask.explain()`.

mod rank;
mod vector;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde::Serialize;

use super::describe::{describe_schema, describe_table, schema_document, table_document, ColumnValues, SchemaProfile, TableProfile};
use super::lexical::{DocTerms, Field, GlobalStats, LexicalIndex, LexicalScore, Tokens, SCHEMA_WEIGHTS, TABLE_WEIGHTS};
use crate::schema::Table;
use rank::fuse;

pub use rank::{Fusion, ScoreParts, RRF_EMBEDDING_WEIGHT, RRF_K, RRF_LEXICAL_WEIGHT, WEIGHTED_EMBEDDING_WEIGHT};
pub use vector::{cosine, unit, unit_dot};

/// The default number of tables `select_tables` returns before adding join tables.
pub const DEFAULT_TABLES: usize = 10;
/// At most this many tables are added for joins to the `k` picked ones.
pub const MAX_JOIN_TABLES: usize = 5;

/// Cosine similarity between the question's embedding and each description's, by name: a
/// table's [`Table::qualified`] name or a schema's name, as in the catalog. Missing names have
/// no embedding evidence.
pub type Cosines = HashMap<String, f64>;

/// Why ranking failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectError {
    /// A cosine was NaN or infinite (a broken embedding).
    #[error("the embedding similarity of {name} is not a number ({value})")]
    NotFinite { name: String, value: f64 },
    /// A schema filter named a schema with no readable table.
    #[error("schema {0} has no table the current role may read")]
    UnknownSchema(String),
}

/// Why a table is in the selection.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum PickReason {
    /// Among the `k` best by fused score.
    Retrieved,
    /// Referenced by a foreign key of a picked table.
    Referenced { by: String, columns: Vec<String> },
    /// Links two picked tables: it has foreign keys to both (a junction table).
    Links { tables: Vec<String> },
}

/// One table of a selection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TablePick {
    /// The table's schema-qualified, quoted name.
    pub table: String,
    /// Its fused score (0 when it has no evidence of its own).
    pub score: f64,
    #[serde(flatten)]
    pub reason: PickReason,
    pub parts: ScoreParts,
}

/// One schema of a selection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemaPick {
    /// The schema's quoted name.
    pub schema: String,
    pub score: f64,
    pub parts: ScoreParts,
}

/// What [`Catalog::select_as_asked`] chose: the candidate schemas, best first, and the tables
/// picked among them (retrieved first, then those added for joins).
#[derive(Debug, Clone, PartialEq)]
pub struct AskedSelection {
    pub schemas: Vec<SchemaPick>,
    pub tables: Vec<TablePick>,
}

impl AskedSelection {
    /// The retrieved tables (not those added for joins), best first.
    pub fn retrieved(&self) -> impl Iterator<Item = &str> {
        self.tables.iter().filter(|p| p.reason == PickReason::Retrieved).map(|p| p.table.as_str())
    }
}

/// What `select_tables` should do.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectOptions {
    /// How many tables to pick by score.
    pub k: usize,
    /// At most how many tables to add for joins.
    pub max_join_tables: usize,
    /// Only tables of these schemas (quoted names as in the catalog); `None`: all.
    pub schemas: Option<Vec<String>>,
    pub fusion: Fusion,
}

impl Default for SelectOptions {
    fn default() -> SelectOptions {
        SelectOptions { k: DEFAULT_TABLES, max_join_tables: MAX_JOIN_TABLES, schemas: None, fusion: Fusion::default() }
    }
}

/// A schema of the catalog and its description.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaEntry {
    pub profile: SchemaProfile,
    /// Indexes of its tables in [`Catalog::tables`].
    pub tables: Vec<usize>,
    /// The text to embed.
    pub description: String,
}

/// The tables the calling role may read, their descriptions and the lexical indexes over them.
///
/// Building one costs a tokenisation of every description; [`Catalog::reusing`] takes what an
/// earlier catalog computed for each table that has not changed (its description, its terms),
/// so that after a catalog change only the changed tables are described and tokenized again.
/// The glue keeps one per backend, keyed by the catalog's state, in a thread-local.
#[derive(Debug, Clone)]
pub struct Catalog {
    tables: Vec<TableProfile>,
    /// Each table's qualified name, as [`Table::qualified`] writes it.
    names: Vec<String>,
    table_descriptions: Vec<Arc<str>>,
    /// Each table's terms, for the table index and its schema's document.
    table_terms: Vec<Arc<DocTerms>>,
    /// The length of each table's [`crate::schema::render`]ing (the full description).
    rendered: Vec<usize>,
    schemas: Vec<SchemaEntry>,
    schema_terms: Vec<DocTerms>,
    by_name: HashMap<String, usize>,
    table_index: LexicalIndex,
    schema_index: LexicalIndex,
    /// This catalog's number, unique in the process.
    id: u64,
    renewal: Option<Renewal>,
}

/// What a catalog made from an earlier one ([`Catalog::reusing`], [`Catalog::renewed`])
/// described anew: the tables and schemas that are new or changed since that one.
#[derive(Debug, Clone, PartialEq)]
pub struct Renewal {
    /// The earlier catalog's [`Catalog::id`].
    pub from: u64,
    /// Qualified names of the tables described anew.
    pub tables: Vec<String>,
    /// Names of the schemas described anew.
    pub schemas: Vec<String>,
}

static CATALOGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Catalog {
    /// Build the catalog of `tables`. `schemas` gives the comments of schemas; a schema with
    /// tables but not listed there has no comment, and a listed schema without tables is left
    /// out. Schemas keep the order in which their first table appears.
    pub fn new(tables: Vec<TableProfile>, schemas: &[SchemaProfile]) -> Catalog {
        let same = vec![None; tables.len()];
        let names = tables.iter().map(|p| p.table.qualified()).collect();
        Catalog::build(None, None, tables, names, same, schemas)
    }

    /// [`Catalog::new`], taking from `previous` what it computed for every table (and schema)
    /// that is the same in both: the result is the one [`Catalog::new`] gives.
    pub fn reusing(previous: &Catalog, tables: Vec<TableProfile>, schemas: &[SchemaProfile]) -> Catalog {
        let names: Vec<String> = tables.iter().map(|p| p.table.qualified()).collect();
        let same = names.iter().zip(&tables).map(|(n, p)| previous.by_name.get(n).copied().filter(|&j| previous.tables[j] == *p)).collect();
        Catalog::build(Some(previous), None, tables, names, same, schemas)
    }

    /// The catalog of `tables` (each with the frequent values `values` gives for it), made
    /// from `previous`: the profiles of unchanged tables are moved over rather than copied,
    /// and what was computed for them is kept. The result is the one [`Catalog::new`] gives.
    pub fn renewed(
        mut previous: Catalog,
        tables: &[Table],
        mut values: impl FnMut(&str, &Table) -> Vec<ColumnValues>,
        schemas: &[SchemaProfile],
    ) -> Catalog {
        let mut profiles = Vec::with_capacity(tables.len());
        let mut same = Vec::with_capacity(tables.len());
        let mut names = Vec::with_capacity(tables.len());
        for t in tables {
            let name = t.qualified();
            let v = values(&name, t);
            let j = previous.by_name.get(&name).copied().filter(|&j| previous.tables[j].table == *t && previous.tables[j].values == v);
            match j {
                Some(j) => profiles.push(std::mem::take(&mut previous.tables[j])),
                None => profiles.push(TableProfile { table: t.clone(), values: v }),
            }
            same.push(j);
            names.push(name);
        }
        // The table index is renewed in place: only new and changed tables are indexed.
        let index = std::mem::replace(&mut previous.table_index, LexicalIndex::from_terms(&[], TABLE_WEIGHTS));
        Catalog::build(Some(&previous), Some(index), profiles, names, same, schemas)
    }

    /// The catalog of `tables` (qualified `names`), where `same[i]` is the index in `previous`
    /// of a table equal to `tables[i]`, whose description and terms are taken from there;
    /// `index` is the previous table index, to renew rather than build.
    fn build(
        previous: Option<&Catalog>,
        index: Option<LexicalIndex>,
        tables: Vec<TableProfile>,
        names: Vec<String>,
        same: Vec<Option<usize>>,
        schemas: &[SchemaProfile],
    ) -> Catalog {
        let mut entries: Vec<SchemaEntry> = Vec::new();
        let mut entry_of: HashMap<&str, usize> = HashMap::new();
        for (i, p) in tables.iter().enumerate() {
            match entry_of.get(p.table.schema.as_str()) {
                Some(&e) => entries[e].tables.push(i),
                None => {
                    let profile = schemas
                        .iter()
                        .find(|s| s.name == p.table.schema)
                        .cloned()
                        .unwrap_or_else(|| SchemaProfile { name: p.table.schema.clone(), comment: None });
                    entry_of.insert(&p.table.schema, entries.len());
                    entries.push(SchemaEntry { profile, tables: vec![i], description: String::new() });
                }
            }
        }
        let mut tokens = Tokens::default();
        let mut table_terms = Vec::with_capacity(tables.len());
        let mut table_descriptions = Vec::with_capacity(tables.len());
        let mut rendered = Vec::with_capacity(tables.len());
        for (p, j) in tables.iter().zip(&same) {
            match (previous, j) {
                (Some(c), Some(j)) => {
                    table_terms.push(c.table_terms[*j].clone());
                    table_descriptions.push(c.table_descriptions[*j].clone());
                    rendered.push(c.rendered[*j]);
                }
                _ => {
                    table_terms.push(Arc::new(DocTerms::of(&table_document(p), &mut tokens)));
                    table_descriptions.push(describe_table(p).into());
                    rendered.push(crate::schema::render(std::slice::from_ref(&p.table)).len());
                }
            }
        }
        let previous_schemas: HashMap<&str, usize> =
            previous.map(|c| c.schemas.iter().enumerate().map(|(k, s)| (s.profile.name.as_str(), k)).collect()).unwrap_or_default();
        let mut schema_terms = Vec::with_capacity(entries.len());
        let mut renewed_schemas = Vec::new();
        for e in &mut entries {
            // A schema whose profile and tables are all the same as before.
            let before = previous.and_then(|c| {
                let k = previous_schemas.get(e.profile.name.as_str()).copied().filter(|&k| c.schemas[k].profile == e.profile)?;
                let old = &c.schemas[k].tables;
                let unchanged = old.len() == e.tables.len() && e.tables.iter().zip(old).all(|(&i, &j)| same[i] == Some(j));
                unchanged.then_some((c, k))
            });
            match before {
                Some((c, k)) => {
                    e.description = c.schemas[k].description.clone();
                    schema_terms.push(c.schema_terms[k].clone());
                }
                None => {
                    renewed_schemas.push(e.profile.name.clone());
                    let members: Vec<&TableProfile> = e.tables.iter().map(|&i| &tables[i]).collect();
                    e.description = describe_schema(&e.profile, &members);
                    let own = DocTerms::of(&schema_document(&e.profile, &[]), &mut tokens);
                    schema_terms.push(DocTerms::merged(own, e.tables.iter().map(|&i| &*table_terms[i]), Field::Schema));
                }
            }
        }
        let by_name = names.iter().enumerate().map(|(i, n)| (n.clone(), i)).collect();
        let docs: Vec<&DocTerms> = table_terms.iter().map(|t| &**t).collect();
        let renewal = previous.map(|c| Renewal {
            from: c.id,
            tables: names.iter().zip(&same).filter(|(_, j)| j.is_none()).map(|(n, _)| n.clone()).collect(),
            schemas: renewed_schemas,
        });
        Catalog {
            id: CATALOGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            renewal,
            names,
            table_index: match (previous, index) {
                (Some(c), Some(index)) => index.renewed(&c.table_terms.iter().map(|t| &**t).collect::<Vec<_>>(), &same, &docs),
                _ => LexicalIndex::from_terms(&docs, TABLE_WEIGHTS),
            },
            schema_index: LexicalIndex::from_terms(&schema_terms.iter().collect::<Vec<_>>(), SCHEMA_WEIGHTS),
            tables,
            table_descriptions,
            table_terms,
            rendered,
            schemas: entries,
            schema_terms,
            by_name,
        }
    }

    /// This catalog, its tables scored as in the larger collection `stats` describes (a
    /// catalog of the candidates a stored index gave, see [`super::retrieve`]).
    pub fn with_table_stats(mut self, stats: GlobalStats) -> Catalog {
        let index = std::mem::replace(&mut self.table_index, LexicalIndex::from_terms(&[], TABLE_WEIGHTS));
        self.table_index = index.with_global(stats);
        self
    }

    /// A table's terms without its values, as a stored index keeps them (names and comments,
    /// which PostgreSQL's catalogs show every role).
    pub fn stored_terms(&self, qualified: &str) -> Option<DocTerms> {
        self.by_name.get(qualified).map(|&i| self.table_terms[i].without(Field::Value))
    }

    /// This catalog's number, unique in the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What this catalog described anew, when it was made from an earlier one.
    pub fn renewal(&self) -> Option<&Renewal> {
        self.renewal.as_ref()
    }

    /// The length of the full description of every table ([`crate::schema::render`]).
    pub fn full_chars(&self) -> usize {
        self.rendered.iter().sum()
    }

    /// The tables, in the order given.
    pub fn tables(&self) -> &[TableProfile] {
        &self.tables
    }

    /// The schemas with their tables and descriptions.
    pub fn schemas(&self) -> &[SchemaEntry] {
        &self.schemas
    }

    /// A table by its qualified name.
    pub fn table(&self, qualified: &str) -> Option<&Table> {
        self.by_name.get(qualified).map(|&i| &self.tables[i].table)
    }

    /// Every table's qualified name and the text to embed for it.
    pub fn table_descriptions(&self) -> impl Iterator<Item = (String, &str)> {
        self.names.iter().zip(&self.table_descriptions).map(|(n, d)| (n.clone(), &**d))
    }

    /// The text to embed for one table, by its qualified name.
    pub fn table_description(&self, qualified: &str) -> Option<&str> {
        self.by_name.get(qualified).map(|&i| &*self.table_descriptions[i])
    }

    /// Every schema's name and the text to embed for it.
    pub fn schema_descriptions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.schemas.iter().map(|e| (e.profile.name.as_str(), e.description.as_str()))
    }

    fn cosines_for<'a>(names: impl Iterator<Item = &'a str>, cosines: &Cosines) -> Result<Vec<Option<f64>>, SelectError> {
        names
            .map(|name| match cosines.get(name) {
                Some(&c) if !c.is_finite() => Err(SelectError::NotFinite { name: name.to_string(), value: c }),
                c => Ok(c.copied()),
            })
            .collect()
    }

    /// The `k` schemas that best match `question`, best first.
    pub fn select_schemas(&self, question: &str, cosines: &Cosines, k: usize, fusion: Fusion) -> Result<Vec<SchemaPick>, SelectError> {
        let cos = Self::cosines_for(self.schemas.iter().map(|e| e.profile.name.as_str()), cosines)?;
        let lexical = self.schema_index.score(question);
        Ok(fuse(lexical, &cos, fusion)
            .into_iter()
            .take(k)
            .map(|f| SchemaPick { schema: self.schemas[f.index].profile.name.clone(), score: f.score, parts: f.parts })
            .collect())
    }

    /// The `options.k` tables that best match `question`, best first, followed by at most
    /// `options.max_join_tables` tables their joins need: first those the picked tables'
    /// foreign keys reference, then junction tables with foreign keys to two picked tables,
    /// each group in fused-score order. Only tables of `options.schemas` are candidates, and
    /// only candidates are added for joins.
    pub fn select_tables(&self, question: &str, cosines: &Cosines, options: &SelectOptions) -> Result<Vec<TablePick>, SelectError> {
        let candidates: Vec<usize> = match &options.schemas {
            None => (0..self.tables.len()).collect(),
            Some(names) => {
                let mut c = Vec::new();
                for name in names {
                    let entry =
                        self.schemas.iter().find(|e| &e.profile.name == name).ok_or_else(|| SelectError::UnknownSchema(name.clone()))?;
                    c.extend(&entry.tables);
                }
                c.sort_unstable();
                c.dedup();
                c
            }
        };
        let cos = Self::cosines_for(candidates.iter().map(|&i| self.names[i].as_str()), cosines)?;
        let mut all_lexical = self.table_index.score(question);
        // Candidates are distinct: each score is moved out once.
        let lexical: Vec<LexicalScore> = candidates.iter().map(|&i| std::mem::take(&mut all_lexical[i])).collect();
        let ranked = fuse(lexical, &cos, options.fusion);

        let mut picks: Vec<TablePick> = Vec::new();
        let mut picked: BTreeSet<usize> = BTreeSet::new();
        for f in ranked.iter().take(options.k) {
            let i = candidates[f.index];
            picked.insert(i);
            picks.push(TablePick { table: self.names[i].clone(), score: f.score, reason: PickReason::Retrieved, parts: f.parts.clone() });
        }
        if options.k == 0 || options.max_join_tables == 0 {
            return Ok(picks);
        }

        // Join tables, in fused-score order within each kind.
        let order: Vec<usize> = ranked.iter().map(|f| candidates[f.index]).collect();
        let parts_of = |i: usize| ranked.iter().find(|f| candidates[f.index] == i).map(|f| (f.score, f.parts.clone()));
        let retrieved: Vec<usize> = picks.iter().map(|p| self.by_name[&p.table]).collect();
        let mut additions: Vec<(usize, PickReason)> = Vec::new();
        // 1. Tables referenced by a picked table's foreign key.
        for &target in &order {
            if picked.contains(&target) {
                continue;
            }
            let target_name = self.names[target].as_str();
            let referrer = retrieved.iter().find_map(|&r| {
                self.tables[r]
                    .table
                    .foreign_keys
                    .iter()
                    .find(|fk| fk.references == target_name)
                    .map(|fk| (self.names[r].clone(), fk.columns.clone()))
            });
            if let Some((by, columns)) = referrer {
                additions.push((target, PickReason::Referenced { by, columns }));
            }
        }
        // 2. Junction tables with foreign keys to at least two distinct picked tables.
        for &j in &order {
            if picked.contains(&j) || additions.iter().any(|(a, _)| *a == j) {
                continue;
            }
            let linked: BTreeSet<String> = self.tables[j]
                .table
                .foreign_keys
                .iter()
                .filter(|fk| retrieved.iter().any(|&r| self.names[r] == fk.references))
                .map(|fk| fk.references.clone())
                .collect();
            if linked.len() >= 2 {
                additions.push((j, PickReason::Links { tables: linked.into_iter().collect() }));
            }
        }
        for (i, reason) in additions.into_iter().take(options.max_join_tables) {
            let (score, parts) = parts_of(i).unwrap_or_default();
            picks.push(TablePick { table: self.names[i].clone(), score, reason, parts });
        }
        Ok(picks)
    }

    /// What `ask()` describes for a question: the [`PLAN_SCHEMAS`](super::PLAN_SCHEMAS) best
    /// schemas and the `k` best tables among them with the tables their joins need
    /// ([`Catalog::select_tables`]); schemas, and retrieved tables, without any evidence (no
    /// cosine, no matching word) are left out unless nothing has evidence. `None` when no
    /// schema is left.
    pub fn select_as_asked(
        &self,
        question: &str,
        table_cosines: &Cosines,
        schema_cosines: &Cosines,
        k: usize,
        fusion: Fusion,
    ) -> Result<Option<AskedSelection>, SelectError> {
        let mut schemas = self.select_schemas(question, schema_cosines, super::PLAN_SCHEMAS, fusion)?;
        if schemas.iter().any(|s| s.score > 0.0) {
            schemas.retain(|s| s.score > 0.0);
        }
        if schemas.is_empty() {
            return Ok(None);
        }
        let options = SelectOptions { k, schemas: Some(schemas.iter().map(|s| s.schema.clone()).collect()), fusion, ..Default::default() };
        let mut tables = self.select_tables(question, table_cosines, &options)?;
        if tables.iter().any(|p| p.score > 0.0) {
            tables.retain(|p| p.score > 0.0 || p.reason != PickReason::Retrieved);
        }
        Ok(Some(AskedSelection { schemas, tables }))
    }

    /// The tables of a selection, for [`crate::schema::render`].
    pub fn picked_tables(&self, picks: &[TablePick]) -> Vec<Table> {
        picks.iter().filter_map(|p| self.table(&p.table).cloned()).collect()
    }
}

#[cfg(test)]
mod tests;
