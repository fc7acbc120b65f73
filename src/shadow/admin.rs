//! Enabling and disabling capture on a table, and one log entry as a command.

use super::catalog::{entry, key_columns, parse_encoding, table_name};
use crate::pg::errors::raise;
use crate::pg::identity::{as_memory_owner, role_sql};
use crate::pg::spi::relname;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::JsonB;

pub(crate) fn require_owner(rel: pg_sys::Oid, what: &str) {
    if !crate::pg::spi::owns(rel) {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("must be the owner of table {} to {what}", relname(rel)),
            "Ask the table's owner (or a superuser) to do it.",
        );
    }
}

pub(crate) fn require_table(rel: pg_sys::Oid) {
    let (kind, persistence) = Spi::get_two_with_args::<i8, i8>(
        "SELECT c.relkind, c.relpersistence FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[rel.into()],
    )
    .unwrap_or((None, None));
    if !matches!(kind.map(|k| k as u8), Some(b'r') | Some(b'p')) {
        raise(
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!("{} is not a table", relname(rel)),
            "Only ordinary and partitioned tables can be shadowed.",
        );
    }
    // A temporary table goes with its session, and no event trigger sees it go: its log would
    // outlive it, and a later table given the same OID would inherit it.
    if persistence.map(|p| p as u8) == Some(b't') {
        raise(
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!("{} is a temporary table", relname(rel)),
            "Only permanent (or unlogged) tables can be shadowed: their log outlives the session.",
        );
    }
}

/// Start capturing the row changes of `rel`. With `snapshot` (the default) the rows already in
/// the table are logged first as INSERTs, so that a replay starts from an empty table.
/// Returns the number of rows snapshotted.
#[pg_extern(volatile, parallel_unsafe)]
pub(crate) fn _shadow_enable(rel: pg_sys::Oid, snapshot: bool) -> i64 {
    require_table(rel);
    require_owner(rel, "shadow it");
    // Citus refuses triggers on these, or (with citus.enable_unsafe_triggers) copies the
    // capture trigger to shards that no shadow knows, and every write then fails.
    crate::pg::citus::refuse_distributed(
        rel,
        "shadow it (its rows live in shards on the workers, which capture triggers cannot follow)",
        "Shadow a local table of the coordinator, or a Citus local table.",
    );
    let name = relname(rel);
    let already = as_memory_owner(|| {
        Spi::get_one_with_args::<bool>("SELECT EXISTS (SELECT FROM ask.shadow_tables WHERE relid OPERATOR(pg_catalog.=) $1)", &[rel.into()])
            .ok()
            .flatten()
            .unwrap_or(false)
    });
    if already {
        notice!("pg_ask: {name} is already shadowed");
        return 0;
    }
    let keys = key_columns(rel);
    if keys.is_empty() {
        notice!("pg_ask: {name} has no primary key: replayed UPDATEs and DELETEs are keyed by every column of the old row");
    }
    Spi::run(&format!(
        "CREATE TRIGGER ask_shadow_capture AFTER INSERT OR UPDATE OR DELETE ON {name} FOR EACH ROW EXECUTE FUNCTION ask._shadow_capture()"
    ))
    .unwrap_or_else(|e| crate::pg::errors::internal("could not create the capture trigger", e).raise());
    Spi::run(&format!(
        "CREATE TRIGGER ask_shadow_truncate AFTER TRUNCATE ON {name} FOR EACH STATEMENT EXECUTE FUNCTION ask._shadow_truncated()"
    ))
    .unwrap_or_else(|e| crate::pg::errors::internal("could not create the truncate trigger", e).raise());
    let rows = Spi::get_one::<i64>(&format!("SELECT count(*) FROM {name}")).ok().flatten().unwrap_or(0);
    let complete = rows == 0 || snapshot;
    let qualified = crate::pg::spi::qualified_relname(rel);
    let caller = crate::pg::identity::caller();
    let record = format!("INSERT INTO ask.shadow_tables (relid, key_columns, complete, enabled_by) VALUES ($1, $2, $3, {})", role_sql(4));
    as_memory_owner(|| {
        Spi::run_with_args(&record, &[rel.into(), keys.clone().into(), complete.into(), caller.into()])
            .unwrap_or_else(|e| crate::pg::errors::internal("could not record the shadowed table", e).raise());
    });
    if snapshot && rows > 0 {
        snapshot_rows(rel, &qualified).unwrap_or_else(|e| crate::pg::errors::internal(&format!("could not snapshot {name}"), e).raise());
    }
    if snapshot && rows > 0 {
        notice!("pg_ask: {name} is shadowed; its {rows} current rows were logged as INSERTs");
        rows
    } else {
        if rows > 0 {
            notice!("pg_ask: {name} is shadowed; its {rows} current rows are not in the log (snapshot => false)");
        }
        0
    }
}

