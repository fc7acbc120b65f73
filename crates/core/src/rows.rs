//! Query results as plain data: JSON values per cell, rendered for people and for prompts.

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultSet {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// More rows existed than were fetched (the row limit cut the result).
    pub truncated: bool,
}

impl ResultSet {
    /// Column names made unique for JSON objects: a repeated name gets `_2`, `_3`, ...
    pub fn unique_columns(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::with_capacity(self.columns.len());
        for name in &self.columns {
            let mut candidate = name.clone();
            let mut n = 1;
            while seen.contains(&candidate) {
                n += 1;
                candidate = format!("{name}_{n}");
            }
            seen.push(candidate);
        }
        seen
    }

    /// One JSON object per row.
    pub fn to_objects(&self) -> Vec<Value> {
        let names = self.unique_columns();
        self.rows
            .iter()
            .map(|row| {
                let mut m = Map::with_capacity(names.len());
                for (name, v) in names.iter().zip(row) {
                    m.insert(name.clone(), v.clone());
                }
                Value::Object(m)
            })
            .collect()
    }

    /// An aligned text table in the style of psql, with a row count footer.
    pub fn render_table(&self) -> String {
        let cells: Vec<Vec<String>> = self.rows.iter().map(|r| r.iter().map(cell_text).collect()).collect();
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |items: &[String]| -> String {
            items.iter().zip(&widths).map(|(s, w)| format!(" {s:<w$} ", w = *w)).collect::<Vec<_>>().join("|").trim_end().to_string()
        };
        let mut out = String::new();
        out.push_str(&line(&self.columns));
        out.push('\n');
        out.push_str(&widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("+"));
        out.push('\n');
        for row in &cells {
            out.push_str(&line(row));
            out.push('\n');
        }
        let n = self.rows.len();
        out.push_str(&format!(
            "({n} row{}{})",
            if n == 1 { "" } else { "s" },
            if self.truncated { ", truncated by ask.row_limit" } else { "" }
        ));
        out
    }

    /// Compact rendering for a prompt: a header line, then one JSON array per row, at most
    /// `max_rows` rows. Values stay JSON-quoted so that text in the data reads as data.
    pub fn render_for_prompt(&self, max_rows: usize) -> String {
        let mut out = serde_json::to_string(&self.columns).unwrap_or_default();
        out.push('\n');
        for row in self.rows.iter().take(max_rows) {
            out.push_str(&serde_json::to_string(row).unwrap_or_default());
            out.push('\n');
        }
        if self.rows.len() > max_rows {
            out.push_str(&format!("... {} more rows not shown\n", self.rows.len() - max_rows));
        }
        if self.truncated {
            out.push_str("... the result was cut at the row limit; more rows exist\n");
        }
        out
    }
}

fn cell_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs() -> ResultSet {
        ResultSet {
            columns: vec!["name".into(), "n".into(), "n".into()],
            rows: vec![vec![json!("Roma"), json!(3), Value::Null], vec![json!("Le Petit"), json!(12), json!(true)]],
            truncated: false,
        }
    }

    #[test]
    fn objects_get_unique_keys() {
        assert_eq!(rs().to_objects()[0], json!({"name": "Roma", "n": 3, "n_2": null}));
    }

    #[test]
    fn table_is_aligned() {
        assert_eq!(rs().render_table(), " name     | n  | n\n----------+----+------\n Roma     | 3  |\n Le Petit | 12 | true\n(2 rows)");
    }

    #[test]
    fn prompt_rendering_limits_rows() {
        let mut r = rs();
        r.truncated = true;
        let text = r.render_for_prompt(1);
        assert_eq!(
            text,
            "[\"name\",\"n\",\"n\"]\n[\"Roma\",3,null]\n... 1 more rows not shown\n... the result was cut at the row limit; more rows exist\n"
        );
    }
}
