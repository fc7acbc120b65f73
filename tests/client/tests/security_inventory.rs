//! SECURITY.md lists every function and procedure of schema `ask` with whether PUBLIC may
//! execute it and whether it is SECURITY DEFINER. This test holds the installed extension to
//! that list: a function the list does not name, one it names that does not exist, or one
//! whose execute right or SECURITY DEFINER status differs, fails it. A SECURITY DEFINER
//! function must also pin its search path.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pg_ask_it::connect;

/// What SECURITY.md says of one function: PUBLIC may execute it; it is SECURITY DEFINER.
#[derive(Debug, PartialEq)]
struct Listed {
    public: bool,
    definer: bool,
}

fn listed() -> BTreeMap<String, Listed> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../SECURITY.md");
    let text = std::fs::read_to_string(&path).expect("SECURITY.md at the repository's root");
    let section = text.split("## Functions of schema `ask`").nth(1).expect("SECURITY.md has a section 'Functions of schema `ask`'");
    let mut out = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `ask.")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert!(cells.len() >= 3, "a row of SECURITY.md's function table has too few cells: {line}");
        let name = cells[0].trim_matches('`').to_string();
        let public = match cells[1] {
            "yes" => true,
            "no" => false,
            other => panic!("SECURITY.md: {name}: 'PUBLIC may execute' is {other:?}, not yes or no"),
        };
        let definer = cells[2].contains("SECURITY DEFINER");
        assert!(out.insert(name.clone(), Listed { public, definer }).is_none(), "SECURITY.md names {name} twice");
    }
    out
}

#[test]
fn every_function_of_schema_ask_is_as_security_md_says() {
    let mut c = connect();
    let rows = c
        .query(
            "SELECT p.oid::pg_catalog.regprocedure::text,
                    EXISTS (SELECT FROM pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
                             WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'),
                    p.prosecdef,
                    coalesce(pg_catalog.array_to_string(p.proconfig, ','), '')
               FROM pg_catalog.pg_proc p
              WHERE p.pronamespace = 'ask'::regnamespace
              ORDER BY 1",
            &[],
        )
        .unwrap();
    assert!(rows.len() > 20, "schema ask has only {} functions: is pg_ask installed?", rows.len());
    let doc = listed();
    let mut problems = Vec::new();
    let mut installed = Vec::new();
    for r in &rows {
        let name: String = r.get(0);
        let name = if name.starts_with("ask.") { name } else { format!("ask.{name}") };
        let (public, definer, config): (bool, bool, String) = (r.get(1), r.get(2), r.get(3));
        installed.push(name.clone());
        match doc.get(&name) {
            None => problems.push(format!("{name} is not in SECURITY.md's table")),
            Some(l) => {
                if l.public != public {
                    problems.push(format!("{name}: SECURITY.md says PUBLIC may execute it: {}, the database: {public}", l.public));
                }
                if l.definer != definer {
                    problems.push(format!("{name}: SECURITY.md says SECURITY DEFINER: {}, the database: {definer}", l.definer));
                }
            }
        }
        if definer && !config.contains("search_path=pg_catalog, pg_temp") {
            problems.push(format!("{name} is SECURITY DEFINER without a pinned search path ({config:?})"));
        }
    }
    for name in doc.keys() {
        if !installed.contains(name) {
            problems.push(format!("SECURITY.md names {name}, which schema ask does not have"));
        }
    }
    assert!(problems.is_empty(), "SECURITY.md and the installed functions differ:\n{}", problems.join("\n"));
}

/// The names the README's naming rule ("Names of the SQL surface") files under a kind: each
/// `` `ask.name()` `` or `` `ask.name` ``, and a family's `` `_verb` `` after its first member
/// (`ask.conversation_start()` / `_end` is `conversation_end`).
fn named_by_the_readme() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&path).expect("README.md at the repository's root");
    let section = text.split("### Names of the SQL surface").nth(1).expect("README has a section 'Names of the SQL surface'");
    let section = section.split("\n### ").next().unwrap_or_default();
    let mut out = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| ")) {
        // The names are the row's last cell (the rule's cell may quote a pattern).
        let names = row.trim_end().trim_end_matches('|').rsplit(" | ").next().unwrap_or_default();
        let mut family = String::new();
        for item in names.split('`').skip(1).step_by(2) {
            if let Some(name) = item.strip_prefix("ask.") {
                let name = name.trim_end_matches("()").to_string();
                family = name.rsplit_once('_').map_or(name.clone(), |(f, _)| f.to_string());
                out.push(name);
            } else if let Some(verb) = item.strip_prefix('_') {
                out.push(format!("{family}_{verb}"));
            }
        }
    }
    out
}

/// One list of the public functions: SECURITY.md's table (which the test above holds the
/// installed extension to). The README's naming rule files every one of them under a kind,
/// and names none that is not there.
#[test]
fn the_readme_files_every_public_function_under_its_naming_rule() {
    let public: Vec<String> = listed()
        .into_keys()
        .map(|signature| signature.trim_start_matches("ask.").split('(').next().unwrap_or_default().trim_matches('"').to_string())
        .filter(|name| !name.starts_with('_'))
        .collect();
    let readme = named_by_the_readme();
    let unfiled: Vec<&String> = public.iter().filter(|name| !readme.contains(name)).collect();
    assert!(unfiled.is_empty(), "public functions the README's naming rule does not file: {unfiled:?}");
    // What it names is a public function or a view (a view is not in SECURITY.md's function table).
    let views = [
        "usage",
        "eval_summary",
        "eval_report",
        "eval_knowledge",
        "shadow_status",
        "shadow_commands",
        "benchmark_results",
        "benchmark_progress",
        "benchmark_by_parameter",
        "benchmark_table",
    ];
    // The settings' row names a pattern, not an object.
    let patterns = ["<noun>", "max_<noun>"];
    let unknown: Vec<&String> = readme
        .iter()
        .filter(|name| !public.contains(name) && !views.contains(&name.as_str()) && !patterns.contains(&name.as_str()))
        .collect();
    assert!(unknown.is_empty(), "the README's naming rule names what is neither a public function nor a view: {unknown:?}");
}
