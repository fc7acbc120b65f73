//! pg_ask attacked by roles without privileges, findings 3 to 5 (see `privileges.rs`): what
//! pg_ask stores from tables with row-level security is read back only under the table's
//! privileges and policies as they are at reading time; ordinary roles create, comment and drop
//! their own (shadowed) tables with pg_ask installed, and an operator planted in a writable
//! schema never runs inside pg_ask as the superuser.

mod common;

use common::*;
use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, connect_to, use_llm};

// ---------------------------------------------------------------------------------------------
// 3. and 4. What pg_ask stores from tables with row-level security

/// The capture trigger attached by a role to a table of its own that nobody shadowed writes
/// nothing into the log (which every DROP in the database then searches).
#[test]
fn the_capture_trigger_writes_only_for_shadowed_tables() {
    let _s = shared();
    let mut su = connect();
    ensure_table_owner("pv_cap_owner");
    must(&mut su, "dropping the old table", "DROP TABLE IF EXISTS public.pv_cap");
    let mut o = connect_to("pv_cap_owner", "postgres");
    must(
        &mut o,
        "pv_cap_owner's table and its own capture trigger",
        "CREATE TABLE public.pv_cap (id int PRIMARY KEY, pad text);
         CREATE TRIGGER own_capture AFTER INSERT ON public.pv_cap FOR EACH ROW EXECUTE FUNCTION ask._shadow_capture();",
    );
    let oid: u32 = o.query_one("SELECT 'public.pv_cap'::regclass::oid", &[]).unwrap().get(0);
    match attempt(&mut o, "INSERT INTO public.pv_cap SELECT g, repeat('x', 100) FROM generate_series(1, 100) g") {
        Ok(_) => panic!("rows of an unshadowed table went through the capture trigger"),
        Err(f) => assert_eq!(f.code, "42501", "the capture trigger refuses an unshadowed table: {}", f.message),
    }
    let logged: i64 = su.query_one("SELECT count(*) FROM ask.shadow_log WHERE relid = $1", &[&oid]).unwrap().get(0);
    assert_eq!(logged, 0, "the log holds rows of a table nobody shadowed");
    must(&mut o, "dropping pv_cap", "DROP TABLE public.pv_cap");
}

/// A verified query over a table whose policies hide rows from a role is not shown to it: its
/// literals may come from the hidden rows.
#[test]
fn verified_queries_obey_row_level_security() {
    let _s = shared();
    let mut su = connect();
    ensure_table_owner("pv_vq_owner");
    ensure_role("pv_vq_reader");
    must(&mut su, "dropping the old table", "DROP TABLE IF EXISTS public.pv_vq");
    let mut o = connect_to("pv_vq_owner", "postgres");
    must(
        &mut o,
        "pv_vq_owner's table under a policy",
        "CREATE TABLE public.pv_vq (id int PRIMARY KEY, author text, body text);
         INSERT INTO public.pv_vq VALUES (1, 'pv_vq_owner', 'vq-hidden-literal'), (2, 'pv_vq_reader', 'seen');
         ALTER TABLE public.pv_vq ENABLE ROW LEVEL SECURITY;
         CREATE POLICY own ON public.pv_vq USING (author = current_user);
         GRANT SELECT ON public.pv_vq TO pv_vq_reader;",
    );
    must(
        &mut su,
        "a verified query naming a hidden row's value",
        "SELECT ask.add_verified('who wrote vq-hidden-literal?', $$SELECT author FROM public.pv_vq WHERE body = 'vq-hidden-literal'$$)",
    );
    let mut r = connect_to("pv_vq_reader", "postgres");
    let shown = visible(&mut r, "SELECT count(*) FROM ask.verified_queries WHERE sql LIKE '%vq-hidden-literal%'");
    assert_eq!(shown, 0, "a verified query shows pv_vq_reader a value its policy hides");
    let owner_sees = count(&mut o, "SELECT count(*) FROM ask.verified_queries WHERE sql LIKE '%vq-hidden-literal%'").unwrap();
    assert_eq!(owner_sees, 1, "the table's owner, whom no policy limits, sees the verified query");
    must(&mut su, "cleaning up", "DELETE FROM ask.verified_queries WHERE sql LIKE '%vq-hidden-literal%'; DROP TABLE public.pv_vq");
}

