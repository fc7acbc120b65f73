//! The statement PostgreSQL plans is the statement pg_ask checked.
//!
//! pg_ask checks a statement by analysing its text, and SPI analyses the same text again to
//! run it. Between the two, another session can commit a relation or a type in a schema
//! earlier on the caller's `search_path`, a constraint on a domain the statement reaches
//! (`ALTER DOMAIN ... ADD CONSTRAINT ... NOT VALID` takes no lock on any table), a trigger on a
//! partition the statement has not locked yet. PostgreSQL's planner hook sees the query SPI
//! made of the text ([`expecting`]):
//! - it may reach no relation and no type that the check did not see (both read as the check
//!   reads them, [`super::reach::collect`]), or it is refused before it is planned;
//! - in a write, each `nextval` of a sequence the check approved (the statement's own call, a
//!   written table's own default) becomes the node an identity column uses, once the caller's
//!   privilege on the sequence is checked as `nextval` checks it; so does, in the queries
//!   planned while the write runs (the writer's own trigger writing an audit table), a
//!   `nextval` of a sequence the writer owns. No other call of `nextval` may start while the
//!   write runs ([`super::trusted::writing`]): code added after the check (a domain's
//!   constraint, a partition's trigger condition), whichever function compiles it, cannot
//!   advance another role's sequence, the one effect of a write that other roles can read
//!   whatever happens to it.

use std::cell::{Cell, RefCell};
use std::ffi::{c_void, CStr, CString};

use pgrx::pg_sys;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;

use super::reach::Reached;

/// What a statement's check saw: the relations and types the statement reaches, and, for a
/// write, the sequences of the `nextval` calls it approved.
#[derive(Default)]
pub(crate) struct Checked {
    pub reached: Reached,
    pub sequences: Vec<pg_sys::Oid>,
    /// For a write, the role it runs as: the queries planned while it runs may advance that
    /// role's own sequences.
    pub writer: Option<pg_sys::Oid>,
}

struct Expected {
    sql: CString,
    checked: Checked,
}

thread_local! {
    static EXPECTED: RefCell<Option<Expected>> = const { RefCell::new(None) };
    /// While the expected statement is planned, the relations its check saw, and the Query
    /// being planned: the planner's look at a relation is the statement's own when the
    /// outermost planner level above it plans that Query (its subqueries and CTEs included),
    /// not when it plans a query planned within (a function the planner evaluates). Told by
    /// identity, not by counting planner calls: an error raised and caught within (a
    /// PL/pgSQL exception block in a function the planner folds) skips the frames that would
    /// count back down.
    static PLANNING: RefCell<Vec<pg_sys::Oid>> = const { RefCell::new(Vec::new()) };
    static PLANNING_QUERY: Cell<usize> = const { Cell::new(0) };
    static PLANNED: Cell<bool> = const { Cell::new(false) };
    /// While a write runs, the role it runs as.
    static WRITER: Cell<Option<pg_sys::Oid>> = const { Cell::new(None) };
}

static mut PREV_PLANNER: pg_sys::planner_hook_type = None;
static mut PREV_RELATION_INFO: pg_sys::get_relation_info_hook_type = None;

/// Installs the planner hook; called once from `_PG_init`. Outside [`expecting`] it only passes
/// on to the hook installed before it.
pub(crate) fn init() {
    // SAFETY: _PG_init runs once per process on the backend's thread; the previous hook is
    // kept and called in turn.
    unsafe {
        PREV_PLANNER = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(planner);
        PREV_RELATION_INFO = pg_sys::get_relation_info_hook;
        pg_sys::get_relation_info_hook = Some(relation_info);
    }
}

/// Run `f` (SPI running `sql`, the statement `checked` describes) with the planner hook
/// expecting it. A statement that ran without being planned is an error: nothing may run that
/// was not compared with its check.
pub(super) fn expecting<T>(sql: &CStr, checked: Checked, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    /// Forgets the expectation however `f` ends (a PostgreSQL error unwinds through here too).
    struct Forget;
    impl Drop for Forget {
        fn drop(&mut self) {
            EXPECTED.with(|e| e.borrow_mut().take());
            WRITER.with(|w| w.set(None));
            PLANNING_QUERY.with(|q| q.set(0));
            PLANNING.with(|p| p.borrow_mut().clear());
        }
    }
    WRITER.with(|w| w.set(checked.writer));
    EXPECTED.with(|e| *e.borrow_mut() = Some(Expected { sql: sql.to_owned(), checked }));
    PLANNED.with(|p| p.set(false));
    let _forget = Forget;
    let out = f()?;
    if !PLANNED.with(Cell::get) {
        return Err("the statement ran without being planned as pg_ask checked it".into());
    }
    Ok(out)
}

