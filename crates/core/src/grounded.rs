//! Written answers grounded in the rows.
//!
//! A model's written answer may state only what the rows or the question say. [`check`] reads
//! the numbers and names an answer states and looks each one up: a number must be a value of
//! the rows (as written there, or rounded to the precision the answer shows), a number inside
//! a cell's text, a number of the question or of the SQL that ran (`LIMIT 5`, a year it
//! filtered on), or the number of rows; a name (a capitalised word inside a sentence) must
//! appear in a cell, a column name, the question or the SQL (`'Los Angeles'` of a question about
//! LA). An answer over a single value must say that value (in digits, or as a word up to
//! twenty).
//!
//! When the rows say the answer by themselves, no model writes it: [`said_by_rows`] says
//! nothing found, one value or one row with each value's column meaning (`count: 7`), and a few
//! short rows as a short list; answers of one kind come in one shape whatever the model would
//! have written. When the model wrote an answer and the check fails, [`from_rows`] answers in
//! the same shapes, and more rows are returned as rows.

use serde::Serialize;
use serde_json::Value;

use crate::rows::ResultSet;

/// Rows at most that [`from_rows`] writes as a list; more are returned as rows.
pub const LIST_ROWS: usize = 5;
/// Columns at most of a row in such a list.
pub const LIST_COLUMNS: usize = 3;
/// Columns at most of a result of one row that is said as `name: value, name: value`.
pub const ROW_COLUMNS: usize = 6;
/// Characters at most of one cell said without the model.
pub const LIST_CELL_CHARS: usize = 80;

/// Why a written answer is not grounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Ungrounded {
    /// It states numbers found neither in the rows nor in the question.
    Numbers { unsupported: Vec<String> },
    /// It states names found neither in the rows nor in the question.
    Names { unsupported: Vec<String> },
    /// The result is one value and the answer does not say it.
    MissesTheValue { value: String },
}

/// Whether `answer` states only what `result`, the `sql` that gave it and `question` say (see
/// the module's text).
pub fn check(answer: &str, question: &str, sql: &str, result: &ResultSet) -> Result<(), Ungrounded> {
    check_over(answer, question, sql, std::slice::from_ref(result))
}

/// [`check`] over the rows of several statements (a plan's steps; `sql` holds them all).
pub fn check_over(answer: &str, question: &str, sql: &str, results: &[ResultSet]) -> Result<(), Ungrounded> {
    let cells: Vec<&Value> = results.iter().flat_map(|r| r.rows.iter().flatten()).collect();
    let mut known_numbers: Vec<f64> = numbers_in(question).into_iter().chain(numbers_in(sql)).map(|n| n.value).collect();
    let mut known_text = format!("{}\n{}", question.to_lowercase(), sql.to_lowercase());
    for r in results {
        if r.rows.len() > 1 && !r.truncated {
            known_numbers.push(r.rows.len() as f64);
        }
        for c in &r.columns {
            known_text.push('\n');
            known_text.push_str(&c.to_lowercase().replace('_', " "));
        }
    }
    for v in &cells {
        match v {
            Value::Number(n) => known_numbers.extend(n.as_f64()),
            Value::String(s) => {
                known_numbers.extend(numbers_in(s).into_iter().map(|n| n.value));
                known_text.push('\n');
                known_text.push_str(&s.to_lowercase());
            }
            Value::Bool(_) | Value::Null => {}
            other => {
                let s = other.to_string();
                known_numbers.extend(numbers_in(&s).into_iter().map(|n| n.value));
                known_text.push('\n');
                known_text.push_str(&s.to_lowercase());
            }
        }
    }

    let unsupported: Vec<String> =
        numbers_in(answer).into_iter().filter(|n| !known_numbers.iter().any(|k| n.matches(*k))).map(|n| n.text).collect();
    if !unsupported.is_empty() {
        return Err(Ungrounded::Numbers { unsupported });
    }
    let unsupported: Vec<String> = names_in(answer).into_iter().filter(|w| !known_text.contains(&w.to_lowercase())).collect();
    if !unsupported.is_empty() {
        return Err(Ungrounded::Names { unsupported });
    }
    if let [only] = results {
        if let Some(value) = single_value(only) {
            if !says_value(answer, value) {
                return Err(Ungrounded::MissesTheValue { value: cell_text(value) });
            }
        }
    }
    Ok(())
}

