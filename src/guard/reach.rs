//! What a statement reaches besides its own calls: the relations it reads (views and the tables
//! under them, at every level of the query) and the code those relations and the statement's
//! types bring into planning and execution — index expressions and predicates, extended
//! statistics, check constraints, partition keys, domain constraints, range types'
//! `subtype_diff` and `canonical` functions, for the relations' inheritance children and
//! partitions too. Each is held to the function allow-list before the statement is planned,
//! and a refusal names the object. [`super::trusted`] stops whatever this misses when it is
//! about to start.

use std::ffi::c_void;

use pgrx::pg_sys;

/// One object a relation or type brings in: what it is, its node tree or its function, why it
/// is refused whatever its code (a rule of another role, a check PostgreSQL makes at COMMIT),
/// and its kind as `sql/guard_reach.sql` names it.
type Object = (String, Option<String>, Option<pg_sys::Oid>, Option<String>, String);

/// Relations and types found in a query tree.
#[derive(Default, Clone)]
pub(crate) struct Reached {
    pub relations: Vec<pg_sys::Oid>,
    pub types: Vec<pg_sys::Oid>,
}

impl Reached {
    fn relation(&mut self, oid: pg_sys::Oid) {
        if oid != pg_sys::InvalidOid && !self.relations.contains(&oid) {
            self.relations.push(oid);
        }
    }

    /// Adds the inheritance children and partitions, at every level, of the relations reached
    /// that have any, as the catalog holds them now, partitions whose detach is pending
    /// included (a REPEATABLE READ writer routes rows to them). No lock: a child attached later
    /// is refused when the planner meets it ([`super::planned`]); a write's partitioned tables
    /// are held first ([`hold_partition_tree`]).
    pub(crate) fn close_over_children(&mut self) {
        let mut queue: Vec<pg_sys::Oid> = self
            .relations
            .iter()
            .copied()
            .filter(|r| {
                relation_form(*r, |f| f.relhassubclass || f.relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char)
                    .unwrap_or(false)
            })
            .collect();
        let mut seen = Vec::new();
        while let Some(parent) = queue.pop() {
            if seen.contains(&parent) {
                continue;
            }
            seen.push(parent);
            for child in children(parent) {
                self.relation(child);
                queue.push(child);
            }
        }
    }

