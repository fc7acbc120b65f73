//! The API key's setting and whether pg_ask was preloaded (only then is the setting
//! superuser-only from the start of every session, so a key is refused without it). Errors scrub the key from every text they
//! send (`pg::errors`), so this module uses no other module of pg_ask; to which server a
//! request may take the key is `pg::server_wide`'s decision.

use std::ffi::{c_char, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};

use pgrx::guc::GucSetting;
use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;

use pg_ask_core::secret::Secret;

/// API key. Superuser-only; SHOW prints it masked (registered with the other settings in
/// `pg::gucs`).
pub(crate) static API_KEY: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// The configured key, for scrubbing texts. Requests take theirs from `server_wide::api_key_for`.
pub fn api_key() -> Secret {
    Secret::new(API_KEY.get().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default())
}

/// Whether the library was loaded through `shared_preload_libraries` (set in `_PG_init`, in
/// the postmaster, and inherited by every backend it forks).
static PRELOADED: AtomicBool = AtomicBool::new(false);

/// Called first thing in `_PG_init`.
pub fn note_preloading() {
    // SAFETY: reads a plain bool PostgreSQL sets while it loads shared_preload_libraries.
    PRELOADED.store(unsafe { pg_sys::process_shared_preload_libraries_in_progress }, Ordering::Relaxed);
}

/// Whether pg_ask was loaded through `shared_preload_libraries`. Only then is `ask.api_key`
/// defined, superuser-only, from the start of every session: before a library defines a
/// setting, PostgreSQL keeps its value as a placeholder that any role may read.
pub fn preloaded() -> bool {
    PRELOADED.load(Ordering::Relaxed)
}

/// The part of `ask.api_key`'s check hook that refuses a key while pg_ask was not preloaded
/// (55000, with a hint that says how to preload it): whatever stores it then (`ALTER SYSTEM`
/// after `LOAD 'pg_ask'`, `SET`), every role's next session could read it with `SHOW` before
/// the library defines the setting. An empty key is always taken. At server start with the
/// key in postgresql.auto.conf, the postmaster checks it while it loads
/// shared_preload_libraries, after [`note_preloading`]: taken. Without the preload, a backend
/// that loads pg_ask later gets the file's key refused by this hook, which PostgreSQL reports
/// as a WARNING while it loads a library: the key stays unset and nothing fails.
///
/// # Safety
/// Called from a GUC check hook with the `newval` PostgreSQL passes it.
pub(crate) unsafe fn refuse_unless_preloaded(newval: *mut *mut c_char) -> bool {
    let empty = newval.is_null() || (*newval).is_null() || CStr::from_ptr(*newval).to_bytes().is_empty();
    if empty || preloaded() {
        return true;
    }
    let keep = |text: &CStr| pg_sys::MemoryContextStrdup(pg_sys::ErrorContext, text.as_ptr());
    pg_sys::GUC_check_errcode(PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE as i32);
    pg_sys::GUC_check_errmsg_string = keep(c"ask.api_key may be set only with pg_ask in shared_preload_libraries");
    pg_sys::GUC_check_errdetail_string = keep(
        c"pg_ask was loaded by this session only: until a session loads it, PostgreSQL keeps ask.api_key as a placeholder setting that any role can read with SHOW.",
    );
    pg_sys::GUC_check_errhint_string = keep(
        c"Add pg_ask to shared_preload_libraries (ALTER SYSTEM SET shared_preload_libraries = 'pg_ask', keeping the libraries already listed there) and restart PostgreSQL; then set the key.",
    );
    false
}
