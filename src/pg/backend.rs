//! Everything a backend keeps between statements, in one struct, and the one story of when a
//! part of it stops being true.
//!
//! A backend is one thread: [`Backend`] lives in one `thread_local`, and each part sits in its
//! own cell, borrowed only while it is read or written, so an invalidation PostgreSQL delivers
//! in the middle of a read (they arrive whenever a lock is taken) never finds a part borrowed.
//!
//! Each part is kept until one of these says otherwise, and its documentation says which:
//!
//! * **catalog** — PostgreSQL's invalidation messages, received by the callbacks registered in
//!   [`init`]: a change of one relation (columns, keys, privileges, a rename, a new or dropped
//!   relation, a comment) marks that relation stale; a change of a schema, of role membership
//!   or of every relation marks the whole description stale; a change of a type drops what is
//!   known of types. The description counts its reads ([`Backend::generation`]); every part
//!   built from it keeps the generation it was built at and is rebuilt (or brought up to date
//!   by the relations that changed) when the generation moved on.
//! * **role** — parts that depend on what the current user may read keep that user, and are
//!   rebuilt for another (`SET ROLE`, a SECURITY DEFINER function).
//! * **memory version** — the schema selection memory's state keeps the memory's version
//!   number, which every write of the memory moves on (in any backend).
//! * **settings** — parts made from settings keep what they were made from (the model path,
//!   the embedding provider and model) and are made again when it differs.
//!
//! Besides these, some parts last a transaction (catalog facts, keyed by the local transaction
//! id), one call (the ledger's call id), or the backend's life (kept plans, which PostgreSQL's
//! plan cache itself invalidates; the HTTP runtime; the server's configured settings).
//! The settings themselves are PostgreSQL's (`super::gucs`), and whether the library was
//! preloaded is a flag of the process (`super::key`): neither is a cache.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

use pgrx::pg_sys;

use pg_ask_core::schema::Table;

/// More stale relations than this at once (a migration, a restore) and the whole description
/// is read again: one set-based read beats a long list of oids.
const MAX_STALE: usize = 512;

/// The parts, grouped by what makes them stale.
#[derive(Default)]
pub(crate) struct Backend {
    // ---- catalog (and role) ----
    /// The description of the tables the user may read (`crate::schema`). Role: keyed by user.
    pub(crate) description: RefCell<Option<Described>>,
    /// The whole description must be read again (catalog: schema, membership, every relation).
    pub(crate) all_stale: Cell<bool>,
    /// Relations announced changed since the last read (catalog: one relation).
    pub(crate) stale: RefCell<BTreeSet<u32>>,
    /// Counts the reads of the catalog: a change means the description may have changed.
    pub(crate) generation: Cell<u64>,
    /// Relations described one by one for a selection from the stored index
    /// (`crate::schema::describe_exactly`), by oid, for one user (role: keyed by user;
    /// catalog: a change of a relation forgets it and every relation with a foreign key, whose
    /// description names the table it references; a change of a schema or of membership
    /// forgets all).
    pub(crate) described_one_by_one: RefCell<Option<(pg_sys::Oid, HashMap<u32, Table>)>>,
    /// The selection catalog (`crate::selection`) with the generation and user it was built
    /// for.
    pub(crate) selection_catalog: RefCell<Option<(u64, pg_sys::Oid, Rc<pg_ask_core::selection::Catalog>)>>,
    /// Whether a type name (as format_type writes it) stands for a text-like type (catalog:
    /// dropped when any type changes, see `types_valid`).
    pub(crate) text_types: RefCell<HashMap<String, bool>>,
    /// No type changed since `text_types` was last checked.
    pub(crate) types_valid: Cell<bool>,
    /// The oids of ask.shadow_log and ask.shadow_log_seq (catalog: forgotten when either
    /// relation changes or goes).
    pub(crate) shadow_log: Cell<Option<(pg_sys::Oid, pg_sys::Oid)>>,
    /// Per row type: how the capture trigger turns a row into jsonb (`crate::shadow`). Checked
    /// against the row's shape on every row, so a changed type is planned again where used.
    pub(crate) row_plans: RefCell<HashMap<pg_sys::Oid, RowPlan>>,
    /// `to_jsonb` call info per row type, made once in TopMemoryContext.
    pub(crate) to_jsonb: RefCell<HashMap<pg_sys::Oid, *mut pg_sys::FmgrInfo>>,

    // ---- memory version (and role, settings, catalog) ----
    /// What the schema selection memory holds for the caller's catalog.
    pub(crate) fresh: RefCell<Option<FreshMemo>>,
    /// The memory's lexical index statistics and name words (`crate::selection::indexed`),
    /// kept while the memory's version stays the one they were read at.
    pub(crate) stored_index: RefCell<Option<Rc<pg_ask_core::selection::find::IndexStats>>>,

