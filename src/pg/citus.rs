//! Citus, when the database has it: which relations are a node's shards (never described as
//! tables of their own), and which tables Citus distributes or replicates to every node, on
//! which pg_ask's triggers cannot work (Citus refuses triggers there, or copies them to shards
//! that no capture knows).

use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;

use crate::pg::errors::raise;

/// Whether the citus extension is installed in this database.
pub(crate) fn installed() -> bool {
    // SAFETY: looks the name up in pg_extension (missing_ok: InvalidOid when absent).
    unsafe { pg_sys::get_extension_oid(c"citus".as_ptr(), true) != pg_sys::InvalidOid }
}

/// Whether `rel` is a table Citus distributes (by hash, range or append, or as a single shard)
/// or a reference table; a Citus local table, which keeps its rows on the coordinator and takes
/// triggers, is not.
pub(crate) fn distributed(rel: pg_sys::Oid) -> bool {
    installed()
        && Spi::get_one_with_args::<bool>(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p
                            WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass
                              AND (p.partmethod OPERATOR(pg_catalog.<>) 'n' OR p.repmodel OPERATOR(pg_catalog.=) 't'
                                   OR p.colocationid OPERATOR(pg_catalog.<>) 0))",
            &[rel.into()],
        )
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// Refuse `what` on a table Citus distributes or replicates (0A000), before anything is made.
pub(crate) fn refuse_distributed(rel: pg_sys::Oid, what: &str, hint: &str) {
    if distributed(rel) {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{} is a Citus distributed or reference table: pg_ask cannot {what}", crate::pg::spi::relname(rel)),
            hint,
        );
    }
}
