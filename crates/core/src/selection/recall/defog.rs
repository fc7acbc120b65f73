//! defog's eleven databases and their questions, read from the files of its evaluation.

use super::ddl::{apply_column_descriptions, tables_from_ddl, EvalError};
use super::gold::EvalCase;
use crate::selection::describe::TableProfile;
use crate::selection::fuse::Catalog;

/// The eleven defog databases, each loaded as one schema.
pub const DEFOG_DATABASES: [&str; 11] = [
    "academic",
    "advising",
    "atis",
    "broker",
    "car_dealership",
    "derm_treatment",
    "ewallet",
    "geography",
    "restaurants",
    "scholar",
    "yelp",
];

/// Why the defog data could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DefogError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error(transparent)]
    Eval(#[from] EvalError),
    #[error("the questions file has no column {0}")]
    Column(&'static str),
}

/// Records of a CSV text (RFC 4180: fields in double quotes may hold commas, line breaks and
/// doubled quotes). The header is the first record.
pub fn read_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
                any = false;
            }
            _ => field.push(c),
        }
    }
    if any {
        record.push(field);
        records.push(record);
    }
    records
}

/// defog's eleven databases from `dir` (`NAME.sql` and `NAME.json`) as eleven schemas of one
/// catalog (with `with_values`, frequent string values stand in for the value memory), and
/// the questions of `questions_gen_postgres.csv` as cases.
pub fn load_defog(dir: &std::path::Path, with_values: bool) -> Result<(Catalog, Vec<EvalCase>), DefogError> {
    let read = |name: String| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|source| DefogError::Io { path: path.display().to_string(), source })
    };
    let mut tables: Vec<TableProfile> = Vec::new();
    for db in DEFOG_DATABASES {
        let mut t = tables_from_ddl(&read(format!("{db}.sql"))?, db, with_values)?;
        apply_column_descriptions(&mut t, db, &read(format!("{db}.json"))?)?;
        tables.extend(t);
    }
    let catalog = Catalog::new(tables, &[]);
    let records = read_csv(&read("questions_gen_postgres.csv".into())?);
    let header = records.first().cloned().unwrap_or_default();
    let col = |name: &'static str| header.iter().position(|h| h == name).ok_or(DefogError::Column(name));
    let (q, sql, db) = (col("question")?, col("query")?, col("db_name")?);
    let cases =
        records.iter().skip(1).filter(|r| r.len() > q.max(sql).max(db)).map(|r| EvalCase::new(&r[q], &r[db], &r[sql], &catalog)).collect();
    Ok((catalog, cases))
}