/// An ordinary role shadows its table with row-level security; a role the policy shows one
/// row sees no other row through the shadow log, its status, or a replay's prompt.
#[test]
fn the_shadow_log_obeys_row_level_security() {
    let llm = StandIn::start(Script::reply_always("[]")).unwrap();
    let _s = shared();
    let mut su = connect();
    ensure_table_owner("pv_sh_owner");
    ensure_role("pv_sh_reader");
    must(&mut su, "dropping an old pv_notes", "DROP TABLE IF EXISTS public.pv_notes");

    let mut owner = connect_to("pv_sh_owner", "postgres");
    must(
        &mut owner,
        "pv_sh_owner creating pv_notes",
        "CREATE TABLE public.pv_notes (id int PRIMARY KEY, author text, body text);
         ALTER TABLE public.pv_notes ENABLE ROW LEVEL SECURITY;
         CREATE POLICY pv_notes_own ON public.pv_notes USING (author = current_user);
         GRANT SELECT ON public.pv_notes TO pv_sh_reader;",
    );
    must(&mut owner, "pv_sh_owner shadowing its own table", "SELECT ask.shadow_enable('public.pv_notes')");
    must(
        &mut owner,
        "pv_sh_owner writing pv_notes",
        "INSERT INTO public.pv_notes VALUES (1, 'pv_sh_reader', 'visible body'), (2, 'pv_sh_owner', 'hidden body')",
    );

    let mut reader = connect_to("pv_sh_reader", "postgres");
    assert_eq!(count(&mut reader, "SELECT count(*) FROM public.pv_notes").unwrap(), 1, "the policy must show pv_sh_reader one row");
    for sql in ["SELECT c::text FROM ask.shadow_commands c", "SELECT s::text FROM ask.shadow_status s"] {
        match attempt(&mut reader, sql) {
            Ok(rows) => {
                let leaked: Vec<_> = rows.iter().filter(|r| r.contains("hidden body")).collect();
                assert!(leaked.is_empty(), "pv_sh_reader read a row the policy hides with {sql}: {leaked:?}");
            }
            Err(f) => assert_eq!(f.code, DENIED, "{sql}: {f}"),
        }
    }
    let log = must(
        &mut owner,
        "pv_sh_owner reading its log",
        "SELECT c::text FROM ask.shadow_commands c WHERE c.rel = 'public.pv_notes'::regclass",
    )
    .join("\n");
    assert!(log.contains("hidden body") && log.contains("visible body"), "the owner's log lacks rows: {log}");

    use_llm(&mut reader, &llm.url());
    let replay = attempt(&mut reader, "SELECT r::text FROM ask.shadow_replay('SELECT body FROM pv_notes') AS r");
    eprintln!("pv_sh_reader's replay: {replay:?}");
    let requests = llm.requests();
    let sent = prompts_with(&requests, "hidden body");
    assert!(sent.is_empty(), "pv_sh_reader's replay showed the LLM a row the policy hides: {:?}", sent[0].prompt);
    match &replay {
        Ok(rows) => assert!(rows.iter().all(|r| !r.contains("hidden body")), "the replay returned a hidden row: {rows:?}"),
        Err(f) => assert!(!f.message.contains("hidden body"), "the replay's error quotes a hidden row: {f}"),
    }
}

