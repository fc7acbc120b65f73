//! InConDB's metric.
//!
//! **One SELECT sample.** Let T be the true rows and A the answered rows, each taken as a *set*
//! of normalised rows (duplicates collapse). The score is the Jaccard coefficient
//! `|T ∩ A| / |T ∪ A|`, defined as 1 when both are empty. When the query has an ORDER BY
//! (detected with sqlparser, at the top level of the statement), it is multiplied by the mean
//! prefix-Jaccard: for k = 1..n with n = max(|T|, |A|) (the lists as returned, duplicates
//! kept), the Jaccard of the sets of the first k rows of each list, averaged. Taking n as the
//! longer length makes rows answered beyond the truth's end cost order credit too; with both
//! lists empty the factor is 1.
//!
//! **One INSERT/UPDATE/DELETE sample.** 1 when the answer (Succeed/Fail) equals the truth, else 0.
//!
//! **A parse failure** scores 0; so does an answer of the wrong kind.
//!
//! **A run.** SELECT: `β · mean(non-empty-truth samples) + (1 − β) · mean(empty-truth
//! samples)` with β = 0.9. INSERT/UPDATE/DELETE: `α · accuracy(true Succeed) + (1 − α) ·
//! accuracy(true Fail)` with α = 0.5. When one of the two groups has no sample the score is
//! the mean of the other group alone (its weight becomes 1): weighting an absent group by 0
//! would cap a perfect model at β or α, and the paper's weighting exists to keep one group
//! from dominating, which cannot happen with one group. With no sample at all there is no
//! score (`None`).
//!
//! **Value normalisation** (before rows are compared; see [`NormValue`]):
//! * numbers and numeric strings compare as exact decimals: `1`, `1.0`, `"1.00"`, `1e0` are
//!   equal; `-0` is `0`; no rounding otherwise (`0.30000000000000004` ≠ `0.3`);
//! * booleans and the strings `true`/`false` in any case are booleans (`1` is not `true`);
//! * date-times: an ISO-8601 `T` separator becomes a space, fractional seconds lose trailing
//!   zeros, missing seconds become `:00`, and a time of exactly midnight is dropped, so
//!   `"2023-01-01T00:00:00"` equals `"2023-01-01"` (a DATETIME column filled with a date);
//!   time-zone suffixes are compared as written (after `Z` → `+00`, `+00:00` → `+00`);
//! * other strings compare exactly (case and spaces matter); JSON null is SQL NULL; nested
//!   arrays/objects compare as their compact JSON text.

use std::collections::HashSet;

use serde_json::Value;
use sqlparser::ast::{SetExpr, Statement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::prompting::{Answer, Row};

/// β of the paper: weight of samples whose true result is not empty.
pub const BETA: f64 = 0.9;
/// α of the paper: weight of samples whose true outcome is Succeed.
pub const ALPHA: f64 = 0.5;

/// A value made comparable (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NormValue {
    Null,
    Bool(bool),
    /// Canonical decimal: `-`? digits with no leading zeros, optional `.` fraction with no
    /// trailing zeros.
    Num(String),
    Text(String),
}

/// Normalise one JSON value.
pub fn normalize_value(v: &Value) -> NormValue {
    match v {
        Value::Null => NormValue::Null,
        Value::Bool(b) => NormValue::Bool(*b),
        Value::Number(n) => match canonical_decimal(&n.to_string()) {
            Some(d) => NormValue::Num(d),
            None => NormValue::Text(n.to_string()),
        },
        Value::String(s) => normalize_text(s),
        Value::Array(_) | Value::Object(_) => NormValue::Text(v.to_string()),
    }
}

fn normalize_text(s: &str) -> NormValue {
    let t = s.trim();
    if let Some(d) = canonical_decimal(t) {
        return NormValue::Num(d);
    }
    if t.eq_ignore_ascii_case("true") {
        return NormValue::Bool(true);
    }
    if t.eq_ignore_ascii_case("false") {
        return NormValue::Bool(false);
    }
    if let Some(dt) = canonical_datetime(t) {
        return NormValue::Text(dt);
    }
    NormValue::Text(s.to_string())
}

/// Normalise a row.
pub fn normalize_row(row: &[Value]) -> Vec<NormValue> {
    row.iter().map(normalize_value).collect()
}

