//! A metric, filter or dimension the model wrote by its name, written in as its checked
//! expression; and which items a statement used.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::Item;
use crate::guard::OffsetCursor;

/// A statement after [`expand`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expanded {
    /// The statement, with every name written in as its expression.
    pub sql: String,
    /// The ids of the items written in, in order of first use.
    pub expanded: Vec<i64>,
}

/// `sql` with each unquoted identifier that names a metric, filter or dimension of `items`
/// (its [`Item::identifier`], alone or after a table name and a dot) written in as its
/// expression, in parentheses; a metric or dimension that stands alone as an item of the
/// select list keeps its name as the column's (`AS name`). A name is left as it is where it is
/// a column of a described table (`columns`, lower case), a function's name (followed by
/// `(`), a name two items give, an alias the statement gives (after `AS`, or a qualifier of
/// columns), a type after `::`, a field of `extract`, or quoted; and only the items of tables
/// the statement reads are written in: `reads` are those relations as the caller's search
/// path resolves the statement's names, schema-qualified and quoted as an item's table is
/// ([`crate::ask::Memory::resolve_relations`]). A statement the tokenizer cannot read comes
/// back unchanged (the guard refuses it later).
pub fn expand(sql: &str, reads: &[String], items: &[&Item], columns: &[String]) -> Expanded {
    // Only the items of the tables the statement reads: another role's `revenue`, about a
    // table of its own named like the caller's, neither writes itself into this statement
    // nor takes the name from this table's own.
    let unchanged = Expanded { sql: sql.to_string(), expanded: Vec::new() };
    if !items.iter().any(|it| it.kind.is_some_and(|k| k.is_named_expression())) {
        return unchanged;
    }
    let named: Vec<(String, &Item)> = items
        .iter()
        .filter(|it| it.kind.is_some_and(|k| k.is_named_expression()))
        .filter(|it| it.table.as_ref().is_some_and(|t| reads.contains(t)))
        .filter_map(|it| Some((it.identifier()?, *it)))
        .collect();
    // A name two items give (tables of two owners may both define `revenue`) is written in
    // by neither: which one the model meant cannot be told.
    let named: Vec<(String, &Item)> =
        named.iter().filter(|(id, _)| named.iter().filter(|(other, _)| other == id).count() == 1).cloned().collect();
    if named.is_empty() {
        return unchanged;
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() else {
        return unchanged;
    };
    let significant: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let word = |k: usize| match significant.get(k).map(|&i| &tokens[i].token) {
        Some(Token::Word(w)) => Some(w),
        _ => None,
    };
    // The aliases the statement gives: a name it defines means what it defines.
    // So does a name it qualifies columns with (`revenue.x`: a table's alias, given with or
    // without AS).
    let aliases: Vec<String> = (0..significant.len())
        .filter(|&k| {
            k > 0 && word(k - 1).is_some_and(|w| w.keyword == Keyword::AS && w.quote_style.is_none())
                || matches!(significant.get(k + 1).map(|&i| &tokens[i].token), Some(Token::Period))
        })
        .filter_map(|k| word(k).map(|w| w.value.to_lowercase()))
        .collect();
    let mut cursor = OffsetCursor::new(sql);
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut expanded = Vec::new();
    for k in 0..significant.len() {
        let Some(w) = word(k) else { continue };
        // A quoted name, or a word PostgreSQL reserves (`and`, `distinct`, `current_date`), is
        // never an item's.
        if w.quote_style.is_some() || super::is_sql_word(&w.value) {
            continue;
        }
        // A type's name after `::`, a field of `extract(year FROM ...)`, a unit after a string
        // (`interval '1' month`).
        let token_before = |back: usize| k.checked_sub(back).and_then(|j| significant.get(j)).map(|&i| &tokens[i].token);
        if matches!(token_before(1), Some(Token::DoubleColon | Token::SingleQuotedString(_)))
            || matches!(token_before(1), Some(Token::LParen))
                && matches!(token_before(2), Some(Token::Word(f)) if f.keyword == Keyword::EXTRACT)
        {
            continue;
        }
        // A relation's name (after FROM or JOIN, qualified or not) or a common table
        // expression's (before AS).
        let previous = k.checked_sub(1).and_then(&word);
        let dotted = matches!(significant.get(k.wrapping_sub(1)).map(|&i| &tokens[i].token), Some(Token::Period));
        let before_qualifier = if dotted { k.checked_sub(3).and_then(&word) } else { None };
        if previous.or(before_qualifier).is_some_and(|p| matches!(p.keyword, Keyword::FROM | Keyword::JOIN))
            || word(k + 1).is_some_and(|n| n.keyword == Keyword::AS) && previous.is_some_and(|p| matches!(p.keyword, Keyword::WITH))
            || matches!(significant.get(k.wrapping_sub(1)).map(|&i| &tokens[i].token), Some(Token::Comma))
                && word(k + 1).is_some_and(|n| n.keyword == Keyword::AS)
                && word(k + 2).is_none()
        {
            continue;
        }
        let name = w.value.to_lowercase();
        let Some((_, item)) = named.iter().find(|(id, _)| *id == name) else { continue };
        let token_at = |k: usize| significant.get(k).map(|&i| &tokens[i].token);
        if columns.contains(&name) || aliases.contains(&name) || matches!(token_at(k + 1), Some(Token::LParen | Token::Period)) {
            continue;
        }
        if word(k.wrapping_sub(1)).is_some_and(|w| w.keyword == Keyword::AS) {
            continue;
        }
        // `orders.revenue`: the qualifier goes with the name.
        let qualified = matches!(token_at(k.wrapping_sub(1)), Some(Token::Period)) && word(k.wrapping_sub(2)).is_some();
        let first = if qualified { k - 2 } else { k };
        if qualified && matches!(token_at(k.wrapping_sub(3)), Some(Token::Period)) {
            // schema.table.name: the qualifier's qualifier goes too.
            continue;
        }
        let start = cursor.offset(tokens[significant[first]].span.start);
        let end = cursor.offset(tokens[significant[k]].span.end);
        // Alone in the select list: between SELECT (or a comma) and a comma or FROM.
        let before = if first == 0 { None } else { token_at(first - 1) };
        let after = token_at(k + 1);
        let opens_item = match before {
            Some(Token::Comma) => true,
            Some(Token::Word(b)) => matches!(b.keyword, Keyword::SELECT | Keyword::DISTINCT),
            _ => false,
        };
        let closes_item = match after {
            Some(Token::Comma) | None | Some(Token::SemiColon) | Some(Token::RParen) => true,
            Some(Token::Word(a)) => a.keyword == Keyword::FROM,
            _ => false,
        };
        let body = item.body.trim();
        let text = if opens_item && closes_item && item.kind != Some(super::Kind::Filter) && in_select_list(&tokens, &significant, k) {
            format!("({body}) AS {name}")
        } else {
            format!("({body})")
        };
        edits.push((start, end, text));
        if !expanded.contains(&item.id) {
            expanded.push(item.id);
        }
    }
    if edits.is_empty() {
        return unchanged;
    }
    let mut out = String::with_capacity(sql.len() + 64);
    let mut at = 0;
    for (start, end, text) in edits {
        out.push_str(&sql[at..start]);
        out.push_str(&text);
        at = end;
    }
    out.push_str(&sql[at..]);
    Expanded { sql: out, expanded }
}

/// Whether the significant token `k` stands in a select list: the nearest SELECT or FROM
/// (and the like) before it at the same depth of parentheses is a SELECT.
fn in_select_list(tokens: &[sqlparser::tokenizer::TokenWithSpan], significant: &[usize], k: usize) -> bool {
    let mut depth = 0i32;
    for &i in significant[..k].iter().rev() {
        match &tokens[i].token {
            Token::RParen => depth += 1,
            Token::LParen if depth == 0 => return false,
            Token::LParen => depth -= 1,
            Token::Word(w) if depth == 0 => match w.keyword {
                Keyword::SELECT => return true,
                Keyword::FROM | Keyword::WHERE | Keyword::GROUP | Keyword::ORDER | Keyword::HAVING | Keyword::ON | Keyword::BY => {
                    return false
                }
                _ => {}
            },
            _ => {}
        }
    }
    false
}

/// The ids of `items` that `sql` used: those [`expand`] wrote in (`expanded`), and the metrics,
/// filters and dimensions whose expression it contains as written (case and white space
/// aside), the value synonyms whose value it compares with, and the table synonyms whose
/// table it reads.
pub fn used_by(sql: &str, items: &[&Item], expanded: &[i64]) -> Vec<i64> {
    let fold = |s: &str| s.chars().filter(|c| !c.is_whitespace()).flat_map(char::to_lowercase).collect::<String>();
    let folded = fold(sql);
    let mut used: Vec<i64> = expanded.to_vec();
    for it in items {
        if used.contains(&it.id) {
            continue;
        }
        let hit = match it.kind {
            Some(k) if k.is_named_expression() => {
                let body = fold(it.body.trim());
                body.len() >= 3 && folded.contains(&body)
            }
            Some(super::Kind::Synonym) => match (&it.value, &it.column, &it.table) {
                (Some(v), _, _) => folded.contains(&fold(&crate::sqltext::quote_literal(v))),
                (None, Some(c), _) => folded.contains(&fold(c)),
                (None, None, Some(t)) => {
                    let bare = t.rsplit('.').next().unwrap_or(t).replace('"', "");
                    folded.contains(&fold(&bare))
                }
                _ => false,
            },
            _ => false,
        };
        if hit {
            used.push(it.id);
        }
    }
    used
}
