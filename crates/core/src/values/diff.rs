//! What an incremental refresh of a column's value memory does: the values stored that are gone
//! from the column, and the column's values not stored yet (to embed).

use std::collections::HashSet;

/// The difference between a column's memory and its current distinct values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ValueDiff {
    /// Stored values the column no longer holds: to delete.
    pub vanished: Vec<String>,
    /// Current values (with their frequencies) not stored yet: to embed and insert.
    pub new: Vec<(String, i64)>,
}

impl ValueDiff {
    /// Compare `stored` (the memory's values) with `current` (the column's distinct values and
    /// their frequencies). Both keep their order.
    pub fn between(stored: &[String], current: &[(String, i64)]) -> ValueDiff {
        let now: HashSet<&str> = current.iter().map(|(v, _)| v.as_str()).collect();
        let kept: HashSet<&str> = stored.iter().map(String::as_str).collect();
        ValueDiff {
            vanished: stored.iter().filter(|v| !now.contains(v.as_str())).cloned().collect(),
            new: current.iter().filter(|(v, _)| !kept.contains(v.as_str())).cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn vanished_and_new_values() {
        let stored = owned(&["Boston", "Los Angeles", "Austin"]);
        let current = vec![("Los Angeles".to_string(), 5), ("Denver".to_string(), 2), ("Austin".to_string(), 1)];
        let d = ValueDiff::between(&stored, &current);
        assert_eq!(d.vanished, owned(&["Boston"]));
        assert_eq!(d.new, vec![("Denver".to_string(), 2)]);
    }

    #[test]
    fn nothing_stored_or_nothing_left() {
        let current = vec![("a".to_string(), 1), ("b".to_string(), 1)];
        assert_eq!(ValueDiff::between(&[], &current), ValueDiff { vanished: vec![], new: current.clone() });
        assert_eq!(ValueDiff::between(&owned(&["a", "b"]), &[]), ValueDiff { vanished: owned(&["a", "b"]), new: vec![] });
        assert_eq!(ValueDiff::between(&owned(&["a", "b"]), &current), ValueDiff::default());
    }

    #[test]
    fn values_differing_only_in_case_are_different_values() {
        let d = ValueDiff::between(&owned(&["la"]), &[("LA".to_string(), 3)]);
        assert_eq!(d.vanished, owned(&["la"]));
        assert_eq!(d.new, vec![("LA".to_string(), 3)]);
    }
}
