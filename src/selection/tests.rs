//! In-backend tests of the schema selection memory, retrieval plans over several schemas and
//! the context switch (`cargo pgrx test`). Each runs in its own transaction, rolled back at
//! the end, against a stand-in LLM server started inside the test's backend.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script};
    use pgrx::prelude::*;
    use pgrx::JsonB;

    use crate::pg::testing::{error_of, llm, one, standin_embeddings};

    /// Two schemas, each one "database", and a third that has nothing to do with the questions.
    const TWO_DATABASES: &str = "
        CREATE SCHEMA music;
        COMMENT ON SCHEMA music IS 'Concerts and singers';
        CREATE TABLE music.singer (id int PRIMARY KEY, name text NOT NULL, country text);
        COMMENT ON TABLE music.singer IS 'Singers who performed';
        CREATE TABLE music.concert (id int PRIMARY KEY, singer_id int REFERENCES music.singer(id), venue text, year int);
        CREATE SCHEMA staff;
        CREATE TABLE staff.employee (id int PRIMARY KEY, name text NOT NULL, department_id int, salary numeric);
        COMMENT ON TABLE staff.employee IS 'Employees of the company';
        CREATE TABLE staff.department (id int PRIMARY KEY, title text);
        CREATE SCHEMA garden;
        CREATE TABLE garden.plant (id int PRIMARY KEY, species text, watered_at date);
        INSERT INTO music.singer VALUES (1, 'Ada', 'France'), (2, 'Bo', 'Chile'), (3, 'Cy', 'Peru');
        INSERT INTO staff.employee VALUES (1, 'Di', 1, 10), (2, 'Ed', 1, 20), (3, 'Fa', 2, 30), (4, 'Gu', 2, 40), (5, 'Ha', 2, 50);";

    /// The two databases (and the third schema), the memory built with `settings` in effect
    /// (`SET ...;` statements). Returns the tables described.
    fn indexed(settings: &str) -> i64 {
        Spi::run(TWO_DATABASES).unwrap();
        Spi::run(settings).unwrap();
        one("SELECT ask.index_schema()")
    }

    fn names(sql: &str) -> Vec<String> {
        Spi::connect(|c| c.select(sql, None, &[]).unwrap().map(|r| r.get::<String>(1).unwrap().unwrap_or_default()).collect())
    }

    #[pg_test]
    fn selection_is_lexical_when_embeddings_are_off() {
        let n = indexed("SET ask.embedding_provider = 'off'");
        assert_eq!(n, 5);
        let stored: i64 = one("SELECT count(*) FROM ask.schema_memory_tables WHERE embedding IS NULL AND embedding_provider = 'off'");
        assert_eq!(stored, 5);
        // Through the stored index, only schemas with evidence are listed; the whole catalog's
        // ranking lists every readable one, those without any at 0.
        let q = "SELECT schema::text FROM ask.select_schemas('how many singers performed in concerts?', 2)";
        assert_eq!(names(q), ["music"]);
        Spi::run("SET ask.selection_index = off").unwrap();
        let schemas = names(q);
        assert_eq!((schemas.len(), schemas[0].as_str()), (2, "music"));
        Spi::run("RESET ask.selection_index").unwrap();
        let tables = names("SELECT rel::text FROM ask.select_tables('what is the average salary per department?', 2)");
        assert_eq!(tables.len(), 2);
        assert!(tables.contains(&"staff.employee".to_string()) && tables.contains(&"staff.department".to_string()), "{tables:?}");
        // Only the listed schemas are described.
        Spi::run("DELETE FROM ask.schema_memory_tables; DELETE FROM ask.schema_memory_schemas").unwrap();
        let n: i64 = one("SELECT ask.index_schema(ARRAY['music'])");
        assert_eq!(n, 2);
        assert_eq!(names("SELECT name FROM ask.schema_memory_schemas"), ["music"]);
        let (code, _, _) = error_of("SELECT * FROM ask.select_tables('x', -1)");
        assert_eq!(code, "22023");
    }

    #[pg_test]
    fn local_embeddings_rank_and_stale_rows_are_never_served() {
        let n = indexed("SET ask.embedding_provider = 'local'");
        assert_eq!(n, 5);
        let embedded: i64 = one("SELECT count(*) FROM ask.schema_memory_tables WHERE vector_dims(embedding) = 384");
        assert_eq!(embedded, 5);
        let schemas: i64 = one("SELECT count(*) FROM ask.schema_memory_schemas WHERE embedding IS NOT NULL");
        assert_eq!(schemas, 3);
        // A question with no word in common with any name: the embedding decides.
        assert_eq!(names("SELECT schema::text FROM ask.select_schemas('vocalists and their performances', 1)"), ["music"]);
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers that need water', 1)"), ["garden.plant"]);

        // Renamed: the new name is served, with a fresh description; the old one never.
        Spi::run("ALTER TABLE music.singer RENAME TO vocalist").unwrap();
        let top = names("SELECT rel::text FROM ask.select_tables('vocalist names', 10)");
        assert!(top.contains(&"music.vocalist".to_string()) && !top.iter().any(|t| t.contains("singer")), "{top:?}");
        let row: String = one("SELECT name FROM ask.schema_memory_tables WHERE relid = 'music.vocalist'::regclass");
        assert_eq!(row, "music.vocalist");
        let fresh: bool =
            one("SELECT description LIKE 'Table music.vocalist%' FROM ask.schema_memory_tables WHERE relid = 'music.vocalist'::regclass");
        assert!(fresh);
        // Dropped: gone from the selection and, at the next refresh, from the memory.
        Spi::run("DROP TABLE garden.plant").unwrap();
        let top = names("SELECT rel::text FROM ask.select_tables('flowers that need water', 10)");
        assert!(!top.iter().any(|t| t.contains("plant")), "{top:?}");
        Spi::run("ALTER TABLE music.concert ADD COLUMN ticket_price numeric").unwrap();
        let _ = names("SELECT rel::text FROM ask.select_tables('ticket price', 3)");
        let left: i64 = one("SELECT count(*) FROM ask.schema_memory_tables WHERE name LIKE 'garden.%'");
        assert_eq!(left, 0);
        let altered: bool =
            one("SELECT description LIKE '%ticket_price%' FROM ask.schema_memory_tables WHERE relid = 'music.concert'::regclass");
        assert!(altered);
    }

    #[pg_test]
    fn comments_on_schemas_tables_and_columns_refresh_the_memory() {
        // The whole catalog's lazy refresh (schemas' descriptions are stored by it only).
        indexed("SET ask.embedding_provider = 'off'; SET ask.selection_index = off");
        // Read once, so that the backend's catalog is cached before the comments change.
        assert_eq!(names("SELECT schema::text FROM ask.select_schemas('botanical collection', 1)").len(), 1);
        Spi::run(
            "COMMENT ON SCHEMA garden IS 'Botanical collection';
             COMMENT ON TABLE staff.department IS 'Organisational units';
             COMMENT ON COLUMN music.concert.venue IS 'Auditorium where it was held'",
        )
        .unwrap();
        assert_eq!(names("SELECT schema::text FROM ask.select_schemas('botanical collection', 1)"), ["garden"]);
        let described: bool = one("SELECT description LIKE '%Botanical collection%' FROM ask.schema_memory_schemas WHERE name = 'garden'");
        assert!(described);
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('organisational units', 1)"), ["staff.department"]);
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('auditorium', 1)"), ["music.concert"]);
        let described: i64 = one("SELECT count(*) FROM ask.schema_memory_tables
             WHERE (name = 'staff.department' AND description LIKE '%Organisational units%')
                OR (name = 'music.concert' AND description LIKE '%Auditorium where it was held%')");
        assert_eq!(described, 2);
    }

    #[pg_test]
    fn a_read_only_transaction_ranks_changed_tables_lexically() {
        indexed("SET ask.embedding_provider = 'local'");
        Spi::run("ALTER TABLE music.concert ADD COLUMN ticket_price numeric; CREATE TABLE garden.greenhouse (id int PRIMARY KEY, heated boolean)").unwrap();
        // As on a hot standby: nothing can be stored, so nothing is embedded again either.
        Spi::run("SET TRANSACTION READ ONLY").unwrap();
        // The changed and the new table have no usable embedding now, but their words count.
        let top = names("SELECT rel::text FROM ask.select_tables('ticket price of each concert', 3)");
        assert!(top.contains(&"music.concert".to_string()), "{top:?}");
        let top = names("SELECT rel::text FROM ask.select_tables('heated greenhouse', 3)");
        assert!(top.contains(&"garden.greenhouse".to_string()), "{top:?}");
        // Unchanged tables keep their cosines: no word of this question is in garden.plant's
        // description, so only its embedding can put it first.
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        let stored: i64 =
            one("SELECT count(*) FROM ask.schema_memory_tables WHERE description LIKE '%ticket_price%' OR name = 'garden.greenhouse'");
        assert_eq!(stored, 0);
    }

    #[pg_test]
    fn embeddings_of_another_provider_or_model_are_never_compared() {
        Spi::run(TWO_DATABASES).unwrap();
        // A memory built with 1536-dimension embeddings of another provider and model.
        let _embedder = standin_embeddings(1536);
        let _: i64 = one("SELECT ask.index_schema()");
        let built: i64 = one("SELECT count(*) FROM ask.schema_memory_tables WHERE vector_dims(embedding) = 1536 AND embedding_provider = 'openai' AND embedding_model = 'pseudo-1536'");
        assert_eq!(built, 5);
        // Under local all-MiniLM-L6-v2, a question sharing no word with the catalog finds no
        // evidence at all: the other model's vectors are not compared (pgvector would raise on
        // the different dimensions) and not rewritten.
        Spi::run("SET ask.embedding_provider = 'local'").unwrap();
        let scores = || -> Vec<f64> {
            Spi::connect(|c| {
                c.select("SELECT score FROM ask.select_tables('xylophone quokka', 5)", None, &[])
                    .unwrap()
                    .map(|r| r.get::<f64>(1).unwrap().unwrap())
                    .collect()
            })
        };
        // Through the stored index nothing is listed (nothing has evidence); the whole
        // catalog's ranking lists five tables at 0.
        assert_eq!(scores(), Vec::<f64>::new());
        Spi::run("SET ask.selection_index = off").unwrap();
        let whole = scores();
        assert!(whole.len() == 5 && whole.iter().all(|&s| s == 0.0), "{whole:?}");
        Spi::run("RESET ask.selection_index").unwrap();
        let kept: i64 = one("SELECT count(*) FROM ask.schema_memory_tables WHERE embedding_model = 'pseudo-1536'");
        assert_eq!(kept, 5);
        // Rebuilt under the current settings, the embeddings count again.
        let _: i64 = one("SELECT ask.index_schema()");
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers that need water', 1)"), ["garden.plant"]);
        let local: i64 = one(
            "SELECT count(*) FROM ask.schema_memory_tables WHERE embedding_provider = 'local' AND embedding_model = 'all-MiniLM-L6-v2'",
        );
        assert_eq!(local, 5);
    }

    #[pg_test]
    fn only_tables_the_role_may_select_are_candidates() {
        indexed("SET ask.embedding_provider = 'off'");
        Spi::run(
            "CREATE ROLE ask_schema_fan NOLOGIN;
             GRANT USAGE ON SCHEMA music, staff, ask TO ask_schema_fan;
             GRANT SELECT ON music.singer TO ask_schema_fan;
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ask TO ask_schema_fan;
             SET ROLE ask_schema_fan",
        )
        .unwrap();
        let tables = names("SELECT rel::text FROM ask.select_tables('employees salary singers', 10)");
        assert_eq!(tables, ["music.singer"]);
        // No word of this question is in a table it may read: through the stored index nothing
        // is listed, and the whole catalog's ranking lists its one readable schema at 0.
        assert_eq!(names("SELECT schema::text FROM ask.select_schemas('employees salary', 5)"), Vec::<String>::new());
        Spi::run("SET ask.selection_index = off").unwrap();
        assert_eq!(names("SELECT schema::text FROM ask.select_schemas('employees salary', 5)"), ["music"]);
        Spi::run("RESET ask.selection_index").unwrap();
        let (code, _, _) = error_of("SELECT count(*) FROM ask.schema_memory_tables");
        assert_eq!(code, "42501");
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test]
    fn ask_plans_over_two_schemas_and_compares_their_results() {
        indexed("SET ask.embedding_provider = 'off'");
        let q = "which has more: singers or employees?";
        let plan = r#"[{"goal": "count the singers", "sql": "SELECT count(*) AS singers FROM music.singer", "schema": "music"},
                       {"goal": "count the employees", "sql": "SELECT count(*) AS employees FROM staff.employee", "schema": "staff"}]"#;
        let s = llm(Script::default().rule(Rule::new(&["retrieval steps", q], Reply::text(plan))).rule(Rule::new(
            &["<step n=\"2\"", "[\"singers\"]\n[3]", "[\"employees\"]\n[5]"],
            Reply::text("There are more employees (5) than singers (3)."),
        )));
        let answer: String = one(&format!("SELECT ask('{q}')"));
        assert_eq!(answer, "There are more employees (5) than singers (3).");
        let reqs = s.requests();
        assert_eq!(reqs.len(), 2, "{:?}", reqs.iter().map(|r| &r.prompt).collect::<Vec<_>>());
        // The plan prompt shows the candidate schemas' selected tables, the unrelated one not.
        assert!(reqs[0].prompt.contains("<schema name=\"music\">") && reqs[0].prompt.contains("TABLE staff.employee"));
        assert!(!reqs[0].prompt.contains("garden.plant"), "{}", reqs[0].prompt);

        let trace: JsonB = one(&format!("SELECT ask.explain('{q}')"));
        let stages: Vec<&str> = trace.0["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
        assert_eq!(stages, ["select", "schema", "plan", "plan", "guard", "execute", "guard", "execute", "answer", "answer", "ground"]);
        let select = &trace.0["stages"][0]["output"];
        let mut schemas: Vec<&str> = select["schemas"].as_array().unwrap().iter().map(|s| s["schema"].as_str().unwrap()).collect();
        schemas.sort_unstable();
        // The garden schema has no evidence for this question: no candidate.
        assert_eq!(schemas, ["music", "staff"]);
        // Read from the stored index: the tables sharing a word with the question, described.
        assert_eq!(select["index"], true, "{select}");
        assert!(select["candidates_described"].as_u64().is_some_and(|n| (2..5).contains(&n)), "{select}");
        // The singers' and employees' tables are retrieved on their own evidence.
        let retrieved: Vec<&str> = select["tables"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["reason"] == "retrieved")
            .map(|t| t["table"].as_str().unwrap())
            .collect();
        assert!(retrieved.contains(&"music.singer") && retrieved.contains(&"staff.employee"), "{select}");
        assert_eq!(trace.0["stages"][3]["output"]["steps"].as_array().unwrap().len(), 2);
    }

    #[pg_test]
    fn ask_describes_only_the_selected_tables() {
        Spi::run(TWO_DATABASES).unwrap();
        Spi::run("SET ask.embedding_provider = 'off'; SET ask.max_tables = 1").unwrap();
        let _: i64 = one("SELECT ask.index_schema(ARRAY['music'])");
        // One indexed schema is one candidate: no plan stage, the SQL prompt carries the best
        // table and the table its foreign key needs, nothing else.
        let q = "in which venues did concerts take place?";
        let s =
            llm(Script::default().rule(Rule::new(&["<schema>", q], Reply::text("```sql\nSELECT DISTINCT venue FROM music.concert\n```"))));
        let _: String = one(&format!("SELECT ask('{q}')"));
        // The concerts table is empty: the query that returned nothing is asked again as an
        // edit and afresh; every request describes the selected tables alone.
        let reqs = s.requests();
        assert_eq!(reqs.len(), 3);
        for r in &reqs {
            let prompt = &r.prompt;
            assert!(prompt.contains("TABLE music.concert") && prompt.contains("TABLE music.singer"), "{prompt}");
            assert!(!prompt.contains("staff.") && !prompt.contains("garden."), "{prompt}");
        }
    }

    #[pg_test]
    fn a_context_that_answers_runs_no_sql() {
        Spi::run(TWO_DATABASES).unwrap();
        let q = "how many singers are there?";
        let s = llm(Script::default()
            .rule(Rule::new(
                &["<context>", "three singers"],
                Reply::text("{\"answerable\": true, \"answer\": \"There are three singers.\"}"),
            ))
            .rule(Rule::new(&["<context>"], Reply::text("{\"answerable\": false}")))
            .rule(Rule::new(&["<schema>", q], Reply::text("SELECT count(*) FROM music.singer"))));
        let answer: String = one(&format!("SELECT ask('{q}', context => 'The label signed three singers.')"));
        assert_eq!(answer, "There are three singers.");
        assert_eq!(s.requests().len(), 1);
        let answer: String = one(&format!("SELECT ask('{q}', context => 'The weather was fine.')"));
        assert_eq!(answer, "count: 3");
        assert_eq!(s.requests().len(), 3);
        let trace: JsonB = one(&format!("SELECT ask.explain('{q}', context => 'The label signed three singers.')"));
        assert_eq!(trace.0["answer"], "There are three singers.");
        assert_eq!(trace.0["stages"][1]["output"]["decision"], "answered");
        assert!(trace.0["stages"].as_array().unwrap().iter().all(|s| s["stage"] != "execute"));
    }

    #[pg_test]
    fn a_backend_trusts_its_freshness_finding_only_while_the_memory_stays_unwritten() {
        // The whole catalog's ranking, which keeps its finding with the backend.
        indexed("SET ask.embedding_provider = 'local'; SET ask.selection_index = off");
        let version = || one::<i64>("SELECT version FROM ask.schema_memory_version");
        let v0 = version();
        // Two questions: the second reuses what the first found fresh (nothing is written).
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        assert_eq!(version(), v0, "reading the memory writes nothing");
        // Anyone writing the memory (here by hand, as another backend's refresh would) moves the
        // version on in the same transaction: the next question compares the descriptions again,
        // finds garden.plant's changed, and describes and embeds it again.
        Spi::run("UPDATE ask.schema_memory_tables SET description = 'something else', embedding = NULL WHERE name = 'garden.plant'")
            .unwrap();
        assert!(version() > v0);
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        let again: bool = one("SELECT description LIKE 'Table garden.plant%' AND embedding IS NOT NULL FROM ask.schema_memory_tables WHERE name = 'garden.plant'");
        assert!(again);
        let v1 = version();
        Spi::run("TRUNCATE ask.schema_memory_schemas").unwrap();
        assert!(version() > v1, "a TRUNCATE moves it on too");
        // Closed to other roles, as the memory is.
        Spi::run("CREATE ROLE ask_test_peek").unwrap();
        Spi::run("SET ROLE ask_test_peek").unwrap();
        let (code, _, _) = error_of("SELECT version FROM ask.schema_memory_version");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(code, "42501");
    }

    /// A read of the memory that fails is an error with its SQLSTATE and what could not be read,
    /// never "no memory was built": ask() must not quietly describe every table instead.
    #[pg_test]
    fn a_failed_read_of_the_memory_is_an_error_not_no_memory() {
        indexed("SET ask.embedding_provider = 'local'");
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        // The version now reads as another type than the one pg_ask reads it as.
        Spi::run("ALTER TABLE ask.schema_memory_version ALTER COLUMN version TYPE numeric").unwrap();
        let _s = llm(Script::default().rule(Rule::new(&["<schema>"], Reply::text("SELECT count(*) FROM garden.plant"))));
        for sql in ["SELECT count(*) FROM ask.select_tables('flowers in bloom', 1)", "SELECT ask('flowers in bloom')"] {
            let (code, message, hint) = error_of(sql);
            assert_eq!(code, "XX000", "{sql}: {message}");
            assert!(message.contains("could not read the schema selection memory's state"), "{sql}: {message}");
            assert!(hint.is_some_and(|h| h.contains("ALTER EXTENSION pg_ask UPDATE")), "{sql}");
        }
    }

    /// After a catalog change, a backend looks up only what changed, stores it, and keeps its
    /// finding under the version its own writes made; a table dropped and made again under the
    /// same description is served from its old row until a refresh deletes that row, and then
    /// described again under its new oid.
    #[pg_test]
    fn after_a_change_only_what_changed_is_looked_up_and_the_finding_is_kept() {
        // The whole catalog's ranking, which keeps its finding with the backend.
        indexed("SET ask.embedding_provider = 'local'; SET ask.selection_index = off");
        let version = || one::<i64>("SELECT version FROM ask.schema_memory_version");
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        Spi::run("COMMENT ON TABLE staff.department IS 'Organisational units of the company'").unwrap();
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('organisational units', 1)"), ["staff.department"]);
        let stored: bool = one(
            "SELECT description LIKE '%Organisational units%' AND embedding IS NOT NULL FROM ask.schema_memory_tables WHERE name = 'staff.department'",
        );
        assert!(stored);
        // What this backend wrote is all that moved the version, so it kept its finding and the
        // embeddings it read: a write that moves no version (triggers off, as no real writer
        // runs) turning garden.plant's stored embedding around is not seen; a full check would
        // read the turned embedding and put garden.plant last.
        let v = version();
        let turn = "SET session_replication_role = replica;
             UPDATE ask.schema_memory_tables SET embedding = (SELECT array_agg(-x) FROM unnest(embedding::real[]) x)::vector
             WHERE name = 'garden.plant';
             SET session_replication_role = origin";
        Spi::run(turn).unwrap();
        assert_eq!(version(), v);
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('organisational units', 1)"), ["staff.department"]);
        assert_eq!(version(), v, "the next questions write nothing");
        Spi::run(turn).unwrap();

        // Dropped and made again as it was: the same description, served from the old row.
        let old: pg_sys::Oid = one("SELECT 'garden.plant'::regclass::oid");
        Spi::run("DROP TABLE garden.plant; CREATE TABLE garden.plant (id int PRIMARY KEY, species text, watered_at date)").unwrap();
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        assert_eq!(version(), v, "nothing changed in the descriptions");
        // A change elsewhere refreshes the memory, which deletes the old row: the table is
        // then described again under its new oid, and still found by its embedding.
        Spi::run("COMMENT ON TABLE music.concert IS 'Concerts given'").unwrap();
        let _ = names("SELECT rel::text FROM ask.select_tables('concerts given', 1)");
        let left: i64 = one(&format!("SELECT count(*) FROM ask.schema_memory_tables WHERE relid = {}", old.to_u32()));
        assert_eq!(left, 0);
        assert_eq!(names("SELECT rel::text FROM ask.select_tables('flowers in bloom', 1)"), ["garden.plant"]);
        let again: bool = one(
            "SELECT embedding IS NOT NULL FROM ask.schema_memory_tables WHERE relid = 'garden.plant'::regclass AND name = 'garden.plant'",
        );
        assert!(again);
    }
}
