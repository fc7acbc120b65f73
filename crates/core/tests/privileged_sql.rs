//! SQL that runs with other rights than its caller's names every operator, function and cast
//! with its schema (CVE-2018-1058): a role that can create objects in a schema on somebody's
//! search path must not be able to put an operator of its own in front of `pg_catalog.=`.
//!
//! This test reads pg_ask's SQL as shipped: the `sql/*.sql` scripts (the upgrade scripts too)
//! and the `extension_sql!` blocks of the extension's Rust files. In every function that is
//! SECURITY DEFINER, a trigger or an event trigger, the body may hold no bare operator
//! (`OPERATOR(pg_catalog.=)` is the qualified form), no unqualified function call and no
//! unqualified cast, and the function pins its search path (`SET search_path = pg_catalog,
//! pg_temp`). SQL run by the Rust code as another role is covered by the switch itself, which
//! pins the same search path (`pg::identity::as_user`).

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every SQL text pg_ask ships, with where it comes from.
fn sql_texts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(repo().join("sql")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sql") {
            out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
        }
    }
    fn walk(dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let mut rest = text.as_str();
                while let Some(i) = rest.find("extension_sql!(") {
                    rest = &rest[i..];
                    let start = rest.find("r#\"").map(|s| s + 3);
                    let end = rest.find("\"#");
                    if let (Some(s), Some(e)) = (start, end) {
                        out.push((path.display().to_string(), rest[s..e].to_string()));
                        rest = &rest[e..];
                    } else {
                        break;
                    }
                }
            }
        }
    }
    walk(&repo().join("src"), &mut out);
    out
}

/// A function definition: its header (up to `AS $$`) and its body.
struct Function {
    header: String,
    body: String,
}

fn functions(sql: &str) -> Vec<Function> {
    let mut out = Vec::new();
    let upper = sql.to_uppercase();
    let mut at = 0;
    while let Some(i) = upper[at..].find("CREATE ").map(|i| i + at) {
        at = i + 7;
        let head = &upper[i..(i + 40).min(upper.len())];
        if !(head.starts_with("CREATE FUNCTION") || head.starts_with("CREATE OR REPLACE FUNCTION")) {
            continue;
        }
        let Some(open) = sql[i..].find("$$").map(|o| o + i) else { break };
        let Some(close) = sql[open + 2..].find("$$").map(|c| c + open + 2) else { break };
        // A function without a $$ body (BEGIN ATOMIC, RETURN) is parsed when created: nothing
        // in it is looked up at run time. Such a header has its own end before the next $$.
        let header = &sql[i..open];
        if header.contains(";\n") {
            continue;
        }
        out.push(Function { header: header.to_string(), body: sql[open + 2..close].to_string() });
        at = close + 2;
    }
    out
}

fn privileged(f: &Function) -> bool {
    let h = f.header.to_uppercase();
    h.contains("SECURITY DEFINER") || h.contains("RETURNS TRIGGER") || h.contains("RETURNS EVENT_TRIGGER")
}

/// The body without comments and string literals, with qualified operators taken out.
fn bare(body: &str) -> String {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '\'' => {
                // A literal; '' inside it is a quote.
                loop {
                    match chars.next() {
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                        }
                        Some('\'') | None => break,
                        Some(_) => {}
                    }
                }
                out.push_str("''");
            }
            _ => out.push(c),
        }
    }
    let mut s = out;
    while let Some(i) = s.find("OPERATOR(pg_catalog.") {
        let end = s[i..].find(')').map(|e| e + i + 1).unwrap_or(s.len());
        s.replace_range(i..end, " ");
    }
    let s = s.replace(":=", " ");
    without_assignments(&s)
}

