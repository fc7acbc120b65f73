//! [`SqlState`]: a five-character SQLSTATE as a value, not a string, across the boundary
//! between the glue (which reads it from PostgreSQL's errors) and the core (which decides by
//! its class whether an error is one the LLM can repair).

use std::fmt;

use serde::{Serialize, Serializer};

/// A SQLSTATE: five characters of `0`–`9` and `A`–`Z`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlState([u8; 5]);

impl SqlState {
    /// internal_error
    pub const INTERNAL_ERROR: SqlState = SqlState(*b"XX000");
    /// syntax_error
    pub const SYNTAX_ERROR: SqlState = SqlState(*b"42601");
    /// insufficient_privilege
    pub const INSUFFICIENT_PRIVILEGE: SqlState = SqlState(*b"42501");

    /// `code` when it is a SQLSTATE's form (five digits or upper-case letters).
    pub fn new(code: &str) -> Option<SqlState> {
        let b: [u8; 5] = code.as_bytes().try_into().ok()?;
        b.iter().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()).then_some(SqlState(b))
    }

    /// `code`, or [`SqlState::INTERNAL_ERROR`] when it is not a SQLSTATE.
    pub fn or_internal(code: &str) -> SqlState {
        SqlState::new(code).unwrap_or(SqlState::INTERNAL_ERROR)
    }

    pub fn as_str(&self) -> &str {
        // (Only ASCII digits and letters are ever stored.)
        std::str::from_utf8(&self.0).unwrap_or("XX000")
    }

    /// Its class: the first two characters (`42` for syntax errors and access rule
    /// violations).
    pub fn class(&self) -> &str {
        &self.as_str()[..2]
    }
}

impl fmt::Display for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SqlState({})", self.as_str())
    }
}

impl Serialize for SqlState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl AsRef<str> for SqlState {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// A code as written (`"42703".into()`): [`SqlState::or_internal`].
impl From<&str> for SqlState {
    fn from(code: &str) -> SqlState {
        SqlState::or_internal(code)
    }
}

impl PartialEq<str> for SqlState {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SqlState {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_five_digits_or_capitals_are_a_sqlstate() {
        assert_eq!(SqlState::new("42P01").unwrap().as_str(), "42P01");
        assert_eq!(SqlState::new("42P01").unwrap().class(), "42");
        for bad in ["", "4260", "426011", "42p01", "42 01", "ÄÄ0"] {
            assert!(SqlState::new(bad).is_none(), "{bad}");
        }
        assert_eq!(SqlState::or_internal("nonsense"), SqlState::INTERNAL_ERROR);
        assert_eq!(serde_json::to_string(&SqlState::SYNTAX_ERROR).unwrap(), "\"42601\"");
        assert!(SqlState::INSUFFICIENT_PRIVILEGE == "42501");
    }
}