extern "C-unwind" {
    /// PostgreSQL's planner, called as C calls it: an error it raises goes on to the caller
    /// as PostgreSQL raised it (through pgrx's wrapper it would come back with a Rust
    /// backtrace in its detail).
    #[link_name = "standard_planner"]
    fn standard_planner_as_c(
        parse: *mut pg_sys::Query,
        query_string: *const std::ffi::c_char,
        cursor_options: std::ffi::c_int,
        bound_params: pg_sys::ParamListInfo,
    ) -> *mut pg_sys::PlannedStmt;
}

/// The planner hook: pg_ask's part ([`before_planning`]), then the planner before it. No
/// Rust value lives across the planner's call, so that an error it raises passes through this
/// frame as through a C one.
unsafe extern "C-unwind" fn planner(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    cursor_options: std::ffi::c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    before_planning(parse, query_string);
    let planned = match PREV_PLANNER {
        Some(prev) => prev(parse, query_string, cursor_options, bound_params),
        None => standard_planner_as_c(parse, query_string, cursor_options, bound_params),
    };
    // The expected statement is planned: its Query is no one's to match any more (its memory
    // may be another Query's later). An error instead unwinds to `expecting`, which forgets it.
    if PLANNING_QUERY.with(Cell::get) == parse as usize {
        PLANNING_QUERY.with(|q| q.set(0));
    }
    planned
}

/// The planner's look at each relation it reads, inheritance children and partitions among
/// them, as it expands them: while the expected statement is planned, a relation its check
/// did not see (a child attached to a table it reads after the check, behind a lock the
/// planner waited on) is refused before any of its code runs (a foreign table's wrapper
/// included).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    relation: pg_sys::Oid,
    inhparent: bool,
    rel: *mut pg_sys::RelOptInfo,
) {
    // The expected statement's own planning only (a query planned within it, pg_ask's own
    // catalog reads among them, is not the statement).
    if planning_the_expected(root) && !PLANNING.with(|p| p.borrow().contains(&relation)) {
        crate::pg::errors::Raised::new(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("the statement as planned reads {}, which its check did not see", relation_name(relation)),
        )
        .hint("Another session changed the schema between pg_ask's check of the statement and its run (a child or a partition attached); ask again.")
        .raise();
    }
    if let Some(prev) = PREV_RELATION_INFO {
        prev(root, relation, inhparent, rel);
    }
}

/// Whether `root` plans the expected statement: the outermost level above it (subqueries,
/// CTEs and set operations are planned with their parent's root) plans its Query.
///
/// # Safety
/// `root` is the planner's valid PlannerInfo.
unsafe fn planning_the_expected(root: *mut pg_sys::PlannerInfo) -> bool {
    let expected = PLANNING_QUERY.with(Cell::get);
    if expected == 0 || root.is_null() {
        return false;
    }
    let mut top = root;
    while !(*top).parent_root.is_null() {
        top = (*top).parent_root;
    }
    (*top).parse as usize == expected
}

/// What the hook does before the query is planned: the checked statement compared with its
/// check and its approved `nextval` calls turned into identity nodes; a query planned while a
/// write runs, its calls of the writer's own sequences.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn before_planning(parse: *mut pg_sys::Query, query_string: *const std::ffi::c_char) {
    // Taken before anything is planned: a query planned while this one is (a function the
    // planner evaluates) is not the one expected.
    let expected = if query_string.is_null() {
        None
    } else {
        EXPECTED.with(|e| {
            let mut e = e.borrow_mut();
            match e.as_ref() {
                Some(x) if CStr::from_ptr(query_string) == x.sql.as_c_str() => e.take(),
                _ => None,
            }
        })
    };
    if let Some(expected) = expected {
        if let Some(reason) = unseen(parse, &expected.checked.reached) {
            crate::pg::errors::Raised::new(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, reason)
                .hint("Another session changed the schema between pg_ask's check of the statement and its run; ask again.")
                .raise();
        }
        let approved = &expected.checked.sequences;
        nextval_as_identity(parse as *mut pg_sys::Node, &|seq| approved.contains(&seq));
        PLANNED.with(|p| p.set(true));
        // The planner's look at each relation of this Query is held to what the check saw
        // (`relation_info`).
        PLANNING.with(|p| *p.borrow_mut() = expected.checked.reached.relations.clone());
        PLANNING_QUERY.with(|q| q.set(parse as usize));
    } else if let Some(writer) = WRITER.with(Cell::get) {
        // A query planned while the write runs (its own trigger's): the defaults the rewriter
        // added for a table the writer owns (an audit table's serial key), nothing else.
        if written_relation(parse).and_then(super::reach::relation_owner) == Some(writer) {
            for entry in default_entries(parse, false) {
                nextval_as_identity((*entry).expr as *mut pg_sys::Node, &|_| true);
            }
        }
    }
}

