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
//! Each kind of query gets the shape PostgreSQL accepts, so that what runs past the grammar
//! runs in the database too (see [`Mode`]): `WHERE` holds row expressions only (no aggregate,
//! no window function); an aggregate query lists its grouping keys first and groups by their
//! positions, every other item being an aggregate or a constant, so nothing is left ungrouped;
//! after `DISTINCT`, `ORDER BY 1`; window functions stand in a plain query's items; a scalar
//! subquery is an aggregate without grouping (one row); set operations join one-column queries
//! of one class; `ORDER BY` never takes a bare literal (a position, or an error).
//!
//! Expressions are typed by the column class (number, text, date/time, boolean, other), so a
//! literal is of the kind its column compares with: `price > 10`, `city = 'Rome'`,
//! `opened >= '2020-01-01'`. Identifiers are written exactly as the description writes them
//! (quoted where PostgreSQL needs it); keywords and function names in upper, lower or capitalized case, a space or a
//! line break with indentation between tokens ([`super::relax`]), bounded repetitions: a
//! constrained model cannot loop in white space or lists until its token limit.
//!
//! A grammar may remove only what would fail, so it takes the names models write: a table of a
//! schema on the search path without its schema (where no other described table has its name),
//! and, for each `FROM` clause, the aliases models trained on Spider and BIRD choose (`T1`,
//! `T2`, ...), a table's initial, or the table's own name; `INNER JOIN`, `AS` left out, and a
//! join's condition written either way round.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::clauses::{branches, Branch};
use super::relax::{keyword_rule, relax, WS_RULE};
use crate::schema::Table;

pub use super::clauses::GrammarOptions;
pub use super::gbnf::literal;

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

/// The grammar for `tables`, or `None` when there is none to describe.
pub fn sql_grammar(tables: &[Table], opts: GrammarOptions) -> Option<SqlGrammar> {
    if tables.is_empty() {
        return None;
    }
    let branches = branches(tables, &opts);
    let mut g = Gbnf::default();
    g.common();
    let ids: Vec<String> = (0..branches.len()).map(|i| format!("b{i}")).collect();
    for (id, b) in ids.iter().zip(&branches) {
        g.branch(id, b);
    }
    let alt = |suffix: &str| ids.iter().map(|id| format!("{id}{suffix}")).collect::<Vec<_>>().join(" | ");
    g.rule("root", "\"```sql\\n\" query \";\"? \"\\n```\"");
    g.rule("query", &format!("{} | setq", alt("")));
    // A set operation of one-column queries of one class, ordered by that column.
    let sets = ["n", "t", "d"].map(|c| format!("set-{c} (setop set-{c}){{1,2}}")).join(" | ");
    g.rule("setq", &format!("({sets}) (sep \"ORDER BY 1\" dir)? limit?"));
    for c in ["n", "t", "d"] {
        g.rule(&format!("set-{c}"), &alt(&format!("-s1{c}")));
    }
    g.rule("in-n", &alt("-inn"));
    g.rule("in-t", &alt("-ins"));
    g.rule("scal-n", &alt("-scn"));
    g.rule("scal-t", &alt("-sct"));
    g.rule("subq", &alt("-sx"));
    for name in std::mem::take(&mut g.keywords) {
        let body = keyword_rule(&name);
        let _ = writeln!(g.text, "{name} ::= {body}");
        g.rules += 1;
    }
    Some(SqlGrammar { text: g.text, tables: tables.len(), branches: branches.len(), rules: g.rules })
}

#[derive(Default)]
struct Gbnf {
    text: String,
    rules: usize,
    /// The keyword rules the relaxed rules refer to, written last.
    keywords: BTreeSet<String>,
}

impl Gbnf {
    /// A rule, relaxed ([`relax`]): keywords in three cases everywhere, and a space between
    /// tokens a line break too, except where a space is part of a token (white space itself,
    /// a quoted text, a time stamp, an interval's text).
    fn rule(&mut self, name: &str, body: &str) {
        let body = match name {
            "root" | "ws" | "sep" | "str" | "alias" => body.to_string(),
            "ts" | "interval" | "unit" | "num" | "int" => relax(body, false, &mut self.keywords),
            _ => relax(body, true, &mut self.keywords),
        };
        let _ = writeln!(self.text, "{name} ::= {body}");
        self.rules += 1;
    }

