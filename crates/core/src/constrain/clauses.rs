//! The `FROM` clauses of the SQL grammar's branches: each described table alone, and tables
//! joined along their foreign keys, each clause with the aliases models write.

use std::fmt::Write;

use super::gbnf::literal;
use crate::schema::{ForeignKey, Table};

/// Limits on the grammar's size, and what the caller's search path lets a query leave out.
#[derive(Debug, Clone)]
pub struct GrammarOptions {
    /// Branches at most: every table has one; foreign-key joins take what is left, one-hop
    /// joins first; then the same clauses with the other aliases.
    pub max_branches: usize,
    /// Whether two-hop joins (three tables along two foreign keys) get branches.
    pub two_hops: bool,
    /// Schemas on the search path: their tables may be named without the schema.
    pub unqualified_schemas: Vec<String>,
}

impl Default for GrammarOptions {
    fn default() -> Self {
        GrammarOptions { max_branches: 150, two_hops: true, unqualified_schemas: vec!["public".to_string()] }
    }
}

/// One table of a branch, with the name its columns are qualified with (none for a branch of
/// one table without an alias).
pub(super) struct Member<'a> {
    pub(super) table: &'a Table,
    pub(super) alias: Option<String>,
}

/// One `FROM` clause and the tables in scope with it.
pub(super) struct Branch<'a> {
    pub(super) members: Vec<Member<'a>>,
    /// The `FROM` clause after `FROM `, as a GBNF expression.
    pub(super) from: String,
}

/// How a branch names its tables in column references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aliases {
    /// No alias: a single table's columns unqualified.
    Bare,
    /// Each table's initial (`r`, `c`, `r2`).
    Initials,
    /// `T1`, `T2`, ... in `FROM` order, as Spider's and BIRD's queries write them.
    Numbered,
    /// The table's own name, without `AS` (`restaurants.name`).
    Names,
}

/// A foreign key between two described tables: `from` (index) references `to`.
struct Edge<'a> {
    from: usize,
    to: usize,
    fk: &'a ForeignKey,
}

/// The branches for `tables`: each table alone, then one-hop joins along every foreign key
/// between described tables, then two-hop joins, with the first aliases (none for a table,
/// initials for a join); then the same clauses with numbered aliases and with the tables'
/// own names; up to `opts.max_branches`.
pub(super) fn branches<'a>(tables: &'a [Table], opts: &GrammarOptions) -> Vec<Branch<'a>> {
    let index = |qualified: &str| tables.iter().position(|t| t.qualified() == qualified);
    let edges: Vec<Edge> = tables
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            t.foreign_keys
                .iter()
                .filter(|fk| !fk.columns.is_empty() && fk.columns.len() == fk.ref_columns.len())
                .filter_map(move |fk| index(&fk.references).map(|to| Edge { from: i, to, fk }))
        })
        .collect();
    // The clauses: (tables in FROM order, the edges joining them).
    let mut clauses: Vec<(Vec<usize>, Vec<&Edge>)> = (0..tables.len()).map(|i| (vec![i], Vec::new())).collect();
    for e in &edges {
        clauses.push((vec![e.from, e.to], vec![e]));
    }
    if opts.two_hops {
        // Two edges that share a table: X - Y - Z, each pair once.
        for (i, e1) in edges.iter().enumerate() {
            for e2 in &edges[i + 1..] {
                if clauses.len() >= opts.max_branches {
                    break;
                }
                let ends1 = [e1.from, e1.to];
                let ends2 = [e2.from, e2.to];
                let Some(&shared) = ends1.iter().find(|t| ends2.contains(t)) else { continue };
                if e1.from == e1.to || e2.from == e2.to {
                    continue;
                }
                let x = if e1.from == shared { e1.to } else { e1.from };
                let z = if e2.from == shared { e2.to } else { e2.from };
                // Start where a query would: at a table that references the shared one (a
                // chain restaurants -> cities -> states starts at restaurants), or at the
                // shared one when it references both (a link table).
                clauses.push(match (e1.from == shared, e2.from == shared) {
                    (true, true) => (vec![shared, x, z], vec![e1, e2]),
                    (true, false) => (vec![z, shared, x], vec![e2, e1]),
                    _ => (vec![x, shared, z], vec![e1, e2]),
                });
            }
        }
    }
    let unqualified = |t: &Table| opts.unqualified_schemas.contains(&t.schema) && tables.iter().filter(|o| o.name == t.name).count() == 1;
    let mut out = Vec::new();
    for pass in 0..3 {
        for (order, edges) in &clauses {
            if out.len() >= opts.max_branches {
                return out;
            }
            let single = order.len() == 1;
            let aliases = match (pass, single) {
                (0, true) => Aliases::Bare,
                (0, false) => Aliases::Initials,
                (1, _) => Aliases::Numbered,
                _ => Aliases::Names,
            };
            // A table joined to itself needs aliases that differ.
            if aliases == Aliases::Names && order.iter().enumerate().any(|(k, t)| order[..k].contains(t)) {
                continue;
            }
            out.push(join(tables, order, edges, aliases, &unqualified));
        }
    }
    out
}

