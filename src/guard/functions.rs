//! The function allow-list of generated SQL: a statement may call PostgreSQL's built-in
//! functions (those initdb made), except the few that run SQL given as text, and the functions
//! a superuser lists in `ask.allowed_functions`. Declared volatility is not a boundary: a user
//! function declared STABLE can take advisory locks, write through dblink or raise what it read.
//! Operators, casts, aggregates and window functions count by the function behind them.
//!
//! The check walks the statement as written, after parse analysis, and again after the
//! rewriter has expanded its views and added the row-level security policies of its tables:
//! a view's functions and a policy's run as the caller too, so a view another role made cannot
//! carry a function past the list. A function used in a view or a policy is listed like any
//! other (`ask.allowed_functions`).

use std::ffi::c_void;

use pgrx::pg_sys;

use super::allowed::{allowed_entries, refusal};

/// What the walk found: the first function that is not allowed.
struct Walk {
    allowed: Vec<(String, String)>,
    /// Code an object brings in: held to [`super::trusted::refusal`], which also lets the
    /// caller's own functions and those a superuser wired into PostgreSQL start.
    brought_in: bool,
    /// Only the parts a read's planner may fold: calls over no column (an index expression's,
    /// a check constraint's), which run with constants while a statement is planned.
    constant_only: bool,
    refused: Option<String>,
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn check_function(func_id: pg_sys::Oid, context: *mut c_void) -> bool {
    let walk = &mut *(context as *mut Walk);
    let refused = if walk.brought_in { super::trusted::refusal(func_id) } else { refusal(func_id, &walk.allowed) };
    match refused {
        Some(reason) => {
            walk.refused = Some(reason);
            true
        }
        None => false,
    }
}

/// A function that reads a value's text as some type's input (`domain_in`, `record_in`,
/// `array_in`, `range_in`, any `*_in` taking `cstring`): called by a statement, the type is a
/// value chosen at run time (`'h.d'::regtype`), which no check of the statement's types sees.
/// PostgreSQL calls these itself for casts and literals; a statement has no need to.
unsafe fn type_input_refusal(func_id: pg_sys::Oid) -> Option<String> {
    let tuple = pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::PROCOID as _, pg_sys::Datum::from(func_id));
    if tuple.is_null() {
        return None;
    }
    let form = pg_sys::GETSTRUCT(tuple) as *mut pg_sys::FormData_pg_proc;
    let args = &(*form).proargtypes;
    let takes_cstring = args.values.as_slice(args.dim1.max(0) as usize).contains(&pg_sys::CSTRINGOID);
    pg_sys::ReleaseSysCache(tuple);
    takes_cstring.then(|| {
        let name = std::ffi::CStr::from_ptr(pg_sys::get_func_name(func_id)).to_string_lossy().into_owned();
        format!("the query calls {name}(), which reads text as the input of a type chosen when it runs (a cast says the type)")
    })
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn walker(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    let walk = &mut *(context as *mut Walk);
    // A type's input function called by name (not a cast PostgreSQL wrote as a call).
    if !walk.brought_in && (*node).type_ == pg_sys::NodeTag::T_FuncExpr {
        let call = node as *mut pg_sys::FuncExpr;
        if (*call).funcformat == pg_sys::CoercionForm::COERCE_EXPLICIT_CALL {
            if let Some(reason) = type_input_refusal((*call).funcid) {
                walk.refused = Some(reason);
                return true;
            }
        }
    }
    if !(walk.constant_only && pg_sys::contain_var_clause(node)) && pg_sys::check_functions_in_node(node, Some(check_function), context) {
        return true;
    }
    if (*node).type_ == pg_sys::NodeTag::T_Query {
        return pg_sys::query_tree_walker(node as *mut pg_sys::Query, Some(walker), context, 0);
    }
    pg_sys::expression_tree_walker(node, Some(walker), context)
}

/// The first function of `query` (analysed, not rewritten) that generated SQL may not call.
///
/// # Safety
/// `query` is a valid analysed Query of the current memory context.
pub(crate) unsafe fn first_refused(query: *mut pg_sys::Query) -> Option<String> {
    first_refused_in(query as *mut pg_sys::Node)
}

/// The same for any expression tree (a column default, a check constraint).
///
/// # Safety
/// `node` is a valid node tree of the current memory context.
pub(crate) unsafe fn first_refused_in(node: *mut pg_sys::Node) -> Option<String> {
    let mut walk = Walk { allowed: allowed_entries(), brought_in: false, constant_only: false, refused: None };
    walker(node, &mut walk as *mut Walk as *mut c_void);
    walk.refused
}

/// The same for code an object brings into a statement (an index expression, a domain's
/// constraint), inside a [`super::trusted::only`] scope. `constant_only`: a relation's
/// expression reached by a read, whose planner folds only its calls over no column (a read
/// evaluates none of it row by row).
///
/// # Safety
/// `node` is a valid node tree of the current memory context.
pub(crate) unsafe fn first_refused_brought_in(node: *mut pg_sys::Node, constant_only: bool) -> Option<String> {
    let mut walk = Walk { allowed: Vec::new(), brought_in: true, constant_only, refused: None };
    walker(node, &mut walk as *mut Walk as *mut c_void);
    if walk.refused.is_some() || constant_only {
        // The planner folds no volatile call.
        return walk.refused;
    }
    // Built-in functions start without asking the function manager's hook: code an object
    // brings in may call none that has an effect (an advisory lock, set_config, a file read,
    // nextval of any sequence: a table's own serial default is left out of what it reaches).
    pg_sys::contain_volatile_functions(node)
        .then(|| "a volatile function (one that can change the database or the session, or give a different result each call)".into())
}

/// Functions another role's default or trigger condition may call in a write besides
/// immutable ones: the clock of the transaction and the date and time conversions of a
/// timestamp default (a volatile one, `clock_timestamp()` or `random()`, is refused as any
/// volatile function an object brings into a write is). What it computes is stored in that
/// role's row (a default) or decides whether its code runs (a condition): it may read nothing
/// of the writer's session, settings or other sessions (`current_setting`,
/// `pg_stat_get_backend_activity`) but the offset of the writer's time zone, which a local
/// time shows; `to_char` is not among them (it writes the time zone's name and the writer's
/// number and currency formats).
const OTHER_ROLES_CODE_MAY_CALL: &[&str] = &[
    "now",
    "transaction_timestamp",
    "statement_timestamp",
    "localtimestamp",
    "localtime",
    "date",
    "timestamp",
    "timestamptz",
    "time",
    "timetz",
    "date_trunc",
    "date_part",
    "extract",
    "timezone",
];

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn check_others_function(func_id: pg_sys::Oid, context: *mut c_void) -> bool {
    let refused = &mut *(context as *mut Option<String>);
    if pg_sys::func_volatile(func_id) == pg_sys::PROVOLATILE_IMMUTABLE as std::ffi::c_char {
        return false;
    }
    let name = std::ffi::CStr::from_ptr(pg_sys::get_func_name(func_id)).to_string_lossy().into_owned();
    if u32::from(func_id) < pg_sys::FirstNormalObjectId && OTHER_ROLES_CODE_MAY_CALL.contains(&name.as_str()) {
        return false;
    }
    *refused = Some(format!("{name}(), which is not immutable and could read the writer's session into another role's row"));
    true
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn others_walker(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    if (*node).type_ == pg_sys::NodeTag::T_SQLValueFunction {
        use pg_sys::SQLValueFunctionOp as Op;
        let op = (*(node as *mut pg_sys::SQLValueFunction)).op;
        let clock = matches!(
            op,
            Op::SVFOP_CURRENT_DATE
                | Op::SVFOP_CURRENT_TIME
                | Op::SVFOP_CURRENT_TIME_N
                | Op::SVFOP_CURRENT_TIMESTAMP
                | Op::SVFOP_CURRENT_TIMESTAMP_N
                | Op::SVFOP_LOCALTIME
                | Op::SVFOP_LOCALTIME_N
                | Op::SVFOP_LOCALTIMESTAMP
                | Op::SVFOP_LOCALTIMESTAMP_N
                | Op::SVFOP_CURRENT_USER
                | Op::SVFOP_CURRENT_ROLE
                | Op::SVFOP_SESSION_USER
                | Op::SVFOP_USER
        );
        if !clock {
            *(context as *mut Option<String>) = Some("a value of the writer's session (CURRENT_SCHEMA, CURRENT_CATALOG)".into());
            return true;
        }
    }
    if matches!((*node).type_, pg_sys::NodeTag::T_NextValueExpr | pg_sys::NodeTag::T_SubLink | pg_sys::NodeTag::T_Param) {
        *(context as *mut Option<String>) = Some("a sequence or a query".into());
        return true;
    }
    if pg_sys::check_functions_in_node(node, Some(check_others_function), context) {
        return true;
    }
    pg_sys::expression_tree_walker(node, Some(others_walker), context)
}

/// Why another role's column or domain default, or the condition of its trigger, may not run
/// in a write (see [`OTHER_ROLES_CODE_MAY_CALL`]), if it may not.
///
/// # Safety
/// `node` is a valid expression tree of the current memory context.
pub(crate) unsafe fn other_roles_code_refusal(node: *mut pg_sys::Node) -> Option<String> {
    let mut refused: Option<String> = None;
    others_walker(node, &mut refused as *mut Option<String> as *mut c_void);
    refused
}

/// How many calls of `nextval` `node` makes, at every level (subqueries, views the rewriter
/// expanded, sublinks), however it is called: by name, or through an operator, a cast or any
/// other node whose function it is.
///
/// # Safety
/// `node` is a valid Query or expression tree of the current memory context.
pub(crate) unsafe fn nextval_calls(node: *mut pg_sys::Node) -> usize {
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn count(func_id: pg_sys::Oid, context: *mut c_void) -> bool {
        if u32::from(func_id) == pg_sys::F_NEXTVAL {
            *(context as *mut usize) += 1;
        }
        false
    }
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn walk(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
        if node.is_null() {
            return false;
        }
        if (*node).type_ == pg_sys::NodeTag::T_Query {
            return pg_sys::query_tree_walker(node as *mut pg_sys::Query, Some(walk), context, 0);
        }
        pg_sys::check_functions_in_node(node, Some(count), context);
        pg_sys::expression_tree_walker(node, Some(walk), context)
    }
    let mut n = 0usize;
    walk(node, &mut n as *mut usize as *mut c_void);
    n
}

/// Why the tables `rels` may not hold a benchmark's scratch data, if they may not: a column of
/// a type that is not built in (its input function runs on every value written), or a default
/// or check constraint that calls a function off the allow-list. Creating them ran nothing of
/// either; writing to them would, as the role that runs the benchmark.
pub(crate) fn scratch_refusal(rels: &[pg_sys::Oid]) -> Option<String> {
    use pgrx::prelude::*;
    let rels: Vec<pg_sys::Oid> = rels.to_vec();
    // A failed read refuses: nothing here may be taken for "no such column".
    let odd_type = Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.format('%s.%s is of type %s', a.attrelid::pg_catalog.regclass, a.attname, a.atttypid::pg_catalog.regtype)
           FROM pg_catalog.pg_attribute a
          WHERE a.attrelid OPERATOR(pg_catalog.=) ANY($1) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
            AND a.atttypid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
          LIMIT 1",
        &[rels.clone().into()],
    );
    match odd_type {
        Ok(Some(what)) => return Some(format!("{what}, which is not a built-in type")),
        Ok(None) | Err(pgrx::spi::Error::InvalidPosition) => {}
        Err(e) => return Some(format!("the tables' columns could not be read: {e}")),
    }
    let trees: Result<Vec<Option<String>>, pgrx::spi::Error> = Spi::connect(|client| {
        client
            .select(
                "SELECT d.adbin::pg_catalog.text FROM pg_catalog.pg_attrdef d WHERE d.adrelid OPERATOR(pg_catalog.=) ANY($1)
                 UNION ALL
                 SELECT c.conbin::pg_catalog.text FROM pg_catalog.pg_constraint c
                  WHERE c.conrelid OPERATOR(pg_catalog.=) ANY($1) AND c.conbin IS NOT NULL",
                None,
                &[rels.into()],
            )?
            .map(|r| r.get::<String>(1))
            .collect()
    });
    let trees = match trees {
        Ok(trees) => trees.into_iter().flatten().collect::<Vec<_>>(),
        Err(e) => return Some(format!("the tables' defaults and constraints could not be read: {e}")),
    };
    trees.into_iter().find_map(|tree| {
        let tree = std::ffi::CString::new(tree).ok()?;
        // SAFETY: a node tree PostgreSQL itself stored, read back into the current context.
        unsafe { first_refused_in(pg_sys::stringToNode(tree.as_ptr()) as *mut pg_sys::Node) }
    })
}
