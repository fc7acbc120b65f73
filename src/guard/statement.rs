//! The checks of a write before it runs (a step of `ask.do()`, a benchmark's workload
//! statement): PostgreSQL's own parse analysis of the statement, then the rewriter's query,
//! held to the function allow-list, to no volatile function, and to what the relations and
//! types it reaches bring in ([`super::reach`]). What the check saw is kept
//! ([`super::planned::Checked`]) for the run to be compared with.

use pgrx::pg_sys;

use super::planned::Checked;
use super::{functions, list_len, list_nth, reach, trusted};

/// The database layer of the step allowlist: PostgreSQL's own parse analysis of the statement
/// as written (before column defaults are added, so an identity or serial column's `nextval`
/// does not count) must call no volatile function, except `nextval` in an INSERT. The
/// parse-level guard names only the functions it knows; this catches every other volatile
/// one (`random()`, a user's function that writes elsewhere), views excluded as they are
/// expanded only later.
///
/// What the check saw goes to `checked`, for the run.
pub(crate) unsafe fn write_step_refusal(sql: &std::ffi::CStr, checked: &mut Checked) -> Option<String> {
    trusted::strictly(|| statement_refusal_now(sql, true, checked))
}

/// The same check, with `nextval` in an INSERT allowed or not (a benchmark's workload statements
/// may not name a sequence, whose advance no rollback undoes).
pub(crate) unsafe fn statement_refusal(sql: &std::ffi::CStr, allow_nextval: bool) -> Option<String> {
    // Parse analysis already runs code a type brings in (a domain's CHECK on a literal): no
    // volatile function may start while the statement is analysed.
    trusted::strictly(|| statement_refusal_now(sql, allow_nextval, &mut Checked::default()))
}

unsafe fn statement_refusal_now(sql: &std::ffi::CStr, allow_nextval: bool, checked: &mut Checked) -> Option<String> {
    let raw = pg_sys::pg_parse_query(sql.as_ptr());
    if raw.is_null() || (*raw).length != 1 {
        return Some("expected exactly one statement".into());
    }
    let raw_stmt = (*(*raw).elements).ptr_value as *mut pg_sys::RawStmt;
    let query = trusted::analysing(|| pg_sys::parse_analyze_fixedparams(raw_stmt, sql.as_ptr(), std::ptr::null(), 0, std::ptr::null_mut()));
    if let Some(reason) = functions::first_refused(query) {
        return Some(reason);
    }
    let command = (*query).commandType;
    let insert = allow_nextval && command == pg_sys::CmdType::CMD_INSERT;
    if let Some(reason) = volatile_refusal(query, insert) {
        return Some(reason);
    }
    let written = super::planned::result_relation(query);
    // The columns the statement sets itself, by number in the relation it names.
    let own_columns: Vec<i16> = pgrx::PgList::<pg_sys::TargetEntry>::from_pg((*query).targetList).iter_ptr().map(|t| (*t).resno).collect();
    let mut reached = reach::Reached::default();
    reach::collect(query, &mut reached);
    checked.reached = reached.clone();
    // nextval only where the statement as written calls it: a view or a rule the rewriter
    // expands must not advance sequences (which other roles can read) as the writer.
    let own_nextval = if insert { functions::nextval_calls(query as *mut pg_sys::Node) } else { 0 };
    // The sequences the statement's own nextval calls advance, read before the rewriter
    // expands the views it reads (whose calls are none of the statement's own).
    super::planned::nextval_sequences(query as *mut pg_sys::Node, &mut checked.sequences);
    // What the rewriter makes of it: the rules of the tables it writes, the views and the
    // row-level security policies it reads through, run as the caller too.
    let queries = pg_sys::pg_rewrite_query(query);
    if list_len(queries) != 1 {
        return Some("a rule of a table it writes adds or replaces statements".into());
    }
    let q = list_nth(queries, 0) as *mut pg_sys::Query;
    if (*q).commandType != command {
        return Some("a rule of a table it writes turns it into another kind of statement".into());
    }
    // Through a view or a rule the statement's own values may land anywhere, or nowhere (an
    // INSTEAD rule may drop them and read another's nextval in their place): it names no
    // sequence there.
    if own_nextval > 0 && super::planned::result_relation(q) != written {
        return Some("it calls nextval while writing through a view or a rule: write into the table itself".into());
    }
    // What runs is this query whole, the defaults of the columns it does not set included,
    // and the children and partitions of what it reads and writes.
    reach::collect(q, &mut checked.reached);
    // The table its rows are routed into, held before its partitions are read.
    if matches!(command, pg_sys::CmdType::CMD_INSERT | pg_sys::CmdType::CMD_UPDATE | pg_sys::CmdType::CMD_MERGE) {
        if let Some(target) = super::planned::result_relation(q) {
            reach::hold_partition_tree(target, pg_sys::GetUserId());
        }
    }
    checked.reached.close_over_children();
    if matches!(command, pg_sys::CmdType::CMD_INSERT | pg_sys::CmdType::CMD_UPDATE) {
        // The entries that are the written table's defaults, as the rewriter adds them (a
        // default holds no subquery): their nextval calls are the table's own, held to
        // `reach`'s rules below; every other entry is checked as the statement's own,
        // wherever a view or a rule put it.
        let mut kept = pgrx::PgList::<pg_sys::TargetEntry>::new();
        let defaults = super::planned::default_entries(q, true);
        for t in pgrx::PgList::<pg_sys::TargetEntry>::from_pg((*q).targetList).iter_ptr() {
            // A statement that calls nextval writes its own table (see above): a column it
            // sets is its own even when written as the default is, so that its nextval
            // counts once, as the statement's.
            let set_by_statement = own_nextval > 0 && own_columns.contains(&(*t).resno);
            if defaults.contains(&t) && !set_by_statement {
                super::planned::nextval_sequences((*t).expr as *mut pg_sys::Node, &mut checked.sequences);
            } else {
                kept.push(t);
            }
        }
        // Only checked, never run: SPI analyses the text again.
        (*q).targetList = kept.into_pg();
    }
    if let Some(reason) = functions::first_refused(q) {
        return Some(format!("{reason} (through a view, a rule or a row-level security policy)"));
    }
    if let Some(reason) = volatile_refusal(q, insert) {
        return Some(format!("{reason} (through a view, a rule or a row-level security policy)"));
    }
    if insert && functions::nextval_calls(q as *mut pg_sys::Node) > own_nextval {
        return Some("a view, a rule or a column default it reads through calls nextval (a sequence the statement does not name)".into());
    }
    // The policies and view checks the rewriter added run as the writer and may read its
    // tables: no volatile function there, nextval included (whose sequences would tell
    // another role what they read).
    if policies_call_volatile(q as *mut pg_sys::Node) {
        return Some(
            "a row-level security policy or a view's check option of a relation it reaches calls a volatile function (nextval included)"
                .into(),
        );
    }
    reach::collect(q, &mut reached);
    reach::refusal(&reached, Some(pg_sys::GetUserId()))
}