    // ---- settings ----
    /// The local embedding model, with the directory it was loaded from (about 90 MB of
    /// weights, memory-mapped and shared between backends through the page cache).
    pub(crate) local_embedder: RefCell<Option<(PathBuf, std::sync::Arc<pg_ask_embed::Embedder>)>>,
    /// Parsed workloads by name, with the load time they were parsed from (a reload moves it).
    pub(crate) workloads: RefCell<HashMap<String, (String, Rc<pg_ask_core::shadow::workload::Workload>)>>,
    /// The workload whose tables this session keeps in its temporary schema for computing
    /// truths (its name and CREATE statements), with every relation creating them added there:
    /// checked against the temporary schema's contents before each use.
    pub(crate) scratch: RefCell<Option<(String, Vec<TempRelation>)>>,

    // ---- transaction ----
    /// Catalog facts every lookup needs, read once per transaction.
    pub(crate) facts: RefCell<Facts>,

    // ---- call ----
    /// The id of the call in progress, for the ledger.
    pub(crate) call: Cell<Option<i64>>,

    // ---- the backend's life ----
    /// Plans of the statements `select_kept` and `write_kept` run, by their text (PostgreSQL's
    /// plan cache re-plans them when an object they use or the search path changes).
    pub(crate) plans: RefCell<HashMap<String, pgrx::spi::OwnedPreparedStatement>>,
    /// The HTTP runtime the LLM and embedding calls run on (no lock: one thread).
    pub(crate) runner: RefCell<Option<pg_ask_core::llm::Runner>>,
    /// What the server's configuration sets, recorded by the settings' check hooks. In a
    /// backend forked from a postmaster that preloaded pg_ask, the postmaster's record comes
    /// along.
    pub(crate) server: RefCell<Recorded>,
    /// The session was told its SQL objects are older than the library.
    pub(crate) warned_version: Cell<bool>,
}

thread_local! {
    static BACKEND: Backend = Backend { all_stale: Cell::new(true), ..Backend::default() };
}

/// `f` over this backend's state.
pub(crate) fn with<R>(f: impl FnOnce(&Backend) -> R) -> R {
    BACKEND.with(f)
}

/// The id of the `ask()` call in progress, if any (`ask::calls` draws it; the ledger writes it
/// beside every LLM call).
pub(crate) fn current_call() -> Option<i64> {
    with(|b| b.call.get())
}

/// The description for one user: each relation's oid, sort key (schema and name unquoted) and
/// table, in the order shown (by schema, then name).
pub(crate) struct Described {
    pub(crate) user: pg_sys::Oid,
    pub(crate) keys: Vec<(pg_sys::Oid, String, String)>,
    pub(crate) tables: Rc<Vec<Table>>,
}

/// A relation of the session's temporary schema: (oid, name, kind).
pub(crate) type TempRelation = (pg_sys::Oid, String, String);

/// What this backend found the memory to hold for its catalog: per kind, the names whose
/// description the memory holds as the catalog gives it, and those among them embedded by
/// another provider or model; valid while the memory's version, the user and the embedder
/// stay those it was found under. After a change of the catalog, only the names whose
/// description changed are looked up again.
pub(crate) struct FreshMemo {
    pub(crate) version: i64,
    pub(crate) user: pg_sys::Oid,
    pub(crate) embedder: Option<(String, String)>,
    /// The selection catalog's id it was found for.
    pub(crate) catalog: u64,
    pub(crate) tables: Freshness,
    pub(crate) schemas: Freshness,
}

/// What the memory holds for one kind of the caller's catalog, as far as it does not depend
/// on the question.
#[derive(Default)]
pub(crate) struct Freshness {
    /// Fresh names whose stored embedding is the current embedder's, with their row's key.
    pub(crate) embedded: HashMap<String, pg_sys::Oid>,
    /// Names (with their description) of indexed schemas that the memory does not hold as the
    /// catalog describes them now.
    pub(crate) stale: Vec<(String, String)>,
    /// Fresh names embedded by another provider or model.
    pub(crate) other_embedder: HashSet<String>,
    /// The stored embeddings of `embedded` names read so far, scaled to length 1.
    pub(crate) vectors: HashMap<String, Vec<f32>>,
}

