//! The check after a write step: what the step wrote, read again once it holds it. A step is
//! checked before it runs, but the partitions and inheritance children its rows go to are
//! locked only as rows are routed to them: another session can add a deferrable trigger (or a
//! default, a rule) to one of them between the check and the run, and that trigger would fire
//! at COMMIT as the writer, after every scope. Once the step has run, every relation it wrote
//! is locked against such changes; they are held to the same rules as before
//! ([`super::reach::refusal`]), and a refusal rolls the step back with everything it queued.

use pgrx::pg_sys;

/// The relations this backend holds a RowExclusiveLock on, or why they could not be read.
pub(super) fn row_exclusive() -> Result<Vec<pg_sys::Oid>, String> {
    super::trusted::paused(|| {
        crate::pg::spi::select_generic("guard_written", include_str!("../../sql/guard_written.sql"), &[], &[], |r| r.get::<pg_sys::Oid>(1))
            .map_err(|e| format!("the relations the step writes could not be read: {e}"))
    })
}

/// Why what the step wrote (the relations locked for writing since `before`) may not be
/// kept, or `None`. A failed read refuses: nothing here may be taken for "nothing written".
pub(super) fn refusal(before: &Result<Vec<pg_sys::Oid>, String>) -> Option<String> {
    let before = match before {
        Ok(before) => before,
        Err(e) => return Some(e.clone()),
    };
    let after = match row_exclusive() {
        Ok(after) => after,
        Err(e) => return Some(e),
    };
    let reached = super::reach::Reached { relations: after.into_iter().filter(|r| !before.contains(r)).collect(), ..Default::default() };
    // SAFETY: the role the step runs as, read in the step's own transaction.
    let writer = unsafe { pg_sys::GetUserId() };
    super::reach::refusal(&reached, Some(writer))
}

// A statement run between a write step's check and its run, as another session's could be:
// set by tests to stand for a concurrent change.
#[cfg(any(test, feature = "pg_test"))]
thread_local! {
    pub(crate) static BETWEEN_CHECK_AND_RUN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs what a test set to happen between a write step's check and its run.
#[cfg(any(test, feature = "pg_test"))]
pub(super) fn between_check_and_run() {
    if let Some(sql) = BETWEEN_CHECK_AND_RUN.with(|b| b.borrow_mut().take()) {
        super::trusted::paused(|| pgrx::Spi::run(&sql)).expect("the statement a test runs between a step's check and its run");
    }
}