/// The first relation or type the query reaches that its check did not see, named.
///
/// # Safety
/// `parse` is a valid Query of the current memory context.
unsafe fn unseen(parse: *mut pg_sys::Query, checked: &Reached) -> Option<String> {
    let mut now = Reached::default();
    super::reach::collect(parse, &mut now);
    if let Some(rel) = now.relations.iter().find(|r| !checked.relations.contains(r)) {
        return Some(format!("the statement as run reads or writes {}, which its check did not see", relation_name(*rel)));
    }
    let typ = now.types.iter().find(|t| !checked.types.contains(t))?;
    let name = CStr::from_ptr(pg_sys::format_type_be(*typ)).to_string_lossy().into_owned();
    Some(format!("the statement as run uses the type {name}, which its check did not see"))
}

/// A relation's name as `regclass` shows it, or its number when it has none.
unsafe fn relation_name(rel: pg_sys::Oid) -> String {
    let name = pg_sys::get_rel_name(rel);
    if name.is_null() {
        return format!("relation {}", u32::from(rel));
    }
    let schema = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(rel));
    let name = CStr::from_ptr(name).to_string_lossy();
    if schema.is_null() {
        return name.into_owned();
    }
    format!("{}.{name}", CStr::from_ptr(schema).to_string_lossy())
}

/// The relation `query` writes, if it writes one.
///
/// # Safety
/// `query` is a valid Query.
pub(super) unsafe fn result_relation(query: *mut pg_sys::Query) -> Option<pg_sys::Oid> {
    let index = (*query).resultRelation;
    if index <= 0 || super::list_len((*query).rtable) < index {
        return None;
    }
    Some((*(super::list_nth((*query).rtable, index - 1) as *mut pg_sys::RangeTblEntry)).relid)
}

/// The relation an INSERT or UPDATE `query` writes.
///
/// # Safety
/// `query` is a valid Query.
unsafe fn written_relation(query: *mut pg_sys::Query) -> Option<pg_sys::Oid> {
    if !matches!((*query).commandType, pg_sys::CmdType::CMD_INSERT | pg_sys::CmdType::CMD_UPDATE) {
        return None;
    }
    result_relation(query)
}

