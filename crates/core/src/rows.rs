//! Query results as plain data: JSON values per cell, rendered for people and for prompts.

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultSet {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// More rows existed than were fetched (the row limit cut the result).
    pub truncated: bool,
    /// The size limit on a result (`ask.max_result_size`) cut it: rows past it were not read,
    /// or a cell was cut.
    pub size_cut: bool,
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
        // Padded by hand: a width in a format string is at most 65,535, and a cell may be longer.
        let line = |items: &[String]| -> String {
            items
                .iter()
                .zip(&widths)
                .map(|(s, w)| format!(" {s}{} ", " ".repeat(w.saturating_sub(s.chars().count()))))
                .collect::<Vec<_>>()
                .join("|")
                .trim_end()
                .to_string()
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
        self.render_for_prompt_within(max_rows, usize::MAX, None).0
    }

    /// [`ResultSet::render_for_prompt`] with each cell cut to `cell_chars` characters (a cut
    /// cell ends in a mark with its full length), and `why_fewer` said of rows left out. Also
    /// the number of cells cut.
    pub fn render_for_prompt_within(&self, max_rows: usize, cell_chars: usize, why_fewer: Option<&str>) -> (String, usize) {
        let mut out = serde_json::to_string(&self.columns).unwrap_or_default();
        out.push('\n');
        let mut cut = 0;
        for row in self.rows.iter().take(max_rows) {
            // As `serde_json::to_string(row)` writes it, with the long cells cut.
            out.push('[');
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let cell = match cut_cell(v, cell_chars) {
                    Some(c) => {
                        cut += 1;
                        serde_json::to_string(&c)
                    }
                    None => serde_json::to_string(v),
                };
                out.push_str(&cell.unwrap_or_default());
            }
            out.push_str("]\n");
        }
        if self.rows.len() > max_rows {
            out.push_str(&format!("... {} more rows not shown", self.rows.len() - max_rows));
            if let Some(why) = why_fewer {
                out.push_str(&format!(" ({why})"));
            }
            out.push('\n');
        }
        if self.truncated {
            out.push_str("... the result was cut at the row limit; more rows exist\n");
        }
        (out, cut)
    }
}

/// A cell longer than `max_chars` characters (as JSON text, for a value that is not a string)
/// as its first `max_chars` characters and a mark with its length: `"abc…[cut: 44040 chars]"`.
pub fn cut_cell(v: &Value, max_chars: usize) -> Option<Value> {
    let cut = match v {
        Value::String(s) => cut_text(s, max_chars),
        Value::Array(_) | Value::Object(_) => cut_text(&v.to_string(), max_chars),
        _ => None,
    };
    cut.map(Value::String)
}

/// `text` cut to `max_chars` characters with a mark saying how long it was
/// (`abc…[cut: 44040 chars]`), or `None` when it is no longer than that.
pub fn cut_text(text: &str, max_chars: usize) -> Option<String> {
    if text.len() <= max_chars {
        return None;
    }
    let (at, _) = text.char_indices().nth(max_chars)?;
    Some(format!("{}…[cut: {} chars]", &text[..at], text.chars().count()))
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
            size_cut: false,
        }
    }

    #[test]
    fn objects_get_unique_keys() {
        assert_eq!(rs().to_objects()[0], json!({"name": "Roma", "n": 3, "n_2": null}));
    }

    #[test]
    fn a_cell_wider_than_a_format_width_is_rendered() {
        let r = ResultSet { columns: vec!["x".into()], rows: vec![vec![json!("y".repeat(70_000))]], truncated: false, size_cut: false };
        let table = r.render_table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!((lines[0], lines[1].len(), lines[2].len(), lines[3]), (" x", 70_002, 70_001, "(1 row)"));
    }

    #[test]
    fn table_is_aligned() {
        assert_eq!(rs().render_table(), " name     | n  | n\n----------+----+------\n Roma     | 3  |\n Le Petit | 12 | true\n(2 rows)");
    }

    #[test]
    fn long_cells_are_cut_with_their_length() {
        let r = ResultSet {
            columns: vec!["names".into()],
            rows: vec![vec![json!("x".repeat(1000))], vec![json!({"k": "v"})]],
            truncated: false,
            size_cut: false,
        };
        let (text, cut) = r.render_for_prompt_within(1, 4, Some("the prompt's size limit"));
        assert_eq!(text, "[\"names\"]\n[\"xxxx…[cut: 1000 chars]\"]\n... 1 more rows not shown (the prompt's size limit)\n");
        assert_eq!(cut, 1);
        assert_eq!(cut_cell(&json!({"k": "value"}), 5), Some(json!("{\"k\":…[cut: 13 chars]")));
        assert_eq!(cut_cell(&json!(123456789), 2), None);
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
