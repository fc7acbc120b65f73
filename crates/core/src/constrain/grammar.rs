//! A grammar for one read-only `SELECT` over exactly the tables a prompt describes, in GBNF,
//! the grammar format of llama.cpp's server (sent as the request's `grammar`).
//!
//! A grammar is context-free, and SQL names its columns before its `FROM`: a grammar that
//! merely lists every known name lets a model take a column from the wrong table. So names are
//! bound by construction. Every *branch* is one `FROM` clause, fixed in the grammar: a single
//! table, or tables joined along their foreign keys (one or two hops), each with a fixed alias.
//! A branch has its own expression rules, whose column references are only the columns of its
//! own tables, so a `SELECT` list, a `WHERE` clause or an `ORDER BY` can name nothing else.
//! Subqueries (`IN`, `EXISTS`, scalar) are any branch in turn, uncorrelated.
//!
//! Expressions are typed by the column class (number, text, date/time, boolean, other), so a
//! literal is of the kind its column compares with: `price > 10`, `city = 'Rome'`,
//! `opened >= '2020-01-01'`. Identifiers are written exactly as the description writes them
//! (quoted where PostgreSQL needs it); keywords in capitals; one space between tokens, a line
//! break allowed before each clause, bounded repetitions: a constrained model cannot loop in
//! white space or lists until its token limit.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::schema::{ForeignKey, Table};

/// Limits on the grammar's size.
#[derive(Debug, Clone, Copy)]
pub struct GrammarOptions {
    /// Branches at most: every table has one; foreign-key joins take what is left, one-hop
    /// joins first.
    pub max_branches: usize,
    /// Whether two-hop joins (three tables along two foreign keys) get branches.
    pub two_hops: bool,
}

impl Default for GrammarOptions {
    fn default() -> Self {
        GrammarOptions { max_branches: 400, two_hops: true }
    }
}

/// A generated grammar and its size.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlGrammar {
    /// The GBNF text; its start rule is `root`.
    pub text: String,
    pub tables: usize,
    /// `FROM` clauses the grammar allows (tables, then joins).
    pub branches: usize,
    pub rules: usize,
}

/// What kind of value a column holds, as far as literals and functions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Number,
    Text,
    Time,
    Bool,
    Other,
}

/// The class of a PostgreSQL type name as `format_type` writes it.
pub fn class_of(data_type: &str) -> Class {
    let t = data_type.trim().to_ascii_lowercase();
    if t.ends_with("[]") {
        return Class::Other;
    }
    let base = t.split('(').next().unwrap_or("").trim();
    match base {
        "smallint" | "integer" | "bigint" | "int" | "int2" | "int4" | "int8" | "numeric" | "decimal" | "real" | "double precision"
        | "float4" | "float8" | "money" | "smallserial" | "serial" | "bigserial" | "oid" => Class::Number,
        "text" | "character varying" | "varchar" | "character" | "char" | "bpchar" | "name" | "citext" | "\"char\"" => Class::Text,
        "boolean" | "bool" => Class::Bool,
        "date"
        | "timestamp"
        | "timestamp without time zone"
        | "timestamp with time zone"
        | "timestamptz"
        | "time"
        | "time without time zone"
        | "time with time zone"
        | "timetz" => Class::Time,
        _ if base.starts_with("timestamp") || base.starts_with("time ") => Class::Time,
        _ => Class::Other,
    }
}

/// A GBNF string literal for `text`.
pub fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One table of a branch, with the alias its columns are qualified with (none for a branch of
/// one table).
struct Member<'a> {
    table: &'a Table,
    alias: Option<String>,
}

/// One `FROM` clause and the tables in scope with it.
struct Branch<'a> {
    members: Vec<Member<'a>>,
    /// The `FROM` clause's text after `FROM `.
    from: String,
}

/// A foreign key between two described tables: `from` (index) references `to`.
struct Edge<'a> {
    from: usize,
    to: usize,
    fk: &'a ForeignKey,
}

/// The grammar for `tables`, or `None` when there is none to describe.
pub fn sql_grammar(tables: &[Table], opts: GrammarOptions) -> Option<SqlGrammar> {
    if tables.is_empty() {
        return None;
    }
    let branches = branches(tables, opts);
    let mut g = Gbnf::default();
    g.common();
    let ids: Vec<String> = (0..branches.len()).map(|i| format!("b{i}")).collect();
    for (id, b) in ids.iter().zip(&branches) {
        g.branch(id, b);
    }
    let alt = |suffix: &str| ids.iter().map(|id| format!("{id}{suffix}")).collect::<Vec<_>>().join(" | ");
    g.rule("root", "\"```sql\\n\" query \";\"? \"\\n```\"");
    g.rule("query", &alt(""));
    g.rule("core", &alt("-core"));
    g.rule("subq-n", &alt("-sn"));
    g.rule("subq-t", &alt("-st"));
    g.rule("subq", &alt("-sx"));
    Some(SqlGrammar { text: g.text, tables: tables.len(), branches: branches.len(), rules: g.rules })
}

