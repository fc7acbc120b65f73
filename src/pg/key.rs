//! The API key's setting and whether pg_ask was preloaded (only then is the setting
//! superuser-only from the start of every session). Errors scrub the key from every text they
//! send (`pg::errors`), so this module uses no other module of pg_ask; to which server a
//! request may take the key is `pg::server_wide`'s decision.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

use pgrx::guc::GucSetting;
use pgrx::pg_sys;

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
