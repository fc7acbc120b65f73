//! Two results compared as the execution-accuracy judge compares them (`ask.evaluate`), and as
//! candidates' results are grouped when several are voted on: does one return the other's result?
//!
//! [`compare_results`] decides it from the two results alone. The rules, chosen to follow
//! defog's `sql-eval` and Spider's practice where the issue leaves room:
//!
//! * **Rows are a multiset.** Both results must have the same number of rows, and every row
//!   must be matched by exactly one row of the other side (duplicates count; `sql-eval` drops
//!   duplicates first, we do not, so `SELECT x` and `SELECT DISTINCT x` differ when `x`
//!   repeats). When the question asks for an order (`evaluate::asks_for_order`: its category is
//!   `order_by`, or it says "order", "sort" or "arrange", `sql-eval`'s rule) and the gold
//!   query's outermost query has an `ORDER BY` ([`RowOrder::Ordered`], see
//!   `evaluate::orders_rows`), row `i` must match row `i`. A gold `ORDER BY` the question does
//!   not ask for ("the average length of rivers in each country", ordered by length) leaves
//!   the rows a multiset.
//!   Ties in the gold `ORDER BY` are not modelled: rows that tie in the sort key but come back
//!   in another order are a mismatch, as in `sql-eval`.
//! * **Columns by values, not names.** Column names never matter. Rows are compared as tuples
//!   in column order first; failing that, a prediction whose columns are a permutation of the
//!   gold columns is accepted, and so is one with **extra columns**: the prediction matches
//!   when some gold column → predicted column assignment (one-to-one) makes the projected
//!   prediction equal to the gold result. This is `sql-eval`'s `subset_df` rule (the gold
//!   columns must be a subset of the predicted ones), so `SELECT name, id` answers a question
//!   whose gold is `SELECT name`. A prediction with fewer columns than the gold never matches.
//!   The assignment is searched among columns whose values agree as multisets, in order, and
//!   at most [`MAX_ASSIGNMENTS`] assignments are tried.
//! * **Values are normalised** ([`Cell`]): SQL `NULL` equals `NULL`; booleans equal only
//!   booleans; numbers compare by value whatever their type or form (`1`, `1.0`, the numeric
//!   text `"1.00"` that a `numeric` column may arrive as, `"1e3"`); two integral values
//!   compare exactly, anything else within a relative tolerance of [`RELATIVE_TOLERANCE`]
//!   (about `float4` precision, so `avg` computed in `float8` or `numeric` agree); `NaN`
//!   equals `NaN`. Text compares exactly (case and spaces matter; a date and a timestamp are
//!   different texts). JSON arrays and objects compare as their canonical JSON text.
//! * **Empty results**: two empty results match (no value can disagree), provided the
//!   prediction has at least as many columns.
//! * A result cut by the row limit ([`ResultSet::truncated`]) cannot be judged and is a
//!   mismatch with its own reason.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::Value;

use crate::rows::ResultSet;

/// Two non-integral numbers are equal when `|a − b| ≤ RELATIVE_TOLERANCE × max(|a|, |b|)`.
pub const RELATIVE_TOLERANCE: f64 = 1e-6;

/// The most column assignments tried before giving up (each costs one row comparison).
pub const MAX_ASSIGNMENTS: usize = 1000;

/// Whether row order is part of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOrder {
    /// The gold query orders its rows: compare row by row.
    Ordered,
    /// Compare rows as multisets.
    Unordered,
}

/// A normalised result value; see the [module documentation](self) for the rules.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// SQL `NULL`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number from any numeric type or numeric text; `int` is set when it is integral and
    /// fits an `i128`, and is then compared exactly.
    Number { value: f64, int: Option<i128> },
    /// Any other text.
    Text(String),
}