/// The branches for `tables`: each table alone, then one-hop joins along every foreign key
/// between described tables, then two-hop joins, up to `opts.max_branches`.
fn branches(tables: &[Table], opts: GrammarOptions) -> Vec<Branch<'_>> {
    let mut out: Vec<Branch> =
        tables.iter().map(|t| Branch { members: vec![Member { table: t, alias: None }], from: t.qualified() }).collect();
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
    for e in &edges {
        if out.len() >= opts.max_branches {
            return out;
        }
        out.push(join(tables, &[e.from, e.to], &[e]));
    }
    if opts.two_hops {
        // Two edges that share a table: X - Y - Z, each pair once.
        for (i, e1) in edges.iter().enumerate() {
            for e2 in &edges[i + 1..] {
                if out.len() >= opts.max_branches {
                    return out;
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
                let branch = match (e1.from == shared, e2.from == shared) {
                    (true, true) => join(tables, &[shared, x, z], &[e1, e2]),
                    (true, false) => join(tables, &[z, shared, x], &[e2, e1]),
                    _ => join(tables, &[x, shared, z], &[e1, e2]),
                };
                out.push(branch);
            }
        }
    }
    out
}

/// The branch joining `order` (table indexes, in `FROM` order; a table may come twice, as in a
/// self-reference) along `edges`: each edge joins the first table not yet in the clause.
fn join<'a>(tables: &'a [Table], order: &[usize], edges: &[&Edge<'a>]) -> Branch<'a> {
    let mut aliases: Vec<String> = Vec::new();
    for &i in order {
        let initial = tables[i].name.trim_matches('"').chars().find(|c| c.is_ascii_alphabetic()).map_or('t', |c| c.to_ascii_lowercase());
        let mut alias = initial.to_string();
        let mut n = 2;
        while aliases.contains(&alias) {
            alias = format!("{initial}{n}");
            n += 1;
        }
        aliases.push(alias);
    }
    let mut from = format!("{} AS {}", tables[order[0]].qualified(), aliases[0]);
    for (pos, e) in edges.iter().enumerate() {
        // The new table is order[pos + 1]; the edge's other end is an earlier one.
        let new = pos + 1;
        let new_is_from = order[new] == e.from && (e.from != e.to || pos > 0 || order[0] != e.from);
        let earlier = |table: usize| (0..new).rev().find(|&k| order[k] == table).unwrap_or(0);
        let (a_from, a_to) = if new_is_from { (new, earlier(e.to)) } else { (earlier(e.from), new) };
        let on =
            e.fk.columns
                .iter()
                .zip(&e.fk.ref_columns)
                .map(|(c, r)| format!("{}.{} = {}.{}", aliases[a_from], c, aliases[a_to], r))
                .collect::<Vec<_>>()
                .join(" AND ");
        let _ = write!(from, " JOIN {} AS {} ON {}", tables[order[new]].qualified(), aliases[new], on);
    }
    let members = order.iter().zip(aliases).map(|(&i, alias)| Member { table: &tables[i], alias: Some(alias) }).collect();
    Branch { members, from }
}

#[derive(Default)]
struct Gbnf {
    text: String,
    rules: usize,
}

impl Gbnf {
    fn rule(&mut self, name: &str, body: &str) {
        let _ = writeln!(self.text, "{name} ::= {body}");
        self.rules += 1;
    }

    /// Rules that no branch's names appear in.
    fn common(&mut self) {
        // One separator before a clause: a space or a line break, never a run of them.
        self.rule("sep", "\" \" | \"\\n\"");
        self.rule("num", "\"-\"? [0-9]{1,12} (\".\" [0-9]{1,6})?");
        self.rule("int", "[0-9]{1,9}");
        self.rule("str", "\"'\" ([^'\\\\\\n] | \"''\"){0,80} \"'\"");
        self.rule(
            "ts",
            "\"'\" [12] [0-9]{3} \"-\" ([0] [1-9] | [1] [0-2]) \"-\" ([0-2] [0-9] | [3] [01]) (\" \" ([01] [0-9] | [2] [0-3]) \":\" [0-5] [0-9] (\":\" [0-5] [0-9])?)? \"'\"",
        );
        // Typed: an untyped literal is of unknown type, which date_trunc() and date arithmetic
        // cannot resolve ("function date_trunc(unknown, unknown) is not unique").
        self.rule("date", "(\"DATE \" | \"TIMESTAMP \") ts");
        self.rule("interval", "\"INTERVAL '\" [0-9]{1,4} \" \" (\"year\" | \"month\" | \"day\" | \"hour\" | \"minute\") \"s\"? \"'\"");
        self.rule("cmp", "\"=\" | \"<>\" | \"!=\" | \"<\" | \"<=\" | \">\" | \">=\"");
        self.rule("arith", "\"+\" | \"-\" | \"*\" | \"/\" | \"%\"");
        // A column alias is quoted: a bare one could be a reserved word.
        self.rule("alias", "\"\\\"\" [A-Za-z0-9_ ]{1,40} \"\\\"\"");
        self.rule("numtype", "\"INTEGER\" | \"BIGINT\" | \"NUMERIC\" | \"NUMERIC(\" [0-9]{1,2} \", \" [0-9] \")\" | \"FLOAT\" | \"REAL\"");
        self.rule("field", "\"YEAR\" | \"MONTH\" | \"DAY\" | \"HOUR\" | \"MINUTE\" | \"DOW\" | \"QUARTER\" | \"EPOCH\"");
        self.rule("unit", "\"'year'\" | \"'quarter'\" | \"'month'\" | \"'week'\" | \"'day'\" | \"'hour'\"");
        self.rule("dir", "(\" ASC\" | \" DESC\")? (\" NULLS FIRST\" | \" NULLS LAST\")?");
        self.rule("limit", "sep \"LIMIT \" int (\" OFFSET \" int)?");
        self.rule("setop", "sep (\"UNION ALL\" | \"UNION\" | \"INTERSECT\" | \"EXCEPT\") sep core");
    }

    /// The rules of one branch, named `{id}-…`.
    fn branch(&mut self, id: &str, b: &Branch) {
        let mut classes: [Vec<String>; 5] = Default::default();
        for m in &b.members {
            for c in &m.table.columns {
                let written = match &m.alias {
                    Some(a) => format!("{a}.{}", c.name),
                    None => c.name.clone(),
                };
                classes[class_of(&c.data_type) as usize].push(literal(&written));
            }
        }
        let [n, t, d, bo, o] = classes.map(|mut v| {
            let mut seen = BTreeSet::new();
            v.retain(|x| seen.insert(x.clone()));
            v
        });
        let r = |suffix: &str| format!("{id}-{suffix}");
        // Column references by class; a class without columns has no rule and no alternative.
        let mut col_alts = Vec::new();
        for (suffix, names) in [("n", &n), ("t", &t), ("d", &d), ("b", &bo), ("o", &o)] {
            if !names.is_empty() {
                self.rule(&r(suffix), &names.join(" | "));
                col_alts.push(r(suffix));
            }
        }
        self.rule(&r("col"), &col_alts.join(" | "));
        let cols = Cols { n: !n.is_empty(), t: !t.is_empty(), d: !d.is_empty(), b: !bo.is_empty(), o: !o.is_empty() };

        let from = literal(&b.from);
        // SELECT ... FROM ... [WHERE] [GROUP BY [HAVING]], then a set operation, or ORDER BY and
        // LIMIT.
        self.rule(
            &r("core"),
            &format!(
                "\"SELECT \" \"DISTINCT \"? {items} sep \"FROM \" {from} (sep \"WHERE \" {cond}){{0,1}} (sep \"GROUP BY \" {ex} (\", \" {ex}){{0,3}} (sep \"HAVING \" {cond})?)?",
                items = r("items"),
                cond = r("cond0"),
                ex = r("ex0"),
            ),
        );
        self.rule(
            id,
            &format!(
                "{core} (setop{{1,2}} limit? | (sep \"ORDER BY \" {ord} (\", \" {ord}){{0,2}})? limit?)",
                core = r("core"),
                ord = r("ord0")
            ),
        );
        self.rule(&r("items"), &format!("\"*\" | {it} (\", \" {it}){{0,9}}", it = r("item")));
        self.rule(&r("item"), &format!("{} (\" AS \" alias)?", r("ex0")));
        // Subqueries for IN, EXISTS and scalar comparisons: one column, this branch's FROM, and
        // expressions of the inner level (no further subquery).
        let filter = format!("sep \"FROM \" {from} (\" WHERE \" {})?", r("cond1"));
        self.rule(&r("sn"), &format!("\"SELECT \" {} {filter}", r("ne1")));
        self.rule(&r("st"), &format!("\"SELECT \" \"DISTINCT \"? {} {filter}", r("te1")));
        self.rule(&r("sx"), &format!("\"SELECT \" (\"1\" | \"*\" | {}) {filter}", r("col")));
        self.rule(
            &r("over"),
            &format!(
                "\"PARTITION BY \" {c} (\", \" {c}){{0,2}} (\" ORDER BY \" {o} (\", \" {o}){{0,1}})? | \"ORDER BY \" {o} (\", \" {o}){{0,1}}",
                c = r("col"),
                o = r("ord1")
            ),
        );
        self.atoms(&r, cols);
        self.level(&r, cols, 0);
        self.level(&r, cols, 1);
    }

    /// The innermost expressions: a column, a literal, an aggregate of a column.
    fn atoms(&mut self, r: &dyn Fn(&str) -> String, cols: Cols) {
        let has = |yes: bool, alt: String| yes.then_some(alt);
        let join = |alts: Vec<Option<String>>| alts.into_iter().flatten().collect::<Vec<_>>().join(" | ");
        self.rule(
            &r("an"),
            &join(vec![
                has(cols.n, r("n")),
                Some("num".into()),
                Some(format!("\"COUNT(\" (\"*\" | \"DISTINCT \" {c} | {c}) \")\"", c = r("col"))),
                has(cols.n, format!("(\"SUM(\" | \"AVG(\" | \"MIN(\" | \"MAX(\") \"DISTINCT \"? {} \")\"", r("n"))),
            ]),
        );
        self.rule(
            &r("at"),
            &join(vec![has(cols.t, r("t")), Some("str".into()), has(cols.t, format!("(\"MIN(\" | \"MAX(\") {} \")\"", r("t")))]),
        );
        self.rule(&r("ad"), &join(vec![has(cols.d, r("d")), Some("date".into()), Some("\"CURRENT_DATE\"".into())]));
        self.rule(&r("ax"), &join(vec![Some(r("an")), Some(r("at")), Some(r("ad")), has(cols.b, r("b")), has(cols.o, r("o"))]));
    }

    /// The expressions and conditions of nesting level `level` (0: the statement's own; 1:
    /// inside a function, a CASE, parentheses or a subquery). Their arguments are of the next
    /// level, and level 1's are atoms: nesting is bounded, so a model cannot open parentheses
    /// or functions without end, and an opening parenthesis is never ambiguous for long.
    fn level(&mut self, r: &dyn Fn(&str) -> String, cols: Cols, level: u8) {
        let l = |name: &str| r(&format!("{name}{level}"));
        let inner = |name: &str| if level == 0 { r(&format!("{name}1")) } else { r(&format!("a{}", &name[..1])) };
        let (ne, te, de, ex, cond, pred) = (l("ne"), l("te"), l("de"), l("ex"), l("cond"), l("pred"));
        let (ine, ite, ide, iex) = (inner("ne"), inner("te"), inner("de"), if level == 0 { r("ex1") } else { r("ax") });
        let top = level == 0;
        let has = |yes: bool, alt: String| yes.then_some(alt);
        let join = |alts: Vec<Option<String>>| alts.into_iter().flatten().collect::<Vec<_>>().join(" | ");
        let win = if top { format!(" (\" OVER (\" {}? \")\")?", r("over")) } else { String::new() };

        self.rule(&l("ord"), &format!("{ex} dir"));
        self.rule(&ex, &join(vec![Some(ne.clone()), Some(te.clone()), Some(de.clone()), has(cols.b, r("b")), has(cols.o, r("o"))]));
        // Numbers.
        self.rule(&ne, &format!("{nt} (\" \" arith \" \" {nt}){{0,3}}", nt = l("nt")));
        self.rule(&l("nt"), &format!("{} (\"::\" numtype)?", l("nb")));
        self.rule(
            &l("nb"),
            &join(vec![
                has(cols.n, r("n")),
                Some("num".into()),
                Some(format!("\"COUNT(\" (\"*\" | \"DISTINCT \" {c} | {c}) \")\"{win}", c = r("col"))),
                Some(format!("(\"SUM(\" | \"AVG(\" | \"MIN(\" | \"MAX(\") \"DISTINCT \"? {ine} \")\"{win}")),
                has(top, format!("(\"ROW_NUMBER()\" | \"RANK()\" | \"DENSE_RANK()\") \" OVER (\" {}? \")\"", r("over"))),
                // round(x, n) exists for numeric only: the precision comes with a cast, so that
                // it runs on a double precision average too.
                Some(format!("\"ROUND(\" {ine} (\"::NUMERIC, \" int)? \")\"")),
                Some(format!("(\"ABS(\" | \"CEIL(\" | \"FLOOR(\") {ine} \")\"")),
                Some(format!("\"COALESCE(\" {ine} \", \" {ine} \")\"")),
                Some(format!("\"LENGTH(\" {ite} \")\"")),
                Some(format!("\"EXTRACT(\" field \" FROM \" {ide} \")\"")),
                Some(format!("\"CAST(\" {iex} \" AS \" numtype \")\"")),
                has(top, format!("\"CASE\" (\" WHEN \" {c} \" THEN \" {ine}){{1,4}} (\" ELSE \" {ine})? \" END\"", c = r("cond1"))),
                has(top, format!("\"(\" {ine} \")\"")),
                has(top, "\"(\" subq-n \")\"".into()),
            ]),
        );
        // Text.
        self.rule(&te, &format!("{tt} (\" || \" {tt}){{0,3}}", tt = l("tt")));
        self.rule(
            &l("tt"),
            &join(vec![
                has(cols.t, r("t")),
                Some("str".into()),
                Some(format!("(\"LOWER(\" | \"UPPER(\" | \"TRIM(\" | \"INITCAP(\") {ite} \")\"")),
                Some(format!("\"SUBSTRING(\" {ite} \" FROM \" int (\" FOR \" int)? \")\"")),
                Some(format!("\"CONCAT(\" {ite} (\", \" {ite}){{1,3}} \")\"")),
                Some(format!("(\"MIN(\" | \"MAX(\") {ite} \")\"{win}")),
                Some(format!("\"STRING_AGG(\" \"DISTINCT \"? {ite} \", \" str \")\"")),
                Some(format!("\"COALESCE(\" {ite} \", \" {ite} \")\"")),
                Some(format!("\"CAST(\" {iex} \" AS TEXT)\"")),
                has(top, format!("\"CASE\" (\" WHEN \" {c} \" THEN \" {ite}){{1,4}} (\" ELSE \" {ite})? \" END\"", c = r("cond1"))),
                has(top, "\"(\" subq-t \")\"".into()),
            ]),
        );
        // Dates and times.
        self.rule(&de, &format!("{dt} (\" \" (\"+\" | \"-\") \" \" interval)?", dt = l("dt")));
        self.rule(
            &l("dt"),
            &join(vec![
                has(cols.d, r("d")),
                Some("date".into()),
                Some("\"CURRENT_DATE\" | \"NOW()\"".into()),
                Some(format!("(\"MIN(\" | \"MAX(\") {ide} \")\"{win}")),
                Some(format!("\"DATE_TRUNC(\" unit \", \" {ide} \")\"")),
                Some(format!("\"CAST(\" {iex} \" AS \" (\"DATE\" | \"TIMESTAMP\") \")\"")),
            ]),
        );
        // Conditions. NOT is a prefix, not a recursion; parentheses open a condition of the
        // inner level, once.
        self.rule(&cond, &format!("{pred} ((\" AND \" | \" OR \") {pred}){{0,5}}"));
        self.rule(&pred, &format!("\"NOT \"? {}", l("cmp")));
        self.rule(
            &l("cmp"),
            &join(vec![
                has(top, format!("\"(\" {} \")\"", r("cond1"))),
                Some(format!("{ne} \" \" cmp \" \" {ne}")),
                Some(format!("{ne} \" NOT\"? \" BETWEEN \" {ne} \" AND \" {ne}")),
                Some(format!("{ne} \" NOT\"? \" IN (\" (num (\", \" num){{0,19}}{}) \")\"", if top { " | subq-n" } else { "" })),
                Some(format!("{te} \" \" cmp \" \" {te}")),
                Some(format!("{te} \" NOT\"? (\" LIKE \" | \" ILIKE \") str")),
                Some(format!("{te} \" NOT\"? \" IN (\" (str (\", \" str){{0,19}}{}) \")\"", if top { " | subq-t" } else { "" })),
                Some(format!("{de} \" \" cmp \" \" {de}")),
                Some(format!("{de} \" NOT\"? \" BETWEEN \" {de} \" AND \" {de}")),
                has(cols.b, format!("{} (\" = \" (\"TRUE\" | \"FALSE\") | \" IS \" \"NOT \"? (\"TRUE\" | \"FALSE\"))?", r("b"))),
                Some(format!("{} \" IS \" \"NOT \"? \"NULL\"", r("col"))),
                has(top, "\"EXISTS (\" subq \")\"".into()),
            ]),
        );
    }
}

/// Which column classes a branch has.
#[derive(Debug, Clone, Copy)]
struct Cols {
    n: bool,
    t: bool,
    d: bool,
    b: bool,
    o: bool,
}