/// The branch joining `order` (table indexes, in `FROM` order; a table may come twice, as in a
/// self-reference) along `edges`: each edge joins the first table not yet in the clause.
fn join<'a>(
    tables: &'a [Table],
    order: &[usize],
    edges: &[&Edge<'a>],
    scheme: Aliases,
    unqualified: &dyn Fn(&Table) -> bool,
) -> Branch<'a> {
    let mut aliases: Vec<Option<String>> = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let alias = match scheme {
            Aliases::Bare => None,
            Aliases::Numbered => Some(format!("T{}", k + 1)),
            Aliases::Names => Some(tables[i].name.clone()),
            Aliases::Initials => {
                let initial =
                    tables[i].name.trim_matches('"').chars().find(|c| c.is_ascii_alphabetic()).map_or('t', |c| c.to_ascii_lowercase());
                let mut alias = initial.to_string();
                let mut n = 2;
                while aliases.iter().flatten().any(|a| *a == alias) {
                    alias = format!("{initial}{n}");
                    n += 1;
                }
                Some(alias)
            }
        };
        aliases.push(alias);
    }
    let item = |k: usize| {
        let t = &tables[order[k]];
        let name = if unqualified(t) {
            format!("{}? {}", group(&literal(&format!("{}.", t.schema))), literal(&t.name))
        } else {
            literal(&t.qualified())
        };
        match (&aliases[k], scheme) {
            (Some(a), Aliases::Initials | Aliases::Numbered) => format!("{name} (\" AS \" | \" \") {}", literal(a)),
            _ => name,
        }
    };
    let mut from = item(0);
    for (pos, e) in edges.iter().enumerate() {
        // The new table is order[pos + 1]; the edge's other end is an earlier one.
        let new = pos + 1;
        let new_is_from = order[new] == e.from && (e.from != e.to || pos > 0 || order[0] != e.from);
        let earlier = |table: usize| (0..new).rev().find(|&k| order[k] == table).unwrap_or(0);
        let (a_from, a_to) = if new_is_from { (new, earlier(e.to)) } else { (earlier(e.from), new) };
        let q = |k: usize, c: &str| match &aliases[k] {
            Some(a) => format!("{a}.{c}"),
            None => c.to_string(),
        };
        let on =
            e.fk.columns
                .iter()
                .zip(&e.fk.ref_columns)
                .map(|(c, r)| {
                    let (l, r) = (q(a_from, c), q(a_to, r));
                    format!("({} | {})", literal(&format!("{l} = {r}")), literal(&format!("{r} = {l}")))
                })
                .collect::<Vec<_>>()
                .join(" \" AND \" ");
        let _ = write!(from, " sep (\"INNER \")? \"JOIN \" {} \" ON \" {on}", item(new));
    }
    let members = order.iter().zip(aliases).map(|(&i, alias)| Member { table: &tables[i], alias }).collect();
    Branch { members, from }
}

/// `expr` in parentheses, so that a postfix operator applies to all of it.
fn group(expr: &str) -> String {
    format!("({expr})")
}
