//! The correction decision for one literal that was compared with a text column.
//!
//! Evidence comes from the glue: whether the value occurs in the column (exactly, then ignoring
//! case), and candidates from the value memory with their embedding cosine (pgvector) and
//! trigram similarity (pg_trgm). [`decide`] fuses the two rankings (reciprocal rank fusion),
//! adds generic lexical evidence computed here, and applies the first rule that fires:
//!
//! | rule | when | decision |
//! |---|---|---|
//! | `exact` | the value occurs as written | keep |
//! | `case_insensitive` | it occurs ignoring case | replace by the stored spelling (keep for `ILIKE`) |
//! | `range_bound` | it is a `BETWEEN` bound | keep (a bound need not be a stored value) |
//! | `no_candidates` | the memory has nothing | keep |
//! | `lexical` | exactly one candidate carries strong lexical evidence (same letters and digits, singular/plural, initialism, word prefixes, a small typo), or several do and the best one leads them by [`LEXICAL_TIE_MARGIN`] in cosine | replace |
//! | `embedding_with_hint` | the cosine top-1 carries weak lexical evidence (initialism prefix, shared stem) and has cosine ≥ [`HINT_MIN_COSINE`] and a margin ≥ [`HINT_MIN_MARGIN`] over the runner-up | replace |
//! | `embedding` | the cosine top-1 has cosine ≥ [`EMBED_MIN_COSINE`] and a margin ≥ [`EMBED_MIN_MARGIN`] over the runner-up | replace |
//! | `ambiguous` | some candidate is plausible (cosine ≥ [`ASK_MIN_COSINE`] or trigram ≥ [`ASK_MIN_TRIGRAM`]) | ask the LLM with the top candidates |
//! | `nearest` | otherwise, when the memory has candidates | ask the LLM with the nearest candidates: it may keep the literal (a legitimate value with no rows) or know what the rules cannot see ('Peking' is 'Beijing', 'Republic of Korea' is 'South Korea'); without an LLM, keep |
//! | `closed_set` | instead of `no_candidates` / `nearest` when the column's values are a closed set (an enum's labels) | ask the LLM with the best candidates (replace when the set has one value): a value outside the set is an error, never a legitimate value |
//! | `few_values` | instead of `nearest` when the candidates are all of the column's few values ([`Evidence::all_values`]) | ask the LLM with all of them: it may keep the literal |
//!
//! A column with few values ('F'/'M', a handful of statuses, a country list) is where a
//! literal's embedding and trigrams know least what a stored code or official name stands
//! for ('female' and 'F' share neither), and where showing every value costs least: there
//! the LLM, which knows what the codes mean, chooses among all of them instead of the rules
//! giving up, and an `ambiguous` question lists all of them too.
//!
//! Why margins: raw cosine does not separate a variant from a sibling value (with
//! all-MiniLM-L6-v2, 'spain'→'France' is 0.70 and 'Great Britain'→'United Kingdom' 0.71), but a
//! variant is much closer to its value than to any other value of the column ('French'→'France'
//! 0.74, next 0.51), while a legitimate absent value is about as close to several of the
//! column's values ('spain': France 0.70, Italy 0.68, Mexico 0.68). The runner-up is the rest
//! of the column speaking. No synonym or demonym table is used anywhere.

