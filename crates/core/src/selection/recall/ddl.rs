//! Databases given as DDL and data: the tables a script creates, with the most frequent values
//! of their text columns, and column comments from defog's description files.

use std::collections::HashMap;

use serde_json::Value as Json;
use sqlparser::ast::{ColumnOption, Expr, Ident, ObjectName, ObjectNamePart, SetExpr, Statement, TableConstraint, TableObject, Value};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::schema::{Column, ForeignKey, Table};
use crate::selection::describe::{ColumnValues, TableProfile, MAX_VALUES_PER_COLUMN};
use crate::values::literals::quote_ident;

/// Why a database could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("the DDL of {schema} does not parse: {message}")]
    Ddl { schema: String, message: String },
    #[error("the column descriptions of {schema} are not valid JSON: {message}")]
    Descriptions { schema: String, message: String },
}

/// An identifier as PostgreSQL resolves it: unquoted names fold to lower case.
pub(super) fn folded(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

pub(super) fn last_part(name: &ObjectName) -> Option<String> {
    name.0.last().and_then(ObjectNamePart::as_ident).map(folded)
}

fn is_text_type(data_type: &str) -> bool {
    let t = data_type.to_lowercase();
    ["text", "varchar", "character", "char", "citext", "bpchar"].iter().any(|p| t.starts_with(p))
}

/// The tables a DDL script creates, all placed in `schema` (whatever schema the script used),
/// with identifiers folded as PostgreSQL folds them and quoted as `quote_ident` would. With
/// `with_values`, the [`MAX_VALUES_PER_COLUMN`] most frequent string values its `INSERT`s put
/// in each text column stand in for the value memory. Statements other than `CREATE TABLE`
/// and `INSERT` are ignored.
pub fn tables_from_ddl(ddl: &str, schema: &str, with_values: bool) -> Result<Vec<TableProfile>, EvalError> {
    let statements =
        Parser::parse_sql(&PostgreSqlDialect {}, ddl).map_err(|e| EvalError::Ddl { schema: schema.to_string(), message: e.to_string() })?;
    let qschema = quote_ident(schema);
    let mut tables: Vec<Table> = Vec::new();
    // (table index, column) -> value -> (count, first seen)
    let mut counts: HashMap<(usize, String), HashMap<String, (usize, usize)>> = HashMap::new();
    let mut seen = 0usize;
    for statement in &statements {
        match statement {
            Statement::CreateTable(ct) => {
                let Some(name) = last_part(&ct.name) else { continue };
                let mut t = Table { schema: qschema.clone(), name: quote_ident(&name), kind: "table".into(), ..Default::default() };
                for col in &ct.columns {
                    let cname = quote_ident(&folded(&col.name));
                    let mut column =
                        Column { name: cname.clone(), data_type: col.data_type.to_string().to_lowercase(), ..Default::default() };
                    for opt in &col.options {
                        match &opt.option {
                            ColumnOption::NotNull => column.not_null = true,
                            ColumnOption::PrimaryKey(_) => {
                                column.not_null = true;
                                t.primary_key = vec![cname.clone()];
                            }
                            ColumnOption::ForeignKey(fk) => {
                                if let Some(target) = last_part(&fk.foreign_table) {
                                    t.foreign_keys.push(ForeignKey {
                                        columns: vec![cname.clone()],
                                        references: format!("{qschema}.{}", quote_ident(&target)),
                                        ref_columns: fk.referred_columns.iter().map(|c| quote_ident(&folded(c))).collect(),
                                    });
                                }
                            }
                            ColumnOption::Comment(c) => column.comment = Some(c.clone()),
                            _ => {}
                        }
                    }
                    t.columns.push(column);
                }
                for constraint in &ct.constraints {
                    match constraint {
                        TableConstraint::PrimaryKey(pk) => {
                            t.primary_key = pk
                                .columns
                                .iter()
                                .filter_map(|c| match &c.column.expr {
                                    Expr::Identifier(i) => Some(quote_ident(&folded(i))),
                                    _ => None,
                                })
                                .collect();
                        }
                        TableConstraint::ForeignKey(fk) => {
                            if let Some(target) = last_part(&fk.foreign_table) {
                                t.foreign_keys.push(ForeignKey {
                                    columns: fk.columns.iter().map(|c| quote_ident(&folded(c))).collect(),
                                    references: format!("{qschema}.{}", quote_ident(&target)),
                                    ref_columns: fk.referred_columns.iter().map(|c| quote_ident(&folded(c))).collect(),
                                });
                            }
                        }
                        _ => {}
                    }
                }
                tables.push(t);
            }
            Statement::Insert(insert) if with_values => {
                let TableObject::TableName(name) = &insert.table else { continue };
                let Some(name) = last_part(name).map(|n| quote_ident(&n)) else { continue };
                let Some(ti) = tables.iter().position(|t| t.name == name) else { continue };
                let columns: Vec<String> = if insert.columns.is_empty() {
                    tables[ti].columns.iter().map(|c| c.name.clone()).collect()
                } else {
                    insert.columns.iter().filter_map(|c| last_part(c).map(|n| quote_ident(&n))).collect()
                };
                let Some(SetExpr::Values(values)) = insert.source.as_deref().map(|q| q.body.as_ref()) else { continue };
                for row in &values.rows {
                    for (col, expr) in columns.iter().zip(&row.content) {
                        if let Expr::Value(v) = expr {
                            if let Value::SingleQuotedString(s) = &v.value {
                                let text_column = tables[ti].columns.iter().any(|c| &c.name == col && is_text_type(&c.data_type));
                                if text_column && !s.trim().is_empty() {
                                    seen += 1;
                                    let e = counts.entry((ti, col.clone())).or_default().entry(s.clone()).or_insert((0, seen));
                                    e.0 += 1;
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut profiles: Vec<TableProfile> = tables.into_iter().map(TableProfile::new).collect();
    for ((ti, column), values) in counts {
        let mut values: Vec<(String, (usize, usize))> = values.into_iter().collect();
        values.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
        let values = values.into_iter().take(MAX_VALUES_PER_COLUMN).map(|(v, _)| v).collect();
        profiles[ti].values.push(ColumnValues { column, values });
    }
    for p in &mut profiles {
        let order: Vec<String> = p.table.columns.iter().map(|c| c.name.clone()).collect();
        p.values.sort_by_key(|v| order.iter().position(|c| *c == v.column));
    }
    Ok(profiles)
}

/// Set column comments from defog's description file:
/// `{"table_metadata": {"table": [{"column_name": …, "column_description": …}]}}`. Names
/// are matched case-insensitively; empty descriptions are skipped.
pub fn apply_column_descriptions(profiles: &mut [TableProfile], schema: &str, json: &str) -> Result<(), EvalError> {
    let v: Json = serde_json::from_str(json).map_err(|e| EvalError::Descriptions { schema: schema.to_string(), message: e.to_string() })?;
    let Some(meta) = v.get("table_metadata").and_then(Json::as_object) else {
        return Err(EvalError::Descriptions { schema: schema.to_string(), message: "no table_metadata object".into() });
    };
    for (table, columns) in meta {
        let Some(p) = profiles.iter_mut().find(|p| crate::selection::unquote(&p.table.name).eq_ignore_ascii_case(table)) else { continue };
        for c in columns.as_array().into_iter().flatten() {
            let (Some(name), Some(desc)) =
                (c.get("column_name").and_then(Json::as_str), c.get("column_description").and_then(Json::as_str))
            else {
                continue;
            };
            if desc.trim().is_empty() {
                continue;
            }
            if let Some(col) = p.table.columns.iter_mut().find(|col| crate::selection::unquote(&col.name).eq_ignore_ascii_case(name)) {
                col.comment = Some(desc.trim().to_string());
            }
        }
    }
    Ok(())
}