/// Rows of the snapshot read and logged at a time.
const SNAPSHOT_BATCH: std::ffi::c_long = 1000;

/// Logs the rows of `rel` (its schema-qualified name `qualified`) as INSERTs. The table is
/// read as the caller, its owner: planning and reading it runs the code its objects bring in
/// (an extended statistic's or an index's expression, a policy, a child's foreign data
/// wrapper), which must never run as the extension's owner. Only the rows already read, as
/// `jsonb` values, are written into the log as the extension's owner, by a statement that
/// reads no table of the caller's.
fn snapshot_rows(rel: pg_sys::Oid, qualified: &str) -> Result<(), pgrx::spi::Error> {
    Spi::connect(|client| {
        let mut cursor = client.open_cursor(&format!("SELECT pg_catalog.to_jsonb(t) FROM {qualified} t"), &[]);
        loop {
            let mut batch: Vec<JsonB> = Vec::new();
            for row in cursor.fetch(SNAPSHOT_BATCH)? {
                batch.extend(row.get::<JsonB>(1)?);
            }
            if batch.is_empty() {
                return Ok(());
            }
            as_memory_owner(|| {
                Spi::run_with_args(
                    "INSERT INTO ask.shadow_log (seq, xid, relid, op, old_row, new_row)
                     SELECT nextval('ask.shadow_log_seq'), pg_catalog.txid_current(), $1, 'I', NULL, r
                       FROM pg_catalog.unnest($2::pg_catalog.jsonb[]) WITH ORDINALITY AS u (r, n) ORDER BY n",
                    &[rel.into(), batch.into()],
                )
            })?;
        }
    })
}

/// Stop capturing `rel`; unless `keep_log`, its captured changes are deleted. Returns the
/// number of log entries deleted.
#[pg_extern(volatile, parallel_unsafe)]
pub(crate) fn _shadow_disable(rel: pg_sys::Oid, keep_log: bool) -> i64 {
    require_owner(rel, "stop shadowing it");
    let name = relname(rel);
    let known = as_memory_owner(|| {
        Spi::get_one_with_args::<bool>("SELECT EXISTS (SELECT FROM ask.shadow_tables WHERE relid = $1)", &[rel.into()])
            .ok()
            .flatten()
            .unwrap_or(false)
    });
    if !known {
        raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("{name} is not shadowed"),
            "ask.shadow_enable(table) starts capturing.",
        );
    }
    Spi::run(&format!("DROP TRIGGER IF EXISTS ask_shadow_capture ON {name}")).ok();
    Spi::run(&format!("DROP TRIGGER IF EXISTS ask_shadow_truncate ON {name}")).ok();
    as_memory_owner(|| {
        Spi::run_with_args("DELETE FROM ask.shadow_tables WHERE relid = $1", &[rel.into()]).ok();
        if keep_log {
            0
        } else {
            Spi::get_one_with_args::<i64>(
                "WITH d AS (DELETE FROM ask.shadow_log WHERE relid = $1 RETURNING 1) SELECT count(*) FROM d",
                &[rel.into()],
            )
            .ok()
            .flatten()
            .unwrap_or(0)
        }
    })
}

/// One log entry as a command: an SQL statement (`encoding => 'sql'`) or an English sentence
/// (`'nl'`). Used by the ask.shadow_commands view.
#[pg_extern(stable, parallel_safe)]
pub(crate) fn _shadow_command(rel: pg_sys::Oid, op: i8, old_row: Option<JsonB>, new_row: Option<JsonB>, encoding: &str) -> Option<String> {
    let encoding = parse_encoding(encoding);
    let keys = key_columns(rel);
    entry(table_name(rel), op, old_row, new_row, 0, 0, keys).encode(encoding).ok()
}
