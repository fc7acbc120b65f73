//! Knowledge a database's owners teach pg_ask once: instructions, metrics, filters, dimensions
//! and synonyms ([`Item`]). The glue stores and checks them (`ask.knowledge`) and hands the
//! pipeline those the caller may see over the tables described for a question; here is what
//! happens to them: which are relevant to a question ([`relevant`]), how the SQL prompt shows
//! them ([`render`]), and how a metric, filter or dimension the model names in its SQL is
//! written in as its checked expression ([`expand`]).

mod expand;
mod synonyms;

pub use expand::{expand, used_by, Expanded};
pub use synonyms::{named_tables, probe_words, MAX_SYNONYM_TABLES};

use serde::{Deserialize, Serialize};

use crate::text;

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Text for a database, a schema or a table ("amounts are in cents").
    Instruction,
    /// A named aggregate expression over a table (`revenue = sum(amount_cents) / 100.0`).
    Metric,
    /// A named predicate over a table ("active customer").
    Filter,
    /// A named expression over a table's rows ("month of the order").
    Dimension,
    /// Another word for a table, a column or a value ("clients" for `customers`).
    Synonym,
}

impl Kind {
    /// The name `ask.knowledge.kind` stores.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Instruction => "instruction",
            Kind::Metric => "metric",
            Kind::Filter => "filter",
            Kind::Dimension => "dimension",
            Kind::Synonym => "synonym",
        }
    }

    /// The kind `ask.knowledge.kind` names.
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "instruction" => Kind::Instruction,
            "metric" => Kind::Metric,
            "filter" => Kind::Filter,
            "dimension" => Kind::Dimension,
            "synonym" => Kind::Synonym,
            _ => return None,
        })
    }

    /// Whether the model may write the item by its name in SQL (pg_ask writes in its expression).
    pub fn is_named_expression(self) -> bool {
        matches!(self, Kind::Metric | Kind::Filter | Kind::Dimension)
    }
}

/// One knowledge item, as the caller may see it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Item {
    pub id: i64,
    pub kind: Option<Kind>,
    /// A metric's, filter's or dimension's name; a synonym's word or phrase; none for an
    /// instruction.
    pub name: Option<String>,
    /// The table it is about, schema-qualified (`public.orders`); none for an instruction on a
    /// database or a schema.
    pub table: Option<String>,
    /// The schema of an instruction on a schema.
    pub schema: Option<String>,
    /// A synonym's column.
    pub column: Option<String>,
    /// A synonym's value.
    pub value: Option<String>,
    /// An instruction's text; a metric's or dimension's expression; a filter's predicate.
    pub body: String,
    pub description: Option<String>,
    pub synonyms: Vec<String>,
}

impl Item {
    fn kind(&self) -> Kind {
        self.kind.unwrap_or(Kind::Instruction)
    }

    /// The identifier the model may write for a named expression: its name in lower case with
    /// every run of other characters than letters and digits made one `_` ("Active customer"
    /// → `active_customer`).
    pub fn identifier(&self) -> Option<String> {
        let name = self.name.as_deref()?;
        let id = identifier_of(name);
        (!id.is_empty()).then_some(id)
    }
}

/// Whether `identifier` is a word PostgreSQL reserves (`and`, `distinct`, `current_date`): a
/// metric, filter or dimension may not be named so, and such a word in a statement is never
/// taken for an item's name.
pub fn is_sql_word(identifier: &str) -> bool {
    crate::sqltext::is_quoted_keyword(&identifier.to_lowercase())
}

