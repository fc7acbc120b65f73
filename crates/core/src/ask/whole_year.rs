//! A year the question names, compared as one of its days: "How many inspections were there in
//! 2023?" written `WHERE inspected_on = '2023-01-01'` counts the inspections of New Year's Day,
//! and the result, one row, looks like an answer. [`widen`] writes such a comparison as the
//! year it stands for: `(inspected_on >= '2023-01-01' AND inspected_on < '2024-01-01')`, which
//! holds for dates and timestamps alike and keeps an index on the column usable.
//!
//! Only where nothing else can be meant: the question writes the year (a number from 1000 to
//! 2999) and no month, week, day, quarter or date; the query compares a column, with `=`, to the
//! first or the last day of that year (`'2023-12-31'`, `'2023-01-01'::date`, `DATE
//! '2023-01-01'`, midnight allowed), as a condition of its own (after `WHERE`, `AND`, `OR`,
//! `ON`, `WHEN`, `HAVING`, `NOT` or `(`, and not followed by an operator). Anything else comes
//! back unchanged, as does a statement the tokenizer cannot read.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use crate::sqledit::{apply, Tokens};

/// Words of a question that name a part of a year, or a day: with one of them the question
/// may mean one day.
const PARTS_OF_A_YEAR: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "day",
    "days",
    "date",
    "dates",
    "daily",
    "week",
    "weeks",
    "weekly",
    "month",
    "months",
    "monthly",
    "quarter",
    "quarters",
    "quarterly",
    "eve",
    "today",
    "yesterday",
    "tomorrow",
    "christmas",
    "midnight",
    "noon",
];

/// One comparison written as its year: the text that was there and the text written instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Widening {
    pub from: String,
    pub to: String,
}

/// `sql` with each comparison of a column with the first or last day of a year `question`
/// names, and nothing finer, written as that year (see the [module documentation](self));
/// `None` when there is none.
pub fn widen(question: &str, sql: &str) -> Option<(String, Vec<Widening>)> {
    let words = crate::text::plain_words(question);
    if words.iter().any(|w| PARTS_OF_A_YEAR.contains(&w.as_str())) || writes_a_date(question) {
        return None;
    }
    let years: Vec<u32> = words
        .iter()
        .filter(|w| w.len() == 4 && w.chars().all(|c| c.is_ascii_digit()))
        .filter_map(|w| w.parse().ok())
        .filter(|y| (1000..3000).contains(y))
        .collect();
    if years.is_empty() {
        return None;
    }
    let mut t = Tokens::read(sql)?;
    let opens = [Keyword::WHERE, Keyword::AND, Keyword::OR, Keyword::ON, Keyword::WHEN, Keyword::HAVING, Keyword::NOT];
    let mut edits: Vec<(usize, usize, Widening)> = Vec::new();
    for e in 1..t.len() {
        if !matches!(t.at(e), Some(Token::Eq)) {
            continue;
        }
        let Some(s) = t.condition_column(e, &opens) else { continue };
        // The day: a string, perhaps cast to a date or timestamp, or a typed literal.
        let (day, r) = match (t.at(e + 1), t.at(e + 2), t.at(e + 3)) {
            (Some(Token::SingleQuotedString(d)), Some(Token::DoubleColon), Some(Token::Word(w))) if is_date_type(&w.value) => {
                (d.clone(), e + 3)
            }
            (Some(Token::Word(w)), Some(Token::SingleQuotedString(d)), _) if is_date_type(&w.value) && w.quote_style.is_none() => {
                (d.clone(), e + 2)
            }
            (Some(Token::SingleQuotedString(d)), ..) => (d.clone(), e + 1),
            _ => continue,
        };
        let ends = match t.at(r + 1) {
            None | Some(Token::SemiColon | Token::RParen) => true,
            Some(Token::Word(w)) => w.quote_style.is_none() && w.keyword != Keyword::NoKeyword,
            _ => false,
        };
        let Some(year) = first_or_last_day(&day).filter(|y| years.contains(y)) else { continue };
        if !ends {
            continue;
        }
        let (_, _, column) = t.text(s, e - 1);
        let (_, _, value) = t.text(e + 1, r);
        let lower = value.replacen(&day, &format!("{year}-01-01"), 1);
        let upper = value.replacen(&day, &format!("{}-01-01", year + 1), 1);
        let to = format!("({column} >= {lower} AND {column} < {upper})");
        let (start, end, from) = t.text(s, r);
        edits.push((start, end, Widening { from: from.to_string(), to }));
    }
    if edits.is_empty() {
        return None;
    }
    let out = apply(sql, &edits.iter().map(|(start, end, w)| (*start, *end, w.to.as_str())).collect::<Vec<_>>());
    Some((out, edits.into_iter().map(|(_, _, w)| w).collect()))
}

