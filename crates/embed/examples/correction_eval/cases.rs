//! The cases of the correction benchmark: the columns (defog databases and the fixture) and
//! each stored value perturbed the ways an LLM miswrites values, beside legitimate absent ones.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use pg_ask_core::values::decide::lexical_evidence;
use sqlparser::ast::{DataType, Expr, SetExpr, Statement, Value};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Demonyms and aliases, used only to perturb values present in the data.
const PAIRS: &[(&str, &str, &str)] = &[
    ("demonym", "France", "French"),
    ("demonym", "Italy", "Italian"),
    ("demonym", "Japan", "Japanese"),
    ("demonym", "China", "Chinese"),
    ("demonym", "Mexico", "Mexican"),
    ("demonym", "Germany", "German"),
    ("demonym", "Spain", "Spanish"),
    ("demonym", "India", "Indian"),
    ("demonym", "Canada", "Canadian"),
    ("demonym", "Italian", "Italy"),
    ("demonym", "Japanese", "Japan"),
    ("demonym", "Mexican", "Mexico"),
    ("demonym", "Chinese", "China"),
    ("demonym", "American", "America"),
    ("alias", "United States", "USA"),
    ("alias", "United States", "America"),
    ("alias", "USA", "United States"),
    ("alias", "US", "United States"),
    ("alias", "United Kingdom", "Great Britain"),
    ("alias", "UK", "United Kingdom"),
    ("alias", "New York", "NYC"),
    ("alias", "New York", "New York City"),
    ("alias", "California", "Calif."),
    ("alias", "Massachusetts", "Mass."),
];

/// Legitimate values to try against columns holding a related value (key → absent siblings).
const SIBLINGS: &[(&str, &[&str])] = &[
    ("France", &["Japan", "Spain", "Norway", "Peru"]),
    ("United States", &["Japan", "Norway"]),
    ("Los Angeles", &["Gotham", "Denver", "Philadelphia"]),
    ("New York", &["Gotham", "Seattle", "Boston"]),
    ("Italian", &["Ethiopian", "Korean", "Greek"]),
    ("California", &["Oregon", "Nevada", "Vermont"]),
];

pub(crate) struct Column {
    /// `db.table.column`, for failure listings.
    pub(crate) name: String,
    pub(crate) values: Vec<String>,
    /// `tuning` or `reporting`.
    pub(crate) part: &'static str,
    /// Knowledge variants: (written, stored).
    pub(crate) variants: Vec<(String, String)>,
    /// Legitimate values the column does not hold.
    pub(crate) absent: Vec<String>,
}

pub(crate) struct Case {
    pub(crate) column: usize,
    pub(crate) category: &'static str,
    pub(crate) literal: String,
    /// The value to fix to, or None: a legitimate value that must stay.
    pub(crate) gold: Option<String>,
    /// For held-out legitimate values: the value removed from the column.
    pub(crate) held_out: Option<String>,
}

