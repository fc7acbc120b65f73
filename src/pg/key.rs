//! The API key: its setting, whether pg_ask was preloaded (only then is the setting
//! superuser-only from the start of every session), and to which server a request may take it.
//! Errors scrub it from every text they send (`pg::errors`), so this module reads no other
//! setting module.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

use pgrx::guc::GucSetting;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::{debug1, pg_sys};

use pg_ask_core::secret::Secret;

use crate::pg::server_wide::{server_text, session_settings_count, Text};

/// API key. Superuser-only; SHOW prints it masked (registered with the other settings in
/// `pg::gucs`).
pub(crate) static API_KEY: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// The configured key, for scrubbing texts. Requests take theirs from [`api_key_for`].
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

/// Whether the session's LLM or embedding URL comes from `ALTER DATABASE ... SET`, which a
/// database's owner, who need not be a superuser, chooses: a superuser's key does not go there.
fn urls_set_per_database() -> bool {
    pgrx::Spi::get_one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_settings s
                         WHERE s.name OPERATOR(pg_catalog.=) ANY ('{ask.base_url,ask.embedding_base_url}'::pg_catalog.text[])
                           AND s.source OPERATOR(pg_catalog.=) ANY ('{database,database user}'::pg_catalog.text[]))",
    )
    .ok()
    .flatten()
    .unwrap_or(true)
}

fn same_url(a: &str, b: &str) -> bool {
    a.trim().trim_end_matches('/') == b.trim().trim_end_matches('/')
}

/// The key to send with a request to `url`: the configured key when `url` is the
/// `ask.base_url` or `ask.embedding_base_url` set server-wide, or when a superuser calls with
/// the session's own settings in force; otherwise none (a role may point pg_ask at any server,
/// but not take the key there). A superuser's rights borrowed through a SECURITY DEFINER
/// function or an owner switch do not count: the session's settings are another role's.
///
/// A key while pg_ask is not preloaded is refused: until the library was loaded in a session,
/// that key was a placeholder setting that every role could read.
pub(crate) fn api_key_for(url: &str) -> Secret {
    let key = api_key();
    if key.is_empty() {
        return key;
    }
    if !preloaded() {
        crate::pg::errors::Raised::new(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "ask.api_key is set, but pg_ask is not in shared_preload_libraries",
        )
        .detail(
            "Until pg_ask is loaded in a session, PostgreSQL keeps ask.api_key as a placeholder setting that any role can read with SHOW.",
        )
        .hint("ALTER SYSTEM SET shared_preload_libraries = 'pg_ask' (keep the libraries already listed there) and restart PostgreSQL.")
        .raise();
    }
    // SAFETY: a plain catalog lookup for the current user, from the backend's thread.
    let superuser = unsafe { pg_sys::superuser() } && session_settings_count() && !urls_set_per_database();
    let server_url = [Text::BaseUrl, Text::EmbeddingBaseUrl].into_iter().filter_map(server_text).any(|u| same_url(&u, url));
    if superuser || server_url {
        key
    } else {
        debug1!("pg_ask: ask.api_key is not sent to {url}: not a base URL set in the server's configuration");
        Secret::default()
    }
}
