//! In-backend tests of what one role's doings cost or show another role's selection
//! (`cargo pgrx test`): a victim without privileges of its own, an attacker with a schema of
//! its own in the memory, and a reader granted one column of a table.

#[pgrx::pg_schema]
mod tests {
    use pgrx::pg_sys;
    use pgrx::prelude::*;

    use crate::pg::testing::{one, select_stage};

    /// A schema of the memory the victim reads; the attacker's own schema, in the memory by the
    /// attacker's own `ask.index_schema()`; a table with a secret column the column reader may
    /// not read.
    const SETUP: &str = "
        CREATE ROLE ask_iso_victim NOLOGIN;
        CREATE ROLE ask_iso_attacker NOLOGIN;
        CREATE ROLE ask_iso_column_reader NOLOGIN;
        CREATE SCHEMA music;
        CREATE TABLE music.singer (id int PRIMARY KEY, name text NOT NULL, country text);
        COMMENT ON TABLE music.singer IS 'Singers who performed';
        CREATE TABLE music.concert (id int PRIMARY KEY, singer_id int REFERENCES music.singer(id), venue text, year int);
        CREATE TABLE music.vault (id int PRIMARY KEY, secret text);
        INSERT INTO music.vault VALUES (1, 'zebra'), (2, 'zebra');
        CREATE SCHEMA att AUTHORIZATION ask_iso_attacker;
        GRANT USAGE ON SCHEMA music, att TO PUBLIC;
        GRANT USAGE ON SCHEMA ask TO ask_iso_victim, ask_iso_attacker, ask_iso_column_reader;
        GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ask TO ask_iso_victim, ask_iso_attacker, ask_iso_column_reader;
        GRANT SELECT ON music.singer, music.concert, music.vault TO ask_iso_victim;
        GRANT SELECT (id) ON music.vault TO ask_iso_column_reader;
        SET ask.embedding_provider = 'off';
        SET ROLE ask_iso_attacker;
        CREATE TABLE att.seed (id int);
        GRANT SELECT ON att.seed TO PUBLIC;
        SELECT ask.index_schema(ARRAY['att']);
        RESET ROLE;
        SELECT ask.index_schema(ARRAY['music']);";

    fn listed(sql: &str) -> Vec<String> {
        Spi::connect(|c| c.select(sql, None, &[]).unwrap().map(|r| r.get::<String>(1).unwrap().unwrap()).collect())
    }

    #[pg_test]
    fn another_role_s_ddl_adds_nothing_to_a_question_that_does_not_ask_for_it() {
        Spi::run(SETUP).unwrap();
        // The attacker, in its own indexed schema: a table named for concerts, then 200 tables
        // of 50 columns granted to PUBLIC, each commented on.
        Spi::run(
            "SET ROLE ask_iso_attacker;
             CREATE TABLE att.concert_tickets (id int, price numeric);
             GRANT SELECT ON att.concert_tickets TO PUBLIC;
             DO $$ BEGIN
               FOR i IN 1..200 LOOP
                 EXECUTE format('CREATE TABLE att.filler_%s (%s)', i,
                                (SELECT string_agg(format('c%s int', j), ', ') FROM generate_series(1, 50) j));
                 EXECUTE format('GRANT SELECT ON att.filler_%s TO PUBLIC', i);
                 EXECUTE format('COMMENT ON TABLE att.filler_%s IS %L', i, 'filler number ' || i);
               END LOOP;
             END $$;
             RESET ROLE;",
        )
        .unwrap();
        // The attacker's notes are its own, and no more than its share.
        let noted: i64 = one("SELECT count(*) FROM ask.schema_memory_dirty WHERE owner = 'ask_iso_attacker'::regrole");
        assert_eq!(noted, 100);
        Spi::run("SET ROLE ask_iso_victim").unwrap();
        let select = select_stage("which singers performed in concerts?");
        let top = listed("SELECT rel::text FROM ask.select_tables('which singers performed in concerts?', 5)");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(select["index"], true, "{select}");
        // Only candidates for the victim's words were described: the two music tables and the
        // attacker's table named for concerts (touched, and sharing a word), none of the 200.
        assert!(select["candidates_described"].as_u64().unwrap() <= 3, "{select}");
        assert_eq!(select["changed_relations"], 1, "{select}");
        assert!(!select.to_string().contains("filler"), "{select}");
        assert!(!top.iter().any(|t| t.contains("filler")), "{top:?}");
        assert!(top.contains(&"music.concert".to_string()) && top.contains(&"music.singer".to_string()), "{top:?}");
        // A question with the attacker's words finds its touched tables, a bounded few.
        Spi::run("SET ROLE ask_iso_victim").unwrap();
        let select = select_stage("filler number");
        Spi::run("RESET ROLE").unwrap();
        assert!(select.to_string().contains("att.filler_"), "{select}");
        assert!(select["candidates_described"].as_u64().unwrap() <= 2 * 20, "{select}");
    }

