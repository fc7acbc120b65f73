//! What the search finds: a string literal compared with a text column ([`LiteralRef`]), where
//! it stands in the text, how it is compared, and the shape of a `LIKE` pattern around it.

use serde::{Deserialize, Serialize};

use super::catalog::QualifiedName;

/// Byte range of a literal in the SQL text, quotes included (`'LA'` in `city = 'LA'`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TextRange {
    /// First byte (the opening quote).
    pub start: usize,
    /// One past the last byte (the closing quote).
    pub end: usize,
}

/// The wildcard shape of a `LIKE` pattern `prefix + core + suffix`, where prefix and suffix are
/// runs of `%`/`_` wildcards and the core has none (escaped `\%`, `\_`, `\\` allowed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LikePattern {
    /// The whole pattern as written (unquoted).
    pub pattern: String,
    /// Leading wildcards, e.g. `%`.
    pub prefix: String,
    /// Trailing wildcards, e.g. `%`.
    pub suffix: String,
}

impl LikePattern {
    /// Splits a pattern into wildcard prefix, literal core (unescaped) and wildcard suffix.
    /// `None` when the core holds a wildcard (`'Los%Angeles'`) or is empty (`'%'`): such a
    /// pattern is not a value to correct. PostgreSQL's default escape character `\` is assumed.
    pub fn parse(pattern: &str) -> Option<(LikePattern, String)> {
        let chars: Vec<char> = pattern.chars().collect();
        let is_wild = |c: char| c == '%' || c == '_';
        let lead = chars.iter().take_while(|&&c| is_wild(c)).count();
        // Trailing run: wildcards not preceded by an escaping backslash.
        let mut end = chars.len();
        while end > lead && is_wild(chars[end - 1]) && !escaped_at(&chars, end - 1) {
            end -= 1;
        }
        let mut core = String::new();
        let mut i = lead;
        while i < end {
            match chars[i] {
                '\\' if i + 1 < end => {
                    core.push(chars[i + 1]);
                    i += 2;
                }
                '\\' => return None, // a dangling escape
                c if is_wild(c) => return None,
                c => {
                    core.push(c);
                    i += 1;
                }
            }
        }
        if core.is_empty() {
            return None;
        }
        let shape =
            LikePattern { pattern: pattern.to_owned(), prefix: chars[..lead].iter().collect(), suffix: chars[end..].iter().collect() };
        Some((shape, core))
    }

    /// The pattern with `value` as its core, wildcards and backslashes in it escaped.
    pub fn rebuild(&self, value: &str) -> String {
        let mut out = self.prefix.clone();
        for c in value.chars() {
            if matches!(c, '%' | '_' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push_str(&self.suffix);
        out
    }
}

/// Whether `chars[i]` is preceded by an odd number of backslashes.
fn escaped_at(chars: &[char], i: usize) -> bool {
    chars[..i].iter().rev().take_while(|&&c| c == '\\').count() % 2 == 1
}

/// How a literal is compared with its column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum LiteralKind {
    /// `col = 'v'`.
    Eq,
    /// `col <> 'v'`.
    NotEq,
    /// An element of `col [NOT] IN (...)` or `col = ANY(ARRAY[...])`.
    In {
        /// `NOT IN`.
        negated: bool,
    },
    /// `col [NOT] LIKE/ILIKE pattern`; the literal's value is the pattern's core.
    Like {
        /// `NOT LIKE`.
        negated: bool,
        /// `ILIKE`.
        case_insensitive: bool,
        /// The wildcard shape to rebuild the pattern around a corrected value.
        pattern: LikePattern,
    },
    /// A bound of `col [NOT] BETWEEN 'a' AND 'b'`.
    Between {
        /// `NOT BETWEEN`.
        negated: bool,
    },
}

/// A string literal compared with a text column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiteralRef {
    /// Where the quoted literal is in the SQL text.
    pub range: TextRange,
    /// The value to look up: the string as written (unescaped), or a LIKE pattern's core.
    pub value: String,
    /// How it is compared.
    pub kind: LiteralKind,
    /// The table the column belongs to.
    pub table: QualifiedName,
    /// The column, exactly as stored in the catalog.
    pub column: String,
}

impl LiteralRef {
    /// The literal's new text content (unquoted) when `value` replaces its value: the value
    /// itself, or for a LIKE pattern the pattern rebuilt around it.
    pub fn replacement_text(&self, value: &str) -> String {
        match &self.kind {
            LiteralKind::Like { pattern, .. } => pattern.rebuild(value),
            _ => value.to_owned(),
        }
    }
}