/// The value memory of a table is built before its owner turns row-level security on; a role
/// the policy shows one row then finds no value of the other rows through similar_values,
/// correct_sql or the prompts pg_ask sends for it. The owner, whom the policy does not bind,
/// still finds them.
#[test]
fn the_value_memory_obeys_row_level_security_enabled_later() {
    let llm = StandIn::start(
        Script::default()
            .rule(Rule::new(&["<schema>"], Reply::text(fenced("SELECT id, name FROM public.pv_people"))))
            .or_else(Reply::text("{}")),
    )
    .unwrap();
    let _s = shared();
    let mut su = connect();
    ensure_table_owner("pv_vm_owner");
    ensure_role("pv_vm_reader");
    must(&mut su, "dropping an old pv_people", "DROP TABLE IF EXISTS public.pv_people");

    let mut owner = connect_to("pv_vm_owner", "postgres");
    must(
        &mut owner,
        "pv_vm_owner creating pv_people",
        "CREATE TABLE public.pv_people (id int PRIMARY KEY, name text, author text);
         INSERT INTO public.pv_people VALUES (1, 'Zebulon Hidden', 'pv_vm_owner'), (2, 'Alice Visible', 'pv_vm_reader');",
    );
    must(&mut owner, "pv_vm_owner indexing pv_people's names", "SELECT ask.index_values('public.pv_people', ARRAY['name'])");
    must(
        &mut owner,
        "pv_vm_owner turning row-level security on",
        "GRANT SELECT ON public.pv_people TO pv_vm_reader;
         ALTER TABLE public.pv_people ENABLE ROW LEVEL SECURITY;
         CREATE POLICY pv_people_own ON public.pv_people USING (author = current_user);",
    );

    let mut reader = connect_to("pv_vm_reader", "postgres");
    assert_eq!(count(&mut reader, "SELECT count(*) FROM public.pv_people").unwrap(), 1, "the policy must show pv_vm_reader one row");
    const HIDDEN: &str = "Zebulon Hidden";
    let similar = attempt(&mut reader, "SELECT value FROM ask.similar_values('public.pv_people', 'name', 'zebulon hiden', 10)");
    match &similar {
        Ok(rows) => assert!(rows.iter().all(|v| v != HIDDEN), "similar_values showed pv_vm_reader a name the policy hides: {rows:?}"),
        Err(f) => assert_eq!(f.code, DENIED, "similar_values: {f}"),
    }
    let corrected =
        attempt(&mut reader, "SELECT ask.correct_sql($$SELECT id FROM pv_people WHERE name = 'zebulon hiden'$$, use_llm => false)");
    match &corrected {
        Ok(rows) => assert!(!rows.concat().contains(HIDDEN), "correct_sql (no LLM) wrote a hidden name into pv_vm_reader's SQL: {rows:?}"),
        Err(f) => assert!(!f.message.contains(HIDDEN), "correct_sql's error names a hidden value: {f}"),
    }
    use_llm(&mut reader, &llm.url());
    let with_llm = attempt(&mut reader, "SELECT ask.correct_sql($$SELECT id FROM pv_people WHERE name = 'zebulon hiden'$$)");
    match &with_llm {
        Ok(rows) => assert!(!rows.concat().contains(HIDDEN), "correct_sql wrote a hidden name into pv_vm_reader's SQL: {rows:?}"),
        Err(f) => assert!(!f.message.contains(HIDDEN), "correct_sql's error names a hidden value: {f}"),
    }
    // The schema pg_ask describes to the reader's LLM may list a column's values.
    let asked = attempt(&mut reader, "SELECT ask.sql('which people are there?')");
    eprintln!("pv_vm_reader: similar {similar:?}, corrected {corrected:?} / {with_llm:?}, asked {asked:?}");
    let requests = llm.requests();
    let sent = prompts_with(&requests, HIDDEN);
    assert!(sent.is_empty(), "pg_ask showed pv_vm_reader's LLM a name the policy hides: {:?}", sent[0].prompt);

    let found =
        must(&mut owner, "the owner's lookup", "SELECT value FROM ask.similar_values('public.pv_people', 'name', 'zebulon hiden', 10)");
    assert!(found.iter().any(|v| v == HIDDEN), "the owner no longer finds its own value: {found:?}");
}

// ---------------------------------------------------------------------------------------------
// 5. DDL with pg_ask installed