fn is_date_type(name: &str) -> bool {
    ["date", "timestamp", "timestamptz"].contains(&name.to_lowercase().as_str())
}

/// Whether the question writes a date or a month in digits (`2023-04-01`, `4/1/2023`, `2023-04`).
fn writes_a_date(question: &str) -> bool {
    let chars: Vec<char> = question.chars().collect();
    chars.windows(3).any(|w| w[0].is_ascii_digit() && matches!(w[1], '-' | '/' | '.') && w[2].is_ascii_digit())
}

/// The year of `day` when it is the first or the last day of that year, at midnight if a time
/// is written (`2023-01-01`, `2023-12-31 00:00:00`).
fn first_or_last_day(day: &str) -> Option<u32> {
    let day = day.trim();
    let (date, time) = day.split_once([' ', 'T']).unwrap_or((day, ""));
    if !["", "00:00", "00:00:00"].contains(&time.trim()) {
        return None;
    }
    let (year, rest) = date.split_at_checked(4)?;
    if !year.chars().all(|c| c.is_ascii_digit()) || !["-01-01", "-12-31"].contains(&rest) {
        return None;
    }
    year.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widened(q: &str, sql: &str) -> Option<String> {
        widen(q, sql).map(|(s, _)| s)
    }

    #[test]
    fn one_day_of_a_year_the_question_names_is_compared_as_the_year() {
        let q = "How many inspections were there in 2023?";
        assert_eq!(
            widened(q, "SELECT COUNT(*) FROM inspections WHERE inspected_on = '2023-01-01'").as_deref(),
            Some("SELECT COUNT(*) FROM inspections WHERE (inspected_on >= '2023-01-01' AND inspected_on < '2024-01-01')")
        );
        assert_eq!(
            widened(q, "SELECT count(*) FROM inspections i WHERE i.inspected_on = '2023-12-31' AND i.grade = 'C';").as_deref(),
            Some("SELECT count(*) FROM inspections i WHERE (i.inspected_on >= '2023-01-01' AND i.inspected_on < '2024-01-01') AND i.grade = 'C';")
        );
        // Cast or typed, the literal keeps its form.
        let (sql, w) = widen(
            "Which reviewers gave 5 stars in reviews posted in 2023?",
            "SELECT DISTINCT T1.reviewer FROM reviews AS T1 WHERE T1.stars = 5 AND T1.review_date = '2023-01-01'::date",
        )
        .unwrap();
        assert!(sql.ends_with("(T1.review_date >= '2023-01-01'::date AND T1.review_date < '2024-01-01'::date)"), "{sql}");
        assert_eq!(w, vec![Widening { from: "T1.review_date = '2023-01-01'::date".into(), to: sql[sql.find('(').unwrap()..].into() }]);
        assert_eq!(
            widened("Sales in 2021?", "SELECT sum(x) FROM s WHERE (d = DATE '2021-12-31 00:00:00')").as_deref(),
            Some("SELECT sum(x) FROM s WHERE ((d >= DATE '2021-01-01' AND d < DATE '2022-01-01'))")
        );
    }

    #[test]
    fn anything_else_is_left_as_written() {
        let sql = "SELECT count(*) FROM t WHERE d = '2023-01-01'";
        // The question may mean the day, or names no year, or another.
        for q in [
            "How many on January 1, 2023?",
            "How many on 2023-01-01?",
            "How many on the first day of 2023?",
            "How many in the first quarter of 2023?",
            "How many in 2022?",
            "How many are there?",
            "How many in May 2023?",
        ] {
            assert_eq!(widened(q, sql), None, "{q}");
        }
        let q = "How many in 2023?";
        for sql in [
            // Another day of the year, another operator, the value on the left, an expression.
            "SELECT count(*) FROM t WHERE d = '2023-06-15'",
            "SELECT count(*) FROM t WHERE d >= '2023-01-01'",
            "SELECT count(*) FROM t WHERE '2023-01-01' = d",
            "SELECT count(*) FROM t WHERE d + 1 = '2023-01-01'",
            "SELECT count(*) FROM t WHERE d = '2023-01-01'::date + 1",
            "SELECT count(*) FROM t WHERE d = '2023-01-01 10:00'",
            "SELECT count(*) FROM t WHERE extract(year FROM d) = 2023",
            "SELECT 'unclosed",
        ] {
            assert_eq!(widened(q, sql), None, "{sql}");
        }
    }
}
