//! In-backend tests of `ask()`'s selection from the stored lexical index (`cargo pgrx test`):
//! what the index holds, what a question reads, and who sees what, as a role without
//! privileges, a table owner who is not superuser, with column grants and row-level security.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script};
    use pgrx::prelude::*;
    use pgrx::JsonB;

    use crate::pg::testing::{error_of, llm, one, select_stage};

    /// Two schemas of the memory and one it does not describe; a role that owns a table in one
    /// of them without being superuser, and a reader with grants on a few tables and columns.
    const SETUP: &str = "
        CREATE ROLE ask_ix_owner NOLOGIN;
        CREATE ROLE ask_ix_reader NOLOGIN;
        CREATE SCHEMA music;
        CREATE TABLE music.singer (id int PRIMARY KEY, name text NOT NULL, country text);
        COMMENT ON TABLE music.singer IS 'Singers who performed';
        CREATE TABLE music.concert (id int PRIMARY KEY, singer_id int REFERENCES music.singer(id), venue text, year int);
        CREATE SCHEMA staff;
        CREATE TABLE staff.employee (id int PRIMARY KEY, name text NOT NULL, salary numeric);
        CREATE TABLE staff.payroll_secret (id int PRIMARY KEY, bonus numeric);
        COMMENT ON TABLE staff.payroll_secret IS 'Bonus payments of employees';
        CREATE SCHEMA garden;
        CREATE TABLE garden.plant (id int PRIMARY KEY, species text);
        GRANT USAGE ON SCHEMA music, staff, garden TO ask_ix_owner, ask_ix_reader;
        GRANT CREATE ON SCHEMA music TO ask_ix_owner;
        GRANT USAGE ON SCHEMA ask TO ask_ix_owner, ask_ix_reader;
        GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ask TO ask_ix_owner, ask_ix_reader;
        GRANT SELECT ON music.singer, music.concert TO ask_ix_reader;
        GRANT SELECT (id, name) ON staff.employee TO ask_ix_reader;
        INSERT INTO music.singer VALUES (1, 'Ada', 'France');
        SET ask.embedding_provider = 'off';";

    fn built() {
        Spi::run(SETUP).unwrap();
        let n: i64 = one("SELECT ask.index_schema(ARRAY['music', 'staff'])");
        assert_eq!(n, 4);
    }

    fn tables(select: &serde_json::Value) -> Vec<String> {
        select["tables"].as_array().unwrap().iter().map(|t| t["table"].as_str().unwrap().to_string()).collect()
    }

    /// The definition of the memory's vector index for `d` dimensions, if it has one.
    fn vector_index(d: usize) -> Option<String> {
        Spi::get_one::<String>(&format!("SELECT pg_get_indexdef(to_regclass('ask.schema_memory_tables_hnsw_{d}'))")).ok().flatten()
    }

    #[pg_test]
    fn the_nearest_tables_are_read_through_a_vector_index_of_their_dimension() {
        Spi::run(SETUP).unwrap();
        // 384 dimensions (the local embedder's) have their index from the install.
        let embedder = crate::pg::testing::standin_embeddings(384);
        let n: i64 = one("SELECT ask.index_schema(ARRAY['music', 'staff'])");
        assert_eq!(n, 4);
        // A question's read names the index's expression and predicate, so PostgreSQL reads it.
        Spi::run(&format!("PREPARE near (text, text, text, oid) AS {}", crate::selection::nearest::nearest_sql(384, 20))).unwrap();
        Spi::run("SET LOCAL enable_seqscan = off").unwrap();
        let question = format!("[{}]", vec!["0.25"; 384].join(","));
        let plan: Vec<String> = Spi::connect(|c| {
            c.select(
                &format!("EXPLAIN (COSTS OFF) EXECUTE near ('{question}', 'openai', 'pseudo-384', 'ask_ix_reader'::regrole)"),
                None,
                &[],
            )
            .unwrap()
            .map(|r| r.get::<String>(1).unwrap().unwrap())
            .collect()
        });
        assert!(plan.iter().any(|l| l.contains("Index Scan using schema_memory_tables_hnsw_384")), "{plan:?}");
        Spi::run("RESET enable_seqscan; DEALLOCATE near").unwrap();
        // A reader's question takes the nearest as candidates, and still only what it may read.
        Spi::run("SET ROLE ask_ix_reader").unwrap();
        let select = select_stage("which singers performed in concerts?");
        assert_eq!(select["index"], true, "{select}");
        assert_eq!(select["embedding"], true, "{select}");
        let picked = tables(&select);
        assert!(picked.contains(&"music.singer".to_string()), "{select}");
        assert!(!picked.iter().any(|t| t == "staff.payroll_secret"), "{select}");
        Spi::run("RESET ROLE").unwrap();
        drop(embedder);
        // Another dimension gets its own index from ask.index_schema(), the same but for it.
        assert_eq!(vector_index(16), None);
        let _embedder = crate::pg::testing::standin_embeddings(16);
        let _: i64 = one("SELECT ask.index_schema(ARRAY['music', 'staff'])");
        let (made, installed) = (vector_index(16).unwrap(), vector_index(384).unwrap());
        assert_eq!(made, installed.replace("384", "16"));
    }

    #[pg_test]
    fn a_vector_begun_while_the_index_is_read_ranks_as_the_question_s_own() {
        Spi::run(SETUP).unwrap();
        Spi::run("SET ask.embedding_provider = 'local'").unwrap();
        let n: i64 = one("SELECT ask.index_schema(ARRAY['music', 'staff', 'garden'])");
        assert_eq!(n, 5);
        Spi::run("GRANT SELECT ON garden.plant TO ask_ix_reader").unwrap();
        // No word of the question names a table: the local model's vector, computed on its
        // threads while the backend read the index, finds the garden's plants.
        Spi::run("SET ROLE ask_ix_reader").unwrap();
        let select = select_stage("flowers that need water");
        assert_eq!((&select["index"], &select["embedding"]), (&true.into(), &true.into()), "{select}");
        // The trace gives the pass's time and the stage's wait for it (how much the reads hid
        // is the benchmark's to measure, not this test's).
        assert!(select["embedding_ms"].is_f64() && select["embedding_wait_ms"].is_f64(), "{select}");
        assert_eq!(tables(&select).first().map(String::as_str), Some("garden.plant"), "{select}");
        // The vector is the one the question gets when embedded alone, to float rounding.
        let scored = select["tables"][0]["parts"]["cosine"].as_f64().unwrap_or_else(|| panic!("no cosine: {select}"));
        // Still only what the reader may read, whatever the vector brings near.
        let select = select_stage("bonus payments of employees");
        assert!(!tables(&select).iter().any(|t| t == "staff.payroll_secret"), "{select}");
        Spi::run("RESET ROLE").unwrap();
        let cosine: f64 = one(
            "SELECT 1 - (ask.embed('flowers that need water') <=> embedding) FROM ask.schema_memory_tables WHERE name = 'garden.plant'",
        );
        assert!((scored - cosine).abs() < 1e-4, "{scored} vs {cosine}");
    }

    #[pg_test]
    fn the_index_holds_names_and_comments_never_values() {
        built();
        let singer: i32 = one("SELECT df FROM ask.schema_memory_vocabulary WHERE term = 'singer'");
        assert_eq!(singer, 2, "music.singer and music.concert's singer_id");
        let named: i32 = one("SELECT name_df FROM ask.schema_memory_vocabulary WHERE term = 'performed'");
        assert_eq!(named, 0, "a comment's word is no name");
        let lengths: Vec<i32> = one("SELECT field_lengths FROM ask.schema_memory_tables WHERE name = 'music.singer'");
        assert_eq!(lengths[..3], [1, 1, 3], "{lengths:?}");
        // Values the value memory holds are not written: a row's 'Ada' or 'France' is nowhere.
        let _: i64 = one("SELECT ask.index_values('music.singer', ARRAY['country'])");
        let _: i64 = one("SELECT ask.index_schema(ARRAY['music'])");
        let values: i64 = one("SELECT count(*) FROM ask.schema_memory_terms WHERE term IN ('ada', 'france')");
        assert_eq!(values, 0);
        // The vocabulary follows the rows: forgetting a table takes its words away.
        Spi::run("DELETE FROM ask.schema_memory_tables WHERE name = 'music.concert'").unwrap();
        let singer: i32 = one("SELECT df FROM ask.schema_memory_vocabulary WHERE term = 'singer'");
        assert_eq!(singer, 1);
        let venue: i64 = one("SELECT count(*) FROM ask.schema_memory_vocabulary WHERE term = 'venue'");
        assert_eq!(venue, 0);
    }

    #[pg_test]
    fn a_question_reads_the_index_and_describes_only_candidates() {
        built();
        let select = select_stage("in which venues did the singers perform concerts?");
        assert_eq!(select["index"], true, "{select}");
        let picked = tables(&select);
        assert!(picked.contains(&"music.concert".to_string()) && picked.contains(&"music.singer".to_string()), "{select}");
        // Only tables sharing a word with the question (and their join neighbours) were described.
        assert!(select["candidates_described"].as_u64().unwrap() <= 3, "{select}");
        assert_eq!(select["index_tables"], 4);
        // Off: the whole catalog, as ask.select_tables() reads it.
        Spi::run("SET ask.selection_index = off").unwrap();
        let whole = select_stage("in which venues did the singers perform concerts?");
        assert_eq!(whole["index"], false, "{whole}");
        assert_eq!(tables(&whole)[..2], picked[..2], "{whole} vs {select}");
    }

    #[pg_test]
    fn a_reader_gets_only_what_it_may_select() {
        built();
        Spi::run("SET ROLE ask_ix_reader").unwrap();
        let select = select_stage("salary and bonus payments of employees");
        let picked = tables(&select);
        // The bonus table matches best but is not readable; the employees' table is, without
        // its salary column.
        assert!(!picked.iter().any(|t| t.contains("payroll_secret")), "{select}");
        assert_eq!(picked, ["staff.employee"], "{select}");
        let _s = llm(Script::default().rule(Rule::new(&["<schema>"], Reply::text("SELECT count(*) AS n FROM staff.employee"))));
        let _: String = one("SELECT ask('salary and bonus payments of employees')");
        let prompt = &_s.requests()[0].prompt;
        assert!(prompt.contains("TABLE staff.employee") && !prompt.contains("salary numeric") && !prompt.contains("payroll"), "{prompt}");
        // A grant reaches the next question at once (the backend keeps what it described
        // only until PostgreSQL announces a change of the table).
        Spi::run("RESET ROLE; GRANT SELECT (salary) ON staff.employee TO ask_ix_reader; SET ROLE ask_ix_reader").unwrap();
        let _: String = one("SELECT ask('salary and bonus payments of employees')");
        let prompt = &_s.requests()[1].prompt;
        assert!(prompt.contains("salary numeric"), "{prompt}");
        Spi::run("RESET ROLE; REVOKE SELECT ON music.singer, music.concert FROM ask_ix_reader; SET ROLE ask_ix_reader").unwrap();
        let trace: JsonB = one("SELECT ask.explain('in which venues did the singers perform concerts?')");
        assert!(!trace.0.to_string().contains("music."), "{}", trace.0);
        // The index is closed to it, as the memory is.
        for t in ["schema_memory_terms", "schema_memory_vocabulary", "schema_memory_dirty"] {
            let (code, _, _) = error_of(&format!("SELECT count(*) FROM ask.{t}"));
            assert_eq!(code, "42501", "{t}");
        }
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test]
    fn tables_a_reader_cannot_read_take_no_candidates_place() {
        built();
        // Thirty tables that match the question better than anything, none readable by the
        // reader: it still gets the employees' table, and none of them is even described.
        for i in 0..30 {
            Spi::run(&format!(
                "CREATE TABLE staff.salary_bonus_payment_{i} (salary numeric, bonus numeric, payment numeric);
                 COMMENT ON TABLE staff.salary_bonus_payment_{i} IS 'Salary and bonus payments of employees'"
            ))
            .unwrap();
        }
        let _: i64 = one("SELECT ask.index_schema(ARRAY['staff'])");
        Spi::run("SET ROLE ask_ix_reader").unwrap();
        let select = select_stage("salary and bonus payments of employees");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(tables(&select), ["staff.employee"], "{select}");
        assert_eq!(select["candidates_described"], 1, "{select}");
    }

    #[pg_test]
    fn only_whole_table_readers_write_a_description_again() {
        built();
        Spi::run("COMMENT ON TABLE staff.employee IS 'People on the payroll'").unwrap();
        // The reader sees two of its columns: its description is not the memory's to keep.
        Spi::run("SET ROLE ask_ix_reader").unwrap();
        let select = select_stage("people on the payroll");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(select["refreshed"], 0, "{select}");
        let kept: bool = one("SELECT description NOT LIKE '%payroll%' FROM ask.schema_memory_tables WHERE name = 'staff.employee'");
        assert!(kept);
        let noted: i64 = one("SELECT count(*) FROM ask.schema_memory_dirty WHERE relid = 'staff.employee'::regclass");
        assert_eq!(noted, 1);
        // A role that reads the whole table writes it, and the note goes.
        let select = select_stage("people on the payroll");
        assert_eq!(select["refreshed"], 1, "{select}");
        let noted: i64 = one("SELECT count(*) FROM ask.schema_memory_dirty");
        assert_eq!(noted, 0);
    }

    #[pg_test]
    fn tables_created_or_changed_since_are_candidates_and_described_again() {
        built();
        // A table owner who is not superuser creates a table in an indexed schema and renames
        // a column of it: the event trigger notes it (as the extension's owner), and the DDL
        // does not fail; a table of an unindexed schema is not noted.
        Spi::run(
            "SET ROLE ask_ix_owner;
             CREATE TABLE music.album (id int PRIMARY KEY, title text);
             ALTER TABLE music.album RENAME COLUMN title TO album_title;
             CREATE TEMP TABLE scratch (x int);
             RESET ROLE;
             CREATE TABLE garden.pot (id int);
             CREATE TABLE music.gig (id int, played date) PARTITION BY RANGE (played);
             CREATE TABLE music.gig_2024 PARTITION OF music.gig FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');",
        )
        .unwrap();
        let noted: Vec<String> = Spi::connect(|c| {
            c.select("SELECT relid::regclass::text FROM ask.schema_memory_dirty ORDER BY 1", None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
        });
        // A partition is never described, so never noted: its partitioned table is.
        assert_eq!(noted, ["music.album", "music.gig"]);
        // It is not in the index yet, and still found.
        let select = select_stage("which album titles are there?");
        assert_eq!(select["index"], true);
        assert!(tables(&select).contains(&"music.album".to_string()), "{select}");
        // Described in the memory again, with its words; no longer noted. The gigs, which the
        // question did not ask for, were not described: still noted, for a question about them.
        let stored: i64 = one("SELECT count(*) FROM ask.schema_memory_terms WHERE term = 'album' AND relid = 'music.album'::regclass");
        assert_eq!(stored, 1);
        let left: Vec<String> = Spi::connect(|c| {
            c.select("SELECT relid::regclass::text FROM ask.schema_memory_dirty", None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
        });
        assert_eq!(left, ["music.gig"]);
        let select = select_stage("when were the gigs played?");
        assert!(tables(&select).contains(&"music.gig".to_string()), "{select}");
        let left: i64 = one("SELECT count(*) FROM ask.schema_memory_dirty");
        assert_eq!(left, 0);
        // Its owner drops it: DROP works, and the memory forgets it at the next refresh.
        Spi::run("SET ROLE ask_ix_owner; DROP TABLE music.album; RESET ROLE").unwrap();
        let _s = llm(Script::default()
            .rule(Rule::new(&["<schema>"], Reply::text("SELECT 1 AS one")))
            .rule(Rule::new(&["<result"], Reply::text("one"))));
        let trace: JsonB = one("SELECT ask.explain('which album titles are there?')");
        assert!(!trace.0.to_string().contains("album_title"), "{}", trace.0);
    }

    #[pg_test]
    fn row_level_security_keeps_values_out_of_the_candidates() {
        built();
        // Values indexed before the table came under row-level security (its owner did not
        // opt in): a reader's selection shows none of them.
        let _: i64 = one("SELECT ask.index_values('music.singer', ARRAY['country'])");
        Spi::run(
            "ALTER TABLE music.singer ENABLE ROW LEVEL SECURITY;
             CREATE POLICY own ON music.singer FOR SELECT USING (name = current_user);",
        )
        .unwrap();
        Spi::run("SET ROLE ask_ix_reader").unwrap();
        let _s = llm(Script::default()
            .rule(Rule::new(&["<schema>"], Reply::text("SELECT count(*) AS n FROM music.singer")))
            .rule(Rule::new(&["<result"], Reply::text("none"))));
        let _: String = one("SELECT ask('how many singers come from each country?')");
        let prompt = &_s.requests()[0].prompt;
        Spi::run("RESET ROLE").unwrap();
        assert!(prompt.contains("TABLE music.singer") && !prompt.contains("France"), "{prompt}");
    }

    fn listed(sql: &str) -> Vec<String> {
        Spi::connect(|c| c.select(sql, None, &[]).unwrap().map(|r| r.get::<String>(1).unwrap().unwrap()).collect())
    }

    #[pg_test]
    fn select_tables_reads_the_index_with_the_caller_s_privileges() {
        built();
        let best = |q: &str| listed(&format!("SELECT rel::text FROM ask.select_tables('{q}', 2)"));
        let questions = ["in which venues did the singers perform concerts?", "salary of each employee", "bonus payments"];
        // The candidates the index gives rank as the whole catalog ranks them.
        let from_index: Vec<Vec<String>> = questions.iter().map(|q| best(q)).collect();
        Spi::run("SET ask.selection_index = off").unwrap();
        let whole: Vec<Vec<String>> = questions.iter().map(|q| best(q)).collect();
        Spi::run("RESET ask.selection_index").unwrap();
        assert_eq!(from_index[0], ["music.concert", "music.singer"]);
        assert_eq!(from_index[1].first().map(String::as_str), Some("staff.employee"));
        assert_eq!(from_index[2].first().map(String::as_str), Some("staff.payroll_secret"));
        for (i, w) in from_index.iter().zip(&whole) {
            assert_eq!(i.first(), w.first(), "{from_index:?} vs {whole:?}");
        }
        // A reader: only what it may read, with evidence; a schema whose only match it may
        // not read is not listed.
        Spi::run("SET ROLE ask_ix_reader").unwrap();
        assert_eq!(listed("SELECT rel::text FROM ask.select_tables('salary and bonus payments of employees', 10)"), ["staff.employee"]);
        assert_eq!(listed("SELECT schema::text FROM ask.select_schemas('bonus payments', 5)"), Vec::<String>::new());
        assert_eq!(listed("SELECT schema::text FROM ask.select_schemas('singers', 5)"), ["music"]);
        // A table owner who is not superuser makes a table: found at once, and described in
        // the memory by that owner's question; the reader, without a grant, never gets it.
        Spi::run("RESET ROLE; SET ROLE ask_ix_owner; CREATE TABLE music.album (id int PRIMARY KEY, album_title text)").unwrap();
        assert_eq!(listed("SELECT rel::text FROM ask.select_tables('album titles', 1)"), ["music.album"]);
        Spi::run("RESET ROLE").unwrap();
        let stored: i64 = one("SELECT count(*) FROM ask.schema_memory_terms WHERE term = 'album' AND relid = 'music.album'::regclass");
        assert_eq!(stored, 1);
        Spi::run("SET ROLE ask_ix_reader").unwrap();
        let top = listed("SELECT rel::text FROM ask.select_tables('album titles', 5)");
        Spi::run("RESET ROLE").unwrap();
        assert!(!top.iter().any(|t| t.contains("album")), "{top:?}");
    }

    #[pg_test]
    fn unreadable_tables_nearer_a_question_take_no_readable_table_s_place() {
        Spi::run(SETUP).unwrap();
        Spi::run("SET ask.embedding_provider = 'local'").unwrap();
        // More tables than an HNSW scan looks at (hnsw.ef_search, 40) lie nearer the question
        // than the garden's plants, none of them readable by the reader.
        for i in 0..45 {
            Spi::run(&format!(
                "CREATE TABLE staff.bloom_{i} (petals int); COMMENT ON TABLE staff.bloom_{i} IS 'Flowers that need water every day'"
            ))
            .unwrap();
        }
        let _: i64 = one("SELECT ask.index_schema(ARRAY['music', 'staff', 'garden'])");
        Spi::run("GRANT SELECT ON garden.plant TO ask_ix_reader; SET ROLE ask_ix_reader").unwrap();
        // A session's own pgvector settings do not change what the read looks at.
        Spi::run("SET hnsw.ef_search = 1; SET hnsw.iterative_scan = off; SET hnsw.max_scan_tuples = 1; SET work_mem = '64kB'").unwrap();
        let top = listed("SELECT rel::text FROM ask.select_tables('flowers that need water', 1)");
        let select = select_stage("flowers that need water");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(top, ["garden.plant"]);
        assert_eq!(tables(&select).first().map(String::as_str), Some("garden.plant"), "{select}");
        assert!(!select.to_string().contains("bloom"), "{select}");
    }

    #[pg_test]
    fn a_caller_s_many_k_keep_few_plans_of_the_nearest_read() {
        Spi::run(SETUP).unwrap();
        Spi::run("SET ask.embedding_provider = 'local'").unwrap();
        let _: i64 = one("SELECT ask.index_schema(ARRAY['music', 'staff'])");
        let nearest_plans = || {
            crate::pg::backend::with(|b| {
                b.plans.borrow().keys().filter(|sql| sql.contains("halfvec(384)") && sql.contains("LIMIT")).count()
            })
        };
        for k in 1..=100 {
            let _ = listed(&format!("SELECT rel::text FROM ask.select_tables('singers and their concerts', {k})"));
        }
        // Limits of 20 to 200 tables, read in powers of two: 32, 64, 128, 256.
        assert_eq!(nearest_plans(), 4);
    }
}