use crate::text::plain_words;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Minimum cosine of the embedding top-1 for a replacement on embedding evidence alone
/// (sibling values reach 0.66 with a clear margin: 'Korean'→'Japanese', 'Nevada'→'California').
pub const EMBED_MIN_COSINE: f64 = 0.70;
/// Minimum lead in cosine of the top-1 over the runner-up for a replacement on embedding
/// evidence alone (demonyms and aliases clear it: 'French'→'France' +0.23, 'Great Britain'→
/// 'United Kingdom' +0.18; sibling values do not: 'spain'→'France' +0.02, 'Japan'→'China' +0.07).
pub const EMBED_MIN_MARGIN: f64 = 0.15;
/// Minimum cosine of the top-1 when weak lexical evidence supports it.
pub const HINT_MIN_COSINE: f64 = 0.55;
/// Minimum lead over the runner-up when weak lexical evidence supports the top-1
/// ('USA'→'United States' 0.89, +0.11 over 'Canada').
pub const HINT_MIN_MARGIN: f64 = 0.05;
/// When several candidates carry equally strong lexical evidence, the best must lead the next
/// by this much cosine to be chosen without the LLM.
pub const LEXICAL_TIE_MARGIN: f64 = 0.05;
/// Below this top cosine (and [`ASK_MIN_TRIGRAM`]), no candidate is plausible: keep.
pub const ASK_MIN_COSINE: f64 = 0.55;
/// Below this top trigram similarity (and [`ASK_MIN_COSINE`]), no candidate is plausible.
pub const ASK_MIN_TRIGRAM: f64 = 0.4;
/// The constant k of reciprocal rank fusion, `score = Σ 1 / (k + rank)` (Cormack et al.).
pub const RRF_K: f64 = 60.0;
/// Candidates listed in a trace and offered to the LLM.
pub const MAX_RANKED: usize = 10;
/// Shortest compacted literal the typo rule applies to, and the length from which two edits
/// are allowed ([`typo_budget`]).
pub const TYPO_MIN_LEN: usize = 5;
/// See [`TYPO_MIN_LEN`].
pub const TYPO_TWO_EDITS_LEN: usize = 9;
/// Shortest shared prefix (in characters) counted as a shared stem ('Ital' in Italian/Italy).
pub const STEM_MIN_LEN: usize = 4;

/// The decision thresholds, defaulting to the constants above; a benchmark may vary them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// [`EMBED_MIN_COSINE`].
    pub embed_min_cosine: f64,
    /// [`EMBED_MIN_MARGIN`].
    pub embed_min_margin: f64,
    /// [`HINT_MIN_COSINE`].
    pub hint_min_cosine: f64,
    /// [`HINT_MIN_MARGIN`].
    pub hint_min_margin: f64,
    /// [`LEXICAL_TIE_MARGIN`].
    pub lexical_tie_margin: f64,
    /// [`ASK_MIN_COSINE`].
    pub ask_min_cosine: f64,
    /// [`ASK_MIN_TRIGRAM`].
    pub ask_min_trigram: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            embed_min_cosine: EMBED_MIN_COSINE,
            embed_min_margin: EMBED_MIN_MARGIN,
            hint_min_cosine: HINT_MIN_COSINE,
            hint_min_margin: HINT_MIN_MARGIN,
            lexical_tie_margin: LEXICAL_TIE_MARGIN,
            ask_min_cosine: ASK_MIN_COSINE,
            ask_min_trigram: ASK_MIN_TRIGRAM,
        }
    }
}

/// A stored value the memory proposes for a literal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The value as stored.
    pub value: String,
    /// Rows holding it (a tie-breaker only).
    pub frequency: u64,
    /// Cosine similarity of the embeddings (pgvector `1 - (a <=> b)`), when computed.
    pub cosine: Option<f64>,
    /// pg_trgm `similarity(literal, value)`, when computed.
    pub trigram: Option<f64>,
}

/// What the glue learned about one literal. For a `LIKE` pattern, `exact` means the pattern
/// matches some value and `case_insensitive` that it does with `ILIKE`; candidates are searched
/// with the pattern's core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The literal's value (a LIKE pattern's core).
    pub literal: String,
    /// The value occurs in the column as written.
    pub exact: bool,
    /// A stored value equal to the literal ignoring case, if any (its stored spelling).
    pub case_insensitive: Option<String>,
    /// Candidates: the union of the embedding and the trigram neighbours. Best filled with both
    /// scores for each candidate (cheap in SQL: `similarity()` and `<=>` on the found rows).
    pub candidates: Vec<Candidate>,
    /// Number of distinct values of the column (for the trace).
    pub distinct_values: u64,
    /// The candidates are every value the column can hold (an enum's labels): a literal
    /// outside them cannot be a legitimate value with no rows.
    #[serde(default)]
    pub closed_set: bool,
    /// The candidates are all of the column's values, few enough to be listed in the prompt
    /// (`ask.max_listed_values`): when no rule decides, the LLM chooses among all of them or
    /// keeps the literal, instead of the literal being kept unasked.
    #[serde(default)]
    pub all_values: bool,
}