/// `name` as an identifier: lower case, letters, digits and single `_` between them.
pub fn identifier_of(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// Why `text` cannot be a metric's, dimension's or filter's expression: it must be one SQL
/// expression alone — no comment, no `;`, nothing after it — so that written into a
/// statement in parentheses it stays one expression there.
pub fn check_expression(text: &str) -> Result<(), String> {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;
    use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};
    if text.trim().is_empty() {
        return Err("the expression is empty".into());
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize().map_err(|e| format!("the expression cannot be read: {e}"))?;
    for t in &tokens {
        match t {
            Token::Whitespace(Whitespace::SingleLineComment { .. } | Whitespace::MultiLineComment(_)) => {
                return Err("the expression holds a comment".into())
            }
            Token::SemiColon => return Err("the expression holds a ';'".into()),
            _ => {}
        }
    }
    let mut parser = Parser::new(&PostgreSqlDialect {}).with_tokens(tokens);
    parser.parse_expr().map_err(|e| format!("the expression does not parse: {e}"))?;
    match parser.peek_token().token {
        Token::EOF => Ok(()),
        other => Err(format!("the expression goes on after its end, at \"{other}\"")),
    }
}

/// The statement that checks an item of `kind` over `table` (a quoted, qualified name) with
/// the expression `body`: what the guard plans and runs, as the item's author, before the item
/// is stored (`rows` 1: the expression is computed once), and as the caller when the tables it
/// reads changed since (`rows` 0: planned, names and types resolved, nothing computed, so that
/// an item's cost is never every caller's).
pub fn check_statement(kind: Kind, table: &str, body: &str, rows: u32) -> Option<String> {
    Some(match kind {
        Kind::Metric | Kind::Dimension => format!("SELECT ({body}) FROM {table} LIMIT {rows}"),
        Kind::Filter => format!("SELECT 1 FROM {table} WHERE ({body}) LIMIT {rows}"),
        Kind::Instruction | Kind::Synonym => return None,
    })
}

/// At most this many items go into one prompt.
pub const MAX_ITEMS: usize = 16;

/// Up to this many instructions on the database, and as many on each described table's schema,
/// all come with every question; of more, only those that share a content word with the
/// question, the most words first, this many.
pub const MAX_GENERAL: usize = 4;

/// `table` without quotes, in lower case, for comparing with a described table's name.
fn plain_name(table: &str) -> String {
    table.replace('"', "").to_lowercase()
}

/// The words of `text` in order, each with its plural stem only ("opened" stays "opened").
fn plural_stems(text: &str) -> Vec<String> {
    text::plain_words(text).iter().map(|w| text::stem(w)).collect()
}

/// The items of `items` worth showing for `question` over the described tables `described`
/// (schema-qualified, as a description writes them), most useful first, within `max_chars`
/// of rendered text and [`MAX_ITEMS`]:
/// - instructions on the database or on a schema of a described table: all of them up to
///   [`MAX_GENERAL`] per scope; of more, the [`MAX_GENERAL`] that share the most content words
///   with the question, at least one (a database's rules for different questions, some at odds, drew a
///   small model to follow the ones meant for other questions);
/// - an instruction on a described table when the question names the table, shares two
///   content words with the instruction, or asks for a metric, filter or dimension of the
///   table (on a small schema every table is described, and an instruction about reviews in a
///   question about cities drew a small model to join reviews in);
/// - synonyms whose every word is in the question, of a described table;
/// - metrics, filters and dimensions of described tables whose name or a synonym the question
///   writes, every word of it (plurals aside: "opened" does not write the filter "open", nor
///   "the average rating" the metric "average guest score"), or whose description shares two
///   content words with it.
pub fn relevant<'a>(question: &str, items: &'a [Item], described: &[String], max_chars: usize) -> Vec<&'a Item> {
    let asked = text::content_stems(question);
    let asked_words = plural_stems(question);
    let writes = |phrase: &str| {
        let words = plural_stems(phrase);
        !words.is_empty() && asked_words.windows(words.len()).any(|w| w == words.as_slice())
    };
    let names_table = |table: &str| {
        let name = plain_name(table);
        writes(&name.rsplit('.').next().unwrap_or(&name).replace('_', " "))
    };
    let described: Vec<String> = described.iter().map(|t| plain_name(t)).collect();
    let schemas: Vec<&str> = described.iter().filter_map(|t| t.split_once('.').map(|(s, _)| s)).collect();
    let on_described = |it: &Item| it.table.as_deref().is_some_and(|t| described.contains(&plain_name(t)));
    // Distinct words: a note that writes "names" twice shares one word with "the names of …".
    let shares = |text: &str| {
        let mut shared: Vec<String> = text::content_stems(text).into_iter().filter(|s| asked.contains(s)).collect();
        shared.sort();
        shared.dedup();
        shared.len()
    };
    // A metric, filter or dimension the question asks for: its name or a synonym written, or
    // two words of its description shared.
    let asked_for = |it: &Item| {
        let named = usize::from(writes(it.name.as_deref().unwrap_or(""))) + it.synonyms.iter().filter(|s| writes(s)).count();
        let described_by = it.description.as_deref().map(shares).unwrap_or(0);
        (named, described_by)
    };
    // The tables of the named expressions offered: their tables' instructions come with them.
    let expression_tables: Vec<String> = items
        .iter()
        .filter(|it| it.kind.is_some_and(|k| k.is_named_expression()) && on_described(it))
        .filter(|it| matches!(asked_for(it), (n, d) if n > 0 || d >= 2))
        .filter_map(|it| it.table.as_deref().map(plain_name))
        .collect();
    // The instructions on the database and on a described table's schema. A few all come; of
    // many (a database's rules for different questions, some at odds: "filter names using an
    // exact match", "… using ILIKE"), those the question's words point to.
    let general = |it: &Item| {
        it.kind() == Kind::Instruction
            && it.table.is_none()
            && it.schema.as_deref().is_none_or(|s| schemas.contains(&plain_name(s).as_str()))
    };
    // Counted per scope (the database, each schema): a schema's owner, however many notes they
    // write in the question's words, cannot push the database's own out of the prompt.
    let mut scopes: Vec<(Option<String>, Vec<&Item>)> = Vec::new();
    for it in items.iter().filter(|it| general(it)) {
        let scope = it.schema.as_deref().map(plain_name);
        match scopes.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, v)) => v.push(it),
            None => scopes.push((scope, vec![it])),
        }
    }
    let mut general_kept: Vec<i64> = Vec::new();
    for (_, in_scope) in scopes {
        if in_scope.len() <= MAX_GENERAL {
            general_kept.extend(in_scope.iter().map(|it| it.id));
            continue;
        }
        let mut ranked: Vec<(usize, i64)> = in_scope.iter().map(|it| (shares(&it.body), it.id)).filter(|(n, _)| *n > 0).collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        general_kept.extend(ranked.into_iter().take(MAX_GENERAL).map(|(_, id)| id));
    }
    let mut scored: Vec<(u32, &Item)> = Vec::new();
    for it in items {
        if general(it) && !general_kept.contains(&it.id) {
            continue;
        }
        let score = match it.kind() {
            Kind::Instruction => match (&it.table, &it.schema) {
                (Some(t), _)
                    if on_described(it) && (names_table(t) || shares(&it.body) >= 2 || expression_tables.contains(&plain_name(t))) =>
                {
                    90
                }
                (Some(_), _) => continue,
                (None, Some(s)) if schemas.contains(&plain_name(s).as_str()) => 95,
                (None, Some(_)) => continue,
                (None, None) => 100,
            },
            Kind::Synonym => {
                let words = text::content_stems(it.name.as_deref().unwrap_or(""));
                let all_in = !words.is_empty() && words.iter().all(|w| asked.contains(w));
                // Only of a described table: another role's table, not described, does not
                // get a line in this question's prompt by sharing a word with it.
                if !all_in || !on_described(it) {
                    continue;
                }
                80
            }
            Kind::Metric | Kind::Filter | Kind::Dimension => {
                if !on_described(it) {
                    continue;
                }
                let (named, described_by) = asked_for(it);
                if named == 0 && described_by < 2 {
                    continue;
                }
                (10 * named + described_by).min(70) as u32
            }
        };
        scored.push((score, it));
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
    let mut kept = Vec::new();
    let mut chars = 0;
    for (_, it) in scored {
        let line = render_one(it).len() + 1;
        if kept.len() >= MAX_ITEMS || chars + line > max_chars {
            continue;
        }
        chars += line;
        kept.push(it);
    }
    kept
}

