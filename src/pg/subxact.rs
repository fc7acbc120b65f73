//! Running code inside an internal subtransaction, catching PostgreSQL errors as values.

use std::panic::UnwindSafe;

use pgrx::pg_sys;
use pgrx::pg_sys::panic::CaughtError;
use pgrx::PgTryBuilder;

/// Whether a subtransaction that ended without error is kept or undone.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnSuccess {
    Release,
    RollBack,
}

/// Run `f` in a subtransaction. An error raised inside rolls the subtransaction back and comes
/// back as `Err`, leaving the caller's transaction usable; on success the subtransaction is
/// released or rolled back as `on_success` says.
// CaughtError is pgrx's; it is carried once per caught error, not worth a box.
#[allow(clippy::result_large_err)]
pub fn run<R>(on_success: OnSuccess, f: impl FnOnce() -> R + UnwindSafe) -> Result<R, CaughtError> {
    // SAFETY: the standard internal-subtransaction pattern (as in PL/Python): remember the
    // memory context and resource owner, start the subtransaction, and restore both after
    // releasing or rolling it back. PgTryBuilder has already copied and flushed the error
    // state when it hands us a caught error.
    unsafe {
        let old_cxt = pg_sys::CurrentMemoryContext;
        let old_owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(old_cxt);

        let outcome = PgTryBuilder::new(|| Ok(f())).catch_others(Err).execute();

        if outcome.is_ok() && on_success == OnSuccess::Release {
            pg_sys::ReleaseCurrentSubTransaction();
        } else {
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
        }
        pg_sys::MemoryContextSwitchTo(old_cxt);
        pg_sys::CurrentResourceOwner = old_owner;
        outcome
    }
}

/// Refuse to start `procedure` (a procedure that commits between batches) where it cannot
/// commit: inside a transaction block (`BEGIN`, or several statements sent as one, as `psql -c
/// "SET ...; CALL ..."` sends them) or an atomic context (a CALL from a function). Called first
/// The message of an error [`run`] caught; anything that is not a PostgreSQL error (a Rust
/// panic) is raised again.
pub fn caught_message(caught: CaughtError) -> String {
    match &caught {
        CaughtError::PostgresError(r) | CaughtError::ErrorReport(r) => r.message().to_string(),
        _ => caught.rethrow(),
    }
}

/// thing by the procedure's first step, while the procedure's own SPI connection is current.
pub fn require_nonatomic(procedure: &str) {
    // SAFETY: both read backend-local state of the current transaction and SPI connection.
    let (block, nonatomic) = unsafe { (pg_sys::IsTransactionBlock(), pg_sys::SPI_inside_nonatomic_context()) };
    if block || !nonatomic {
        let r = crate::pg::errors::Raised::new(
            pgrx::pg_sys::errcodes::PgSqlErrorCode::ERRCODE_ACTIVE_SQL_TRANSACTION,
            format!("CALL {procedure} commits after each batch and cannot run inside a transaction block"),
        )
        .detail("A procedure can commit only when CALLed on its own: not inside BEGIN ... COMMIT, not in a query string of several statements (PostgreSQL runs them as one transaction), not from a function.")
        .hint(
            "Run the CALL as a statement of its own: psql -c \"SET ...\" -c \"CALL ...\", or SET the settings first and CALL on its own.",
        );
        r.raise();
    }
}