/// The target entries of an INSERT or UPDATE `query` (rewritten) that are its written
/// relation's column defaults exactly as the rewriter adds them (`build_column_default`): a
/// column the statement did not set, or set to `DEFAULT`. A domain's default, which the
/// rewriter adds for a column without one, is among them only with `domains`.
///
/// # Safety
/// `query` is a valid rewritten Query whose written relation its analysis locked.
pub(crate) unsafe fn default_entries(query: *mut pg_sys::Query, domains: bool) -> Vec<*mut pg_sys::TargetEntry> {
    let Some(rel) = written_relation(query) else { return Vec::new() };
    let opened = pg_sys::relation_open(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
    let attrs = (*(*opened).rd_att).attrs.as_slice((*(*opened).rd_att).natts as usize);
    let mut out = Vec::new();
    for t in pgrx::PgList::<pg_sys::TargetEntry>::from_pg((*query).targetList).iter_ptr() {
        if (*t).resjunk || (*t).expr.is_null() {
            continue;
        }
        // The column's own default; its domain's only when asked (another role's code, for a
        // column of the writer's table, that the check of a query planned while a write runs
        // has not read).
        if !domains && !attrs.get((*t).resno as usize - 1).is_some_and(|a| a.atthasdef) {
            continue;
        }
        let default = pg_sys::build_column_default(opened, (*t).resno as std::ffi::c_int);
        if !default.is_null() && pg_sys::equal(default as *const c_void, (*t).expr as *const c_void) {
            out.push(t);
        }
    }
    pg_sys::relation_close(opened, pg_sys::NoLock as pg_sys::LOCKMODE);
    out
}

/// What decides which sequences' `nextval` calls become identity nodes.
type Approves<'a> = &'a dyn Fn(pg_sys::Oid) -> bool;

/// Turns every `nextval(<sequence>)` of `node` (a query or an expression) whose sequence
/// `approves` into the `NextValueExpr` an identity column's default is, after checking the
/// caller's privilege on the sequence as `nextval` would (that node checks none).
///
/// # Safety
/// `node` is a valid Query or expression of the current memory context, about to be planned.
unsafe fn nextval_as_identity(node: *mut pg_sys::Node, approves: Approves) {
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn walk(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
        if node.is_null() {
            return false;
        }
        let approves = &*(context as *const Approves);
        match (*node).type_ {
            pg_sys::NodeTag::T_Query => return pg_sys::query_tree_walker(node as *mut pg_sys::Query, Some(walk), context, 0),
            pg_sys::NodeTag::T_FuncExpr => {
                if let Some(seq) = nextval_constant(node as *mut pg_sys::FuncExpr).filter(|s| approves(*s)) {
                    if pg_sys::pg_class_aclcheck(seq, pg_sys::GetUserId(), (pg_sys::ACL_USAGE | pg_sys::ACL_UPDATE) as pg_sys::AclMode)
                        != pg_sys::AclResult::ACLCHECK_OK
                    {
                        crate::pg::errors::Raised::new(
                            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                            format!("permission denied for sequence {}", relation_name(seq)),
                        )
                        .raise();
                    }
                    // A FuncExpr is larger than a NextValueExpr: the node is rewritten where it
                    // lies, so every reference to it (a default shared by two lists) changes.
                    std::ptr::write(
                        node as *mut pg_sys::NextValueExpr,
                        pg_sys::NextValueExpr {
                            xpr: pg_sys::Expr { type_: pg_sys::NodeTag::T_NextValueExpr },
                            seqid: seq,
                            typeId: pg_sys::INT8OID,
                        },
                    );
                    return false;
                }
            }
            _ => {}
        }
        pg_sys::expression_tree_walker(node, Some(walk), context)
    }
    walk(node, &approves as *const Approves as *mut c_void);
}

/// The sequence of a call `nextval(<constant regclass>)`, or `None` for any other call.
///
/// # Safety
/// `f` is a valid FuncExpr.
pub(crate) unsafe fn nextval_constant(f: *mut pg_sys::FuncExpr) -> Option<pg_sys::Oid> {
    if u32::from((*f).funcid) != pg_sys::F_NEXTVAL || (*f).args.is_null() || (*(*f).args).length != 1 {
        return None;
    }
    let arg = (*(*(*f).args).elements).ptr_value as *mut pg_sys::Node;
    if (*arg).type_ != pg_sys::NodeTag::T_Const {
        return None;
    }
    let c = &*(arg as *mut pg_sys::Const);
    (c.consttype == pg_sys::REGCLASSOID && !c.constisnull).then(|| pg_sys::Oid::from(c.constvalue.value() as u32))
}

/// The sequences of the `nextval(<constant sequence>)` calls of `node`, at every level.
///
/// # Safety
/// `node` is a valid Query or expression tree of the current memory context.
pub(crate) unsafe fn nextval_sequences(node: *mut pg_sys::Node, out: &mut Vec<pg_sys::Oid>) {
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn walk(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
        if node.is_null() {
            return false;
        }
        let out = &mut *(context as *mut Vec<pg_sys::Oid>);
        match (*node).type_ {
            pg_sys::NodeTag::T_Query => return pg_sys::query_tree_walker(node as *mut pg_sys::Query, Some(walk), context, 0),
            pg_sys::NodeTag::T_FuncExpr => {
                if let Some(seq) = nextval_constant(node as *mut pg_sys::FuncExpr) {
                    if !out.contains(&seq) {
                        out.push(seq);
                    }
                }
            }
            _ => {}
        }
        pg_sys::expression_tree_walker(node, Some(walk), context)
    }
    walk(node, out as *mut Vec<pg_sys::Oid> as *mut c_void);
}