/// How the literal is compared, as far as the decision cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Comparison {
    /// `=`, `<>`, `IN`, `= ANY`, and `LIKE` (case-sensitive).
    CaseSensitive,
    /// `ILIKE`: case differences already match.
    CaseInsensitive,
    /// A `BETWEEN` bound.
    RangeBound,
}

impl From<&super::literals::LiteralKind> for Comparison {
    fn from(kind: &super::literals::LiteralKind) -> Self {
        use super::literals::LiteralKind;
        match kind {
            LiteralKind::Between { .. } => Comparison::RangeBound,
            LiteralKind::Like { case_insensitive: true, .. } => Comparison::CaseInsensitive,
            _ => Comparison::CaseSensitive,
        }
    }
}

/// Generic lexical evidence that a candidate is the literal written differently. Strong kinds
/// first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lexical {
    /// Equal letters and digits once case, spacing and punctuation are ignored ('los-angeles').
    SameLettersAndDigits,
    /// Equal word by word up to a plural ending ('Italian restaurant' / 'Italian restaurants').
    SingularPlural,
    /// One is the initialism of the other ('LA' / 'Los Angeles', 'NYC' / 'New York City').
    Initialism,
    /// Each word of the literal begins a word of the value, in order ('san fran' / 'San
    /// Francisco', 'Pasta House' / 'The Pasta House').
    WordPrefixes,
    /// A small edit distance ('Chcago' / 'Chicago'), see [`typo_budget`].
    Typo,
    /// Weak: the literal's initials begin a short value or the reverse ('United States' / 'usa').
    InitialismPrefix,
    /// Weak: two single words sharing a prefix of at least [`STEM_MIN_LEN`] characters and 60 %
    /// of the shorter word ('Italian' / 'Italy').
    SharedStem,
}

impl Lexical {
    /// Whether this evidence alone can justify a replacement.
    pub fn is_strong(self) -> bool {
        self <= Lexical::Typo
    }
}

/// A candidate with its fused rank and evidence, as shown in traces and prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// The stored value.
    pub value: String,
    /// Rows holding it.
    pub frequency: u64,
    /// Embedding cosine, if known.
    pub cosine: Option<f64>,
    /// Trigram similarity, if known.
    pub trigram: Option<f64>,
    /// Reciprocal-rank-fusion score.
    pub fused: f64,
    /// Lexical evidence, if any.
    pub lexical: Option<Lexical>,
}

/// Which rule decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The value occurs as written.
    Exact,
    /// The value occurs ignoring case.
    CaseInsensitive,
    /// A BETWEEN bound is never corrected.
    RangeBound,
    /// The memory returned no candidate.
    NoCandidates,
    /// Strong lexical evidence.
    Lexical,
    /// Embedding top-1 with weak lexical evidence.
    EmbeddingWithHint,
    /// Embedding top-1 with a clear margin.
    Embedding,
    /// Plausible candidates, none clearly best.
    Ambiguous,
    /// No plausible candidate: a legitimate value with no rows (kept without asking; what an
    /// LLM's answer to [`Rule::Nearest`] that keeps the literal is recorded as).
    NoPlausibleCandidate,
    /// No candidate plausible by the rules, in a column too large to list: the nearest
    /// candidates go to the LLM, which may keep the literal.
    Nearest,
    /// Not a value of a closed set (an enum), and no candidate clearly best.
    ClosedSet,
    /// No candidate plausible by the rules, but the column's values are few: all of them go
    /// to the LLM.
    FewValues,
}

