//! Another role's foreign table attached under a table the reader uses while pg_ask's statement
//! waits on that role's lock. Among a table's children or partitions another role's foreign
//! table is refused when the check finds it (it would be read or written with the reader's user
//! mapping); attached after the check, behind a lock the reader's statement waits on, it is
//! refused when the planner meets it (a read), or cannot be attached before the check reads the
//! partitions a write's rows may go to (the executor routes them, past the planner).

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, connect_to, message, use_llm};

/// The roles of one race: `{p}_att` owns schema `{p}_att` and may use server `{p}_srv`, on
/// which `{p}_vic` has a user mapping (to nowhere: a foreign scan or insert that starts fails
/// with the wrapper's own error, which the tests tell from pg_ask's refusal).
struct Race {
    p: &'static str,
    su: postgres::Client,
}

impl Race {
    fn new(p: &'static str) -> Race {
        // The tests of this file run at once: one creates the wrapper's extension.
        static SETTING_UP: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = SETTING_UP.lock().unwrap_or_else(|e| e.into_inner());
        let mut su = connect();
        su.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {p}_att CASCADE; DROP SCHEMA IF EXISTS {p}_vic CASCADE;
             DROP SERVER IF EXISTS {p}_srv CASCADE;
             DROP ROLE IF EXISTS {p}_att; DROP ROLE IF EXISTS {p}_vic;
             CREATE EXTENSION IF NOT EXISTS postgres_fdw;
             CREATE ROLE {p}_att LOGIN; CREATE ROLE {p}_vic LOGIN;
             CREATE SCHEMA {p}_att AUTHORIZATION {p}_att; GRANT USAGE ON SCHEMA {p}_att TO PUBLIC;
             CREATE SCHEMA {p}_vic AUTHORIZATION {p}_vic; GRANT USAGE ON SCHEMA {p}_vic TO PUBLIC;
             CREATE SERVER {p}_srv FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '/nonexistent', dbname 'none');
             CREATE USER MAPPING FOR {p}_vic SERVER {p}_srv OPTIONS (user '{p}_vic_remote');
             GRANT USAGE ON FOREIGN SERVER {p}_srv TO {p}_att;"
        ))
        .unwrap();
        Race { p, su }
    }

    fn att(&self) -> postgres::Client {
        connect_to(&format!("{}_att", self.p), "postgres")
    }

    fn vic(&self) -> postgres::Client {
        connect_to(&format!("{}_vic", self.p), "postgres")
    }

    /// Waits until a statement waits for a lock on `table`.
    fn someone_waits_on(&mut self, table: &str) {
        for _ in 0..200 {
            let waiting: i64 = self
                .su
                .query_one(&format!("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = '{table}'::regclass"), &[])
                .unwrap()
                .get(0);
            if waiting > 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the reader's statement never waited on the attacker's lock on {table}");
    }

    fn drop_all(mut self) {
        let p = self.p;
        self.su
            .batch_execute(&format!(
                "DROP SCHEMA {p}_att CASCADE; DROP SCHEMA {p}_vic CASCADE; DROP SERVER {p}_srv CASCADE; DROP ROLE {p}_att; DROP ROLE {p}_vic;"
            ))
            .unwrap();
    }
}

/// The attacker's inheritance tree `{p}_att.parent` ← `c1`, and its foreign table `fchild`, not
/// attached yet.
fn inheritance_tree(att: &mut postgres::Client, p: &str) {
    att.batch_execute(&format!(
        "CREATE TABLE {p}_att.parent (s text); INSERT INTO {p}_att.parent VALUES ('mine');
         CREATE TABLE {p}_att.c1 () INHERITS ({p}_att.parent);
         CREATE FOREIGN TABLE {p}_att.fchild (s text) SERVER {p}_srv OPTIONS (table_name 'secret');
         GRANT SELECT ON {p}_att.parent, {p}_att.c1, {p}_att.fchild TO PUBLIC;"
    ))
    .unwrap();
}

