//! The settings that decide where data and the API key go (the LLM's and the embeddings'
//! provider, URL and model, and the limits of a call), as the server's configuration sets them;
//! when a session's own values of them count; and to which server the key is sent.
//!
//! Any role may `SET ask.embedding_base_url` in its own session. That is its right while
//! pg_ask works for it, with its privileges, on data it may read. It is not while pg_ask works
//! as somebody else: a table owner's value refresh fired by another role's INSERT, a SECURITY
//! DEFINER function, an event trigger, a security-restricted operation. There the user id
//! differs from the session's role ([`session_settings_count`] is false), and these settings are
//! the server's: the built-in default, postgresql.conf, `ALTER SYSTEM`, the command line or
//! `ALTER ROLE ALL SET`, which only a superuser can set. A check hook on each of them records
//! the value from those sources as PostgreSQL applies it (at start, at every reload, in every
//! backend), so reading it costs nothing.

use std::ffi::{c_char, c_int, c_void};

use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::{debug1, pg_guard, pg_sys};

use pg_ask_core::secret::Secret;

use crate::pg::backend;
use crate::pg::key::{api_key, preloaded};

/// Settings recorded as text.
#[derive(Clone, Copy)]
pub(crate) enum Text {
    BaseUrl = 0,
    Model,
    EmbeddingBaseUrl,
    EmbeddingModel,
}

/// Settings recorded as an integer (enums by their ordinal).
#[derive(Clone, Copy)]
pub(crate) enum Int {
    Provider = 0,
    EmbeddingProvider,
    RequestTimeout,
    MaxTokens,
    MaxValuesPerColumn,
}

/// Sources a role cannot choose for itself: the built-in default, the server's configuration
/// (postgresql.conf, `ALTER SYSTEM`, the command line) and `ALTER ROLE ALL SET`.
fn server_wide(source: pg_sys::GucSource::Type) -> bool {
    source <= pg_sys::GucSource::PGC_S_GLOBAL
}

/// Whether the session's own values of these settings count: pg_ask runs as the session's role
/// (`SET ROLE` included). False inside a SECURITY DEFINER function, a switch to a table's or the
/// extension's owner, an event trigger pg_ask runs as its owner, or any other change of user id.
pub(crate) fn session_settings_count() -> bool {
    // SAFETY: two reads of the backend's own user ids, from its thread.
    unsafe { pg_sys::GetUserId() == pg_sys::GetOuterUserId() }
}

/// `session`, or the server's value of `slot` where the session's do not count.
pub(crate) fn text(slot: Text, session: String) -> String {
    if session_settings_count() {
        return session;
    }
    backend::with(|b| b.server.borrow().texts[slot as usize].clone()).unwrap_or_default()
}

/// `session`, or the server's value of `slot` (`default` if none was recorded).
pub(crate) fn int(slot: Int, session: i32, default: i32) -> i32 {
    if session_settings_count() {
        return session;
    }
    backend::with(|b| b.server.borrow().ints[slot as usize]).unwrap_or(default)
}

/// The server's configured value of a text setting, whoever asks (for the key's destinations):
/// not the built-in default, which nobody chose.
fn server_text(slot: Text) -> Option<String> {
    backend::with(|b| {
        let s = b.server.borrow();
        s.configured[slot as usize].then(|| s.texts[slot as usize].clone()).flatten()
    })
    .filter(|u| !u.trim().is_empty())
}

unsafe fn c_text(value: *mut *mut c_char) -> Option<String> {
    if value.is_null() || (*value).is_null() {
        return None;
    }
    Some(std::ffi::CStr::from_ptr(*value).to_string_lossy().into_owned())
}

/// The check hook of a text setting: records a server-wide value, accepts every value.
macro_rules! record_text {
    ($name:ident, $slot:expr) => {
        #[pg_guard]
        pub(crate) unsafe extern "C-unwind" fn $name(
            newval: *mut *mut c_char,
            _extra: *mut *mut c_void,
            source: pg_sys::GucSource::Type,
        ) -> bool {
            if server_wide(source) {
                let value = c_text(newval);
                backend::with(|b| {
                    let mut s = b.server.borrow_mut();
                    s.texts[$slot as usize] = value;
                    s.configured[$slot as usize] = source != pg_sys::GucSource::PGC_S_DEFAULT;
                });
            }
            true
        }
    };
}

/// The check hook of an integer or enum setting: records a server-wide value.
macro_rules! record_int {
    ($name:ident, $slot:expr) => {
        #[pg_guard]
        pub(crate) unsafe extern "C-unwind" fn $name(
            newval: *mut c_int,
            _extra: *mut *mut c_void,
            source: pg_sys::GucSource::Type,
        ) -> bool {
            if server_wide(source) && !newval.is_null() {
                let value = *newval;
                backend::with(|b| b.server.borrow_mut().ints[$slot as usize] = Some(value));
            }
            true
        }
    };
}

record_text!(check_base_url, Text::BaseUrl);
record_text!(check_model, Text::Model);
record_text!(check_embedding_base_url, Text::EmbeddingBaseUrl);
record_text!(check_embedding_model, Text::EmbeddingModel);
record_int!(check_provider, Int::Provider);
record_int!(check_embedding_provider, Int::EmbeddingProvider);
record_int!(check_request_timeout, Int::RequestTimeout);
record_int!(check_max_tokens, Int::MaxTokens);
record_int!(check_max_values_per_column, Int::MaxValuesPerColumn);

/// Sources whose values every role can read: `ALTER DATABASE/ROLE ... SET` (stored in
/// `pg_db_role_setting`, applied at connection as `PGC_S_GLOBAL`, `PGC_S_DATABASE`,
/// `PGC_S_USER`, `PGC_S_DATABASE_USER`, and checked before it is stored as `PGC_S_TEST`, which
/// is also how a function's `SET` clause, stored in `pg_proc`, is checked).
fn readable_by_every_role(source: pg_sys::GucSource::Type) -> bool {
    use pg_sys::GucSource::*;
    matches!(source, PGC_S_GLOBAL | PGC_S_DATABASE | PGC_S_USER | PGC_S_DATABASE_USER | PGC_S_TEST)
}

/// Refuses a key where every role could read it (see [`readable_by_every_role`]). The message
/// is set here, so PostgreSQL's own ("invalid value for parameter ...: <value>") never prints it.
#[pg_guard]
pub(crate) unsafe extern "C-unwind" fn check_api_key(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    source: pg_sys::GucSource::Type,
) -> bool {
    let empty = c_text(newval).is_none_or(|k| k.is_empty());
    if empty || !readable_by_every_role(source) {
        return true;
    }
    let keep = |text: &std::ffi::CStr| pg_sys::MemoryContextStrdup(pg_sys::ErrorContext, text.as_ptr());
    pg_sys::GUC_check_errmsg_string = keep(c"ask.api_key may not be set per database, per role or in a function's SET clause");
    pg_sys::GUC_check_errdetail_string = keep(c"Those settings are stored in pg_db_role_setting or pg_proc, which every role can read.");
    pg_sys::GUC_check_errhint_string = keep(
        c"Set the key server-wide, with pg_ask in shared_preload_libraries: ALTER SYSTEM SET ask.api_key = '...'; SELECT pg_reload_conf(); and remove a stored one with ALTER DATABASE ... RESET ask.api_key or ALTER ROLE ... RESET ask.api_key.",
    );
    false
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