/// An ordinary role creates, comments on and drops its own tables, a shadowed one too, and
/// the shadow log of the dropped table goes with it.
#[test]
fn an_ordinary_role_drops_its_tables() {
    let _s = shared();
    let mut su = connect();
    ensure_table_owner("pv_dr_owner");
    must(&mut su, "dropping old tables", "DROP TABLE IF EXISTS public.pv_dr_plain, public.pv_shadowed, public.pv_dr_commented");

    let mut o = connect_to("pv_dr_owner", "postgres");
    must(&mut o, "pv_dr_owner creating a table", "CREATE TABLE public.pv_dr_plain (id int)");
    must(&mut o, "pv_dr_owner adding a column", "ALTER TABLE public.pv_dr_plain ADD COLUMN name text");
    must(&mut o, "pv_dr_owner renaming a column", "ALTER TABLE public.pv_dr_plain RENAME COLUMN name TO label");
    must(&mut o, "pv_dr_owner indexing its values", "SELECT ask.index_values('public.pv_dr_plain')");
    must(&mut o, "pv_dr_owner dropping a column", "ALTER TABLE public.pv_dr_plain DROP COLUMN label");
    must(&mut o, "pv_dr_owner dropping its table", "DROP TABLE public.pv_dr_plain");

    must(&mut o, "pv_dr_owner creating pv_shadowed", "CREATE TABLE public.pv_shadowed (id int PRIMARY KEY)");
    must(&mut o, "pv_dr_owner shadowing pv_shadowed", "SELECT ask.shadow_enable('public.pv_shadowed')");
    must(&mut o, "pv_dr_owner writing pv_shadowed", "INSERT INTO public.pv_shadowed VALUES (1)");
    let oid: u32 = o.query_one("SELECT 'public.pv_shadowed'::regclass::oid", &[]).unwrap().get(0);
    let logged: i64 = su.query_one("SELECT count(*) FROM ask.shadow_log WHERE relid = $1", &[&oid]).unwrap().get(0);
    assert!(logged > 0, "pv_shadowed's INSERT was not captured");
    must(&mut o, "pv_dr_owner dropping its shadowed table", "DROP TABLE public.pv_shadowed");
    let left: i64 = su.query_one("SELECT count(*) FROM ask.shadow_log WHERE relid = $1", &[&oid]).unwrap().get(0);
    assert_eq!(left, 0, "the shadow log of the dropped pv_shadowed was kept");

    must(&mut o, "pv_dr_owner creating pv_dr_commented", "CREATE TABLE public.pv_dr_commented (id int)");
    must(&mut o, "pv_dr_owner commenting on its table", "COMMENT ON TABLE public.pv_dr_commented IS 'pv: a comment'");
    must(&mut o, "pv_dr_owner dropping pv_dr_commented", "DROP TABLE public.pv_dr_commented");
}

/// The objects of the operator trap, removed in this order (the operator before its function;
/// the role's superuser attribute taken back last, whatever ran before).
const TRAP_CLEANUP: &[&str] = &[
    "DROP OPERATOR IF EXISTS public.= (oid, regclass)",
    "DROP FUNCTION IF EXISTS public.pv_evil_eq(oid, regclass)",
    "REVOKE CREATE ON SCHEMA public FROM pv_evil",
    "ALTER ROLE pv_evil NOSUPERUSER",
];

/// Removes the trap when dropped, even when an assertion failed: other tests share the cluster.
struct Trap;

impl Trap {
    fn clean() {
        let mut c = connect();
        for sql in TRAP_CLEANUP {
            let _ = c.batch_execute(sql);
        }
    }
}

impl Drop for Trap {
    fn drop(&mut self) {
        Trap::clean();
    }
}

