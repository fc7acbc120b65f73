//! A child attached to another role's table while pg_ask's read of it waits for the planner.
//! Another role's foreign table among a table's children is refused when the check finds it
//! (it would be read with the reader's user mapping); attached after the check, behind a lock
//! the reader's planner waits on, it is refused when the planner meets it, before the foreign
//! data wrapper plans or scans anything.

use pg_ask_it::{connect, connect_to, message};

#[test]
fn a_foreign_child_attached_while_the_read_waits_is_refused_before_it_is_planned() {
    let mut su = connect();
    su.batch_execute(
        "DROP SCHEMA IF EXISTS race_att CASCADE;
         DROP SERVER IF EXISTS race_srv CASCADE;
         DROP ROLE IF EXISTS race_att; DROP ROLE IF EXISTS race_vic;
         CREATE EXTENSION IF NOT EXISTS postgres_fdw;
         CREATE ROLE race_att LOGIN; CREATE ROLE race_vic LOGIN;
         CREATE SCHEMA race_att AUTHORIZATION race_att; GRANT USAGE ON SCHEMA race_att TO PUBLIC;
         CREATE SERVER race_srv FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '/nonexistent', dbname 'none');
         CREATE USER MAPPING FOR race_vic SERVER race_srv OPTIONS (user 'race_vic_remote');
         GRANT USAGE ON FOREIGN SERVER race_srv TO race_att;",
    )
    .unwrap();
    let mut att = connect_to("race_att", "postgres");
    att.batch_execute(
        "CREATE TABLE race_att.parent (s text); INSERT INTO race_att.parent VALUES ('mine');
         CREATE TABLE race_att.c1 () INHERITS (race_att.parent);
         CREATE FOREIGN TABLE race_att.fchild (s text) SERVER race_srv OPTIONS (table_name 'secret');
         GRANT SELECT ON race_att.parent, race_att.c1, race_att.fchild TO PUBLIC;",
    )
    .unwrap();
    // Before: the reader's read of the parent runs (no foreign child yet).
    let mut vic = connect_to("race_vic", "postgres");
    let rows: i64 = vic.query_one("SELECT count(*) FROM ask.query('SELECT s FROM race_att.parent')", &[]).unwrap().get(0);
    assert_eq!(rows, 1);
    // The attacker holds its intermediate child: the reader's planner waits on it, after
    // every check of the statement has passed.
    att.batch_execute("BEGIN; LOCK TABLE race_att.c1 IN ACCESS EXCLUSIVE MODE").unwrap();
    let reader =
        std::thread::spawn(move || vic.query_one("SELECT count(*) FROM ask.query('SELECT s FROM race_att.parent')", &[]).map(|_| ()));
    let mut waited = false;
    for _ in 0..200 {
        let waiting: i64 =
            su.query_one("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'race_att.c1'::regclass", &[]).unwrap().get(0);
        if waiting > 0 {
            waited = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(waited, "the reader's statement never waited on the attacker's lock");
    att.batch_execute("ALTER FOREIGN TABLE race_att.fchild INHERIT race_att.c1; COMMIT").unwrap();
    let e = reader.join().unwrap().expect_err("the foreign child attached meanwhile was planned and read");
    let said = message(&e);
    assert!(said.contains("race_att.fchild") && said.contains("check did not see"), "BROKE: {said}");
    // Asked again, the check itself finds the foreign child.
    let mut vic = connect_to("race_vic", "postgres");
    let e = vic.query_one("SELECT count(*) FROM ask.query('SELECT s FROM race_att.parent')", &[]).unwrap_err();
    assert!(message(&e).contains("user mapping"), "{}", message(&e));
    drop(att);
    drop(vic);
    su.batch_execute("DROP SCHEMA race_att CASCADE; DROP SERVER race_srv CASCADE; DROP ROLE race_att; DROP ROLE race_vic;").unwrap();
}