impl Cell {
    /// Normalises one JSON value of a [`ResultSet`].
    pub fn from_json(value: &Value) -> Cell {
        match value {
            Value::Null => Cell::Null,
            Value::Bool(b) => Cell::Bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Cell::number(i as f64, Some(i128::from(i)))
                } else if let Some(u) = n.as_u64() {
                    Cell::number(u as f64, Some(i128::from(u)))
                } else {
                    let f = n.as_f64().unwrap_or(f64::NAN);
                    Cell::number(f, None)
                }
            }
            Value::String(s) => parse_numeric_text(s).unwrap_or_else(|| Cell::Text(s.clone())),
            other => Cell::Text(other.to_string()),
        }
    }

    fn number(value: f64, int: Option<i128>) -> Cell {
        let int = int.or_else(|| (value.is_finite() && value.fract() == 0.0 && value.abs() < 9.0e15).then_some(value as i128));
        Cell::Number { value, int }
    }

    /// Equality under the normalisation rules (tolerant for non-integral numbers).
    pub fn matches(&self, other: &Cell) -> bool {
        match (self, other) {
            (Cell::Null, Cell::Null) => true,
            (Cell::Bool(a), Cell::Bool(b)) => a == b,
            (Cell::Text(a), Cell::Text(b)) => a == b,
            (Cell::Number { value: a, int: ia }, Cell::Number { value: b, int: ib }) => match (ia, ib) {
                (Some(x), Some(y)) => x == y,
                _ if a.is_nan() || b.is_nan() => a.is_nan() && b.is_nan(),
                _ if a == b => true,
                _ => (a - b).abs() <= RELATIVE_TOLERANCE * a.abs().max(b.abs()),
            },
            _ => false,
        }
    }

    /// A total order for sorting: `NULL` < booleans < numbers < text.
    fn canonical_cmp(&self, other: &Cell) -> Ordering {
        fn rank(c: &Cell) -> u8 {
            match c {
                Cell::Null => 0,
                Cell::Bool(_) => 1,
                Cell::Number { .. } => 2,
                Cell::Text(_) => 3,
            }
        }
        match (self, other) {
            (Cell::Bool(a), Cell::Bool(b)) => a.cmp(b),
            (Cell::Number { value: a, .. }, Cell::Number { value: b, .. }) => a.total_cmp(b),
            (Cell::Text(a), Cell::Text(b)) => a.cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }

    /// The part of the cell that must be equal exactly (numbers reduced to a marker), for
    /// bucketing rows before tolerant matching.
    fn exact_key(&self) -> ExactKey<'_> {
        match self {
            Cell::Null => ExactKey::Null,
            Cell::Bool(b) => ExactKey::Bool(*b),
            Cell::Number { .. } => ExactKey::Number,
            Cell::Text(t) => ExactKey::Text(t),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ExactKey<'a> {
    Null,
    Bool(bool),
    Number,
    Text(&'a str),
}

/// A number written as text (`"12"`, `"-0.50"`, `"1e3"`, `" 3.0 "`): digits with an optional
/// sign, decimal point and exponent. Words such as `"inf"` or `"NaN"` stay text.
fn parse_numeric_text(s: &str) -> Option<Cell> {
    let t = s.trim();
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    let shape_ok = !(int_part.is_empty() && frac_part.is_empty())
        && digits(int_part)
        && digits(frac_part)
        && exponent.is_none_or(|e| {
            let e = e.strip_prefix(['-', '+']).unwrap_or(e);
            !e.is_empty() && digits(e)
        });
    if !shape_ok {
        return None;
    }
    let value: f64 = t.parse().ok()?;
    let int = if exponent.is_none() && frac_part.bytes().all(|b| b == b'0') {
        format!("{}{}", if t.starts_with('-') { "-" } else { "" }, int_part)
            .parse::<i128>()
            .ok()
            .or(Some(0).filter(|_| int_part.is_empty()))
    } else {
        None
    };
    Some(Cell::number(value, int))
}

/// Why a prediction does not match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// One of the results was cut by the row limit, so they cannot be compared.
    #[error("the {0} result was cut by the row limit and cannot be compared")]
    Truncated(&'static str),
    /// Different numbers of rows.
    #[error("{predicted} row(s) instead of {gold}")]
    RowCount {
        /// Rows of the gold result.
        gold: usize,
        /// Rows of the prediction.
        predicted: usize,
    },
    /// Fewer columns than the gold result.
    #[error("{predicted} column(s), fewer than the {gold} of the gold result")]
    TooFewColumns {
        /// Columns of the gold result.
        gold: usize,
        /// Columns of the prediction.
        predicted: usize,
    },
    /// No predicted column holds the values of this gold column (named, 1-based).
    #[error("no column has the values of gold column {position} (\"{name}\")")]
    MissingColumn {
        /// 1-based position in the gold result.
        position: usize,
        /// Its name in the gold result.
        name: String,
    },
    /// Every gold column has a counterpart, but no assignment makes the rows equal.
    #[error("the rows differ")]
    Rows,
    /// The same rows, in another order, where the gold query orders them.
    #[error("the rows are right but in another order")]
    Order,
}

/// How a prediction matched: for each gold column, the index of the predicted column that
/// answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMatch {
    /// `mapping[g]` is the predicted column matched to gold column `g`.
    pub mapping: Vec<usize>,
}

/// Compares a predicted result with the gold one; see the [module documentation](self).
pub fn compare_results(gold: &ResultSet, predicted: &ResultSet, order: RowOrder) -> Result<ColumnMatch, Mismatch> {
    if gold.truncated {
        return Err(Mismatch::Truncated("gold"));
    }
    if predicted.truncated {
        return Err(Mismatch::Truncated("predicted"));
    }
    let (gold_width, predicted_width) = (gold.columns.len(), predicted.columns.len());
    if gold.rows.len() != predicted.rows.len() {
        return Err(Mismatch::RowCount { gold: gold.rows.len(), predicted: predicted.rows.len() });
    }
    if predicted_width < gold_width {
        return Err(Mismatch::TooFewColumns { gold: gold_width, predicted: predicted_width });
    }
    let gold_rows = normalise(gold, gold_width);
    let predicted_rows = normalise(predicted, predicted_width);
    if gold_rows.is_empty() {
        return Ok(ColumnMatch { mapping: (0..gold_width).collect() });
    }

    let identity: Vec<usize> = (0..gold_width).collect();
    let mut order_only = false;
    if gold_width == predicted_width {
        match rows_match(&gold_rows, &predicted_rows, &identity, order) {
            RowsVerdict::Equal => return Ok(ColumnMatch { mapping: identity }),
            RowsVerdict::OrderDiffers => order_only = true,
            RowsVerdict::Different => {}
        }
    }

    // Candidates: predicted columns whose values equal the gold column's as multisets.
    let column = |rows: &[Vec<Cell>], c: usize| -> Vec<Vec<Cell>> { rows.iter().map(|r| vec![r[c].clone()]).collect() };
    let predicted_columns: Vec<Vec<Vec<Cell>>> = (0..predicted_width).map(|c| column(&predicted_rows, c)).collect();
    let mut candidates = Vec::with_capacity(gold_width);
    for g in 0..gold_width {
        let gold_column = column(&gold_rows, g);
        let found: Vec<usize> = (0..predicted_width).filter(|&p| multiset_eq(&gold_column, &predicted_columns[p], &[0])).collect();
        if found.is_empty() {
            return Err(Mismatch::MissingColumn { position: g + 1, name: gold.columns[g].clone() });
        }
        candidates.push(found);
    }

    let mut search = Search {
        gold: &gold_rows,
        predicted: &predicted_rows,
        candidates: &candidates,
        order,
        tried: 0,
        order_only,
        used: vec![false; predicted_width],
        mapping: Vec::with_capacity(gold_width),
    };
    if search.assign() {
        return Ok(ColumnMatch { mapping: search.mapping });
    }
    Err(if search.order_only { Mismatch::Order } else { Mismatch::Rows })
}

/// Rows of `result` as cells, each row padded or cut to `width` (JSON rows from a host are
/// expected to be as wide as the column list; a short row reads as `NULL`s).
fn normalise(result: &ResultSet, width: usize) -> Vec<Vec<Cell>> {
    result.rows.iter().map(|row| (0..width).map(|c| row.get(c).map_or(Cell::Null, Cell::from_json)).collect()).collect()
}

enum RowsVerdict {
    Equal,
    OrderDiffers,
    Different,
}

/// Compares gold rows with the predicted rows projected through `mapping`.
fn rows_match(gold: &[Vec<Cell>], predicted: &[Vec<Cell>], mapping: &[usize], order: RowOrder) -> RowsVerdict {
    let projected: Vec<Vec<Cell>> = predicted.iter().map(|row| mapping.iter().map(|&c| row[c].clone()).collect()).collect();
    let all: Vec<usize> = (0..mapping.len()).collect();
    if order == RowOrder::Ordered && gold.iter().zip(&projected).all(|(g, p)| row_eq(g, p, &all)) {
        return RowsVerdict::Equal;
    }
    match (multiset_eq(gold, &projected, &all), order) {
        (true, RowOrder::Unordered) => RowsVerdict::Equal,
        (true, RowOrder::Ordered) => RowsVerdict::OrderDiffers,
        (false, _) => RowsVerdict::Different,
    }
}

fn row_eq(a: &[Cell], b: &[Cell], columns: &[usize]) -> bool {
    columns.iter().all(|&c| a[c].matches(&b[c]))
}

/// Whether two equally long lists of rows are equal as multisets (on `columns`).
///
/// Both are sorted in the canonical order and compared pairwise; when that fails (tolerant
/// equality can sort near-equal numbers differently), rows are bucketed by their exact part
/// (all but the numbers) and matched greedily within each bucket.
fn multiset_eq(a: &[Vec<Cell>], b: &[Vec<Cell>], columns: &[usize]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    fn sorted<'r>(rows: &'r [Vec<Cell>], columns: &[usize]) -> Vec<&'r Vec<Cell>> {
        let mut refs: Vec<&Vec<Cell>> = rows.iter().collect();
        refs.sort_by(|x, y| columns.iter().map(|&c| x[c].canonical_cmp(&y[c])).find(|o| o.is_ne()).unwrap_or(Ordering::Equal));
        refs
    }
    let (sa, sb) = (sorted(a, columns), sorted(b, columns));
    if sa.iter().zip(&sb).all(|(x, y)| row_eq(x, y, columns)) {
        return true;
    }
    let has_fraction = |rows: &[Vec<Cell>]| rows.iter().any(|r| columns.iter().any(|&c| matches!(r[c], Cell::Number { int: None, .. })));
    if !has_fraction(a) && !has_fraction(b) {
        // Without tolerant values, sorted comparison is exact.
        return false;
    }
    fn key<'r>(row: &'r [Cell], columns: &[usize]) -> Vec<ExactKey<'r>> {
        columns.iter().map(|&c| row[c].exact_key()).collect()
    }
    let mut buckets: HashMap<Vec<ExactKey<'_>>, Vec<&Vec<Cell>>> = HashMap::new();
    for row in b {
        buckets.entry(key(row, columns)).or_default().push(row);
    }
    for row in a {
        let Some(bucket) = buckets.get_mut(&key(row, columns)) else {
            return false;
        };
        match bucket.iter().position(|other| row_eq(row, other, columns)) {
            Some(i) => {
                bucket.swap_remove(i);
            }
            None => return false,
        }
    }
    true
}

