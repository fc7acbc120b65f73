//! Placeholders in planned steps: `<sale_id>` stands for a value an earlier step returns.
//!
//! A placeholder is `<`, a name (one unquoted word, or dotted words such as
//! `<step1.sale_id>`, whose last part is the name), and `>`, with no space inside, found by
//! `sqlparser`'s tokenizer, so text in string literals, quoted identifiers and comments is never
//! taken for one (`'<b>'` stays a literal). To tell it from the comparison operators, the `<`
//! must not follow an operand: a `<` right after a column name, a number, a literal or a
//! closing parenthesis (`price<max_price>`, `x < y`) is an operator, while one after a
//! keyword, an operator, `(` or `,` (`VALUES (<supplier_id>, …)`, `= <sale_id>`,
//! `WHERE <flag>`) opens a placeholder.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::guard::OffsetCursor;

/// One placeholder in a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// The name in lower case, without a dotted qualifier (`<Sales.Sale_ID>` → `sale_id`).
    pub name: String,
    /// Byte range of the whole `<…>` in the statement.
    pub start: usize,
    /// End of the byte range (exclusive).
    pub end: usize,
}

/// The placeholders of `sql`, in order. Text the tokenizer cannot read (an unterminated
/// literal) has none: such a statement is refused by the guard later anyway.
pub fn find_placeholders(sql: &str) -> Vec<Placeholder> {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() else {
        return Vec::new();
    };
    let mut cursor = OffsetCursor::new(sql);
    let mut found = Vec::new();
    let mut previous_significant: Option<&Token> = None;
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i].token;
        if *token == Token::Lt && !previous_significant.is_some_and(is_operand) {
            if let Some((name, last)) = placeholder_at(&tokens, i) {
                let start = cursor.offset(tokens[i].span.start);
                let end = cursor.offset(tokens[last].span.end);
                found.push(Placeholder { name, start, end });
                previous_significant = Some(&tokens[last].token);
                i = last + 1;
                continue;
            }
        }
        if !matches!(token, Token::Whitespace(_)) {
            previous_significant = Some(token);
        }
        i += 1;
    }
    found
}

/// When a placeholder starts at the `<` at `lt`: its name and the index of its `>`.
fn placeholder_at(tokens: &[sqlparser::tokenizer::TokenWithSpan], lt: usize) -> Option<(String, usize)> {
    let mut j = lt + 1;
    loop {
        let name = match &tokens.get(j)?.token {
            Token::Word(w) if w.quote_style.is_none() => w.value.to_lowercase(),
            _ => return None,
        };
        j += 1;
        match &tokens.get(j)?.token {
            Token::Period => j += 1,
            Token::Gt => return Some((name, j)),
            _ => return None,
        }
    }
}

/// Whether a `<` after this token is a comparison rather than the start of a placeholder.
fn is_operand(token: &Token) -> bool {
    match token {
        Token::Word(w) => w.quote_style.is_some() || w.keyword == Keyword::NoKeyword || is_value_keyword(w.keyword),
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DollarQuotedString(_)
        | Token::EscapedStringLiteral(_)
        | Token::NationalStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::RParen
        | Token::RBracket
        | Token::Placeholder(_) => true,
        _ => false,
    }
}

fn is_value_keyword(keyword: Keyword) -> bool {
    matches!(keyword, Keyword::NULL | Keyword::TRUE | Keyword::FALSE | Keyword::CURRENT_DATE | Keyword::CURRENT_TIMESTAMP)
}

/// `sql` with each placeholder replaced by its text in `values` (same order as `placeholders`).
pub fn substitute(sql: &str, placeholders: &[Placeholder], values: &[String]) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut at = 0;
    for (placeholder, value) in placeholders.iter().zip(values) {
        out.push_str(&sql[at..placeholder.start]);
        out.push_str(value);
        at = placeholder.end;
    }
    out.push_str(&sql[at..]);
    out
}

pub use crate::sqltext::sql_literal;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(sql: &str) -> Vec<String> {
        find_placeholders(sql).into_iter().map(|p| p.name).collect()
    }

    #[test]
    fn finds_placeholders_in_value_positions() {
        assert_eq!(names("INSERT INTO p (a, b, c) VALUES (<supplier_id>, <Fruit_ID>, 3) RETURNING id"), ["supplier_id", "fruit_id"]);
        assert_eq!(names("DELETE FROM sales WHERE sale_id = <sale_id>"), ["sale_id"]);
        assert_eq!(names("UPDATE f SET kg = kg - <qty> WHERE id IN (<ids>)"), ["qty", "ids"]);
        assert_eq!(names("SELECT * FROM s WHERE id=<step1.sale_id>"), ["sale_id"]);
        assert_eq!(names("SELECT * FROM s WHERE <flag>"), ["flag"]);
    }

    #[test]
    fn operators_literals_and_comments_are_not_placeholders() {
        for sql in [
            "SELECT * FROM f WHERE price<max_price> 0",
            "SELECT * FROM f WHERE a < b AND c > d",
            "SELECT * FROM f WHERE 1<x>0",
            "SELECT '<sale_id>' FROM f",
            "SELECT \"<x>\" FROM f",
            "SELECT 1 -- <sale_id>\n",
            "SELECT $$<sale_id>$$",
            "SELECT * FROM f WHERE (a)<b>c",
            "SELECT * FROM f WHERE x < <y",
            "SELECT * FROM f WHERE a <\"b\">",
        ] {
            assert!(names(sql).is_empty(), "{sql:?}: {:?}", names(sql));
        }
    }

    #[test]
    fn substitution_keeps_the_rest_verbatim() {
        let sql = "UPDATE f SET kg = kg + <qty> WHERE id = <fruit_id>;";
        let found = find_placeholders(sql);
        assert_eq!(substitute(sql, &found, &["24".into(), "3".into()]), "UPDATE f SET kg = kg + 24 WHERE id = 3;");
    }

    #[test]
    fn literals() {
        assert_eq!(sql_literal(&json!(null)), "NULL");
        assert_eq!(sql_literal(&json!(12)), "12");
        assert_eq!(sql_literal(&json!(0.8)), "0.8");
        assert_eq!(sql_literal(&json!(true)), "TRUE");
        assert_eq!(sql_literal(&json!("O'Brien")), "'O''Brien'");
        assert_eq!(sql_literal(&json!("a\\'b")), "E'a\\\\''b'");
        assert_eq!(sql_literal(&json!({"a": 1})), "'{\"a\":1}'");
    }
}