/// The one value of a one-row, one-column result, when it is not null.
pub fn single_value(result: &ResultSet) -> Option<&Value> {
    match (result.columns.len(), result.rows.as_slice()) {
        (1, [row]) if !result.truncated => row.first().filter(|v| !v.is_null()),
        _ => None,
    }
}

/// Whether `answer` says `value`: a number as a number of the answer (rounded as shown), a
/// boolean in any words (not checked), text as written (case aside).
fn says_value(answer: &str, value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            let v = n.as_f64().unwrap_or(f64::NAN);
            numbers_in(answer).iter().any(|a| a.matches(v)) || says_in_words(answer, v)
        }
        Value::String(s) => {
            let s = s.trim();
            // A long text (a description, a list) is not expected back word for word.
            s.chars().count() > 60 || answer.to_lowercase().contains(&s.to_lowercase()) || {
                // A date or a number kept as text: its numbers said.
                let inner = numbers_in(s);
                !inner.is_empty() && inner.iter().all(|n| numbers_in(answer).iter().any(|a| a.matches(n.value)))
            }
        }
        _ => true,
    }
}

/// Whether `answer` writes the whole number `v` (zero to twenty) as a word: "One order ...".
fn says_in_words(answer: &str, v: f64) -> bool {
    const WORDS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    if v.fract() != 0.0 || !(0.0..=20.0).contains(&v) {
        return false;
    }
    let word = WORDS[v as usize];
    answer.split(|c: char| !c.is_alphabetic()).any(|w| w.eq_ignore_ascii_case(word) || (v == 0.0 && w.eq_ignore_ascii_case("no")))
}

/// A number as an answer writes it.
#[derive(Debug, Clone, PartialEq)]
struct Number {
    text: String,
    value: f64,
    /// Digits after the decimal point.
    decimals: u32,
}

impl Number {
    /// Whether this number says `known`: equal, or `known` rounded to this number's decimals
    /// (`12.35` says 12.3456, `12` says 12.4), or `known` as a share in percent (`12.5%`
    /// says 0.125).
    fn matches(&self, known: f64) -> bool {
        let tolerance = 0.5 * 10f64.powi(-(self.decimals as i32)) + 1e-9;
        (self.value - known).abs() <= tolerance.max(known.abs() * 1e-12)
            || (self.text.ends_with('%') && (self.value - known * 100.0).abs() <= tolerance)
    }
}

/// The numbers `text` states: digits with an optional sign, thousands separators and decimals,
/// and a percent sign. Digits inside a word (`T1`, `3rd`, `covid19`) are not stated numbers.
fn numbers_in(text: &str) -> Vec<Number> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts = c.is_ascii_digit() && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == '.'));
        if !starts {
            i += 1;
            continue;
        }
        let negative = i > 0 && chars[i - 1] == '-' && (i < 2 || !chars[i - 2].is_alphanumeric());
        let mut j = i;
        let mut digits = String::new();
        let mut decimals = 0u32;
        let mut seen_point = false;
        while j < chars.len() {
            let d = chars[j];
            if d.is_ascii_digit() {
                digits.push(d);
                if seen_point {
                    decimals += 1;
                }
                j += 1;
            } else if d == ','
                && !seen_point
                && chars.get(j + 1..j + 4).is_some_and(|s| s.iter().all(char::is_ascii_digit))
                && !chars.get(j + 4).is_some_and(char::is_ascii_digit)
            {
                // A thousands separator: exactly three digits follow.
                j += 1;
            } else if d == '.' && !seen_point && chars.get(j + 1).is_some_and(char::is_ascii_digit) {
                seen_point = true;
                digits.push('.');
                j += 1;
            } else {
                break;
            }
        }
        // Digits followed by letters are part of a word ("3rd", "2nd", "5G"), not a number.
        let glued = chars.get(j).is_some_and(|c| c.is_alphabetic());
        let percent = chars.get(j) == Some(&'%');
        if !glued {
            if let Ok(mut value) = digits.parse::<f64>() {
                if negative {
                    value = -value;
                }
                let mut text: String = chars[i..j].iter().collect();
                if negative {
                    text.insert(0, '-');
                }
                if percent {
                    text.push('%');
                }
                out.push(Number { text, value, decimals });
            }
        }
        i = j.max(i + 1);
    }
    out
}

