//! The deny lists: functions generated SQL may never call, relations it may never read, and
//! settings `current_setting()` may not show.

/// How an entry of [`FORBIDDEN_FUNCTIONS`] matches a function name. Names are compared in
/// lower case, without schema and without quotes, so `PG_SLEEP`, `"pg_sleep"` and
/// `pg_catalog.pg_sleep` all match `pg_sleep` (a user function of the same name in another
/// schema is refused too, which is the safe side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamePattern {
    /// The whole name.
    Exact(&'static str),
    /// Every name that starts with this (`pg_sleep` covers `pg_sleep_for`, `pg_sleep_until`).
    Prefix(&'static str),
}

impl NamePattern {
    fn matches(self, lower_name: &str) -> bool {
        match self {
            NamePattern::Exact(name) => lower_name == name,
            NamePattern::Prefix(prefix) => lower_name.starts_with(prefix),
        }
    }
}

/// A group of forbidden functions with the reason they are forbidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForbiddenGroup {
    /// The names of the group.
    pub names: &'static [NamePattern],
    /// Why generated SQL may not call them (shown in the refusal message).
    pub reason: &'static str,
}

use NamePattern::{Exact, Prefix};

/// Functions generated SQL may never call, anywhere in the statement.
///
/// Not listed on purpose: `currval`, `lastval` and `current_setting` only read (the latter is
/// refused for settings that may hold a credential, see [`secret_setting`]);
/// `txid_current_if_assigned` and `pg_current_xact_id_if_assigned` do not assign an id; every
/// other volatile function is left to the database layer's volatility check.
pub const FORBIDDEN_FUNCTIONS: &[ForbiddenGroup] = &[
    ForbiddenGroup { names: &[Prefix("pg_sleep")], reason: "it holds the session and its snapshot for as long as it is told to" },
    ForbiddenGroup {
        names: &[
            Exact("pg_terminate_backend"),
            Exact("pg_cancel_backend"),
            Exact("pg_reload_conf"),
            Prefix("pg_rotate_logfile"),
            Exact("pg_log_backend_memory_contexts"),
            Exact("pg_promote"),
            Exact("pg_switch_wal"),
            Prefix("pg_wal_replay_"),
            Prefix("pg_backup_"),
            Exact("pg_start_backup"),
            Exact("pg_stop_backup"),
            Exact("pg_create_restore_point"),
        ],
        reason: "it acts on other sessions or on the server itself",
    },
    ForbiddenGroup { names: &[Exact("set_config")], reason: "it changes settings of the session (for instance its read-only mode)" },
    ForbiddenGroup {
        names: &[Exact("pg_input_is_valid"), Exact("pg_input_error_info")],
        reason: "it runs the input function and checks of a type named in a string, which the guard cannot see",
    },
    ForbiddenGroup { names: &[Exact("nextval"), Exact("setval")], reason: "it changes a sequence, which no rollback undoes" },
    ForbiddenGroup {
        names: &[Exact("txid_current"), Exact("pg_current_xact_id")],
        reason: "it assigns a transaction id, which is a write",
    },
    ForbiddenGroup {
        names: &[Prefix("lo_"), Exact("loread"), Exact("lowrite")],
        reason: "it reads or writes large objects, or copies server files into and out of them",
    },
    ForbiddenGroup {
        names: &[
            Exact("pg_read_file"),
            Exact("pg_read_binary_file"),
            Exact("pg_stat_file"),
            Prefix("pg_ls_"),
            Prefix("pg_file_"),
            Exact("pg_logdir_ls"),
        ],
        reason: "it reads or writes the server's file system",
    },
    ForbiddenGroup {
        names: &[
            Prefix("dblink"),
            Prefix("pg_background"),
            Prefix("query_to_xml"),
            Prefix("cursor_to_xml"),
            Prefix("table_to_xml"),
            Prefix("schema_to_xml"),
            Prefix("database_to_xml"),
            Exact("ts_stat"),
            Exact("ts_rewrite"),
        ],
        reason: "it runs SQL given as text, or on another connection, out of the guard's sight",
    },
    ForbiddenGroup {
        names: &[Prefix("pg_advisory_"), Prefix("pg_try_advisory_")],
        reason: "it takes advisory locks that can outlive the query",
    },
    ForbiddenGroup {
        names: &[Exact("pg_notify"), Prefix("pg_logical_")],
        reason: "it sends notifications, writes WAL messages or consumes replication changes",
    },
    ForbiddenGroup {
        names: &[
            Prefix("pg_create_"),
            Exact("pg_drop_replication_slot"),
            Prefix("pg_copy_"),
            Exact("pg_replication_slot_advance"),
            Prefix("pg_replication_origin_"),
        ],
        reason: "it creates, drops or moves replication slots and origins",
    },
    ForbiddenGroup { names: &[Prefix("pg_stat_reset"), Exact("pg_stat_statements_reset")], reason: "it resets server statistics" },
    ForbiddenGroup {
        names: &[Exact("pg_show_all_settings"), Exact("pg_show_all_file_settings"), Exact("pg_options_to_table")],
        reason: "it reads server settings or stored options, which can hold credentials",
    },
];

/// Relations generated SQL may never read: they show server settings, stored settings or
/// credentials (`ask.api_key` above all, whoever the caller is). Matched like function names:
/// lower case, without schema or quotes.
pub const FORBIDDEN_RELATIONS: &[&str] = &[
    "pg_settings",
    "pg_file_settings",
    "pg_db_role_setting",
    "pg_user_mappings",
    "pg_user_mapping",
    "pg_authid",
    "pg_shadow",
    "pg_hba_file_rules",
    "pg_ident_file_mappings",
];

/// Whether a setting name (any case) may hold a credential, so that `current_setting()` may not
/// read it in generated SQL: `ask.api_key`, and any name that speaks of a key, password,
/// secret, token or credential.
pub fn secret_setting(name: &str) -> bool {
    let lower = name.trim().to_lowercase();
    ["key", "password", "passwd", "secret", "token", "credential"].iter().any(|word| lower.contains(word))
}

/// Why `name` (a bare function name, any case, without schema or quotes) is forbidden, or
/// `None` when generated SQL may call it.
pub fn forbidden_function_reason(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    FORBIDDEN_FUNCTIONS.iter().find(|group| group.names.iter().any(|pattern| pattern.matches(&lower))).map(|group| group.reason)
}

/// `": <reason>"` for a function name as written (possibly qualified and quoted), for the
/// message of [`Refusal::ForbiddenFunction`].
pub(super) fn forbidden_reason_suffix(written: &str) -> String {
    let bare = written.rsplit('.').next().unwrap_or(written).trim_matches('"');
    forbidden_function_reason(bare).map(|reason| format!(": {reason}")).unwrap_or_default()
}