/// `SET column =` (an UPDATE's assignment) and `ERRCODE =`, `DETAIL =`, `HINT =`, `MESSAGE =`
/// (a RAISE's options) are syntax, not the operator `=`: they are taken out.
fn without_assignments(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let single_eq = c == '=' && !matches!(chars.get(i.wrapping_sub(1)), Some('<' | '>' | '!')) && chars.get(i + 1) != Some(&'>');
        if single_eq {
            let before: String = chars[..i].iter().collect();
            let words: Vec<&str> = before.split_whitespace().rev().take(2).collect();
            let option = words.first().is_some_and(|w| ["ERRCODE", "DETAIL", "HINT", "MESSAGE"].contains(&w.to_uppercase().as_str()));
            let set = words.get(1).is_some_and(|w| w.eq_ignore_ascii_case("SET"));
            if option || set {
                out.push(' ');
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Words that stand before a parenthesis without being a function looked up by name.
const NOT_FUNCTIONS: &[&str] = &[
    "and",
    "or",
    "not",
    "in",
    "exists",
    "any",
    "all",
    "some",
    "values",
    "if",
    "when",
    "then",
    "else",
    "elsif",
    "where",
    "select",
    "from",
    "on",
    "using",
    "return",
    "perform",
    "execute",
    "coalesce",
    "nullif",
    "greatest",
    "least",
    "row",
    "array",
    "cast",
    "loop",
    "begin",
    "end",
    "into",
    "join",
    "case",
    "is",
    "as",
    "by",
    "with",
    "set",
    "over",
    "filter",
    "within",
    "returning",
    "raise",
];

fn problems(body: &str) -> Vec<String> {
    let s = bare(body);
    let mut found = Vec::new();
    // `*` is left out: in `SELECT *` and `count(*)` it is no operator.
    for op in ["<>", "<=", ">=", "!=", "||", "=", "<", ">", "+", "~", "/", "%"] {
        if s.contains(op) {
            found.push(format!("a bare operator {op}"));
            break;
        }
    }
    let bytes: Vec<char> = s.chars().collect();
    for (i, &c) in bytes.iter().enumerate() {
        if c == ':' && bytes.get(i + 1) == Some(&':') {
            let rest: String = bytes[i + 2..].iter().collect();
            let rest = rest.trim_start();
            if !(rest.starts_with("pg_catalog.") || rest.starts_with("ask.")) {
                found.push(format!("an unqualified cast ::{}", rest.chars().take(20).collect::<String>()));
            }
        }
        if c == '(' {
            // The word before the parenthesis.
            let mut j = i;
            while j > 0 && bytes[j - 1] == ' ' {
                j -= 1;
            }
            let end = j;
            while j > 0 && (bytes[j - 1].is_alphanumeric() || bytes[j - 1] == '_') {
                j -= 1;
            }
            let word: String = bytes[j..end].iter().collect();
            if word.is_empty() || NOT_FUNCTIONS.contains(&word.to_lowercase().as_str()) {
                continue;
            }
            let qualified = j > 0 && bytes[j - 1] == '.';
            if !qualified {
                found.push(format!("an unqualified call {word}("));
            }
        }
    }
    found
}

#[test]
fn privileged_sql_names_its_operators_functions_and_casts() {
    let mut seen = 0;
    let mut failures = Vec::new();
    for (place, sql) in sql_texts() {
        for f in functions(&sql).iter().filter(|f| privileged(f)) {
            seen += 1;
            let name = f.header.split('(').next().unwrap_or("").trim().to_string();
            if !f.header.contains("SET search_path = pg_catalog, pg_temp") {
                failures.push(format!("{place}: {name}: its search path is not pinned (SET search_path = pg_catalog, pg_temp)"));
            }
            for p in problems(&f.body) {
                failures.push(format!("{place}: {name}: {p}"));
            }
        }
    }
    assert!(seen >= 4, "the scan found only {seen} privileged functions: is it reading the right files?");
    assert!(failures.is_empty(), "privileged SQL that a search path could redirect:\n{}", failures.join("\n"));
}

#[test]
fn the_scan_catches_what_it_is_for() {
    assert!(problems("DELETE FROM ask.t l WHERE l.relid = d.objid;").iter().any(|p| p.contains("operator =")));
    assert!(problems("UPDATE ask.v SET version = version + 1;").iter().any(|p| p.contains("operator +")));
    assert!(problems("PERFORM format('%s', x);").iter().any(|p| p.contains("call format(")));
    assert!(problems("SELECT x::regclass;").iter().any(|p| p.contains("cast")));
    assert!(problems("SELECT 1 FROM ask.t WHERE a OPERATOR(pg_catalog.=) pg_catalog.lower(b)::pg_catalog.text; -- a = b").is_empty());
    assert!(problems("RAISE EXCEPTION 'a = b % c' USING ERRCODE = '42501';").is_empty(), "a RAISE option is no operator");
    assert!(problems("UPDATE ask.v SET version = version OPERATOR(pg_catalog.+) 1;").is_empty(), "an assignment is no operator");
}