    fn typ(&mut self, oid: pg_sys::Oid) {
        if u32::from(oid) >= pg_sys::FirstNormalObjectId && !self.types.contains(&oid) {
            self.types.push(oid);
        }
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn walker(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    let out = &mut *(context as *mut Reached);
    use pg_sys::NodeTag::*;
    match (*node).type_ {
        T_Query => {
            return pg_sys::query_tree_walker(node as *mut pg_sys::Query, Some(walker), context, pg_sys::QTW_EXAMINE_RTES_BEFORE as i32);
        }
        T_RangeTblEntry => {
            let rte = &*(node as *mut pg_sys::RangeTblEntry);
            if rte.rtekind == pg_sys::RTEKind::RTE_RELATION {
                out.relation(rte.relid);
            }
            // Column definition lists (`jsonb_to_record(..) AS r(a some_domain)`, ROWS FROM,
            // XMLTABLE, JSON_TABLE) name types as OID lists, which the expression walk does not
            // see: their input functions and domain checks run all the same.
            if rte.rtekind == pg_sys::RTEKind::RTE_FUNCTION {
                for f in list_ptrs(rte.functions) {
                    oid_list((*(f as *mut pg_sys::RangeTblFunction)).funccoltypes, out);
                }
            }
            if rte.rtekind == pg_sys::RTEKind::RTE_TABLEFUNC && !rte.tablefunc.is_null() {
                oid_list((*rte.tablefunc).coltypes, out);
            }
            return false;
        }
        T_Const => out.typ((*(node as *mut pg_sys::Const)).consttype),
        T_CoerceToDomain => out.typ((*(node as *mut pg_sys::CoerceToDomain)).resulttype),
        T_CoerceViaIO => out.typ((*(node as *mut pg_sys::CoerceViaIO)).resulttype),
        T_RelabelType => out.typ((*(node as *mut pg_sys::RelabelType)).resulttype),
        T_ArrayCoerceExpr => out.typ((*(node as *mut pg_sys::ArrayCoerceExpr)).resulttype),
        T_RowExpr => out.typ((*(node as *mut pg_sys::RowExpr)).row_typeid),
        _ => {}
    }
    pg_sys::expression_tree_walker(node, Some(walker), context)
}

/// The pointers of a `List` of nodes (none for NIL).
///
/// # Safety
/// `list` is NIL or a valid pointer list.
unsafe fn list_ptrs(list: *mut pg_sys::List) -> Vec<*mut std::ffi::c_void> {
    if list.is_null() {
        return Vec::new();
    }
    (0..(*list).length as usize).map(|i| (*(*list).elements.add(i)).ptr_value).collect()
}

/// Adds each type of an OID `List` (NIL: none) to `out`.
///
/// # Safety
/// `list` is NIL or a valid OID list.
unsafe fn oid_list(list: *mut pg_sys::List, out: &mut Reached) {
    if list.is_null() {
        return;
    }
    for i in 0..(*list).length as usize {
        out.typ((*(*list).elements.add(i)).oid_value);
    }
}

/// Adds the relations and types of `query` (every level: subqueries, common table
/// expressions, sublinks) to `out`.
///
/// # Safety
/// `query` is a valid Query of the current memory context.
pub(crate) unsafe fn collect(query: *mut pg_sys::Query, out: &mut Reached) {
    walker(query as *mut pg_sys::Node, out as *mut Reached as *mut c_void);
}

/// The first object `reached` brings in whose code is not on the allow-list or has an effect,
/// named. `writer`: the role a writing statement runs as (whose own tables' defaults are its
/// own), `None` for a read.
pub(crate) fn refusal(reached: &Reached, writer: Option<pg_sys::Oid>) -> Option<String> {
    if let Some(why) = callers_privileges_refusal(&reached.relations) {
        return Some(why);
    }
    // The types the objects' own trees name (a domain a default or a generated column coerces
    // to, a domain within a domain's default) bring their code in too: held to the same rules,
    // round after round until no new type is named (each round's types are new ones, so it
    // ends).
    let mut seen: Vec<pg_sys::Oid> = reached.types.clone();
    let mut round = Reached { relations: reached.relations.clone(), types: reached.types.clone() };
    loop {
        let mut named = Reached::default();
        if let Some(why) = refusal_of(&round, writer, &mut named) {
            return Some(why);
        }
        let new: Vec<pg_sys::Oid> = named.types.into_iter().filter(|t| !seen.contains(t)).collect();
        if new.is_empty() {
            return None;
        }
        seen.extend(new.iter().copied());
        round = Reached { relations: Vec::new(), types: new };
    }
}

/// One round of [`refusal`]: the objects `reached` brings in, checked; the types their trees
/// name are added to `named`.
fn refusal_of(reached: &Reached, writer: Option<pg_sys::Oid>, named: &mut Reached) -> Option<String> {
    if reached.relations.is_empty() && reached.types.is_empty() {
        return None;
    }
    let rels: Vec<pg_sys::Oid> = reached.relations.clone();
    let types: Vec<pg_sys::Oid> = reached.types.clone();
    // A generic plan kept for the backend: the read is the same whatever the oids, and
    // planning it costs several times what running it does.
    let oids = pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDARRAYOID);
    let oid = pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDOID);
    let writer_oid = writer.unwrap_or(pg_sys::InvalidOid);
    let objects: Result<Vec<Object>, pgrx::spi::SpiError> = super::trusted::paused(|| {
        crate::pg::spi::select_generic(
            "guard_reach",
            include_str!("../../sql/guard_reach.sql"),
            &[oids, oids, oid],
            &[rels.into(), types.into(), writer_oid.into()],
            |r| {
                Ok(Some((
                    r.get::<String>(1)?.unwrap_or_default(),
                    r.get::<String>(2)?,
                    r.get::<pg_sys::Oid>(3)?,
                    r.get::<String>(4)?,
                    r.get::<String>(5)?.unwrap_or_default(),
                )))
            },
        )
    });
    let objects = match objects {
        Ok(objects) => objects,
        // A failed read refuses: nothing here may be taken for "nothing reached".
        Err(e) => return Some(format!("the objects the statement reaches could not be read: {e}")),
    };
    for (what, tree, function, always, kind) in objects {
        // A relation's code, and another role's default or trigger condition, run row by row
        // only when the statement writes.
        let per_row = kind == "relation" || kind == "others_write";
        if let Some(why) = always {
            return Some(format!("{what}, which the statement reaches, is {why}"));
        }
        // Another role's default or trigger condition, in a write: only the clock and random
        // values beside immutable code.
        let others_code = writer.is_some() && kind == "others_write";
        let refused = match (tree, function) {
            (Some(tree), _) => {
                let Ok(tree) = std::ffi::CString::new(tree) else { continue };
                // SAFETY: a node tree PostgreSQL itself stored, read back into the current context.
                unsafe {
                    let node = pg_sys::stringToNode(tree.as_ptr()) as *mut pg_sys::Node;
                    walker(node, named as *mut Reached as *mut c_void);
                    let others = if others_code { super::functions::other_roles_code_refusal(node) } else { None };
                    others.or_else(|| super::functions::first_refused_brought_in(node, per_row && writer.is_none())).or_else(|| {
                        // A domain's CHECK runs wherever a value of it is read, parse analysis
                        // included: only immutable code (a stable built-in can open a relation
                        // or assign a transaction id that other sessions see).
                        (kind == "domain_check" && pg_sys::contain_mutable_functions(node))
                            .then(|| "a function that is not immutable".to_string())
                    })
                }
            }
            // SAFETY: catalog lookups of one function, inside the transaction.
            (None, Some(f)) => unsafe { super::trusted::refusal(f) },
            (None, None) => None,
        };
        if let Some(reason) = refused {
            let reason = reason.strip_prefix("the query calls ").unwrap_or(&reason).to_string();
            return Some(format!("{what}, which the statement reaches, calls {reason}"));
        }
    }
    None
}