/// A role that may create objects in schema public plants an `=` operator for (oid, regclass),
/// an exact match where `oid = regclass` would otherwise take the built-in one, whose function
/// makes the role a superuser when it runs as one (CVE-2018-1058). The superuser then uses
/// pg_ask with the default search_path: DDL (pg_ask's event triggers), the value memory and
/// its trigger, shadowing, and a question. The role is no superuser afterwards.
#[test]
fn an_operator_in_a_writable_schema_does_not_run_as_the_superuser() {
    let llm = StandIn::start(Script::reply_always(&fenced("SELECT count(*) AS n FROM public.pv_trap_x"))).unwrap();
    let _x = exclusive();
    let mut su = connect();
    Trap::clean();
    ensure_role("pv_evil");
    must(&mut su, "dropping old tables", "DROP TABLE IF EXISTS public.pv_trap_x, public.pv_trap_gone");
    let _trap = Trap;
    setup_sql("GRANT CREATE ON SCHEMA public TO pv_evil");

    let mut evil = connect_to("pv_evil", "postgres");
    must(
        &mut evil,
        "pv_evil planting its operator",
        "CREATE FUNCTION public.pv_evil_eq(oid, regclass) RETURNS boolean LANGUAGE plpgsql AS $$
         BEGIN
             BEGIN
                 EXECUTE 'ALTER ROLE pv_evil SUPERUSER';
             EXCEPTION WHEN OTHERS THEN NULL;
             END;
             RETURN $1 OPERATOR(pg_catalog.=) $2::oid;
         END $$;
         CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.pv_evil_eq);",
    );
    let planted = count(
        &mut evil,
        "SELECT count(*) FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) o.oprnamespace
          WHERE n.nspname OPERATOR(pg_catalog.=) 'public' AND o.oprname OPERATOR(pg_catalog.=) '='
            AND o.oprleft OPERATOR(pg_catalog.=) 'pg_catalog.oid'::pg_catalog.regtype
            AND o.oprright OPERATOR(pg_catalog.=) 'pg_catalog.regclass'::pg_catalog.regtype",
    )
    .unwrap();
    assert_eq!(planted, 1, "the trap is not in place");

    // The superuser, default search_path ("$user", public).
    let mut admin = connect();
    use_llm(&mut admin, &llm.url());
    let steps: Vec<(&str, Outcome)> = [
        ("CREATE TABLE", "CREATE TABLE public.pv_trap_x (id int PRIMARY KEY, name text)"),
        ("INSERT", "INSERT INTO public.pv_trap_x VALUES (1, 'one'), (2, 'two')"),
        ("COMMENT ON TABLE", "COMMENT ON TABLE public.pv_trap_x IS 'pv: rows of the trap test'"),
        ("index_values", "SELECT ask.index_values('public.pv_trap_x')"),
        ("keep_values_current", "SELECT ask.keep_values_current('public.pv_trap_x')"),
        ("INSERT with the value trigger", "INSERT INTO public.pv_trap_x VALUES (3, 'three')"),
        ("ask.sql", "SELECT ask.sql('how many rows in pv_trap_x?')"),
        ("CREATE TABLE to drop", "CREATE TABLE public.pv_trap_gone (id int PRIMARY KEY)"),
        ("shadow_enable", "SELECT ask.shadow_enable('public.pv_trap_gone')"),
        ("DROP TABLE", "DROP TABLE public.pv_trap_gone"),
    ]
    .into_iter()
    .map(|(what, sql)| (what, attempt(&mut admin, sql)))
    .collect();
    drop(admin);

    let rolsuper: bool =
        su.query_one("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'pv_evil'", &[]).unwrap().get(0);
    assert!(
        !rolsuper,
        "pv_evil's operator ran as the superuser inside pg_ask and made pv_evil a superuser; steps: {:#?}",
        steps.iter().map(|(w, o)| format!("{w}: {o:?}")).collect::<Vec<_>>()
    );
    for (what, outcome) in &steps {
        assert!(outcome.is_ok(), "with pv_evil's operator in public, the superuser's {what} failed: {outcome:?}");
    }
    let sql = &steps.iter().find(|(w, _)| *w == "ask.sql").unwrap().1;
    assert!(sql.as_ref().unwrap().concat().contains("pv_trap_x"), "ask.sql returned {sql:?}");
}