/// One item as a line of the prompt's knowledge block.
fn render_one(it: &Item) -> String {
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let about = match (&it.table, &it.schema) {
        (Some(t), _) => format!(" (table {t})"),
        (None, Some(s)) => format!(" (schema {s})"),
        (None, None) => String::new(),
    };
    let mut line = match it.kind() {
        Kind::Instruction => format!("- note{about}: {}", one_line(&it.body)),
        Kind::Synonym => {
            let word = one_line(it.name.as_deref().unwrap_or(""));
            let table = it.table.as_deref().unwrap_or("");
            match (&it.column, &it.value) {
                (Some(c), Some(v)) => format!("- \"{word}\" means the value {} of {table}.{c}", crate::sqltext::quote_literal(v)),
                (Some(c), None) => format!("- \"{word}\" means the column {table}.{c}"),
                _ => format!("- \"{word}\" means the table {table}"),
            }
        }
        kind => {
            let ident = it.identifier().unwrap_or_default();
            format!("- {} {ident} of {}: {}", kind.as_str(), it.table.as_deref().unwrap_or(""), one_line(&it.body))
        }
    };
    if let Some(d) = it.description.as_deref().filter(|d| !d.trim().is_empty()) {
        line.push_str(&format!(" -- {}", one_line(d)));
    }
    if !it.synonyms.is_empty() {
        line.push_str(&format!(" (also called: {})", it.synonyms.iter().map(|s| one_line(s)).collect::<Vec<_>>().join(", ")));
    }
    line
}

/// The prompt's knowledge block for `items` (empty when there are none): one line each, as
/// data inside the block's tags.
pub fn render(items: &[&Item]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = items.iter().map(|it| render_one(it)).collect();
    format!(
        "What the database's owners wrote about its data (follow it; a metric, filter or dimension may be written by its \
         expression or by its name alone):\n<knowledge>\n{}\n</knowledge>\n\n",
        crate::prompt::data(&lines.join("\n"))
    )
}

#[cfg(test)]
mod tests;
