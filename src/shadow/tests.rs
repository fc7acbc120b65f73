//! In-backend tests of shadow tables: capture, the commands view, replay.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script};
    use pgrx::prelude::*;
    use pgrx::JsonB;
    use serde_json::json;

    use crate::pg::subxact::{self, OnSuccess};
    use crate::pg::testing::{error_of, llm, one};

    const FRUITS: &str = "
        CREATE TABLE public.fruits (id int PRIMARY KEY, name text NOT NULL, price numeric(6,2), picked date);
        CREATE TABLE public.notes (body text);";

    fn commands() -> Vec<(String, String)> {
        Spi::connect(|c| {
            c.select("SELECT command, sentence FROM ask.shadow_commands ORDER BY seq", None, &[])
                .unwrap()
                .map(|r| (r.get::<String>(1).unwrap().unwrap(), r.get::<String>(2).unwrap().unwrap()))
                .collect()
        })
    }

    #[pg_test]
    fn captures_inserts_updates_deletes_in_order_and_forgets_rolled_back_ones() {
        Spi::run(FRUITS).unwrap();
        let snap: i64 = one("SELECT ask.shadow_enable('public.fruits')");
        assert_eq!(snap, 0);
        Spi::run("INSERT INTO public.fruits VALUES (1, 'cherry', 1.30, '2023-01-01'), (2, 'apple', 0.5, NULL)").unwrap();
        Spi::run("UPDATE public.fruits SET price = 1.40 WHERE id = 1").unwrap();
        // A rolled-back statement leaves nothing in the log.
        let r = subxact::run(OnSuccess::RollBack, || Spi::run("INSERT INTO public.fruits VALUES (3, 'pear', 2, NULL)").unwrap());
        assert!(r.is_ok());
        let failed = subxact::run(OnSuccess::Release, || Spi::run("INSERT INTO public.fruits VALUES (1, 'dup', 1, NULL)").unwrap());
        assert!(failed.is_err());
        Spi::run("DELETE FROM public.fruits WHERE id = 2").unwrap();
        Spi::run("UPDATE public.fruits SET id = 10 WHERE id = 1").unwrap();

        let got = commands();
        let sql: Vec<&str> = got.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            sql,
            [
                "INSERT INTO public.fruits (id, name, picked, price) VALUES (1, 'cherry', '2023-01-01', 1.3);",
                "INSERT INTO public.fruits (id, name, picked, price) VALUES (2, 'apple', NULL, 0.5);",
                "UPDATE public.fruits SET price = 1.4 WHERE id = 1;",
                "DELETE FROM public.fruits WHERE id = 2;",
                "UPDATE public.fruits SET id = 10 WHERE id = 1;",
            ]
        );
        assert_eq!(got[2].1, "update the row of the public.fruits table with the id = 1 to have the price = 1.4.");
        // One transaction id for all of them (the test's transaction), increasing sequence.
        let xids: i64 = one("SELECT count(DISTINCT xid) FROM ask.shadow_log");
        assert_eq!(xids, 1);
        let status: i64 = one("SELECT entries FROM ask.shadow_status WHERE rel = 'public.fruits'::regclass");
        assert_eq!(status, 5);
    }

    #[pg_test]
    fn row_images_equal_to_jsonb_of_the_row() {
        Spi::run(
            "CREATE TABLE public.kinds (id int8 PRIMARY KEY, s int2, i int4, n numeric, f4 float4, f8 float8, b bool,
                 t text, v varchar(9), c char(4), u uuid, d date, ts timestamp, tz timestamptz, gone text);
             ALTER TABLE public.kinds DROP COLUMN gone;
             CREATE TABLE public.other (id int PRIMARY KEY, j jsonb, a int[], m money);",
        )
        .unwrap();
        Spi::run("SELECT ask.shadow_enable('public.kinds'); SELECT ask.shadow_enable('public.other')").unwrap();
        Spi::run(
            "INSERT INTO public.kinds VALUES
               (1, -3, 2147483647, 12345678901234567890.123456789, 1.5, 0.30000000000000004, true, 'it''s \"q\" é', 'var', 'ab',
                'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2023-01-05', '2023-01-05 10:11:12.5', '2023-01-05 10:11:12+02'),
               (2, NULL, NULL, 'NaN', 'Infinity', '-Infinity', false, '', NULL, NULL, NULL, 'infinity', NULL, NULL),
               (9223372036854775807, 0, 0, -0.000100, 'NaN', 1e300, NULL, repeat('x', 5000), 'x', 'abcd', NULL, NULL, NULL, NULL);
             INSERT INTO public.other VALUES (1, '{\"a\": [1, {\"b\": null}]}', '{1,2,NULL}', 12.5);
             UPDATE public.kinds SET n = n * 2, t = upper(t);",
        )
        .unwrap();
        // Each row's INSERT image with its UPDATE's changed columns laid over it is the row as
        // it is now (the same jsonb, and the same text: numbers keep their scale).
        let mismatches: i64 = one(
            "WITH rows AS (
                 SELECT relid, new_row->>'id' AS id,
                        new_row || coalesce((SELECT u.new_row FROM ask.shadow_log u
                                              WHERE u.op = 'U' AND u.relid = i.relid AND u.old_row->>'id' = i.new_row->>'id'), '{}') AS image
                   FROM ask.shadow_log i WHERE op = 'I')
             SELECT count(*) FROM rows l
               JOIN (SELECT 'public.kinds'::regclass::oid AS relid, id::text AS id, to_jsonb(k) AS j FROM public.kinds k
                     UNION ALL SELECT 'public.other'::regclass::oid, id::text, to_jsonb(o) FROM public.other o) r
                 ON r.relid = l.relid AND r.id = l.id
              WHERE l.image IS DISTINCT FROM r.j OR l.image::text IS DISTINCT FROM r.j::text",
        );
        assert_eq!(mismatches, 0);
        let checked: i64 = one("SELECT count(*) FROM ask.shadow_log WHERE op = 'I'");
        assert_eq!(checked, 4);
        // An UPDATE's new image holds only the columns that changed (n and t; the row with an
        // empty t and a NaN n changes neither, and then the whole row is kept); its old image
        // holds the primary key and the changed columns.
        let old_keys: Vec<String> = Spi::connect(|c| {
            c.select("SELECT string_agg(k, ',' ORDER BY k) FROM ask.shadow_log, jsonb_object_keys(old_row) k WHERE op = 'U' GROUP BY seq ORDER BY seq", None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
        });
        assert_eq!(old_keys, ["id,n,t", "id", "id,n,t"]);
        let keys: Vec<String> = Spi::connect(|c| {
            c.select("SELECT string_agg(k, ',' ORDER BY k) FROM ask.shadow_log, jsonb_object_keys(new_row) k WHERE op = 'U' GROUP BY seq ORDER BY seq", None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
        });
        assert_eq!(keys.len(), 3);
        assert_eq!(keys[0], "n,t");
        assert!(keys[1].split(',').count() == 14, "{}", keys[1]);
        assert_eq!(keys[2], "n,t");
    }

    #[pg_test]
    fn snapshot_truncate_disable_and_drop() {
        Spi::run(FRUITS).unwrap();
        Spi::run("INSERT INTO public.fruits VALUES (1, 'cherry', 1.3, NULL), (2, 'kiwi', 0.2, NULL)").unwrap();
        let snap: i64 = one("SELECT ask.shadow_enable('public.fruits')");
        assert_eq!(snap, 2);
        let complete: bool = one("SELECT complete FROM ask.shadow_status WHERE rel = 'public.fruits'::regclass");
        assert!(complete);
        // Enabling twice is harmless.
        let again: i64 = one("SELECT ask.shadow_enable('public.fruits')");
        assert_eq!(again, 0);
        Spi::run("TRUNCATE public.fruits").unwrap();
        let n: i64 = one("SELECT count(*) FROM ask.shadow_log");
        assert_eq!(n, 0);
        Spi::run("INSERT INTO public.fruits VALUES (5, 'fig', 3, NULL)").unwrap();
        let n: i64 = one("SELECT ask.shadow_disable('public.fruits')");
        assert_eq!(n, 1);
        Spi::run("INSERT INTO public.fruits VALUES (6, 'lime', 3, NULL)").unwrap();
        let n: i64 = one("SELECT count(*) FROM ask.shadow_log");
        assert_eq!(n, 0, "no capture after disable");
        let (state, msg, _) = error_of("SELECT ask.shadow_disable('public.fruits')");
        assert_eq!(state, "55000", "{msg}");

        // Without a snapshot, existing rows stay out of the log and the log is not complete.
        let snap: i64 = one("SELECT ask.shadow_enable('public.fruits', snapshot => false)");
        assert_eq!(snap, 0);
        let complete: bool = one("SELECT complete FROM ask.shadow_status WHERE rel = 'public.fruits'::regclass");
        assert!(!complete);
        Spi::run("DELETE FROM public.fruits WHERE id = 6").unwrap();
        Spi::run("DROP TABLE public.fruits").unwrap();
        let n: i64 = one("SELECT count(*) FROM ask.shadow_log");
        assert_eq!(n, 0, "a dropped table's log is forgotten");
        let n: i64 = one("SELECT count(*) FROM ask.shadow_tables");
        assert_eq!(n, 0);
    }

    #[pg_test]
    fn tables_without_key_views_and_other_owners() {
        Spi::run(FRUITS).unwrap();
        Spi::run("SELECT ask.shadow_enable('public.notes')").unwrap();
        Spi::run("INSERT INTO public.notes VALUES ('it''s ripe')").unwrap();
        Spi::run("UPDATE public.notes SET body = 'eaten'").unwrap();
        let sql: Vec<String> = commands().into_iter().map(|(s, _)| s).collect();
        assert_eq!(sql[1], "UPDATE public.notes SET body = 'eaten' WHERE body = 'it''s ripe';");

        // A partitioned table's changes are logged under the table itself.
        Spi::run(
            "CREATE TABLE public.sales (id int, region text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
                  CREATE TABLE public.sales_eu PARTITION OF public.sales FOR VALUES IN ('eu');
                  CREATE TABLE public.sales_us PARTITION OF public.sales FOR VALUES IN ('us');",
        )
        .unwrap();
        Spi::run("SELECT ask.shadow_enable('public.sales')").unwrap();
        Spi::run("INSERT INTO public.sales VALUES (1, 'eu'), (2, 'us')").unwrap();
        let n: i64 = one("SELECT count(*) FROM ask.shadow_commands WHERE rel = 'public.sales'::regclass");
        assert_eq!(n, 2);

        Spi::run("CREATE VIEW public.v AS SELECT * FROM public.fruits").unwrap();
        let (state, _, _) = error_of("SELECT ask.shadow_enable('public.v')");
        assert_eq!(state, "42809");
        Spi::run("CREATE ROLE ask_shadow_stranger").unwrap();
        Spi::run("GRANT USAGE ON SCHEMA ask TO ask_shadow_stranger").unwrap();
        Spi::run("SET LOCAL ROLE ask_shadow_stranger").unwrap();
        let (state, msg, _) = error_of("SELECT ask.shadow_enable('public.fruits')");
        assert_eq!(state, "42501", "{msg}");
        // Nor does the commands view show the log of tables the role cannot read.
        let n: i64 = one("SELECT count(*) FROM ask.shadow_commands");
        assert_eq!(n, 0);
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test]
    fn replay_scores_the_llm_against_the_real_answer() {
        Spi::run(FRUITS).unwrap();
        Spi::run("SELECT ask.shadow_enable('public.fruits')").unwrap();
        Spi::run("INSERT INTO public.fruits VALUES (1, 'cherry', 1.30, NULL), (2, 'apple', 0.50, NULL), (3, 'fig', 3, NULL)").unwrap();
        Spi::run("DELETE FROM public.fruits WHERE id = 3").unwrap();
        let q = "SELECT name FROM public.fruits ORDER BY price";
        let s = llm(Script::default()
            .rule(Rule::new(&["fig"], Reply::text("Executing...\n```\n[\"apple\", \"cherry\"]\n```")).last(&["ORDER BY price"]))
            .rule(Rule::new(&["fig"], Reply::text("Fail")).last(&["VALUES (1, 'x'"]))
            .or_else(Reply::text("[\"cherry\"]")));

        let (answer, truth, score): (JsonB, JsonB, f64) =
            Spi::get_three(&format!("SELECT llm_answer, true_answer, score FROM ask.shadow_replay('{q}')"))
                .map(|(a, t, s)| (a.unwrap(), t.unwrap(), s.unwrap()))
                .unwrap();
        assert_eq!(truth.0, json!([["apple"], ["cherry"]]));
        assert_eq!(answer.0, json!([["apple"], ["cherry"]]));
        assert_eq!(score, 1.0);

        // Few-shot: every captured change is a user turn answered "Succeed".
        let req = s.requests().last().unwrap().clone();
        let body = req.body;
        let msgs = body["messages"].as_array().unwrap();
        // system + 4 changes × (command, Succeed) + the query
        assert_eq!(msgs.len(), 1 + 8 + 1, "{body}");
        assert_eq!(msgs[1]["content"], "INSERT INTO public.fruits (id, name, picked, price) VALUES (1, 'cherry', NULL, 1.3);");
        assert_eq!(msgs[2]["content"], "Succeed");
        assert_eq!(msgs[7]["content"], "DELETE FROM public.fruits WHERE id = 3;");
        assert!(msgs[0]["content"].as_str().unwrap().contains(
            "CREATE TABLE public.fruits (id integer NOT NULL, name text NOT NULL, price numeric(6,2), picked date, PRIMARY KEY (id));"
        ));
        assert!(msgs[0]["content"].as_str().unwrap().contains("The tables are empty before the first command."));

        // A wrong answer scores below 1; zero-shot numbers the commands in one user turn.
        let score: f64 = one("SELECT score FROM ask.shadow_replay('SELECT name FROM public.fruits', prompting => 'zero_shot')");
        assert_eq!(score, 0.5);
        let body = s.requests().last().unwrap().body.clone();
        assert_eq!(body["messages"].as_array().unwrap().len(), 2);
        assert!(body["messages"][1]["content"].as_str().unwrap().starts_with("Commands, in order:\n1. INSERT"));

        // A modification: the truth comes from running it (rolled back): a duplicate key fails.
        let (answer, truth, score): (JsonB, JsonB, f64) = Spi::get_three(
            "SELECT llm_answer, true_answer, score FROM ask.shadow_replay('INSERT INTO public.fruits VALUES (1, ''x'', 1, NULL)', encoding => 'nl')",
        )
        .map(|(a, t, s)| (a.unwrap(), t.unwrap(), s.unwrap()))
        .unwrap();
        assert_eq!((answer.0, truth.0, score), (json!("Fail"), json!("Fail"), 1.0));
        let n: i64 = one("SELECT count(*) FROM public.fruits");
        assert_eq!(n, 2, "the replayed INSERT was rolled back");
        let body = s.requests().last().unwrap().body.clone();
        assert_eq!(
            body["messages"][1]["content"],
            "insert a row into the public.fruits table with the id = 1, the name = 'cherry', the picked = NULL, and the price = 1.3."
        );

        // last_n keeps only the newest changes, and then the tables are not said to start empty.
        let _ = one::<f64>("SELECT score FROM ask.shadow_replay('SELECT name FROM public.fruits', last_n => 1)");
        let body = s.requests().last().unwrap().body.clone();
        assert_eq!(body["messages"].as_array().unwrap().len(), 4);
        assert!(!body["messages"][0]["content"].as_str().unwrap().contains("empty before"));

        let n: i64 = one("SELECT count(*) FROM ask.shadow_replays WHERE score IS NOT NULL AND true_answer IS NOT NULL");
        assert_eq!(n, 4);
        let calls: i64 = one("SELECT count(*) FROM ask.llm_calls WHERE stage = 'shadow_replay'");
        assert_eq!(calls, 4);
    }

    #[pg_test]
    fn replay_refuses_what_it_cannot_replay() {
        Spi::run(FRUITS).unwrap();
        let _s = llm(Script::default().or_else(Reply::text("[]")));
        let (state, msg, hint) = error_of("SELECT * FROM ask.shadow_replay('SELECT * FROM public.fruits')");
        assert_eq!(state, "55000", "{msg}");
        assert!(hint.unwrap().contains("ask.shadow_enable"));
        let (state, _, _) = error_of("SELECT * FROM ask.shadow_replay('DROP TABLE public.fruits')");
        assert_eq!(state, "0A000");
        let (state, _, _) = error_of("SELECT * FROM ask.shadow_replay('SELECT 1', encoding => 'xml')");
        assert_eq!(state, "22023");
        let (state, _, _) = error_of("SELECT * FROM ask.shadow_replay('SELECT * FROM public.nope')");
        assert_eq!(state, "42P01");
    }
}
