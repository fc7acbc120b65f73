//! A value the question quotes that the query never uses: `Which authors wrote in both the
//! domain "Machine Learning" and the domain "Data Science"?` answered by a query that compares
//! only with `'Machine Learning'`, or with nothing at all. Such a query ran and returned rows,
//! but not the rows asked for; it is asked again once with the value it left out (the
//! [`super::stage::QUOTED`] stage), and its result answers when no later query runs.
//!
//! Only what the question sets in quotes is read: text between double quotes (straight or
//! curly), or between single quotes that open at the start of a word and close at its end
//! (`today's` is no quote). A quoted value is used when a string or number of the query holds
//! it or is held by it (any case, a `LIKE` pattern's `%` aside: `'J%'` uses "J", `'%IEEE
//! Transactions%'` uses "IEEE Transactions on Pattern Analysis"; a code of one to four letters
//! in order, `'CA'`, uses "California", `'F'` "female"; a number uses the same number written
//! otherwise, "$1,500" as `1500.00`), or when the query names it (a column the question quotes). Value correction comes after: the check reads what the
//! model wrote.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// Longest quoted text read as a value (a longer one is a sentence, not a value).
const LONGEST: usize = 120;

/// The texts `question` sets in quotes, in order, each once.
pub fn quoted(question: &str) -> Vec<String> {
    let chars: Vec<char> = question.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let close = match chars[i] {
            '"' => Some('"'),
            '\u{201c}' => Some('\u{201d}'),
            '\'' | '\u{2018}' if i == 0 || !chars[i - 1].is_alphanumeric() => Some(if chars[i] == '\'' { '\'' } else { '\u{2019}' }),
            _ => None,
        };
        let Some(close) = close else {
            i += 1;
            continue;
        };
        let single = close != '"' && close != '\u{201d}';
        // The closing quote: for single quotes, one that ends a word (not `Mark's`).
        let end = (i + 1..chars.len()).find(|&j| chars[j] == close && (!single || j + 1 == chars.len() || !chars[j + 1].is_alphanumeric()));
        let Some(end) = end else {
            i += 1;
            continue;
        };
        let text: String = chars[i + 1..end].iter().collect();
        let trimmed = text.trim();
        if !trimmed.is_empty() && trimmed.chars().count() <= LONGEST && trimmed == text && !out.iter().any(|o| o == trimmed) {
            out.push(trimmed.to_string());
        }
        i = end + 1;
    }
    out
}

/// The values `question` quotes that `sql` does not use (module docs); empty when it uses
/// them all, quotes none, or cannot be read.
pub fn ignored(question: &str, sql: &str) -> Vec<String> {
    unused(quoted(question), sql)
}

/// The `values` (quoted by the question, or named by it and held by the value memory) that
/// `sql` does not use, as [`ignored`] reads them; empty when it uses them all or cannot be read.
pub fn unused(values: Vec<String>, sql: &str) -> Vec<String> {
    if values.is_empty() {
        return Vec::new();
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else { return Vec::new() };
    let mut written: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for t in tokens {
        match t {
            Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) | Token::NationalStringLiteral(s) => written.push(folded(&s)),
            Token::DollarQuotedString(d) => written.push(folded(&d.value)),
            Token::Number(n, _) => written.push(n),
            Token::Word(w) => names.push(w.value.to_lowercase()),
            _ => {}
        }
    }
    values
        .into_iter()
        .filter(|value| {
            let v = folded(value);
            let named = names.iter().any(|n| *n == v || n.replace('_', " ") == v);
            let number = as_number(&v);
            let held = written.iter().any(|w| {
                if number.is_some() && as_number(w) == number {
                    return true;
                }
                let w = w.trim_matches(|c: char| c == '%' || c.is_whitespace());
                !w.is_empty() && (w == v || w.contains(v.as_str()) || (w.chars().count() >= 3 && v.contains(w)) || abbreviates(w, &v))
            });
            !named && !held
        })
        .collect()
}

/// Whether `code` (one to four letters; one only for a one-word value) is a short form of
/// `value`: its first letter first,
/// its letters in order ('f' for "female", 'ca' for "california", 'tx' for "texas", 'ny' for
/// "new york").
fn abbreviates(code: &str, value: &str) -> bool {
    let n = code.chars().count();
    if !(1..=4).contains(&n) || !code.chars().all(|c| c.is_alphabetic()) || value.chars().count() <= n {
        return false;
    }
    // One letter stands for a word, not for words ('M' is no reading of "Machine Learning").
    if n == 1 && value.contains(' ') {
        return false;
    }
    let mut rest = value.chars();
    code.chars().next() == value.chars().next() && code.chars().all(|c| rest.any(|v| v == c))
}