/// Backtracking search for a one-to-one assignment of gold columns to predicted columns.
struct Search<'a> {
    gold: &'a [Vec<Cell>],
    predicted: &'a [Vec<Cell>],
    candidates: &'a [Vec<usize>],
    order: RowOrder,
    tried: usize,
    order_only: bool,
    used: Vec<bool>,
    mapping: Vec<usize>,
}

impl Search<'_> {
    fn assign(&mut self) -> bool {
        let g = self.mapping.len();
        if g == self.candidates.len() {
            self.tried += 1;
            return match rows_match(self.gold, self.predicted, &self.mapping, self.order) {
                RowsVerdict::Equal => true,
                RowsVerdict::OrderDiffers => {
                    self.order_only = true;
                    false
                }
                RowsVerdict::Different => false,
            };
        }
        for &p in &self.candidates[g] {
            if self.tried >= MAX_ASSIGNMENTS {
                return false;
            }
            if self.used[p] {
                continue;
            }
            self.used[p] = true;
            self.mapping.push(p);
            if self.assign() {
                return true;
            }
            self.mapping.pop();
            self.used[p] = false;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numeric_text_shapes() {
        let n = |s: &str| parse_numeric_text(s);
        assert_eq!(n("1.00"), Some(Cell::Number { value: 1.0, int: Some(1) }));
        assert_eq!(n("-0.50"), Some(Cell::Number { value: -0.5, int: None }));
        assert_eq!(n(".5"), Some(Cell::Number { value: 0.5, int: None }));
        assert_eq!(n("1e3").map(|c| c.matches(&Cell::from_json(&json!(1000)))), Some(true));
        for text in ["inf", "NaN", "1.2.3", "", "-", "12a", "1e", "2023-01-05", "0x10"] {
            assert_eq!(n(text), None, "{text}");
        }
    }

    #[test]
    fn integers_compare_exactly_fractions_tolerantly() {
        let c = |v: Value| Cell::from_json(&v);
        assert!(!c(json!(1_000_000)).matches(&c(json!(1_000_001))));
        assert!(c(json!(3.3333333333333335)).matches(&c(json!("3.3333333333333333"))));
        assert!(!c(json!(3.33)).matches(&c(json!(3.3333))));
        assert!(c(json!(i64::MAX)).matches(&c(json!(i64::MAX.to_string()))));
        assert!(!c(json!(i64::MAX)).matches(&c(json!((i64::MAX - 1).to_string()))));
    }
}