/// Whether a row-level security policy's or a view's check (a query's `withCheckOptions`, a
/// range table entry's `securityQuals`), at any level of `node`, calls a volatile function.
unsafe fn policies_call_volatile(node: *mut pg_sys::Node) -> bool {
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn walk(node: *mut pg_sys::Node, context: *mut std::ffi::c_void) -> bool {
        if node.is_null() {
            return false;
        }
        match (*node).type_ {
            pg_sys::NodeTag::T_Query => {
                let q = node as *mut pg_sys::Query;
                for wco in pgrx::PgList::<pg_sys::WithCheckOption>::from_pg((*q).withCheckOptions).iter_ptr() {
                    if pg_sys::contain_volatile_functions((*wco).qual) {
                        return true;
                    }
                }
                pg_sys::query_tree_walker(q, Some(walk), context, pg_sys::QTW_EXAMINE_RTES_BEFORE as i32)
            }
            pg_sys::NodeTag::T_RangeTblEntry => {
                let rte = node as *mut pg_sys::RangeTblEntry;
                pg_sys::contain_volatile_functions((*rte).securityQuals as *mut pg_sys::Node)
            }
            _ => pg_sys::expression_tree_walker(node, Some(walk), context),
        }
    }
    walk(node, std::ptr::null_mut())
}

unsafe fn volatile_refusal(query: *mut pg_sys::Query, insert: bool) -> Option<String> {
    let node = query as *mut pg_sys::Node;
    let volatile = if insert { pg_sys::contain_volatile_functions_not_nextval(node) } else { pg_sys::contain_volatile_functions(node) };
    volatile.then(|| {
        format!(
            "the statement calls a volatile function{} (one that can change the database or give a different result each call)",
            if insert { " other than nextval" } else { "" }
        )
    })
}