/// The reader's `ask.query` over the attacker's parent, started while the attacker holds its
/// intermediate child, the foreign table attached meanwhile: refused when the planner meets it.
fn read_while_attached(race: &mut Race, mut vic: postgres::Client) {
    let p = race.p;
    let mut att = race.att();
    att.batch_execute(&format!("BEGIN; LOCK TABLE {p}_att.c1 IN ACCESS EXCLUSIVE MODE")).unwrap();
    let sql = format!("SELECT count(*) FROM ask.query('SELECT s FROM {p}_att.parent')");
    let reader = std::thread::spawn(move || vic.query_one(&sql, &[]).map(|_| ()));
    race.someone_waits_on(&format!("{p}_att.c1"));
    att.batch_execute(&format!("ALTER FOREIGN TABLE {p}_att.fchild INHERIT {p}_att.c1; COMMIT")).unwrap();
    let e = reader.join().unwrap().expect_err("the foreign child attached meanwhile was planned and read");
    let said = message(&e);
    assert!(said.contains(&format!("{p}_att.fchild")) && said.contains("check did not see"), "BROKE: {said}");
    // Asked again, the check itself finds the foreign child.
    let mut vic = race.vic();
    let e = vic.query_one(&format!("SELECT count(*) FROM ask.query('SELECT s FROM {p}_att.parent')"), &[]).unwrap_err();
    assert!(message(&e).contains("user mapping"), "{}", message(&e));
}

#[test]
fn a_foreign_child_attached_while_the_read_waits_is_refused_before_it_is_planned() {
    let mut race = Race::new("race");
    let mut att = race.att();
    inheritance_tree(&mut att, "race");
    // Before: the reader's read of the parent runs (no foreign child yet).
    let mut vic = race.vic();
    let rows: i64 = vic.query_one("SELECT count(*) FROM ask.query('SELECT s FROM race_att.parent')", &[]).unwrap().get(0);
    assert_eq!(rows, 1);
    read_while_attached(&mut race, vic);
    drop(att);
    race.drop_all();
}

/// The same race, with an error raised and caught while the statement is planned: the reader's
/// own function with an exception block, folded by the planner from the predicate of the
/// attacker's partial index on its parent. A query planned within the statement's planning
/// (the function's) fails and the function goes on; the statement's planning still holds the
/// children it expands to what its check saw.
#[test]
fn an_error_caught_while_the_read_is_planned_does_not_switch_the_planners_look_off() {
    let mut race = Race::new("racex");
    let mut vic = race.vic();
    vic.batch_execute(
        "CREATE FUNCTION racex_vic.is_int(t text) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $$
         BEGIN PERFORM t::int; RETURN true; EXCEPTION WHEN invalid_text_representation THEN RETURN false; END $$;",
    )
    .unwrap();
    drop(vic);
    let mut att = race.att();
    inheritance_tree(&mut att, "racex");
    att.batch_execute("CREATE INDEX ON racex_att.parent (s) WHERE NOT racex_vic.is_int('x')").unwrap();
    // A new session: the index's predicate is folded when its relation cache entry is built,
    // in the planning of the reader's statement.
    let vic = race.vic();
    read_while_attached(&mut race, vic);
    drop(att);
    race.drop_all();
}