    /// Rules that no branch's names appear in.
    fn common(&mut self) {
        // White space between tokens and before a clause: a space, or a line break and an
        // indentation, never a longer run.
        self.rule("ws", WS_RULE);
        self.rule("sep", "ws");
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
        self.rule("setop", "sep (\"UNION ALL\" | \"UNION\" | \"INTERSECT\" | \"EXCEPT\") sep");
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

        let from = format!("({})", b.from);
        let fw = r("fw");
        self.rule(&fw, &format!("sep \"FROM \" {from} (sep \"WHERE \" {})?", r("cond0")));
        // A plain query: its items, and windows, are row expressions; after DISTINCT, ORDER BY
        // takes the first item's position (an expression there must be selected).
        self.rule(
            id,
            &format!(
                "\"SELECT \" (\"DISTINCT \" {items} {fw} (sep \"ORDER BY 1\" dir)? | {items} {fw} (sep \"ORDER BY \" {ord} (\", \" {ord}){{0,2}})?) limit? | {grouped}",
                items = r("items"),
                ord = r("ord0"),
                grouped = r("grouped"),
            ),
        );
        self.rule(&r("items"), &format!("\"*\" | {it} (\", \" {it}){{0,9}}", it = r("item")));
        self.rule(
            &r("item"),
            &format!("({} | ({nt} \" \" arith \" \")? {} (\" \" arith \" \" {nt})?) (\" AS \" alias)?", r("ex0"), r("win"), nt = r("nt0")),
        );
        // An aggregate query. Its grouping keys come first and are grouped by position, every
        // other item is an aggregate (or a constant): no column can be left ungrouped. Without
        // keys it is one row, which needs no ORDER BY.
        let gitems = format!("{gi} (\", \" {gi}){{0,5}}", gi = r("gitem"));
        let key = format!("{} (\" AS \" alias)?", r("ex0"));
        let having = format!("(sep \"HAVING \" {})?", r("condg"));
        let mut grouped = vec![format!("\"SELECT \" {gitems} {fw} limit?")];
        for k in 1..=3usize {
            let keys = vec![key.as_str(); k].join(" \", \" ");
            let positions = (1..=k).map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
            let ord = format!("([1-{}] | {}) dir", k + 1, r("obg"));
            grouped.push(format!(
                "\"SELECT \" {keys} \", \" {gitems} {fw} sep \"GROUP BY {positions}\" {having} (sep \"ORDER BY \" {ord} (\", \" {ord}){{0,2}})? limit?"
            ));
        }
        self.rule(&r("grouped"), &grouped.join(" | "));
        self.rule(&r("gitem"), &format!("{} (\" AS \" alias)?", r("exg")));
        // One column of one class, for set operations (UNION's operands agree in number and
        // type of columns).
        for (k, e) in [("s1n", "ne0"), ("s1t", "te0"), ("s1d", "de0")] {
            self.rule(&r(k), &format!("\"SELECT \" {} {fw}", r(e)));
        }
        // Subqueries, uncorrelated: IN takes one column of rows; a scalar subquery is an
        // aggregate without grouping, so it is one row, never more; EXISTS takes anything.
        let filter = format!("sep \"FROM \" {from} (\" WHERE \" {})?", r("cond1"));
        self.rule(&r("inn"), &format!("\"SELECT \" \"DISTINCT \"? {} {filter}", r("ne1")));
        self.rule(&r("ins"), &format!("\"SELECT \" \"DISTINCT \"? {} {filter}", r("te1")));
        self.rule(&r("scn"), &format!("\"SELECT \" {} {filter}", r("agn")));
        self.rule(&r("sct"), &format!("\"SELECT \" {} {filter}", r("agt")));
        self.rule(&r("sx"), &format!("\"SELECT \" (\"1\" | \"*\" | {}) {filter}", r("col")));
        // Window functions: in a plain query's items only (not in WHERE, not nested).
        self.rule(
            &r("win"),
            &format!(
                "((\"ROW_NUMBER()\" | \"RANK()\" | \"DENSE_RANK()\") | \"COUNT(\" (\"*\" | {c}) \")\" | (\"SUM(\" | \"AVG(\") {n} \")\" | (\"MIN(\" | \"MAX(\" | \"LAG(\" | \"LEAD(\") {c} \")\") \" OVER (\" {over}? \")\"",
                c = r("col"),
                n = r("ne1"),
                over = r("over"),
            ),
        );
        self.rule(
            &r("over"),
            &format!(
                "\"PARTITION BY \" {c} (\", \" {c}){{0,2}} (\" ORDER BY \" {o} (\", \" {o}){{0,1}})? | \"ORDER BY \" {o} (\", \" {o}){{0,1}}",
                c = r("col"),
                o = r("ord1")
            ),
        );
        // CASE of numbers (also inside an aggregate: SUM(CASE WHEN ... THEN 1 ELSE 0 END)) and
        // of text.
        for (name, of) in [("casen", "ne1"), ("caset", "te1")] {
            self.rule(
                &r(name),
                &format!("\"CASE\" (\" WHEN \" {} \" THEN \" {e}){{1,4}} (\" ELSE \" {e})? \" END\"", r("cond1"), e = r(of)),
            );
        }
        self.atoms(&r, cols);
        for mode in [Mode::P0, Mode::P1, Mode::G0, Mode::G1] {
            self.level(&r, cols, mode);
        }
    }