/// Why another role's code among `relations` (or the views they read) may not run with the
/// caller's privileges: a `security_invoker` view or a row-level security policy that reads
/// what its owner may not, a view over `pg_stats` (`sql/guard_invoker_views.sql`), or such code
/// calling what its owner may not execute or what follows the caller's session
/// ([`super::others`]). A failed read refuses.
fn callers_privileges_refusal(relations: &[pg_sys::Oid]) -> Option<String> {
    // Only a statement that reads a view, a foreign table, a table with row-level security or
    // one with inheritance children or partitions (one may be another role's foreign table)
    // can reach such code (the relation cache, per relation).
    let may = relations.iter().any(|r| {
        relation_form(*r, |form| {
            form.relkind == pg_sys::RELKIND_VIEW as std::ffi::c_char
                || form.relkind == pg_sys::RELKIND_FOREIGN_TABLE as std::ffi::c_char
                || form.relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char
                || form.relhassubclass
                || form.relrowsecurity
        })
        .unwrap_or(true)
    });
    if !may {
        return None;
    }
    // SAFETY: the role the statement runs as, read in its own transaction.
    let caller = unsafe { pg_sys::GetUserId() };
    let oids = pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDARRAYOID);
    let oid = pg_sys::PgOid::BuiltIn(pg_sys::PgBuiltInOids::OIDOID);
    let found = super::trusted::paused(|| {
        crate::pg::spi::select_generic(
            "guard_invoker_views",
            include_str!("../../sql/guard_invoker_views.sql"),
            &[oids, oid],
            &[relations.to_vec().into(), caller.into()],
            |r| r.get::<String>(1),
        )
    });
    match found {
        Ok(found) => found.into_iter().next().or_else(|| super::others::refusal(relations, caller)),
        Err(e) => Some(format!("the views the statement reads could not be read: {e}")),
    }
}

