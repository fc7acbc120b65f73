//! Charts of query results: whether a result suits a chart, and the chart as SVG.
//!
//! A result suits a chart when it has one column to put along the x axis — a time (dates,
//! timestamps, months, or a number named like a time unit: `year`, `month`, ...) or a category
//! (text) — and one or more numeric columns to draw against it, in 2 to [`MAX_POINTS`] rows
//! (at most [`MAX_BARS`] categories). A time gives a line chart, categories a bar chart.
//! Anything else gets no chart, with the reason ([`NoChart`]): a chart that misreads a result
//! is worse than none. The shadow tables' DBA report draws its score charts with [`line_svg`].

mod svg;
#[cfg(test)]
mod tests;

use serde_json::Value;

pub use svg::{line_svg, svg};

/// Most points a line chart draws (rows of a time series).
pub const MAX_POINTS: usize = 1000;
/// Most bars a bar chart draws (categories).
pub const MAX_BARS: usize = 40;
/// Most numeric series drawn together.
pub const MAX_SERIES: usize = 6;
/// The largest magnitude drawn: an axis over larger numbers overflows as it is laid out.
pub const LARGEST: f64 = 1e300;

/// A chart planned from a result: what goes along x, and the series drawn against it.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    /// The x column's name.
    pub x_label: String,
    pub x: XAxis,
    /// One per numeric column: its name and a value per x (None where the cell was NULL).
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// What lies along the x axis, in the order drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Points in time, ascending, as the unit says.
    Time { unit: TimeUnit, points: Vec<f64> },
    /// Categories, in the result's order.
    Categories(Vec<String>),
}

/// How a time axis is counted and labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// A plain number named like a time unit (a year, a month number, an hour).
    Number,
    /// Days since 1970-01-01 (dates and timestamps; fractions are the time of day).
    Days,
}

/// Why a result gets no chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoChart {
    TooFewRows(usize),
    TooManyRows { rows: usize, most: usize },
    NoAxis,
    TwoAxes(String, String),
    NoNumbers,
    Repeated(String),
    OutOfRange,
}

impl std::fmt::Display for NoChart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoChart::TooFewRows(n) => write!(f, "a chart needs at least 2 rows; the result has {n}"),
            NoChart::TooManyRows { rows, most } => write!(f, "the result has {rows} rows; a chart of it draws at most {most}"),
            NoChart::NoAxis => f.write_str("no column is a time or a category to put along the x axis"),
            NoChart::TwoAxes(a, b) => {
                write!(f, "both \"{a}\" and \"{b}\" could go along the x axis; select one of them with the numbers")
            }
            NoChart::NoNumbers => f.write_str("no numeric column to draw"),
            NoChart::Repeated(v) => write!(f, "the value {v:?} appears twice along the x axis; aggregate the rows first"),
            NoChart::OutOfRange => write!(f, "a number is too large to draw (beyond ±{LARGEST:e})"),
        }
    }
}

/// What a column holds, from its non-null cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Number,
    /// Text that reads as a date or timestamp.
    Time,
    Text,
    /// Booleans, JSON, mixed cells, or nothing but NULLs.
    Other,
}

/// The chart of a result (columns and rows as pg_ask returns them: numbers as JSON numbers,
/// everything else as text), titled `title` or, when it is empty, by what it draws ("reviews by
/// year"); or why the result gets none.
pub fn plan(title: &str, columns: &[String], rows: &[Vec<Value>]) -> Result<Chart, NoChart> {
    if rows.len() < 2 {
        return Err(NoChart::TooFewRows(rows.len()));
    }
    let kinds: Vec<Kind> = (0..columns.len()).map(|c| kind_of(rows.iter().map(|r| r.get(c).unwrap_or(&Value::Null)))).collect();
    let texts: Vec<usize> = (0..columns.len()).filter(|&c| matches!(kinds[c], Kind::Time | Kind::Text)).collect();
    let x = match texts.as_slice() {
        [one] => *one,
        [a, b, ..] => return Err(NoChart::TwoAxes(columns[*a].clone(), columns[*b].clone())),
        [] => (0..columns.len())
            .find(|&c| kinds[c] == Kind::Number && time_unit_name(&columns[c]) && integral(rows, c))
            .ok_or(NoChart::NoAxis)?,
    };
    let numbers: Vec<usize> =
        (0..columns.len()).filter(|&c| c != x && kinds[c] == Kind::Number && !identifier_name(&columns[c])).take(MAX_SERIES).collect();
    if numbers.is_empty() {
        return Err(NoChart::NoNumbers);
    }
    let cell = |r: &Vec<Value>, c: usize| r.get(c).cloned().unwrap_or(Value::Null);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let axis = match kinds[x] {
        Kind::Text => {
            if rows.len() > MAX_BARS {
                return Err(NoChart::TooManyRows { rows: rows.len(), most: MAX_BARS });
            }
            let names: Vec<String> = rows.iter().map(|r| label_of(&cell(r, x))).collect();
            if let Some(dup) = first_repeat(&names) {
                return Err(NoChart::Repeated(dup));
            }
            XAxis::Categories(names)
        }
        kind => {
            if rows.len() > MAX_POINTS {
                return Err(NoChart::TooManyRows { rows: rows.len(), most: MAX_POINTS });
            }
            let unit = if kind == Kind::Time { TimeUnit::Days } else { TimeUnit::Number };
            let at = |r: &Vec<Value>| match unit {
                TimeUnit::Days => cell(r, x).as_str().and_then(days_of),
                TimeUnit::Number => cell(r, x).as_f64(),
            };
            // Rows without a time cannot be placed: they are left out.
            order.retain(|&i| at(&rows[i]).is_some());
            if order.len() < 2 {
                return Err(NoChart::TooFewRows(order.len()));
            }
            order.sort_by(|&a, &b| at(&rows[a]).unwrap_or(0.0).total_cmp(&at(&rows[b]).unwrap_or(0.0)));
            let points: Vec<f64> = order.iter().map(|&i| at(&rows[i]).unwrap_or(0.0)).collect();
            if let Some(w) = points.windows(2).position(|w| w[0] == w[1]) {
                return Err(NoChart::Repeated(label_of(&cell(&rows[order[w]], x))));
            }
            XAxis::Time { unit, points }
        }
    };
    let series: Vec<Series> = numbers
        .iter()
        .map(|&c| Series { name: columns[c].clone(), values: order.iter().map(|&i| cell(&rows[i], c).as_f64()).collect() })
        .collect();
    let xs: &[f64] = match &axis {
        XAxis::Time { points, .. } => points,
        XAxis::Categories(_) => &[],
    };
    let too_large = |v: f64| !v.is_finite() || v.abs() > LARGEST;
    if xs.iter().copied().any(too_large) || series.iter().flat_map(|s| s.values.iter().flatten()).copied().any(too_large) {
        return Err(NoChart::OutOfRange);
    }
    let title = match title.trim() {
        "" => format!("{} by {}", numbers.iter().map(|&c| columns[c].as_str()).collect::<Vec<_>>().join(" and "), columns[x]),
        given => given.to_owned(),
    };
    Ok(Chart { title, x_label: columns[x].clone(), x: axis, series })
}