/// Text columns of every defog database, with their distinct, name-like values.
pub(crate) fn load_columns(dir: &Path) -> Result<Vec<Column>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "sql")).collect();
    files.sort();
    for file in files {
        let db = file.file_stem().unwrap().to_string_lossy().to_string();
        let sql = std::fs::read_to_string(&file)?;
        let statements = Parser::parse_sql(&PostgreSqlDialect {}, &sql).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut text_cols: HashMap<(String, String), ()> = HashMap::new();
        let mut values: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for st in &statements {
            match st {
                Statement::CreateTable(ct) => {
                    for c in &ct.columns {
                        if matches!(
                            c.data_type,
                            DataType::Text
                                | DataType::Varchar(_)
                                | DataType::CharacterVarying(_)
                                | DataType::Char(_)
                                | DataType::Character(_)
                        ) {
                            text_cols.insert((ct.name.to_string(), c.name.value.clone()), ());
                        }
                    }
                }
                Statement::Insert(ins) => {
                    let table = ins.table.to_string();
                    let Some(source) = &ins.source else { continue };
                    let SetExpr::Values(v) = source.body.as_ref() else { continue };
                    for row in &v.rows {
                        for (col, e) in ins.columns.iter().zip(&row.content) {
                            if let Expr::Value(val) = e {
                                if let Value::SingleQuotedString(s) = &val.value {
                                    values.entry((table.clone(), col.to_string())).or_default().insert(s.clone());
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        for ((table, col), vals) in values {
            if !text_cols.contains_key(&(table.clone(), col.clone())) {
                continue;
            }
            let vals: Vec<String> = vals.into_iter().filter(|v| name_like(v)).collect();
            if vals.len() >= 3 {
                out.push(Column {
                    name: format!("{db}.{table}.{col}"),
                    values: vals,
                    part: "tuning",
                    variants: Vec::new(),
                    absent: Vec::new(),
                });
            }
        }
    }
    Ok(out)
}

/// The parts a fixture's databases belong to, in the order they are reported.
pub(crate) const PARTS: [&str; 4] = ["tuning", "reporting", "held-out", "held-out-2"];

/// The fixture's columns, each in its part.
pub(crate) fn load_fixture(path: &Path) -> Result<Vec<Column>, Box<dyn std::error::Error>> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let mut out = Vec::new();
    for db in v["databases"].as_array().ok_or("no databases")? {
        let part = match db["part"].as_str().and_then(|p| PARTS.iter().find(|known| **known == p)) {
            Some(part) => *part,
            None => return Err(format!("unknown part {:?}", db["part"]).into()),
        };
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
        };
        for c in db["columns"].as_array().ok_or("no columns")? {
            let values = strings(&c["values"]);
            let variants: Vec<(String, String)> = c["variants"]
                .as_object()
                .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
                .unwrap_or_default();
            for (w, stored) in &variants {
                if !values.contains(stored) {
                    return Err(format!("{}: variant {w:?} names {stored:?}, which is not a value", c["column"]).into());
                }
            }
            out.push(Column {
                name: format!("{}.{}", db["name"].as_str().unwrap_or("?"), c["column"].as_str().unwrap_or("?")),
                values,
                part,
                variants,
                absent: strings(&c["absent"]),
            });
        }
    }
    Ok(out)
}

/// A value a question would name: short, with letters, not an id, e-mail, URL or date.
fn name_like(v: &str) -> bool {
    let letters = v.chars().filter(|c| c.is_alphabetic()).count();
    v.chars().count() <= 40
        && letters >= 2
        && letters * 2 > v.chars().count()
        && !v.contains('@')
        && !v.contains("://")
        && !v.contains("www.")
}

pub(crate) fn build_cases(columns: &[Column]) -> Vec<Case> {
    let mut cases = Vec::new();
    for (ci, col) in columns.iter().enumerate() {
        let lower: HashMap<String, &String> = col.values.iter().map(|v| (v.to_lowercase(), v)).collect();
        let mut push = |category: &'static str, literal: String, gold: Option<&String>, held_out: Option<&String>| {
            // A perturbation that is itself another stored value (any case) is not a miswriting.
            if let Some(g) = gold {
                if literal == *g || lower.get(&literal.to_lowercase()).is_some_and(|v| *v != g) {
                    return;
                }
            }
            cases.push(Case { column: ci, category, literal, gold: gold.cloned(), held_out: held_out.cloned() });
        };
        for (i, v) in col.values.iter().enumerate() {
            let words: Vec<&str> = v.split_whitespace().collect();
            // case
            let flipped = if i % 2 == 0 { v.to_lowercase() } else { v.to_uppercase() };
            if flipped != *v {
                push("case", flipped, Some(v), None);
            }
            // typo: swap two adjacent letters in the middle, or drop one
            let chars: Vec<char> = v.chars().collect();
            if chars.iter().filter(|c| c.is_alphanumeric()).count() >= 6 {
                let mid = chars.len() / 2;
                let mut t = chars.clone();
                if i % 2 == 0 && chars[mid].is_alphabetic() && chars[mid + 1].is_alphabetic() && chars[mid] != chars[mid + 1] {
                    t.swap(mid, mid + 1);
                } else {
                    t.remove(mid);
                }
                push("typo", t.into_iter().collect(), Some(v), None);
            }
            // spacing / punctuation
            if words.len() >= 2 {
                let s = if i % 2 == 0 { words.join("-") } else { words.join("") };
                push("spacing", s, Some(v), None);
            }
            // plural / singular on the last word
            if let Some(last) = words.last() {
                if last.chars().all(char::is_alphabetic) && last.len() >= 4 {
                    let head = &words[..words.len() - 1];
                    let changed =
                        if last.ends_with('s') && !last.ends_with("ss") { last[..last.len() - 1].to_owned() } else { format!("{last}s") };
                    let mut w: Vec<String> = head.iter().map(|s| s.to_string()).collect();
                    w.push(changed);
                    push("plural", w.join(" "), Some(v), None);
                }
            }
            // initialism of multi-word names
            // (names of 2-4 capitalised words; only when no other value of the column shares it)
            let initial = |s: &str| -> Option<String> {
                let ws: Vec<&str> = s.split_whitespace().collect();
                let name = (2..=4).contains(&ws.len())
                    && ws.iter().all(|w| {
                        w.chars().next().is_some_and(char::is_uppercase) && w.chars().all(|c| c.is_alphabetic() || c == '\'' || c == '’')
                    });
                name.then(|| ws.iter().filter_map(|w| w.chars().next()).collect())
            };
            if let Some(init) = initial(v) {
                if col.values.iter().filter(|o| initial(o).as_deref() == Some(init.as_str())).count() == 1 {
                    push("initialism", init, Some(v), None);
                }
            }
            // word prefixes ('San Fran') and partial names ('Pasta House')
            if words.len() >= 2 {
                let pre: Vec<String> = words.iter().map(|w| w.chars().take(4).collect()).collect();
                let pre = pre.join(" ");
                if pre != *v {
                    push("prefix", pre, Some(v), None);
                }
                let partial = words[1..].join(" ");
                let unique = col.values.iter().filter(|o| o.contains(&partial)).count() == 1;
                if unique && partial.chars().filter(|c| c.is_alphabetic()).count() >= 4 {
                    push("partial", partial, Some(v), None);
                }
            }
            for (kind, gold, lit) in PAIRS {
                if v == gold {
                    push(if *kind == "demonym" { "demonym" } else { "alias" }, lit.to_string(), Some(v), None);
                }
            }
            for (written, stored) in &col.variants {
                if stored == v {
                    push("knowledge", written.clone(), Some(v), None);
                }
            }
            // legitimate: the value held out of its column, unless another value is a variant of it
            let has_variant = col.values.iter().any(|o| o != v && lexical_evidence(v, o).is_some_and(|l| l.is_strong()));
            if !has_variant {
                push("legit_holdout", v.clone(), None, Some(v));
            }
            if i == 0 {
                for a in &col.absent {
                    if !lower.contains_key(&a.to_lowercase()) {
                        push("legit_absent", a.clone(), None, None);
                    }
                }
            }
            for (key, siblings) in SIBLINGS {
                if v == key {
                    for s in *siblings {
                        if !lower.contains_key(&s.to_lowercase()) {
                            push("legit_sibling", s.to_string(), None, None);
                        }
                    }
                }
            }
        }
    }
    cases
}