/// `f` of the `pg_class` row of `rel` as the relation cache holds it; `None` when there is no
/// such relation.
fn relation_form<T>(rel: pg_sys::Oid, f: impl FnOnce(&pg_sys::FormData_pg_class) -> T) -> Option<T> {
    // SAFETY: a relation cache lookup, inside a transaction; the reference is released before
    // returning.
    unsafe {
        let opened = pg_sys::RelationIdGetRelation(rel);
        if opened.is_null() {
            return None;
        }
        let out = f(&*(*opened).rd_rel);
        pg_sys::RelationClose(opened);
        Some(out)
    }
}

/// The owner of relation `rel`, from the relation cache.
pub(super) fn relation_owner(rel: pg_sys::Oid) -> Option<pg_sys::Oid> {
    relation_form(rel, |form| form.relowner)
}

/// The inheritance children and partitions of `parent` (one level), as the catalog holds them
/// now: partitions whose detach is pending included (a REPEATABLE READ transaction whose
/// snapshot predates the detach still routes rows to them).
fn children(parent: pg_sys::Oid) -> Vec<pg_sys::Oid> {
    extern "C-unwind" {
        fn find_inheritance_children_extended(
            parent: pg_sys::Oid,
            omit_detached: bool,
            lockmode: pg_sys::LOCKMODE,
            detached_exist: *mut bool,
            detached_xmin: *mut pg_sys::TransactionId,
        ) -> *mut pg_sys::List;
    }
    // SAFETY: a catalog scan inside the transaction; an error it raises becomes a Rust panic at
    // the boundary, as pgrx's own wrappers make it.
    let list = unsafe {
        pgrx::pg_sys::ffi::pg_guard_ffi_boundary(|| {
            find_inheritance_children_extended(
                parent,
                false,
                pg_sys::NoLock as pg_sys::LOCKMODE,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        })
    };
    if list.is_null() {
        return Vec::new();
    }
    // SAFETY: an OID list built in the current memory context.
    unsafe { (0..(*list).length as usize).map(|i| (*(*list).elements.add(i)).oid_value).collect() }
}

/// For a write into `table` (an INSERT's, an UPDATE's or a MERGE's target), before its
/// partitions are read for the check: holds every partitioned table of its tree that someone
/// other than `writer` owns with `SHARE UPDATE EXCLUSIVE` until the step's transaction ends,
/// so that the partitions its rows may go to are the ones its check reads. The executor routes
/// rows to partitions, opening them only as rows arrive, past the planner's look at what it
/// reads ([`super::planned`]); a partition attached meanwhile (its owner's foreign table,
/// written with the writer's user mapping) would receive them. Attaching a partition needs
/// that lock on the partitioned table; reads and writes do not conflict with it. A partitioned
/// table the writer owns needs no lock (no other role may attach to it). Whatever the writer's
/// privileges on `table` (table-level, column-level, through a view's owner): a statement that
/// fails on them ends its subtransaction, and the lock with it.
pub(crate) fn hold_partition_tree(table: pg_sys::Oid, writer: pg_sys::Oid) {
    let partitioned =
        |r: pg_sys::Oid| relation_form(r, |f| f.relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char).unwrap_or(false);
    if !partitioned(table) {
        return;
    }
    let mut queue = vec![table];
    let mut seen = Vec::new();
    while let Some(table) = queue.pop() {
        if seen.contains(&table) {
            continue;
        }
        seen.push(table);
        if relation_owner(table) != Some(writer) {
            // SAFETY: a lock inside the transaction; an error raised while waiting (a cancel)
            // becomes a Rust panic at the boundary.
            unsafe {
                pgrx::pg_sys::ffi::pg_guard_ffi_boundary(|| {
                    pg_sys::LockRelationOid(table, pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE)
                })
            };
        }
        // Read once the lock is held: the partitions as the last attach committed them.
        queue.extend(children(table).into_iter().filter(|c| partitioned(*c)));
    }
}
