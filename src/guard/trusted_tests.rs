//! In-backend tests of what a statement's objects bring in: a role (`ask_att`) that owns
//! objects in the path of another role's query — a range type whose `subtype_diff` writes when
//! it may, an index expression and a domain CHECK that read the caller's secret and take an
//! advisory lock keyed by it, a composite type over such a domain read from a literal — and
//! the victims: a superuser verifying a query, a role without privileges of its own (`ask_vic`)
//! asking through `ask.query()`, `ask.sql()` and `ask.do()`. Nothing of the attacker's runs;
//! what the statement's objects legitimately bring in (a type's output function, information
//! schema's SQL functions, the caller's own function) still does.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::Script;
    use pgrx::prelude::*;

    use crate::pg::testing::*;

    const LOCKS: &str = "SELECT count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid()";

    /// The attacker's schema, as `ask_att`; the victim's secret table, as `ask_vic`.
    fn hostile_objects() {
        Spi::run(
            "CREATE ROLE ask_att; CREATE ROLE ask_vic;
             CREATE SCHEMA att AUTHORIZATION ask_att; GRANT USAGE ON SCHEMA att TO PUBLIC;
             CREATE SCHEMA vic AUTHORIZATION ask_vic;
             SET ROLE ask_vic;
             CREATE TABLE vic.secret (s text); INSERT INTO vic.secret VALUES ('hunter2');
             RESET ROLE; SET ROLE ask_att;
             CREATE TABLE att.loot (who text, what text); GRANT INSERT ON att.loot TO PUBLIC;
             -- Runs as whoever reaches it: writes when the transaction lets it, and makes its
             -- owner a superuser when the one who reaches it is one.
             CREATE FUNCTION att.grab() RETURNS void LANGUAGE plpgsql VOLATILE AS $$
             BEGIN
                 INSERT INTO att.loot VALUES (current_user, 'grab');
                 BEGIN EXECUTE 'ALTER ROLE ask_att SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
             END $$;
             CREATE FUNCTION att.diff(a float8, b float8) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$
             BEGIN
                 IF current_user <> 'ask_att' THEN
                     IF current_setting('transaction_read_only') = 'off' THEN PERFORM att.grab(); END IF;
                     PERFORM pg_advisory_lock(7);
                 END IF;
                 RETURN a - b;
             END $$;
             -- Reads the caller's secret and tells it through a session advisory lock.
             CREATE FUNCTION att.peek() RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
             DECLARE v text;
             BEGIN
                 IF current_user <> 'ask_att' THEN
                     SELECT s INTO v FROM vic.secret LIMIT 1;
                     PERFORM pg_advisory_lock(hashtext(coalesce(v, 'none')));
                 END IF;
                 RETURN 0;
             EXCEPTION WHEN OTHERS THEN RETURN 0;
             END $$;
             CREATE FUNCTION att.peek_ok(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
             BEGIN RETURN att.peek() = 0; END $$;
             CREATE TYPE att.rng AS RANGE (subtype = float8, subtype_diff = att.diff);
             CREATE TABLE att.events (id int, r att.rng);
             INSERT INTO att.events SELECT g, att.rng(g, g + 2) FROM generate_series(1, 200) g;
             ANALYZE att.events;
             CREATE TABLE att.shared (x int);
             INSERT INTO att.shared SELECT g FROM generate_series(1, 50) g;
             CREATE INDEX shared_peek ON att.shared ((x + att.peek()));
             CREATE DOMAIN att.dom AS int CHECK (att.peek_ok(VALUE));
             CREATE TYPE att.comp AS (v att.dom);
             GRANT SELECT, INSERT ON att.events, att.shared TO PUBLIC;
             RESET ROLE;",
        )
        .unwrap();
    }

    fn no_effect_of_the_attacker() {
        assert_eq!(one::<i64>(LOCKS), 0, "an advisory lock outlived the guard");
        assert!(!one::<bool>("SELECT rolsuper FROM pg_roles WHERE rolname = 'ask_att'"), "the attacker became superuser");
        assert_eq!(one::<i64>("SELECT count(*) FROM att.loot WHERE who <> 'ask_att'"), 0, "the attacker's writer ran as another role");
    }

    /// Critical: a superuser's ask.add_verified() of a query over the attacker's table found
    /// the query's relations with EXPLAIN in its own read-write transaction, where the range
    /// type's subtype_diff (called by the planner's selectivity estimate) made its owner a
    /// superuser. Now nothing of the statement is planned outside the guard, and the guard
    /// refuses the range type's function before it plans.
    #[pg_test]
    fn verifying_a_query_runs_no_code_of_the_table_s_owner() {
        hostile_objects();
        let (code, msg, _) = error_of(
            "SELECT ask.add_verified('how many events overlap the first days?', 'SELECT count(*) FROM att.events WHERE r && ''[1,5)''::att.rng')",
        );
        assert_eq!(code, "2F003", "{msg}");
        assert!(msg.contains("subtype_diff") && msg.contains("att.diff"), "the refusal names the object and its function: {msg}");
        no_effect_of_the_attacker();
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.verified_queries"), 0);
        // The same query through a suite.
        Spi::run(
            r#"SELECT ask.load_suite('hostile', '[{"question": "events?", "gold_sql": "SELECT count(*) FROM att.events WHERE r && ''[1,5)''::att.rng"}]')"#,
        )
        .unwrap();
        assert_eq!(one::<i32>("SELECT ask.verify_suite('hostile')"), 0);
        no_effect_of_the_attacker();
        // Any query over the table is refused (its column's type brings the function in), but
        // a query over the attacker's plain table is verified, and its tables found by the
        // guard's own analysis (a view over it counts both).
        let (code, _, _) = error_of("SELECT ask.add_verified('how many events?', 'SELECT count(id) FROM att.events')");
        assert_eq!(code, "2F003");
        Spi::run(
            "SET ROLE ask_att; CREATE TABLE att.plain (id int); INSERT INTO att.plain VALUES (1), (2);
             GRANT SELECT ON att.plain TO PUBLIC; RESET ROLE;
             CREATE VIEW public.plain_ids AS SELECT id FROM att.plain WHERE id > 0",
        )
        .unwrap();
        let id: i64 = one("SELECT ask.add_verified('how many plain ids?', 'SELECT count(*) FROM public.plain_ids')");
        let tables: String = one(&format!("SELECT tables::text FROM ask.verified_queries WHERE id = {id}"));
        assert!(tables.contains("plain_ids") && tables.contains("att.plain"), "{tables}");
        no_effect_of_the_attacker();
    }

    /// An index expression constant-folded by the planner, a domain CHECK reached through a
    /// cast, and a composite over that domain read from a literal during parse analysis: each
    /// would read the victim's secret as the victim and leave a session advisory lock keyed by
    /// it. Each is refused, the object named where the guard finds it before planning.
    #[pg_test]
    fn code_an_object_brings_in_is_held_to_the_allow_list() {
        hostile_objects();
        Spi::run("SET ROLE ask_vic").unwrap();
        for (sql, names) in [
            ("SELECT count(*) FROM att.shared WHERE x = 1", &["the index", "att.peek"][..]),
            ("SELECT 1::att.dom AS v", &["domain att.dom", "att.peek_ok"][..]),
            ("SELECT ('(5)'::att.comp).v", &["att.peek_ok"][..]),
            ("SELECT count(*) FROM att.events WHERE r && '[1,5)'::att.rng", &["subtype_diff", "att.diff"][..]),
        ] {
            let (code, msg, _) = error_of(&format!("SELECT * FROM ask.query($q${sql}$q$)"));
            assert!(code == "2F003" || code == "42501", "{sql}: {code} {msg}");
            for name in names {
                assert!(msg.contains(name), "{sql}: the refusal names {name}: {msg}");
            }
            assert_eq!(one::<i64>(LOCKS), 0, "{sql} left an advisory lock");
        }
        Spi::run("RESET ROLE").unwrap();
        no_effect_of_the_attacker();
    }

    /// SQL a model writes goes the same way: a read through ask.sql(), a write through ask.do().
    #[pg_test]
    fn generated_reads_and_writes_run_no_code_of_another_role() {
        hostile_objects();
        Spi::run("GRANT USAGE ON SCHEMA public TO ask_vic; SET ROLE ask_vic; SET ask.max_attempts = 1").unwrap();
        let s = llm(Script::reply_always("SELECT count(*) FROM att.shared WHERE x = 1"));
        let (code, msg, _) = error_of("SELECT ask.sql('how many shared rows are there?')");
        assert!(code == "2F003" || code == "42501", "{code} {msg}");
        assert!(msg.contains("att.peek"), "{msg}");
        assert_eq!(one::<i64>(LOCKS), 0);
        s.set_script(Script::reply_always("Step 1: add the row\n```sql\nINSERT INTO att.shared VALUES (99);\n```"));
        Spi::run("SET ask.allow_writes = on").unwrap();
        let _ = error_report("SELECT ask.do('add a shared row')");
        assert_eq!(one::<i64>(LOCKS), 0, "the index expression ran on the write");
        assert_eq!(one::<i64>("SELECT count(*) FROM att.shared WHERE x = 99"), 0, "the write went through");
        Spi::run("RESET ask.allow_writes; RESET ROLE").unwrap();
        no_effect_of_the_attacker();
    }

    /// What objects legitimately bring in still runs: a type's output function (pgvector's),
    /// information_schema's SQL functions, and the caller's own function in its own index.
    #[pg_test]
    fn trusted_code_an_object_brings_in_still_runs() {
        Spi::run(
            "CREATE ROLE ask_own; CREATE SCHEMA own AUTHORIZATION ask_own; SET ROLE ask_own;
             CREATE FUNCTION own.twice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
             CREATE TABLE own.t (x int); INSERT INTO own.t SELECT g FROM generate_series(1, 20) g;
             CREATE INDEX ON own.t ((own.twice(x)));
             RESET ROLE;",
        )
        .unwrap();
        let vector = one::<String>(
            "SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
        );
        Spi::run(&format!(
            "CREATE TABLE own.vecs (v {vector}.vector(3)); INSERT INTO own.vecs VALUES ('[1,2,3]'); GRANT SELECT ON own.vecs TO ask_own; ALTER TABLE own.vecs OWNER TO ask_own"
        ))
        .unwrap();
        Spi::run("SET ROLE ask_own").unwrap();
        let v: pgrx::JsonB = one("SELECT q FROM ask.query('SELECT v FROM own.vecs') q");
        assert_eq!(v.0["v"], "[1,2,3]");
        let n: i64 = one("SELECT count(*) FROM ask.query('SELECT x FROM own.t WHERE x > 3')");
        assert_eq!(n, 17);
        let n: i64 = one(
            "SELECT count(*) FROM ask.query('SELECT column_name, character_maximum_length FROM information_schema.columns WHERE table_schema = ''own''')",
        );
        assert!(n >= 2, "information_schema answers ({n} columns)");
        Spi::run("RESET ROLE").unwrap();
    }
}