/// An `ask.do()` step that inserts into the attacker's partitioned table, started while the
/// attacker holds an intermediate partition: the partition the row would be routed to (the
/// executor finds it, not the planner) is the attacker's foreign table attached meanwhile. The
/// step is refused before it runs, and the foreign data wrapper never starts (it would connect
/// with the writer's user mapping and run the remote side's triggers as the writer). `grant`:
/// how the attacker lets others write its table (on the table, or on a column only).
fn foreign_partition_attached_while_a_write_waits(p: &'static str, grant: &str) {
    let mut race = Race::new(p);
    let mut att = race.att();
    att.batch_execute(&format!(
        "CREATE TABLE {p}_att.pp (s text) PARTITION BY LIST (s);
         CREATE TABLE {p}_att.pp1 PARTITION OF {p}_att.pp FOR VALUES IN ('go', 'plain') PARTITION BY LIST (s);
         CREATE TABLE {p}_att.pp1a PARTITION OF {p}_att.pp1 FOR VALUES IN ('plain');
         CREATE FOREIGN TABLE {p}_att.fpart (s text) SERVER {p}_srv OPTIONS (table_name 'sink');
         GRANT SELECT ON {p}_att.pp, {p}_att.pp1, {p}_att.pp1a, {p}_att.fpart TO PUBLIC;
         GRANT {grant} ON {p}_att.pp, {p}_att.pp1, {p}_att.pp1a, {p}_att.fpart TO PUBLIC;"
    ))
    .unwrap();
    let llm = StandIn::start(
        Script::default()
            .rule(Rule::new(&["chain of SQL steps"], Reply::text(format!("1. INSERT INTO {p}_att.pp (s) VALUES ('go');"))))
            .or_else(Reply::text("done")),
    )
    .unwrap();
    let url = llm.url();
    let writer = || {
        let mut vic = race.vic();
        use_llm(&mut vic, &url);
        vic.batch_execute("SET ask.allow_writes = on; SET ask.cache = off").unwrap();
        vic
    };
    let write = |mut vic: postgres::Client| {
        vic.query_one("SELECT ask.do('put go into the attacker''s table')::text", &[]).map(|r| r.get::<_, String>(0))
    };
    // Before: nothing takes 'go'; the step fails on PostgreSQL's own error.
    let e = write(writer()).unwrap_err();
    assert!(message(&e).contains("no partition"), "{}", message(&e));
    // The race: the attacker holds pp1, the reader's step waits on it, the attacker attaches its
    // foreign table for 'go' and commits.
    let vic = writer();
    att.batch_execute(&format!("BEGIN; LOCK TABLE {p}_att.pp1 IN ACCESS EXCLUSIVE MODE")).unwrap();
    let waiting = std::thread::spawn(move || write(vic));
    race.someone_waits_on(&format!("{p}_att.pp1"));
    att.batch_execute(&format!("ALTER TABLE {p}_att.pp1 ATTACH PARTITION {p}_att.fpart FOR VALUES IN ('go'); COMMIT")).unwrap();
    let e = waiting.join().unwrap().expect_err("the step wrote into the partition attached meanwhile");
    let said = message(&e);
    // Refused by the check, which read the partitions once the attach had committed; the
    // wrapper would have failed to connect ("could not connect", "password is required").
    assert!(said.contains(&format!("{p}_att.fpart")) && said.contains("user mapping") && !said.contains("connect"), "BROKE: {said}");
    assert!(!said.contains("password"), "BROKE: the foreign data wrapper started: {said}");
    drop(att);
    drop(llm);
    race.drop_all();
}

#[test]
fn a_foreign_partition_attached_while_a_write_waits_receives_no_row() {
    foreign_partition_attached_while_a_write_waits("racew", "INSERT");
}

#[test]
fn a_foreign_partition_attached_while_a_write_with_column_privileges_waits_receives_no_row() {
    foreign_partition_attached_while_a_write_waits("racec", "INSERT (s), UPDATE (s)");
}

/// The reader's snapshot is older than the view it reads: another role replaced its view after
/// the reader's REPEATABLE READ transaction took its snapshot (as it could while `ask()` waits
/// for the LLM, or while the reader's statement waits on that role's lock). PostgreSQL expands
/// the view as committed now; pg_ask's check reads it as committed now too, not through the
/// reader's snapshot, and refuses what the new definition calls.
#[test]
fn a_view_replaced_after_the_readers_snapshot_is_checked_as_it_runs() {
    let race = Race::new("races");
    let mut att = race.att();
    let mut vic = race.vic();
    // The second read starts a function that is not an internal built-in (pgvector's input),
    // which the guard decides on with a read of its own: that read may not leave the guard's
    // later reads in the reader's snapshot.
    for read in ["SELECT q FROM races_att.v", "SELECT q, '[1]'::vector AS v FROM races_att.v"] {
        att.batch_execute("CREATE OR REPLACE VIEW races_att.v AS SELECT 'nothing'::text AS q; GRANT SELECT ON races_att.v TO PUBLIC;")
            .unwrap();
        vic.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1").unwrap();
        att.batch_execute("CREATE OR REPLACE VIEW races_att.v AS SELECT a.query AS q FROM pg_catalog.pg_stat_get_activity(NULL::int) a;")
            .unwrap();
        let r = vic.query(&format!("SELECT * FROM ask.query($q${read}$q$)"), &[]);
        let said = match r {
            Ok(rows) => panic!("BROKE {read}: the replaced view was read as checked through the old one: {} rows", rows.len()),
            Err(e) => message(&e),
        };
        assert!(said.contains("pg_stat_get_activity"), "{read}: {said}");
        vic.batch_execute("ROLLBACK").unwrap();
    }
    drop(att);
    drop(vic);
    race.drop_all();
}