    /// The definition of the memory's vector index for `d` dimensions, if it has one.
    fn vector_index(d: usize) -> Option<String> {
        Spi::get_one::<String>(&format!("SELECT pg_get_indexdef(to_regclass('ask.schema_memory_tables_hnsw_{d}'))")).ok().flatten()
    }

    #[pg_test]
    fn a_role_s_own_embedding_server_adds_no_vector_index_to_the_shared_memory() {
        Spi::run(SETUP).unwrap();
        // The attacker's session points at an embedding server answering in 16 dimensions.
        let _embedder = crate::pg::testing::standin_embeddings(16);
        Spi::run("SET ROLE ask_iso_attacker").unwrap();
        let n: i64 = one("SELECT ask.index_schema(ARRAY['att'])");
        assert_eq!(n, 1);
        assert_eq!(vector_index(16), None);
        // Its own questions still read its embeddings, compared without an index.
        let top = listed("SELECT rel::text FROM ask.select_tables('seed', 1)");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(top, ["att.seed"]);
        // A superuser's call indexes the dimension.
        let _: i64 = one("SELECT ask.index_schema(ARRAY['att'])");
        assert!(vector_index(16).is_some());
    }

    #[pg_test]
    fn a_reader_of_some_columns_gets_no_nearest_table_it_may_not_read_whole() {
        Spi::run(SETUP).unwrap();
        // The vault's stored description holds the values of its secret column.
        let _: i64 = one("SELECT ask.index_values('music.vault', ARRAY['secret'])");
        let _embedder = crate::pg::testing::standin_embeddings(384);
        let _: i64 = one("SELECT ask.index_schema(ARRAY['music'])");
        let stored: String = one("SELECT description FROM ask.schema_memory_tables WHERE name = 'music.vault'");
        assert!(stored.contains("zebra"), "{stored}");
        let role = |name: &str| -> pg_sys::Oid { one(&format!("SELECT '{name}'::regrole::oid")) };
        let vault: pg_sys::Oid = one("SELECT 'music.vault'::regclass::oid");
        let embedder = ("openai".to_string(), "pseudo-384".to_string());
        let question = vec![0.25f32; 384];
        // A whole-table reader's nearest tables include the vault; the column reader's never.
        let victim = crate::selection::nearest::nearest(&question, &embedder, role("ask_iso_victim"), 20);
        assert!(victim.contains(&vault), "{victim:?}");
        let column = crate::selection::nearest::nearest(&question, &embedder, role("ask_iso_column_reader"), 20);
        assert!(!column.contains(&vault), "{column:?}");
        // The column reader still finds the table by its words.
        Spi::run("SET ROLE ask_iso_column_reader").unwrap();
        let top = listed("SELECT rel::text FROM ask.select_tables('vault', 5)");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(top, ["music.vault"]);
    }
}
