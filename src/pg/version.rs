//! The library's version against the version of the extension's SQL objects in this database.
//!
//! Between installing a new pg_ask package and `ALTER EXTENSION pg_ask UPDATE`, the new
//! library runs against the previous version's tables. What it writes must fit them: a
//! function that writes a table whose shape changed asks [`sql_at_least`] and writes the old
//! shape, and the session is told once to update.

use pgrx::prelude::*;

/// The library's own version (the package's, which is also the extension's default version).
pub(crate) const LIBRARY: &str = env!("CARGO_PKG_VERSION");

/// The version of pg_ask's SQL objects in this database (`pg_extension.extversion`), read once
/// per transaction.
pub(crate) fn installed() -> Option<String> {
    if let Some(known) = super::spi::per_transaction(|facts| facts.extversion.clone()) {
        return Some(known);
    }
    let v = Spi::get_one::<String>("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_ask'").ok().flatten()?;
    super::spi::per_transaction(|facts| facts.extversion = Some(v.clone()));
    if v != LIBRARY && !crate::pg::backend::with(|b| b.warned_version.replace(true)) {
        warning_behind(&v);
    }
    Some(v)
}

fn warning_behind(installed: &str) {
    super::errors::Raised::new(
        pgrx::pg_sys::errcodes::PgSqlErrorCode::ERRCODE_WARNING,
        format!("pg_ask's library is version {LIBRARY}, but its SQL objects in this database are version {installed}"),
    )
    .detail("What needs the newer objects is left out until the extension is updated.")
    .hint("ALTER EXTENSION pg_ask UPDATE")
    .warning();
}

/// Whether the extension's SQL objects are at `version` or later (true when it cannot tell).
pub(crate) fn sql_at_least(version: &str) -> bool {
    installed().is_none_or(|v| parse(&v) >= parse(version))
}

fn parse(v: &str) -> Vec<u64> {
    v.split(['.', '-']).map(|p| p.parse().unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_compare_by_number() {
        assert!(super::parse("0.10.0") > super::parse("0.9.1"));
        assert!(super::parse("0.2.0") >= super::parse("0.2.0"));
        assert!(super::parse("0.1.0") < super::parse("0.2.0"));
    }
}