/// Words an answer uses as names: capitalised words that do not begin a sentence, and are not
/// one of the few capitalised words English writes anywhere (`I`, month and day names are
/// names too and are checked).
fn names_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let word: String = raw.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
        let starts_upper = word.chars().next().is_some_and(char::is_uppercase);
        let is_name = starts_upper && !sentence_start && word != "I" && word.chars().any(char::is_lowercase) || {
            // An acronym of two or more capitals inside a sentence (`LA`, `USA`).
            !sentence_start && word.chars().count() >= 2 && word.chars().all(|c| c.is_uppercase())
        };
        if is_name && !out.contains(&word) {
            out.push(word);
        }
        sentence_start = raw.ends_with(['.', '!', '?', ':']) || raw.starts_with(['-', '*', '•']);
        if raw.trim_start_matches(['-', '*', '•']).is_empty() {
            sentence_start = true;
        }
    }
    out
}

/// What [`from_rows`] made of the rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromRows {
    /// One value, said with its column's meaning.
    Value(String),
    /// A few rows as a short list.
    List(String),
    /// The rows are the answer.
    Rows,
}

impl FromRows {
    /// The trace's word for it.
    pub fn as_str(&self) -> &'static str {
        match self {
            FromRows::Value(_) => "value",
            FromRows::List(_) => "list",
            FromRows::Rows => "rows",
        }
    }
}

/// An answer written from the rows alone, for a written answer that does not hold: what
/// [`said_by_rows`] says, a single value of any length with its column's meaning, and otherwise
/// the rows.
pub fn from_rows(result: &ResultSet) -> FromRows {
    if let Some(v) = single_value(result) {
        return FromRows::Value(labelled(&result.columns[..1], std::slice::from_ref(v)));
    }
    said_by_rows(result).unwrap_or(FromRows::Rows)
}

/// The answer when the rows say it by themselves, with no model to write it: nothing found
/// (no rows), one row of at most [`ROW_COLUMNS`] short values (`count: 7`, `avg rating: 4.3,
/// reviews: 12`), or at most [`LIST_ROWS`] rows of at most [`LIST_COLUMNS`] short values as a
/// short list. `None` when a model should read them: a long value, more or wider rows, a result
/// cut at the row or size limit.
pub fn said_by_rows(result: &ResultSet) -> Option<FromRows> {
    if result.truncated || result.size_cut {
        return None;
    }
    if result.rows.is_empty() {
        return Some(FromRows::Value("Nothing was found.".to_string()));
    }
    let short = |width: usize| {
        result.columns.len() <= width && result.rows.iter().flatten().all(|v| cell_text(v).chars().count() <= LIST_CELL_CHARS)
    };
    if let [row] = result.rows.as_slice() {
        return short(ROW_COLUMNS).then(|| FromRows::Value(labelled(&result.columns, row)));
    }
    if result.rows.len() > LIST_ROWS || !short(LIST_COLUMNS) {
        return None;
    }
    let labels: Vec<String> = result.columns.iter().map(|c| meaning(c)).collect();
    let lines: Vec<String> = result
        .rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row.iter().map(cell_text).collect();
            match cells.as_slice() {
                [one] => format!("- {one}"),
                [first, rest @ ..] => {
                    let rest: Vec<String> =
                        rest.iter().zip(&labels[1..]).map(|(v, l)| if l.is_empty() { v.clone() } else { format!("{l}: {v}") }).collect();
                    format!("- {first} ({})", rest.join(", "))
                }
                [] => "-".to_string(),
            }
        })
        .collect();
    Some(FromRows::List(lines.join("\n")))
}

/// One row's values, each after its column's meaning: `count: 7`, `avg rating: 4.3, reviews:
/// 12`; a value of an unnamed column (`?column?`) alone.
fn labelled(columns: &[String], row: &[Value]) -> String {
    let parts: Vec<String> = columns
        .iter()
        .zip(row)
        .map(|(c, v)| {
            let label = meaning(c);
            if label.is_empty() {
                cell_text(v)
            } else {
                format!("{label}: {}", cell_text(v))
            }
        })
        .collect();
    parts.join(", ")
}