    /// The innermost expressions: plain ones (a column or a literal: `an`, `at`, `ad`, `ax`),
    /// aggregates of a column (`agn`, `agt`, `agd`), and what an aggregate query's innermost
    /// function takes (an aggregate or a literal: `gn`, `gt`, `gd`, `gx`).
    fn atoms(&mut self, r: &dyn Fn(&str) -> String, cols: Cols) {
        let has = |yes: bool, alt: String| yes.then_some(alt);
        let join = |alts: Vec<Option<String>>| alts.into_iter().flatten().collect::<Vec<_>>().join(" | ");
        self.rule(&r("an"), &join(vec![has(cols.n, r("n")), Some("num".into())]));
        self.rule(&r("at"), &join(vec![has(cols.t, r("t")), Some("str".into())]));
        self.rule(&r("ad"), &join(vec![has(cols.d, r("d")), Some("date".into()), Some("\"CURRENT_DATE\"".into())]));
        self.rule(&r("ax"), &join(vec![Some(r("an")), Some(r("at")), Some(r("ad")), has(cols.b, r("b")), has(cols.o, r("o"))]));
        self.rule(
            &r("agn"),
            &join(vec![
                Some(format!("\"COUNT(\" (\"*\" | \"DISTINCT \" {c} | {c}) \")\"", c = r("col"))),
                Some(format!("(\"SUM(\" | \"AVG(\" | \"MIN(\" | \"MAX(\") \"DISTINCT \"? {} \")\"", r("an"))),
            ]),
        );
        self.rule(&r("agt"), &format!("(\"MIN(\" | \"MAX(\") {} \")\"", r("at")));
        self.rule(&r("agd"), &format!("(\"MIN(\" | \"MAX(\") {} \")\"", r("ad")));
        self.rule(&r("gn"), &format!("{} | num", r("agn")));
        self.rule(&r("gt"), &format!("{} | str", r("agt")));
        self.rule(&r("gd"), &format!("{} | date | \"CURRENT_DATE\"", r("agd")));
        self.rule(&r("gx"), &format!("{} | {} | {}", r("gn"), r("gt"), r("gd")));
    }