/// `[+-]digits[.digits][e[+-]digits]` (or `.5`, `5.`) as a canonical exact decimal.
pub fn canonical_decimal(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut int_digits = String::new();
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        int_digits.push(bytes[i] as char);
        i += 1;
    }
    let mut frac_digits = String::new();
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            frac_digits.push(bytes[i] as char);
            i += 1;
        }
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let mut exponent: i64 = 0;
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        i += 1;
        let exp_text = &s[i..];
        if exp_text.is_empty() || exp_text.len() > 6 {
            return None;
        }
        exponent = exp_text.parse().ok()?;
        i = bytes.len();
    }
    if i != bytes.len() {
        return None;
    }
    // All digits, with the decimal point `frac_digits.len() - exponent` places from the right.
    let digits = format!("{int_digits}{frac_digits}");
    let point_from_right = frac_digits.len() as i64 - exponent;
    let (int_part, frac_part) = if point_from_right <= 0 {
        (format!("{digits}{}", "0".repeat((-point_from_right) as usize)), String::new())
    } else if point_from_right as usize >= digits.len() {
        (String::new(), format!("{}{digits}", "0".repeat(point_from_right as usize - digits.len())))
    } else {
        let split = digits.len() - point_from_right as usize;
        (digits[..split].to_string(), digits[split..].to_string())
    };
    let int_part = int_part.trim_start_matches('0');
    let frac_part = frac_part.trim_end_matches('0');
    let int_part = if int_part.is_empty() { "0" } else { int_part };
    let zero = int_part == "0" && frac_part.is_empty();
    let mut out = String::new();
    if negative && !zero {
        out.push('-');
    }
    out.push_str(int_part);
    if !frac_part.is_empty() {
        out.push('.');
        out.push_str(frac_part);
    }
    Some(out)
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.fff]]][zone]` in canonical form, or `None` if `s` is not one.
pub fn canonical_datetime(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let is_digits = |range: std::ops::Range<usize>| range.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    if b.len() < 10 || !is_digits(0..4) || b[4] != b'-' || !is_digits(5..7) || b[7] != b'-' || !is_digits(8..10) {
        return None;
    }
    let date = &s[..10];
    if b.len() == 10 {
        return Some(date.to_string());
    }
    if !(b[10] == b' ' || b[10] == b'T') || b.len() < 16 || !is_digits(11..13) || b[13] != b':' || !is_digits(14..16) {
        return None;
    }
    let hm = &s[11..16];
    let mut i = 16;
    let mut seconds = "00".to_string();
    let mut fraction = String::new();
    if b.get(i) == Some(&b':') {
        if !is_digits(i + 1..i + 3) {
            return None;
        }
        seconds = s[i + 1..i + 3].to_string();
        i += 3;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            i = start;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            fraction = s[start..i].trim_end_matches('0').to_string();
        }
    }
    let zone = match &s[i..] {
        "" => "",
        "Z" | "z" | "+00:00" | "+00" | "+0000" => "+00",
        other if other.starts_with('+') || other.starts_with('-') => other,
        _ => return None,
    };
    let time = if fraction.is_empty() { format!("{hm}:{seconds}") } else { format!("{hm}:{seconds}.{fraction}") };
    if time == "00:00:00" && zone.is_empty() {
        return Some(date.to_string());
    }
    Some(format!("{date} {time}{zone}"))
}

fn row_set(rows: &[Row]) -> HashSet<Vec<NormValue>> {
    rows.iter().map(|r| normalize_row(r)).collect()
}

fn jaccard_sets(a: &HashSet<Vec<NormValue>>, b: &HashSet<Vec<NormValue>>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    inter as f64 / union as f64
}

/// Jaccard coefficient of two results taken as sets of normalised rows; 1 when both are empty.
pub fn jaccard(truth: &[Row], answer: &[Row]) -> f64 {
    jaccard_sets(&row_set(truth), &row_set(answer))
}

/// Mean over k = 1..max(|T|, |A|) of the Jaccard of the first k rows of each; 1 when both are
/// empty.
pub fn mean_prefix_jaccard(truth: &[Row], answer: &[Row]) -> f64 {
    let n = truth.len().max(answer.len());
    if n == 0 {
        return 1.0;
    }
    let t: Vec<Vec<NormValue>> = truth.iter().map(|r| normalize_row(r)).collect();
    let a: Vec<Vec<NormValue>> = answer.iter().map(|r| normalize_row(r)).collect();
    let (mut ts, mut as_) = (HashSet::new(), HashSet::new());
    let mut sum = 0.0;
    for k in 0..n {
        if let Some(row) = t.get(k) {
            ts.insert(row.clone());
        }
        if let Some(row) = a.get(k) {
            as_.insert(row.clone());
        }
        sum += jaccard_sets(&ts, &as_);
    }
    sum / n as f64
}

/// Score of one SELECT sample.
pub fn select_score(truth: &[Row], answer: &[Row], ordered: bool) -> f64 {
    let j = jaccard(truth, answer);
    if ordered {
        j * mean_prefix_jaccard(truth, answer)
    } else {
        j
    }
}

/// Score of one sample of any kind. `reply` is `None` when the reply could not be parsed.
pub fn score_sample(truth: &Answer, reply: Option<&Answer>, ordered: bool) -> f64 {
    match (truth, reply) {
        (Answer::Rows(t), Some(Answer::Rows(a))) => select_score(t, a, ordered),
        (Answer::Succeed, Some(Answer::Succeed)) | (Answer::Fail, Some(Answer::Fail)) => 1.0,
        _ => 0.0,
    }
}

/// Whether a query's result order is specified: a top-level ORDER BY (of the statement, or of
/// the outermost query of a parenthesised/set-operation body). Unparsable text is treated as
/// unordered. PostgreSQL's dialect, falling back to the generic one.
pub fn has_order_by(sql: &str) -> bool {
    let statements =
        Parser::parse_sql(&PostgreSqlDialect {}, sql).or_else(|_| Parser::parse_sql(&sqlparser::dialect::GenericDialect {}, sql));
    let Ok(statements) = statements else { return false };
    match statements.last() {
        Some(Statement::Query(q)) => query_ordered(q),
        _ => false,
    }
}

fn query_ordered(q: &sqlparser::ast::Query) -> bool {
    if q.order_by.is_some() {
        return true;
    }
    match q.body.as_ref() {
        SetExpr::Query(inner) => query_ordered(inner),
        _ => false,
    }
}

/// The class of a sample's truth, which decides its weight in a run's score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TruthClass {
    /// A SELECT whose true result has rows.
    NonEmpty,
    /// A SELECT whose true result is empty.
    Empty,
    /// A modification that succeeds.
    Succeed,
    /// A modification that fails.
    Fail,
}

impl TruthClass {
    pub fn of(truth: &Answer) -> TruthClass {
        match truth {
            Answer::Rows(rows) if rows.is_empty() => TruthClass::Empty,
            Answer::Rows(_) => TruthClass::NonEmpty,
            Answer::Succeed => TruthClass::Succeed,
            Answer::Fail => TruthClass::Fail,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TruthClass::NonEmpty => "non_empty",
            TruthClass::Empty => "empty",
            TruthClass::Succeed => "succeed",
            TruthClass::Fail => "fail",
        }
    }

    pub fn is_select(self) -> bool {
        matches!(self, TruthClass::NonEmpty | TruthClass::Empty)
    }
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// `w · mean(a) + (1 − w) · mean(b)`, or the mean of the non-empty group alone; `None` when
/// both are empty.
pub fn weighted_groups(a: &[f64], b: &[f64], w: f64) -> Option<f64> {
    match (mean(a), mean(b)) {
        (Some(x), Some(y)) => Some(w * x + (1.0 - w) * y),
        (Some(x), None) => Some(x),
        (None, Some(y)) => Some(y),
        (None, None) => None,
    }
}

/// A run's SELECT score from the sample scores of non-empty and empty truths.
pub fn run_select_score(non_empty: &[f64], empty: &[f64]) -> Option<f64> {
    weighted_groups(non_empty, empty, BETA)
}

/// A run's INSERT/UPDATE/DELETE score from the sample scores (1 or 0) of true-Succeed and
/// true-Fail samples.
pub fn run_modify_score(succeed: &[f64], fail: &[f64]) -> Option<f64> {
    weighted_groups(succeed, fail, ALPHA)
}

/// Score of a group of samples of one operation kind, each given as (truth class, score):
/// SELECT classes are β-weighted, Succeed/Fail classes α-balanced. Mixed SELECT and
/// modification samples are averaged as the mean of the two run scores.
pub fn aggregate(samples: impl IntoIterator<Item = (TruthClass, f64)>) -> Option<f64> {
    let (mut ne, mut e, mut s, mut f) = (vec![], vec![], vec![], vec![]);
    for (class, score) in samples {
        match class {
            TruthClass::NonEmpty => ne.push(score),
            TruthClass::Empty => e.push(score),
            TruthClass::Succeed => s.push(score),
            TruthClass::Fail => f.push(score),
        }
    }
    match (run_select_score(&ne, &e), run_modify_score(&s, &f)) {
        (Some(x), Some(y)) => Some((x + y) / 2.0),
        (x, y) => x.or(y),
    }
}
