//! In-backend tests of whose shadow replays, workloads and benchmark runs are: the role's that
//! made them, by OID. Another role sees none of them and changes none; a renamed role keeps
//! them; a role created with a dropped role's name neither sees nor extends them.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Script};
    use pgrx::prelude::*;

    use crate::pg::testing::{error_of, llm, one};

    /// The replays and benchmark runs the current role sees.
    const SEEN: &str = "SELECT (SELECT count(*) FROM ask.shadow_replays) + (SELECT count(*) FROM ask.benchmark_runs)";
    const WORKLOAD: &str = r#"SELECT ask.load_workload('w_roles', '{"create_tables": ["CREATE TABLE t (id INT);"],
        "insert": ["INSERT INTO t (id) VALUES (1);"], "delete": [], "update": [], "select": {"count": ["SELECT count(*) FROM t;"]}}')"#;

    fn role(name: &str) {
        Spi::run(&format!(
            "CREATE ROLE {name}; DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO {name}', current_database()); END $$"
        ))
        .unwrap();
    }

    #[pg_test]
    fn replays_workloads_and_runs_are_kept_by_role_oid() {
        let _s = llm(Script::default().or_else(Reply::text("[[\"cherry\"]]")));
        Spi::run("CREATE TABLE public.fruits (id int PRIMARY KEY, name text)").unwrap();
        role("ask_sh_a");
        role("ask_sh_b");
        Spi::run("ALTER TABLE public.fruits OWNER TO ask_sh_a").unwrap();

        // Role a shadows its table, replays a query, loads a workload; a run of it is a's.
        Spi::run("SET ROLE ask_sh_a").unwrap();
        Spi::run("SELECT ask.shadow_enable('public.fruits')").unwrap();
        Spi::run("INSERT INTO public.fruits VALUES (1, 'cherry')").unwrap();
        Spi::run("SELECT score FROM ask.shadow_replay('SELECT name FROM public.fruits')").unwrap();
        Spi::run(WORKLOAD).unwrap();
        Spi::run("RESET ROLE").unwrap();
        let run: i64 = one("INSERT INTO ask.benchmark_runs (workload, length, insert_ratio, overlap, samples, encodings, promptings, seed,
                                             provider, model, base_url, started_by)
             VALUES ('w_roles', 1, 0.5, 0.5, 1, '{sql}', '{zero_shot}', 0, 'openai', 'm', 'http://127.0.0.1:9/v1', 'ask_sh_a')
             RETURNING id");
        let enabled_by = "SELECT enabled_by::text FROM ask.shadow_status";
        let loaded_by = "SELECT loaded_by::text FROM ask.workloads";
        assert_eq!(one::<String>(enabled_by), "ask_sh_a", "shown by name");
        assert_eq!(one::<String>(loaded_by), "ask_sh_a");
        Spi::run("SET ROLE ask_sh_a").unwrap();
        assert_eq!(one::<i64>(SEEN), 2);
        assert_eq!(one::<String>("SELECT role_name::text FROM ask.shadow_replays"), "ask_sh_a");

        // Role b sees none of it, and neither replaces the workload nor finishes the run.
        Spi::run("RESET ROLE; SET ROLE ask_sh_b").unwrap();
        assert_eq!(one::<i64>(SEEN), 0);
        let (code, msg, _) = error_of(WORKLOAD);
        assert_eq!(code, "42501", "{msg}");
        let (code, msg, _) = error_of(&format!("SELECT ask._benchmark_finish({run})"));
        assert_eq!(code, "42501", "{msg}");
        Spi::run("RESET ROLE").unwrap();

        // Renamed, role a keeps all of it, shown under its new name.
        Spi::run("ALTER ROLE ask_sh_a RENAME TO ask_sh_renamed").unwrap();
        assert_eq!(one::<String>(enabled_by), "ask_sh_renamed");
        Spi::run("SET ROLE ask_sh_renamed").unwrap();
        assert_eq!(one::<i64>(SEEN), 2, "the renamed role sees its replay and run");
        Spi::run(WORKLOAD).unwrap();
        Spi::run(&format!("SELECT ask._benchmark_finish({run})")).unwrap();
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one::<String>(loaded_by), "ask_sh_renamed");
        assert_eq!(one::<String>(&format!("SELECT status FROM ask.benchmark_runs WHERE id = {run}")), "done");

        // Dropped (its table handed to the superuser): the rows stay under its OID, a number.
        Spi::run("REASSIGN OWNED BY ask_sh_renamed TO CURRENT_USER; DROP OWNED BY ask_sh_renamed; DROP ROLE ask_sh_renamed").unwrap();
        for sql in
            [enabled_by, loaded_by, "SELECT role_name::text FROM ask.shadow_replays", "SELECT started_by::text FROM ask.benchmark_runs"]
        {
            let shown: String = one(sql);
            assert!(shown.chars().all(|c| c.is_ascii_digit()), "{sql}: {shown}");
        }

        // A new role with the old name sees none of it and changes none of it.
        role("ask_sh_renamed");
        Spi::run("GRANT SELECT ON public.fruits TO ask_sh_renamed; SET ROLE ask_sh_renamed").unwrap();
        assert_eq!(one::<i64>(SEEN), 0, "the new role with the old name sees nothing of the old one's");
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.shadow_status WHERE enabled_by::text = 'ask_sh_renamed'"), 0);
        let (code, msg, _) = error_of(WORKLOAD);
        assert_eq!(code, "42501", "{msg}");
        let (code, msg, _) = error_of(&format!("SELECT ask._benchmark_finish({run})"));
        assert_eq!(code, "42501", "{msg}");
        Spi::run("RESET ROLE").unwrap();
    }

    /// A snapshot of the rows already in a table reads the table as the caller (its owner),
    /// never as the extension's owner: planning the read runs the code the table's objects
    /// bring in (an extended statistic's and an index's expression, folded from constants). The
    /// owner's function records who ran it; no one but the owner may appear. And a temporary
    /// table is refused: its log would outlive it.
    #[pg_test]
    fn a_snapshot_reads_the_table_as_its_owner_and_never_as_the_extensions() {
        role("ask_sh_c");
        Spi::run("CREATE SCHEMA sh_c AUTHORIZATION ask_sh_c").unwrap();
        Spi::run("SET ROLE ask_sh_c").unwrap();
        Spi::run(
            "CREATE TABLE sh_c.seen (who text);
             CREATE FUNCTION sh_c.note() RETURNS int VOLATILE LANGUAGE plpgsql AS $$
               BEGIN INSERT INTO sh_c.seen VALUES (current_user); RETURN 0; END $$;
             CREATE FUNCTION sh_c.f(x int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN RETURN x + sh_c.note(); END $$;
             CREATE TABLE sh_c.t (a int PRIMARY KEY, b int);
             INSERT INTO sh_c.t SELECT g, g FROM generate_series(1, 2500) g;
             CREATE STATISTICS sh_c.st ON (a + sh_c.f(0)), b FROM sh_c.t;
             CREATE INDEX ON sh_c.t ((b + sh_c.f(0)));
             ANALYZE sh_c.t;
             DELETE FROM sh_c.seen;",
        )
        .unwrap();
        assert_eq!(one::<i64>("SELECT ask.shadow_enable('sh_c.t')"), 2500);
        Spi::run("CREATE TEMP TABLE scratch (id int)").unwrap();
        let (code, msg, _) = error_of("SELECT ask.shadow_enable('scratch')");
        assert_eq!(code, "42809", "{msg}");
        assert!(msg.contains("temporary"), "{msg}");
        Spi::run("RESET ROLE").unwrap();
        let ran_as: Vec<String> = Spi::connect(|c| {
            c.select("SELECT DISTINCT who FROM sh_c.seen ORDER BY 1", None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
        });
        assert!(ran_as.iter().all(|w| w == "ask_sh_c"), "BROKE: the table's code ran as {ran_as:?}");
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.shadow_log WHERE relid = 'sh_c.t'::regclass AND op = 'I'"), 2500);
        assert_eq!(one::<i64>("SELECT count(DISTINCT new_row->>'a') FROM ask.shadow_log WHERE relid = 'sh_c.t'::regclass"), 2500);
    }
}