/// The decision for one literal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Decision {
    /// Leave the literal as written.
    Keep {
        /// The rule that decided.
        reason: Rule,
    },
    /// Replace the literal's value without asking the LLM.
    Replace {
        /// The stored value to use.
        value: String,
        /// The rule that decided.
        reason: Rule,
        /// A heuristic confidence in [0, 1], for display.
        confidence: f64,
    },
    /// Let the LLM choose among the candidates (or keep the literal).
    AskLlm {
        /// The best candidates, fused ranking order.
        candidates: Vec<String>,
    },
}

/// The decision and everything that led to it, for `ask.explain()`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// The literal.
    pub literal: String,
    /// Distinct values of the column.
    pub distinct_values: u64,
    /// The decision.
    pub decision: Decision,
    /// The rule that fired.
    pub rule: Rule,
    /// Best candidates after fusion, at most [`MAX_RANKED`].
    pub ranked: Vec<Ranked>,
    /// The embedding top-1's cosine, if any.
    pub top_cosine: Option<f64>,
    /// Its lead over the embedding runner-up (the top cosine itself when there is none).
    pub cosine_margin: Option<f64>,
    /// The thresholds in force.
    pub thresholds: Thresholds,
}

/// Decides with the default [`Thresholds`].
pub fn decide(evidence: &Evidence, comparison: Comparison) -> Trace {
    decide_with(evidence, comparison, &Thresholds::default())
}

/// Decides what to do with a literal; see the [module documentation](self) for the rules.
pub fn decide_with(evidence: &Evidence, comparison: Comparison, th: &Thresholds) -> Trace {
    let ranked_all = rank(&evidence.literal, &evidence.candidates);
    let by_cosine = cosine_order(&ranked_all);
    let top_cosine = by_cosine.first().map(|r| r.1);
    let cosine_margin = by_cosine.first().map(|&(_, c)| c - by_cosine.get(1).map_or(0.0, |r| r.1));

    let (decision, rule) = choose(evidence, comparison, th, &ranked_all, &by_cosine);
    Trace {
        literal: evidence.literal.clone(),
        distinct_values: evidence.distinct_values,
        decision,
        rule,
        ranked: ranked_all.into_iter().take(MAX_RANKED).collect(),
        top_cosine,
        cosine_margin,
        thresholds: *th,
    }
}

fn choose(evidence: &Evidence, comparison: Comparison, th: &Thresholds, ranked: &[Ranked], by_cosine: &[(usize, f64)]) -> (Decision, Rule) {
    let keep = |reason| (Decision::Keep { reason }, reason);
    let replace = |value: &str, reason, confidence: f64| {
        (Decision::Replace { value: value.to_owned(), reason, confidence: confidence.clamp(0.0, 1.0) }, reason)
    };
    if evidence.exact {
        return keep(Rule::Exact);
    }
    if comparison == Comparison::RangeBound {
        return keep(Rule::RangeBound);
    }
    if let Some(stored) = &evidence.case_insensitive {
        return match comparison {
            Comparison::CaseInsensitive => keep(Rule::CaseInsensitive),
            _ => replace(stored, Rule::CaseInsensitive, 1.0),
        };
    }
    if ranked.is_empty() {
        return keep(Rule::NoCandidates);
    }
    if evidence.closed_set && ranked.len() == 1 {
        return replace(&ranked[0].value, Rule::ClosedSet, 0.9);
    }
    let cosine_of = |r: &Ranked| r.cosine.unwrap_or(0.0);

    // Strong lexical evidence: the strongest kind present; unique, or clearly best by cosine.
    if let Some(best_kind) = ranked.iter().filter_map(|r| r.lexical).filter(|l| l.is_strong()).min() {
        let mut holders: Vec<&Ranked> = ranked.iter().filter(|r| r.lexical == Some(best_kind)).collect();
        holders.sort_by(|a, b| cosine_of(b).total_cmp(&cosine_of(a)).then_with(|| b.fused.total_cmp(&a.fused)));
        let lead = holders.get(1).map_or(f64::INFINITY, |next| cosine_of(holders[0]) - cosine_of(next));
        if lead >= th.lexical_tie_margin {
            let confidence = match best_kind {
                Lexical::SameLettersAndDigits => 0.99,
                Lexical::SingularPlural => 0.95,
                Lexical::Initialism | Lexical::WordPrefixes => 0.9,
                _ => 0.85,
            };
            return replace(&holders[0].value, Rule::Lexical, confidence);
        }
        return ask(evidence, ranked);
    }

    if let Some(&(top, top_cos)) = by_cosine.first() {
        let margin = top_cos - by_cosine.get(1).map_or(0.0, |r| r.1);
        let hint = ranked[top].lexical.is_some();
        if hint && top_cos >= th.hint_min_cosine && margin >= th.hint_min_margin {
            return replace(&ranked[top].value, Rule::EmbeddingWithHint, 0.5 + margin + (top_cos - th.hint_min_cosine));
        }
        if top_cos >= th.embed_min_cosine && margin >= th.embed_min_margin {
            return replace(&ranked[top].value, Rule::Embedding, 0.5 + margin + (top_cos - th.embed_min_cosine));
        }
    }
    let plausible =
        ranked.iter().any(|r| r.cosine.is_some_and(|c| c >= th.ask_min_cosine) || r.trigram.is_some_and(|t| t >= th.ask_min_trigram));
    if plausible {
        ask(evidence, ranked)
    } else if evidence.closed_set {
        (ask(evidence, ranked).0, Rule::ClosedSet)
    } else if evidence.all_values {
        (ask(evidence, ranked).0, Rule::FewValues)
    } else {
        (ask(evidence, ranked).0, Rule::Nearest)
    }
}