fn kind_of<'a>(cells: impl Iterator<Item = &'a Value>) -> Kind {
    let mut kind = None;
    for v in cells {
        let k = match v {
            Value::Null => continue,
            Value::Number(_) => Kind::Number,
            Value::String(s) if days_of(s).is_some() => Kind::Time,
            Value::String(_) => Kind::Text,
            _ => return Kind::Other,
        };
        kind = match (kind, k) {
            (None, k) => Some(k),
            (Some(a), b) if a == b => Some(a),
            // Some text reads as a date and some does not: text.
            (Some(Kind::Time | Kind::Text), Kind::Time | Kind::Text) => Some(Kind::Text),
            _ => return Kind::Other,
        };
    }
    kind.unwrap_or(Kind::Other)
}

fn integral(rows: &[Vec<Value>], c: usize) -> bool {
    rows.iter().filter_map(|r| r.get(c).and_then(Value::as_f64)).all(|v| v.fract() == 0.0)
}

/// A number column named like a time unit goes along the x axis: `year`, `order_month`,
/// `hour_of_day`, `yr`.
fn time_unit_name(name: &str) -> bool {
    const UNITS: [&str; 9] = ["year", "yr", "month", "week", "day", "hour", "quarter", "decade", "minute"];
    crate::text::identifier_words(name).iter().any(|w| UNITS.iter().any(|u| w == u || w.strip_suffix('s') == Some(u)))
}

/// Keys are not measures: `id`, `customer_id` are not drawn.
fn identifier_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "id" || n.ends_with("_id") || n == "oid"
}

fn label_of(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn first_repeat(names: &[String]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    names.iter().find(|n| !seen.insert(n.as_str())).cloned()
}

/// Days since 1970-01-01 of a date or timestamp as PostgreSQL writes it (`2024-03-01`,
/// `2024-03-01 12:30:00`, `2024-03-01 12:30:00.5+02`, `2024-03-01T12:30:00Z`) or a month
/// (`2024-03`); the offset is ignored (a chart's axis, not arithmetic).
pub fn days_of(s: &str) -> Option<f64> {
    let s = s.trim();
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        (!part.is_empty() && part.bytes().all(|c| c.is_ascii_digit())).then(|| part.parse().ok())?
    };
    if b.len() < 7 || b[4] != b'-' {
        return None;
    }
    let (y, m) = (digits(0..4)?, digits(5..7)?);
    let (d, rest) = if b.len() == 7 {
        (1, "")
    } else {
        if b.get(7) != Some(&b'-') {
            return None;
        }
        (digits(8..10)?, s.get(10..)?)
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut day = days_from_civil(y, m, d) as f64;
    if !rest.is_empty() {
        let t = rest.strip_prefix([' ', 'T'])?;
        let (hh, mm) = (t.get(0..2)?.parse::<u32>().ok()?, t.get(3..5)?.parse::<u32>().ok()?);
        if t.as_bytes().get(2) != Some(&b':') || hh > 24 || mm > 59 {
            return None;
        }
        let ss = t.get(6..8).and_then(|x| x.parse::<u32>().ok()).unwrap_or(0);
        day += (hh * 3600 + mm * 60 + ss) as f64 / 86_400.0;
    }
    Some(day)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count: (year, month, day).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