/// `text` as a number, a currency sign and thousands separators aside ("$1,500.0" is 1500).
fn as_number(text: &str) -> Option<f64> {
    let bare: String = text.trim().trim_start_matches(['$', '€', '£']).chars().filter(|c| *c != ',').collect();
    bare.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// `text` lower-cased, curly apostrophes straight and inner `%` wildcards as spaces, for
/// comparing a literal with a quoted value.
fn folded(text: &str) -> String {
    text.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'").replace('%', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why a query that left out `values` is asked again, as the model reads it.
pub fn reason(values: &[String]) -> String {
    format!("{}, and write the whole query again.", left_out(values))
}

/// What [`reason`] says of the values left out, without what to do next.
pub fn left_out(values: &[String]) -> String {
    let listed = values.iter().map(|v| format!("\"{v}\"")).collect::<Vec<_>>().join(", ");
    let (them, it) = if values.len() == 1 { ("it", "the value") } else { ("them", "the values") };
    format!(
        "the query ran but does not use {it} {listed}, which the question names: compare the columns that hold {them} \
         with {it} as the question writes {them}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_texts_in_double_curly_and_single_quotes() {
        assert_eq!(
            quoted(r#"Which authors wrote in both the domain "Machine Learning" and the domain "Data Science"?"#),
            vec!["Machine Learning", "Data Science"]
        );
        assert_eq!(quoted("reviews in the state of \u{201c}California\u{201d}"), vec!["California"]);
        assert_eq!(quoted("written by authors from the 'Sociology' domain"), vec!["Sociology"]);
        assert_eq!(quoted("the business named \"Mark\u{2019}s Bistro\""), vec!["Mark\u{2019}s Bistro"]);
        // An apostrophe inside or at the end of a word opens nothing.
        assert_eq!(quoted("Give me today's median balance of merchants whose category contains 'retail'"), vec!["retail"]);
        assert_eq!(quoted("the students' grades and the teachers' names"), Vec::<String>::new());
        // One quote alone, an empty pair, one with inner spaces at its ends: no value.
        assert_eq!(quoted("Cars are considered to be in inventory\" if they were"), Vec::<String>::new());
        assert_eq!(quoted("named \"\" or \" padded \""), Vec::<String>::new());
        // The same value twice is one.
        assert_eq!(quoted("\"Lake\" and \"Lake\""), vec!["Lake"]);
        assert!(quoted("How many restaurants are open?").is_empty());
    }

    #[test]
    fn a_quoted_value_the_query_compares_nothing_with_is_ignored() {
        let q = r#"Which authors wrote in both the domain "Machine Learning" and the domain "Data Science"?"#;
        assert_eq!(ignored(q, "SELECT a.name FROM author a JOIN domain d ON true WHERE d.name = 'Machine Learning'"), vec!["Data Science"]);
        assert_eq!(ignored(q, "SELECT DISTINCT oid FROM academic.organization ORDER BY 1"), vec!["Machine Learning", "Data Science"]);
        assert!(ignored(q, "SELECT a.name FROM author a WHERE d.name IN ('Machine Learning', 'Data Science')").is_empty());
        // Any case, a LIKE pattern's wildcards aside, in part either way.
        assert!(ignored(q, "SELECT 1 FROM d WHERE d.name ILIKE '%machine learning%' OR d.name ILIKE 'data science'").is_empty());
        assert!(
            ignored(r#"journals whose names start with the letter "J""#, "SELECT count(*) FROM journal WHERE name LIKE 'J%'").is_empty()
        );
        assert!(ignored(
            r#"the journal named "IEEE Transactions on Pattern Analysis""#,
            "SELECT count(*) FROM journal WHERE name LIKE '%IEEE Transactions%'"
        )
        .is_empty());
        // A short literal is not taken as holding a long quoted value in part.
        assert_eq!(ignored(r#"the keyphrase "Machine Learning""#, "SELECT 1 FROM k WHERE k.name LIKE 'M%'"), vec!["Machine Learning"]);
        // A curly apostrophe in the question, a straight one (doubled) in the query.
        assert!(ignored("the business named \"Mark\u{2019}s Bistro\"", "SELECT 1 FROM b WHERE name = 'Mark''s Bistro'").is_empty());
        // A code for the value (value correction reads it as the column writes it).
        assert!(ignored(r#"in the state of "California""#, "SELECT 1 FROM b WHERE state = 'CA'").is_empty());
        assert!(ignored(r#"in "New York""#, "SELECT 1 FROM b WHERE state = 'NY'").is_empty());
        assert_eq!(ignored(r#"in "California""#, "SELECT 1 FROM b WHERE state = 'AC'"), vec!["California"]);
        assert!(ignored(r#"How many "female" patients?"#, "SELECT count(*) FROM p WHERE sex = 'F'").is_empty());
        // A number written otherwise.
        assert!(ignored(r#"orders over "$1,500""#, "SELECT 1 FROM o WHERE total > 1500.00").is_empty());
        assert!(ignored(r#"rated "5.0""#, "SELECT 1 FROM o WHERE stars = 5").is_empty());
        assert_eq!(ignored(r#"rated "5.0""#, "SELECT 1 FROM o WHERE stars = 4"), vec!["5.0"]);
        // A quoted number, a quoted column name.
        assert!(ignored(r#"the business with ID "123""#, "SELECT 1 FROM b WHERE id = 123").is_empty());
        assert!(ignored(r#"sorted by "created_at""#, "SELECT * FROM t ORDER BY created_at").is_empty());
        assert!(ignored(r#"sorted by "created at""#, "SELECT * FROM t ORDER BY created_at").is_empty());
        // A dollar-quoted string holds it too.
        assert!(ignored(r#"in "Paris""#, "SELECT 1 FROM c WHERE name = $$Paris$$").is_empty());
        // Nothing quoted, nothing readable: nothing ignored.
        assert!(ignored("How many authors are there?", "SELECT count(*) FROM author").is_empty());
        assert!(ignored(r#"in "Paris""#, "SELECT 'unterminated").is_empty());
    }

    #[test]
    fn the_reason_names_each_value_left_out() {
        let one = reason(&["Data Science".to_string()]);
        assert!(one.contains("\"Data Science\"") && one.contains("the value"), "{one}");
        let two = reason(&["A".to_string(), "B".to_string()]);
        assert!(two.contains("\"A\", \"B\"") && two.contains("the values"), "{two}");
    }
}