/// Ask the LLM with the best [`MAX_RANKED`] candidates, or with all of a column's few values.
fn ask(evidence: &Evidence, ranked: &[Ranked]) -> (Decision, Rule) {
    let shown = if evidence.all_values { ranked.len() } else { MAX_RANKED };
    let candidates = ranked.iter().take(shown).map(|r| r.value.clone()).collect();
    (Decision::AskLlm { candidates }, Rule::Ambiguous)
}

/// Candidate indices with a cosine, best first.
fn cosine_order(ranked: &[Ranked]) -> Vec<(usize, f64)> {
    let mut v: Vec<(usize, f64)> = ranked.iter().enumerate().filter_map(|(i, r)| r.cosine.map(|c| (i, c))).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// Merges duplicate candidates, fuses the cosine and trigram rankings with reciprocal rank
/// fusion, and attaches lexical evidence. Best first (fused score, then frequency, then value).
pub fn rank(literal: &str, candidates: &[Candidate]) -> Vec<Ranked> {
    let mut merged: Vec<Candidate> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for c in candidates {
        match index.get(c.value.as_str()) {
            Some(&i) => {
                let m = &mut merged[i];
                m.cosine = max_opt(m.cosine, c.cosine);
                m.trigram = max_opt(m.trigram, c.trigram);
                m.frequency = m.frequency.max(c.frequency);
            }
            None => {
                index.insert(&c.value, merged.len());
                merged.push(c.clone());
            }
        }
    }
    let mut fused = vec![0.0; merged.len()];
    for score in [|c: &Candidate| c.cosine, |c: &Candidate| c.trigram] {
        let mut order: Vec<(usize, f64)> = merged.iter().enumerate().filter_map(|(i, c)| score(c).map(|s| (i, s))).collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (rank, (i, _)) in order.into_iter().enumerate() {
            fused[i] += 1.0 / (RRF_K + rank as f64 + 1.0);
        }
    }
    let mut ranked: Vec<Ranked> = merged
        .into_iter()
        .zip(fused)
        .map(|(c, fused)| Ranked {
            lexical: lexical_evidence(literal, &c.value),
            value: c.value,
            frequency: c.frequency,
            cosine: c.cosine,
            trigram: c.trigram,
            fused,
        })
        .collect();
    ranked.sort_by(|a, b| b.fused.total_cmp(&a.fused).then_with(|| b.frequency.cmp(&a.frequency)).then_with(|| a.value.cmp(&b.value)));
    ranked
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Initials of words, skipping short all-lower-case function words when `skip_minor`
/// ('United States of America' → 'usa').
/// Words are split at anything but letters, digits and apostrophes ('O’Hare' is one word).
fn initials(text: &str, skip_minor: bool) -> String {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .filter(|w| !(skip_minor && w.len() <= 3 && w.chars().all(|c| c.is_lowercase())))
        .filter_map(|w| w.chars().next())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Edits allowed for a typo in a compacted text of `len` characters: none below
/// [`TYPO_MIN_LEN`], one up to [`TYPO_TWO_EDITS_LEN`], then two.
pub fn typo_budget(len: usize) -> usize {
    match len {
        l if l < TYPO_MIN_LEN => 0,
        l if l < TYPO_TWO_EDITS_LEN => 1,
        _ => 2,
    }
}

/// Optimal-string-alignment edit distance (insertions, deletions, substitutions, adjacent
/// transpositions), over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev2 = vec![0usize; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Whether each word of `short` begins a word of `long`, in order, and `short` has fewer
/// characters. A one-letter word must equal a word (an initial proves little).
fn word_prefixes(short: &[String], long: &[String]) -> bool {
    if short.is_empty() || short.len() > long.len() || short.concat().len() >= long.concat().len() {
        return false;
    }
    let matches = |w: &str, l: &str| l == w || (w.chars().count() >= 2 && l.starts_with(w));
    let mut j = 0;
    for w in short {
        while j < long.len() && !matches(w, &long[j]) {
            j += 1;
        }
        if j == long.len() {
            return false;
        }
        j += 1;
    }
    true
}

/// The strongest lexical evidence that `value` is `literal` written differently, if any.
pub fn lexical_evidence(literal: &str, value: &str) -> Option<Lexical> {
    let (lw, vw) = (plain_words(literal), plain_words(value));
    if lw.is_empty() || vw.is_empty() {
        return None;
    }
    let (lc, vc) = (lw.concat(), vw.concat());
    if lc == vc {
        return Some(Lexical::SameLettersAndDigits);
    }
    if lw.len() == vw.len() && lw.iter().zip(&vw).all(|(a, b)| crate::text::stem(a) == crate::text::stem(b)) {
        return Some(Lexical::SingularPlural);
    }
    let initialism = |short: &[String], short_c: &str, long: &str| {
        short.len() == 1 && short_c.chars().count() >= 2 && short_c.chars().all(char::is_alphabetic) && {
            let all = initials(long, false);
            let major = initials(long, true);
            all.chars().count() >= 2 && (short_c == all || short_c == major)
        }
    };
    if initialism(&lw, &lc, value) || initialism(&vw, &vc, literal) {
        return Some(Lexical::Initialism);
    }
    if word_prefixes(&lw, &vw) {
        return Some(Lexical::WordPrefixes);
    }
    let budget = typo_budget(lc.chars().count().min(vc.chars().count()));
    if budget > 0 && edit_distance(&lc, &vc) <= budget {
        return Some(Lexical::Typo);
    }
    let initialism_prefix = |short: &[String], short_c: &str, long: &str| {
        let init = initials(long, true);
        short.len() == 1
            && short_c.chars().count() <= 5
            && init.chars().count() >= 2
            && (short_c.starts_with(&init) || init.starts_with(short_c))
            && short_c != init
    };
    if initialism_prefix(&lw, &lc, value) || initialism_prefix(&vw, &vc, literal) {
        return Some(Lexical::InitialismPrefix);
    }
    let stem = lc.chars().zip(vc.chars()).take_while(|(a, b)| a == b).count();
    let shorter = lc.chars().count().min(vc.chars().count());
    if lw.len() == 1 && vw.len() == 1 && stem >= STEM_MIN_LEN && 5 * stem >= 3 * shorter {
        return Some(Lexical::SharedStem);
    }
    None
}