/// Catalog facts every lookup needs, for one transaction.
#[derive(Default)]
pub(crate) struct Facts {
    /// The transaction's local id (MyProc->lxid) the facts were read in.
    pub(crate) lxid: u32,
    /// The owner of ask.value_memory.
    pub(crate) owner: Option<pg_sys::Oid>,
    /// The quoted schema of each extension asked about (vector, pg_trgm).
    pub(crate) schemas: Vec<(&'static str, String)>,
    /// Relations found in `ask.shadow_tables` (the capture trigger writes only for those).
    pub(crate) shadowed: Vec<pg_sys::Oid>,
    /// pg_ask's version in this database (see [`super::version`]).
    pub(crate) extversion: Option<String>,
}

/// Text settings the server's configuration may set.
pub(crate) const TEXTS: usize = 4;
/// Integer and enum settings the server's configuration may set.
pub(crate) const INTS: usize = 5;

/// What the server's configuration sets (see `super::server_wide`).
#[derive(Default)]
pub(crate) struct Recorded {
    pub(crate) texts: [Option<String>; TEXTS],
    /// The text came from the configuration, not the built-in default: only such a URL is a
    /// destination of the key.
    pub(crate) configured: [bool; TEXTS],
    pub(crate) ints: [Option<i32>; INTS],
}

/// How one column becomes a jsonb value on the capture trigger's fast path (the same value
/// `to_jsonb` gives).
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Dropped,
    Numeric,
    Int2,
    Int4,
    Int8,
    Bool,
    /// text, varchar: the string itself.
    Text,
    /// date, timestamp, timestamptz: ISO 8601 as `to_jsonb` writes it.
    DateTime(pg_sys::Oid),
    /// A type written through its output function (bpchar, uuid); `numeric` when the text is a
    /// number (float4, float8).
    Out {
        outfn: pg_sys::Oid,
        numeric: bool,
    },
}

/// Per row type: the column shape it was made for, and the columns' names and kinds; `None`
/// when a column's type is not on the fast path (then the whole row goes through `to_jsonb`).
pub(crate) struct RowPlan {
    pub(crate) shape: Vec<(pg_sys::Oid, bool)>,
    pub(crate) columns: Option<Vec<Column>>,
    /// Column indexes in jsonb key order (shorter names first, then bytewise): the order a
    /// jsonb object keeps its keys in, so the object is built without sorting.
    pub(crate) key_order: Vec<usize>,
    /// Per-row scratch, reused: the deformed old and new rows, which columns an UPDATE
    /// changed, and the object's pairs.
    pub(crate) old: Deformed,
    pub(crate) new: Deformed,
    pub(crate) changed: Vec<bool>,
    pub(crate) pairs: Vec<pg_sys::JsonbPair>,
}

/// A row taken apart into its values and nulls.
#[derive(Default)]
pub(crate) struct Deformed {
    pub(crate) values: Vec<pg_sys::Datum>,
    pub(crate) nulls: Vec<bool>,
}

/// One column of a [`RowPlan`].
pub(crate) struct Column {
    pub(crate) name: std::ffi::CString,
    pub(crate) kind: Kind,
    pub(crate) byval: bool,
    pub(crate) len: i16,
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_relation_change(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    with(|b| {
        if let Some((log, seq)) = b.shadow_log.get() {
            if relid == pg_sys::InvalidOid || relid == log || relid == seq {
                b.shadow_log.set(None);
            }
        }
        if relid == pg_sys::InvalidOid {
            b.all_stale.set(true);
            b.described_one_by_one.replace(None);
            return;
        }
        if let Some((_, known)) = b.described_one_by_one.borrow_mut().as_mut() {
            known.remove(&relid.to_u32());
            known.retain(|_, t| t.foreign_keys.is_empty());
        }
        let mut stale = b.stale.borrow_mut();
        stale.insert(relid.to_u32());
        if stale.len() > MAX_STALE {
            b.all_stale.set(true);
        }
    });
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_schema_or_membership_change(_arg: pg_sys::Datum, _cache: std::ffi::c_int, _hash: u32) {
    with(|b| {
        b.all_stale.set(true);
        b.described_one_by_one.replace(None);
    });
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_type_change(_arg: pg_sys::Datum, _cache: std::ffi::c_int, _hash: u32) {
    with(|b| b.types_valid.set(false));
}

/// Register the invalidation callbacks; once per backend, from `_PG_init`.
pub(crate) fn init() {
    use pg_sys::SysCacheIdentifier::*;
    // SAFETY: registering plain functions with PostgreSQL's invalidation machinery at load
    // time, as extensions do; they only note what changed in backend-local state. Changes of
    // relations, their columns and keys come as relcache invalidations with the relation's
    // oid (PostgreSQL sends one for every pg_class, pg_attribute, pg_index and foreign-key
    // pg_constraint row written); schemas, role membership and attributes (a role made superuser
    // or not) and types have no relation to name.
    unsafe {
        for cache in [NAMESPACEOID, AUTHMEMMEMROLE, AUTHOID] {
            pg_sys::CacheRegisterSyscacheCallback(cache as _, Some(on_schema_or_membership_change), pg_sys::Datum::from(0));
        }
        pg_sys::CacheRegisterSyscacheCallback(TYPEOID as _, Some(on_type_change), pg_sys::Datum::from(0));
        pg_sys::CacheRegisterRelcacheCallback(Some(on_relation_change), pg_sys::Datum::from(0));
    }
}
