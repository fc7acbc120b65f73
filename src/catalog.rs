//! Reading the description of the tables the calling role may read.

use pgrx::prelude::*;
use pgrx::JsonB;

use pg_ask_core::schema::{self, Table};

const DESCRIBE_TABLES: &str = include_str!("../sql/describe_tables.sql");

/// Tables (and views) the current role may SELECT, with only the columns it may SELECT.
pub fn readable_tables() -> Result<Vec<Table>, String> {
    let json = Spi::get_one::<JsonB>(DESCRIBE_TABLES).map_err(|e| e.to_string())?;
    match json {
        Some(JsonB(v)) => schema::from_json(v),
        None => Ok(Vec::new()),
    }
}
