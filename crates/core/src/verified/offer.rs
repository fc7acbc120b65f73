//! A verified query offered to the model as a template: its question and SQL with the values
//! a question may change cut out as typed slots ([`super::choose`] makes offers; [`super::asks`]
//! checks a choice against the question).

use serde::Serialize;

use crate::values::literals::TextRange;

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotKind {
    /// A value compared with a text column.
    Text,
    /// The words inside a LIKE pattern.
    Pattern,
    /// An unsigned number.
    Number,
    /// A date, `YYYY-MM-DD`.
    Date,
}

/// One value of a verified query that a question may change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slot {
    /// `s1`, `s2`, … in the order the values stand in the SQL.
    pub name: String,
    pub kind: SlotKind,
    /// The value the verified query has.
    pub original: String,
    /// How the verified question writes it: the value, an initialism of it ("LA" for 'Los
    /// Angeles'), or a short form beginning with its initials ("USA" for 'United States').
    pub written: String,
    /// The verified question writes the value by a name that the database holds beside it in
    /// another column ("Louisiana" for 'LA'): the slot takes that name only, standing for the
    /// verified value; another name would need the row's column, not the value memory.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub name_for_value: bool,
    /// The column it is compared with (text slots).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// The index of its literal among the SQL's string literals (text and pattern slots).
    #[serde(skip)]
    pub literal: Option<usize>,
    #[serde(skip)]
    pub range: TextRange,
}

/// A verified query as a template: its question and SQL with slots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Offer {
    pub id: i64,
    /// The verified question with each slot's value written `{sN}`.
    pub question: String,
    /// The verified SQL with each slot's value written `{sN}`.
    pub sql: String,
    pub slots: Vec<Slot>,
}