/// A column name as words: `num_restaurants` is "num restaurants"; PostgreSQL's names for
/// unnamed items (`?column?`) say nothing.
fn meaning(column: &str) -> String {
    let c = column.trim();
    if c.is_empty() || c == "?column?" {
        return String::new();
    }
    c.replace('_', " ")
}

fn cell_text(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(columns: &[&str], rows: Vec<Vec<Value>>) -> ResultSet {
        ResultSet { columns: columns.iter().map(|c| c.to_string()).collect(), rows, truncated: false, size_cut: false }
    }

    #[test]
    fn a_count_must_be_said() {
        let r = rs(&["num_restaurants"], vec![vec![json!(68)]]);
        assert_eq!(check("1", "how many restaurants are there?", "", &r), Err(Ungrounded::Numbers { unsupported: vec!["1".into()] }));
        assert_eq!(check("There are 68 restaurants.", "how many restaurants are there?", "", &r), Ok(()));
        assert_eq!(check("There are many restaurants.", "how many?", "", &r), Err(Ungrounded::MissesTheValue { value: "68".into() }));
        assert_eq!(from_rows(&r), FromRows::Value("num restaurants: 68".into()));
        assert_eq!(from_rows(&rs(&["count"], vec![vec![json!(68)]])), FromRows::Value("count: 68".into()));
    }

    #[test]
    fn rounding_thousands_and_percent_are_the_same_number() {
        let r = rs(&["avg", "n"], vec![vec![json!(12.3456), json!(1234567)], vec![json!(0.125), json!(2)]]);
        for ok in ["about 12.35 on average", "12.3", "12", "1,234,567 in all", "12.5% of them", "-"] {
            assert_eq!(check(ok, "q", "", &r), Ok(()), "{ok}");
        }
        assert!(check("12.4", "q", "", &r).is_err());
        assert!(check("13", "q", "", &r).is_err());
    }

    #[test]
    fn numbers_of_the_question_dates_and_the_row_count_are_known() {
        let r = rs(&["name", "opened"], vec![vec![json!("Roma"), json!("2021-03-04")], vec![json!("Nizza"), json!("2019-12-01")]]);
        assert_eq!(check("The top 2 are Roma (opened in 2021) and Nizza.", "name the top 2", "", &r), Ok(()));
        assert_eq!(check("Roma and Nizza: 2 restaurants.", "which?", "", &r), Ok(()));
        assert_eq!(check("5 restaurants: Roma and Nizza.", "which?", "", &r), Err(Ungrounded::Numbers { unsupported: vec!["5".into()] }));
        // A word with digits in it is not a stated number.
        assert_eq!(check("Roma, the 3rd one, and T1.", "which?", "", &r), Ok(()));
    }

    #[test]
    fn names_must_come_from_the_rows_or_the_question() {
        let r = rs(&["name", "city"], vec![vec![json!("Roma"), json!("Los Angeles")], vec![json!("Nizza"), json!("LA")]]);
        assert_eq!(check("Italian restaurants in LA: Roma and Nizza.", "which Italian restaurants are in LA?", "", &r), Ok(()));
        assert_eq!(
            check("They are Roma and Venezia, in Los Angeles.", "which Italian restaurants are in LA?", "", &r),
            Err(Ungrounded::Names { unsupported: vec!["Venezia".into()] })
        );
        // A sentence's first word is not a name.
        assert_eq!(check("Nothing else. Two restaurants: Roma and Nizza.", "which?", "", &r), Ok(()));
    }

    #[test]
    fn what_the_sql_asked_for_is_known_and_small_counts_may_be_words() {
        let r = rs(&["name", "rating"], vec![vec![json!("Roma"), json!(4.5)], vec![json!("Trattoria Nona"), json!(4.1)]]);
        let sql = "SELECT r.name, r.rating FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id WHERE c.name = 'Los Angeles' AND r.cuisine = 'Italian'";
        let answer = "Los Angeles has two Italian restaurants: Roma (4.5) and Trattoria Nona (4.1).";
        assert_eq!(check(answer, "which Italian restaurants are in LA?", sql, &r), Ok(()));
        assert!(check(answer, "which Italian restaurants are in LA?", "", &r).is_err());
        let one = rs(&["orders"], vec![vec![json!(1)]]);
        assert_eq!(check("One order of the Los Angeles store has shipped.", "q", "WHERE s.city = 'Los Angeles'", &one), Ok(()));
        assert_eq!(check("No order has shipped.", "q", "", &rs(&["n"], vec![vec![json!(0)]])), Ok(()));
        assert!(check("Two orders have shipped.", "q", "", &one).is_err());
    }

    #[test]
    fn answers_from_rows_by_size() {
        let few = rs(&["name", "city"], vec![vec![json!("Roma"), json!("Los Angeles")], vec![json!("Nizza"), Value::Null]]);
        assert_eq!(from_rows(&few), FromRows::List("- Roma (city: Los Angeles)\n- Nizza (city: null)".into()));
        let one_col = rs(&["name"], vec![vec![json!("Roma")], vec![json!("Nizza")]]);
        assert_eq!(from_rows(&one_col), FromRows::List("- Roma\n- Nizza".into()));
        let many = rs(&["name"], (0..6).map(|i| vec![json!(format!("r{i}"))]).collect());
        assert_eq!(from_rows(&many), FromRows::Rows);
        let wide = rs(&["a", "b", "c", "d"], vec![vec![json!(1), json!(2), json!(3), json!(4)]; 2]);
        assert_eq!(from_rows(&wide), FromRows::Rows);
        assert_eq!(from_rows(&rs(&["n"], vec![])), FromRows::Value("Nothing was found.".into()));
        assert_eq!(from_rows(&rs(&["?column?"], vec![vec![json!(true)]])), FromRows::Value("true".into()));
    }

    #[test]
    fn one_row_is_said_as_named_values() {
        let row = rs(&["avg_rating", "reviews", "?column?"], vec![vec![json!(4.3), json!(12), json!("x")]]);
        assert_eq!(said_by_rows(&row), Some(FromRows::Value("avg rating: 4.3, reviews: 12, x".into())));
        let null = rs(&["avg_rating"], vec![vec![Value::Null]]);
        assert_eq!(said_by_rows(&null), Some(FromRows::Value("avg rating: null".into())));
        let seven = rs(&["a", "b", "c", "d", "e", "f", "g"], vec![(0..7).map(|i| json!(i)).collect()]);
        assert_eq!(said_by_rows(&seven), None);
    }

    #[test]
    fn what_the_rows_say_without_a_model() {
        // A long value, more or wider rows, a cut result: a model reads them.
        let long = rs(&["names"], vec![vec![json!("Kabul, ".repeat(20))]]);
        assert_eq!(said_by_rows(&long), None);
        assert_eq!(from_rows(&long), FromRows::Value(format!("names: {}", "Kabul, ".repeat(20))));
        assert_eq!(said_by_rows(&rs(&["n"], (0..6).map(|i| vec![json!(i)]).collect())), None);
        assert_eq!(said_by_rows(&rs(&["a", "b", "c", "d"], vec![vec![json!(1), json!(2), json!(3), json!(4)]; 2])), None);
        let mut cut = rs(&["n"], vec![vec![json!(1)], vec![json!(2)]]);
        cut.truncated = true;
        assert_eq!(said_by_rows(&cut), None);
        // What they say, they say as from_rows does.
        let few = rs(&["name"], vec![vec![json!("Roma")], vec![json!("Nizza")]]);
        assert_eq!(said_by_rows(&few), Some(from_rows(&few)));
        assert_eq!(said_by_rows(&rs(&["count"], vec![vec![json!(7)]])), Some(FromRows::Value("count: 7".into())));
    }

    #[test]
    fn several_results_are_known_together() {
        let a = rs(&["n"], vec![vec![json!(3)]]);
        let b = rs(&["n"], vec![vec![json!(5)]]);
        assert_eq!(check_over("3 in one, 5 in the other", "compare", "", &[a.clone(), b.clone()]), Ok(()));
        assert!(check_over("8 in all", "compare", "", &[a, b]).is_err());
    }
}