    /// The expressions of one mode (see [`Mode`]). A function's arguments are of the next
    /// level, and level 1's are atoms: nesting is bounded, so a model cannot open parentheses
    /// or functions without end, and an opening parenthesis is never ambiguous for long.
    fn level(&mut self, r: &dyn Fn(&str) -> String, cols: Cols, mode: Mode) {
        let tag = mode.tag();
        let l = |name: &str| r(&format!("{name}{tag}"));
        // Function arguments: the next level down.
        let arg = |class: &str| match mode {
            Mode::P0 => r(&format!("{class}e1")),
            Mode::P1 => r(&format!("a{class}")),
            Mode::G0 => r(&format!("{class}eh")),
            Mode::G1 => r(&format!("g{class}")),
        };
        let (fne, fte, fde) = (arg("n"), arg("t"), arg("d"));
        let fex = match mode {
            Mode::P0 => r("ex1"),
            Mode::P1 => r("ax"),
            Mode::G0 => r("exh"),
            Mode::G1 => r("gx"),
        };
        // Aggregate arguments: row expressions (no aggregate inside an aggregate).
        let agg = |class: &str| match mode {
            Mode::G0 => Some(r(&format!("{class}e1"))),
            Mode::G1 => Some(r(&format!("a{class}"))),
            _ => None,
        };
        let top = mode.top();
        let bare = !mode.aggregate();
        let (ne, te, de, ex) = (l("ne"), l("te"), l("de"), l("ex"));
        let has = |yes: bool, alt: String| yes.then_some(alt);
        let join = |alts: Vec<Option<String>>| alts.into_iter().flatten().collect::<Vec<_>>().join(" | ");

        self.rule(
            &ex,
            &join(vec![Some(ne.clone()), Some(te.clone()), Some(de.clone()), has(bare && cols.b, r("b")), has(bare && cols.o, r("o"))]),
        );
        // Numbers. `nbx` is everything but a bare literal, which ORDER BY would read as a
        // position.
        self.rule(&ne, &format!("{nt} (\" \" arith \" \" {nt}){{0,3}}", nt = l("nt")));
        self.rule(&l("nt"), &format!("{} (\"::\" numtype)?", l("nb")));
        self.rule(&l("nb"), &format!("num | {}", l("nbx")));
        let agg_n = agg("n").map(|a| if mode == Mode::G0 { format!("({a} | {})", r("casen")) } else { a });
        self.rule(
            &l("nbx"),
            &join(vec![
                has(bare && cols.n, r("n")),
                has(mode.aggregate(), format!("\"COUNT(\" (\"*\" | \"DISTINCT \" {c} | {c}) \")\"", c = r("col"))),
                agg_n.map(|a| format!("(\"SUM(\" | \"AVG(\" | \"MIN(\" | \"MAX(\") \"DISTINCT \"? {a} \")\"")),
                // round(x, n) exists for numeric only: the precision comes with a cast, so that
                // it runs on a double precision average too.
                Some(format!("\"ROUND(\" {fne} (\"::NUMERIC, \" int)? \")\"")),
                Some(format!("(\"ABS(\" | \"CEIL(\" | \"FLOOR(\") {fne} \")\"")),
                Some(format!("\"COALESCE(\" {fne} \", \" {fne} \")\"")),
                Some(format!("\"LENGTH(\" {fte} \")\"")),
                Some(format!("\"EXTRACT(\" field \" FROM \" {fde} \")\"")),
                Some(format!("\"CAST(\" {fex} \" AS \" numtype \")\"")),
                has(mode == Mode::P0, r("casen")),
                has(top, format!("\"(\" {fne} \")\"")),
                has(top, "\"(\" scal-n \")\"".into()),
            ]),
        );
        // Text.
        self.rule(&te, &format!("{tt} (\" || \" {tt}){{0,3}}", tt = l("tt")));
        self.rule(&l("tt"), &format!("str | {}", l("ttx")));
        self.rule(
            &l("ttx"),
            &join(vec![
                has(bare && cols.t, r("t")),
                Some(format!("(\"LOWER(\" | \"UPPER(\" | \"TRIM(\" | \"INITCAP(\") {fte} \")\"")),
                Some(format!("\"SUBSTRING(\" {fte} \" FROM \" int (\" FOR \" int)? \")\"")),
                Some(format!("\"CONCAT(\" {fte} (\", \" {fte}){{1,3}} \")\"")),
                agg("t").map(|a| format!("(\"MIN(\" | \"MAX(\") {a} \")\" | \"STRING_AGG(\" \"DISTINCT \"? {a} \", \" str \")\"")),
                Some(format!("\"COALESCE(\" {fte} \", \" {fte} \")\"")),
                Some(format!("\"CAST(\" {fex} \" AS TEXT)\"")),
                has(mode == Mode::P0, r("caset")),
                has(top, "\"(\" scal-t \")\"".into()),
            ]),
        );
        // Dates and times.
        self.rule(&de, &format!("{dt} (\" \" (\"+\" | \"-\") \" \" interval)?", dt = l("dt")));
        self.rule(&l("dt"), &format!("date | {}", l("dtx")));
        self.rule(
            &l("dtx"),
            &join(vec![
                has(bare && cols.d, r("d")),
                Some("\"CURRENT_DATE\" | \"NOW()\"".into()),
                agg("d").map(|a| format!("(\"MIN(\" | \"MAX(\") {a} \")\"")),
                Some(format!("\"DATE_TRUNC(\" unit \", \" {fde} \")\"")),
                Some(format!("\"CAST(\" {fex} \" AS \" (\"DATE\" | \"TIMESTAMP\") \")\"")),
            ]),
        );
        if mode == Mode::G1 {
            return;
        }
        // Ordering: an expression that is not a bare literal (ORDER BY 3 is a position, ORDER
        // BY 'x' an error), and its direction.
        let nx = format!("{} (\"::\" numtype)? (\" \" arith \" \" {}){{0,3}}", l("nbx"), l("nt"));
        let tx = format!("{} (\" || \" {}){{0,3}}", l("ttx"), l("tt"));
        let dx = format!("{} (\" \" (\"+\" | \"-\") \" \" interval)?", l("dtx"));
        self.rule(&l("ob"), &join(vec![Some(nx), Some(tx), Some(dx), has(bare && cols.b, r("b")), has(bare && cols.o, r("o"))]));
        self.rule(&l("ord"), &format!("{} dir", l("ob")));
        // Conditions. NOT is a prefix, not a recursion; parentheses open a condition of the
        // inner level, once. An aggregate query's HAVING compares its aggregates.
        let cond = l("cond");
        let pred = l("pred");
        self.rule(&cond, &format!("{pred} ((\" AND \" | \" OR \") {pred}){{0,5}}"));
        self.rule(&pred, &format!("\"NOT \"? {}", l("cmp")));
        let p0 = mode == Mode::P0;
        self.rule(
            &l("cmp"),
            &join(vec![
                has(p0, format!("\"(\" {} \")\"", r("cond1"))),
                Some(format!("{ne} \" \" cmp \" \" {ne}")),
                Some(format!("{ne} \" NOT\"? \" BETWEEN \" {ne} \" AND \" {ne}")),
                Some(format!("{ne} \" NOT\"? \" IN (\" (num (\", \" num){{0,19}}{}) \")\"", if top { " | in-n" } else { "" })),
                Some(format!("{te} \" \" cmp \" \" {te}")),
                Some(format!("{te} \" NOT\"? (\" LIKE \" | \" ILIKE \") str")),
                Some(format!("{te} \" NOT\"? \" IN (\" (str (\", \" str){{0,19}}{}) \")\"", if top { " | in-t" } else { "" })),
                Some(format!("{de} \" \" cmp \" \" {de}")),
                Some(format!("{de} \" NOT\"? \" BETWEEN \" {de} \" AND \" {de}")),
                has(bare && cols.b, format!("{} (\" = \" (\"TRUE\" | \"FALSE\") | \" IS \" \"NOT \"? (\"TRUE\" | \"FALSE\"))?", r("b"))),
                has(bare, format!("{} \" IS \" \"NOT \"? \"NULL\"", r("col"))),
                has(p0, "\"EXISTS (\" subq \")\"".into()),
            ]),
        );
    }
}

/// Which expressions a rule family allows. A row expression names columns; an aggregate
/// query's expressions name them only inside an aggregate (so nothing is left ungrouped); no
/// aggregate or window function stands in a WHERE clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The statement's own row expressions: select items, WHERE, grouping keys, ORDER BY.
    P0,
    /// Row expressions one level in: function arguments, subqueries, CASE conditions,
    /// aggregate arguments.
    P1,
    /// An aggregate query's items, HAVING and ORDER BY: aggregates, constants and functions of
    /// them.
    G0,
    /// Their function arguments (`ROUND(AVG(x)::NUMERIC, 2)`).
    G1,
}

impl Mode {
    /// The suffix of the family's rule names.
    fn tag(self) -> &'static str {
        match self {
            Mode::P0 => "0",
            Mode::P1 => "1",
            Mode::G0 => "g",
            Mode::G1 => "h",
        }
    }

    /// Whether the family stands at the statement's own level (parentheses, CASE and
    /// subqueries open here).
    fn top(self) -> bool {
        matches!(self, Mode::P0 | Mode::G0)
    }

    fn aggregate(self) -> bool {
        matches!(self, Mode::G0 | Mode::G1)
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
