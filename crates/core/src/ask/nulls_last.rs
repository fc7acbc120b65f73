//! The highest values first, without NULL: PostgreSQL sorts NULL above every value, so
//! "Which restaurant has the highest rating?" written `ORDER BY rating DESC LIMIT 1` answers
//! with a restaurant that has no rating, and the one row looks like an answer. [`top_without_null`]
//! writes `NULLS LAST` after each `DESC` of the sort of a query that keeps its first rows
//! (`LIMIT n`, `FETCH FIRST`), where the query does not say where NULL goes. A sort that keeps
//! every row, an ascending one (NULL comes last already), and one that writes `NULLS FIRST` or
//! `NULLS LAST` are left as written, as is a statement the tokenizer cannot read.

use std::ops::ControlFlow;

use sqlparser::ast::{LimitClause, OrderByKind, OrderBySort, Query, Spanned, Statement, Visit, Visitor};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Token};

use crate::sqledit::{apply, Tokens};

/// `sql` (whose tree is `statement`, its locations in `sql`) with `NULLS LAST` after each
/// `DESC` of a sort that keeps the first rows (see the [module documentation](self)), and each
/// sort key so changed as written; `None` when there is none.
pub fn top_without_null(sql: &str, statement: &Statement) -> Option<(String, Vec<String>)> {
    struct Keys(Vec<(Location, String)>);
    impl Visitor for Keys {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            let keeps_first = matches!(&q.limit_clause, Some(LimitClause::LimitOffset { limit: Some(_), .. })) || q.fetch.is_some();
            if let (true, Some(order)) = (keeps_first, &q.order_by) {
                if let OrderByKind::Expressions(keys) = &order.kind {
                    for k in keys {
                        if matches!(k.options.sort, Some(OrderBySort::Desc)) && k.options.nulls_first.is_none() {
                            self.0.push((k.expr.span().start, k.expr.to_string()));
                        }
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    if !sql.to_ascii_lowercase().contains("desc") {
        return None;
    }
    let mut keys = Keys(Vec::new());
    let _ = statement.visit(&mut keys);
    if keys.0.is_empty() {
        return None;
    }
    let mut t = Tokens::read(sql)?;
    let mut at: Vec<(usize, String)> = Vec::new();
    for (start, key) in keys.0 {
        if start.line == 0 {
            continue;
        }
        // The key's `DESC`: the first one after where it starts, outside the parentheses it opens.
        let Some(first) = t.first_from(start) else { continue };
        // A key in parentheses starts inside them (a query-level key follows `BY` or `,`, so the
        // parentheses right before it are its own).
        let mut depth = (0..first).rev().take_while(|&k| matches!(t.at(k), Some(Token::LParen))).count() as i32;
        let mut desc = None;
        for k in first..t.len() {
            match t.at(k) {
                Some(Token::LParen | Token::LBracket) => depth += 1,
                Some(Token::RParen | Token::RBracket) => depth -= 1,
                Some(Token::Word(w)) if depth == 0 && w.keyword == Keyword::DESC && w.quote_style.is_none() => {
                    desc = Some(k);
                    break;
                }
                Some(Token::Comma) if depth == 0 => break,
                _ => {}
            }
            if depth < 0 {
                break;
            }
        }
        if let Some(k) = desc.filter(|k| !at.iter().any(|(j, _)| j == k)) {
            at.push((k, key));
        }
    }
    if at.is_empty() {
        return None;
    }
    at.sort_by_key(|(k, _)| *k);
    let edits: Vec<(usize, usize, &str)> = at
        .iter()
        .map(|(k, _)| {
            let (_, end, _) = t.text(*k, *k);
            (end, end, " NULLS LAST")
        })
        .collect();
    Some((apply(sql, &edits), at.into_iter().map(|(_, key)| key).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(sql: &str) -> Option<String> {
        let statement = crate::guard::parse_statement(sql).unwrap();
        top_without_null(sql, &statement).map(|(s, _)| s)
    }

    #[test]
    fn the_first_rows_of_a_descending_sort_leave_null_last() {
        assert_eq!(
            written("SELECT name FROM restaurants ORDER BY rating DESC LIMIT 1").as_deref(),
            Some("SELECT name FROM restaurants ORDER BY rating DESC NULLS LAST LIMIT 1")
        );
        let (sql, keys) = top_without_null(
            "SELECT c, avg(x) AS a FROM t GROUP BY c ORDER BY avg(x) desc, c ASC, coalesce(y, (1)) DESC FETCH FIRST 3 ROWS ONLY",
            &crate::guard::parse_statement(
                "SELECT c, avg(x) AS a FROM t GROUP BY c ORDER BY avg(x) desc, c ASC, coalesce(y, (1)) DESC FETCH FIRST 3 ROWS ONLY",
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            sql,
            "SELECT c, avg(x) AS a FROM t GROUP BY c ORDER BY avg(x) desc NULLS LAST, c ASC, coalesce(y, (1)) DESC NULLS LAST FETCH FIRST 3 ROWS ONLY"
        );
        assert_eq!(keys, ["avg(x)", "coalesce(y, (1))"]);
        // In a subquery too; the outer sort keeps every row.
        assert_eq!(
            written("SELECT * FROM (SELECT id FROM t ORDER BY (SELECT max(v) FROM u) DESC LIMIT 5) s ORDER BY id DESC").as_deref(),
            Some("SELECT * FROM (SELECT id FROM t ORDER BY (SELECT max(v) FROM u) DESC NULLS LAST LIMIT 5) s ORDER BY id DESC")
        );
    }

    #[test]
    fn any_other_sort_is_left_as_written() {
        for sql in [
            "SELECT name FROM restaurants ORDER BY rating DESC",
            "SELECT name FROM restaurants ORDER BY rating LIMIT 1",
            "SELECT name FROM restaurants ORDER BY rating ASC LIMIT 1",
            "SELECT name FROM restaurants ORDER BY rating DESC NULLS FIRST LIMIT 1",
            "SELECT name FROM restaurants ORDER BY rating DESC NULLS LAST LIMIT 1",
            "SELECT name, rank() OVER (ORDER BY rating DESC) FROM restaurants LIMIT 1",
            "SELECT 'desc' FROM restaurants LIMIT 1",
            // The key's own sort is a subquery's.
            "SELECT id FROM t ORDER BY (SELECT v FROM u ORDER BY w DESC NULLS FIRST LIMIT 1) LIMIT 2",
        ] {
            assert_eq!(written(sql), None, "{sql}");
        }
    }
}
