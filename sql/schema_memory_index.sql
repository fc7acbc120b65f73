-- The schema selection memory's lexical index: the words of each described table's names and
-- comments (never its values: those are scored live, for the tables a role may read), so that
-- a question reads only the tables that share a word with it instead of the whole catalog.
-- Names and comments are what pg_catalog shows every role; the counts below tell a role
-- nothing more.
CREATE TABLE schema_memory_terms (
    term  text NOT NULL,
    relid oid NOT NULL REFERENCES schema_memory_tables (relid) ON DELETE CASCADE,
    tf    int4[] NOT NULL,
    PRIMARY KEY (term, relid)
);
CREATE INDEX schema_memory_terms_relid ON schema_memory_terms (relid);
COMMENT ON TABLE schema_memory_terms IS 'The lexical index of the schema selection memory: a row per word and table, from its names and comments.';
COMMENT ON COLUMN schema_memory_terms.tf IS 'The word''s occurrences in each field: schema name, table name, column names, comments, values (always 0).';

-- Each word's document frequency, kept by statement triggers on schema_memory_terms.
CREATE TABLE schema_memory_vocabulary (
    term    text PRIMARY KEY,
    df      int4 NOT NULL,
    name_df int4 NOT NULL
);
COMMENT ON TABLE schema_memory_vocabulary IS 'The words of the lexical index: in how many tables each occurs (df), of which in a name (name_df).';

-- Relations that DDL created or changed in an indexed schema since the memory last described
-- them: every selection from the lexical index describes them live as candidates, and one
-- that may write describes them in the memory again and forgets them here.
CREATE TABLE schema_memory_dirty (
    relid oid PRIMARY KEY
);
COMMENT ON TABLE schema_memory_dirty IS 'Relations of indexed schemas changed by DDL since the schema selection memory described them (an event trigger).';

REVOKE ALL ON schema_memory_terms, schema_memory_vocabulary, schema_memory_dirty FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('schema_memory_terms', '');
SELECT pg_catalog.pg_extension_config_dump('schema_memory_vocabulary', '');
SELECT pg_catalog.pg_extension_config_dump('schema_memory_dirty', '');

CREATE FUNCTION _schema_memory_terms_added() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO ask.schema_memory_vocabulary (term, df, name_df)
    SELECT DISTINCT a.term, 0, 0 FROM added a
     WHERE NOT EXISTS (SELECT 1 FROM ask.schema_memory_vocabulary v WHERE v.term OPERATOR(pg_catalog.=) a.term);
    UPDATE ask.schema_memory_vocabulary v SET df = v.df OPERATOR(pg_catalog.+) a.n
      FROM (SELECT o.term, pg_catalog.count(*)::pg_catalog.int4 AS n FROM added o GROUP BY o.term) a
     WHERE v.term OPERATOR(pg_catalog.=) a.term;
    UPDATE ask.schema_memory_vocabulary v SET name_df = v.name_df OPERATOR(pg_catalog.+) a.n
      FROM (SELECT o.term, pg_catalog.count(*)::pg_catalog.int4 AS n FROM added o
             WHERE o.tf[1] OPERATOR(pg_catalog.>) 0 OR o.tf[2] OPERATOR(pg_catalog.>) 0 OR o.tf[3] OPERATOR(pg_catalog.>) 0
             GROUP BY o.term) a
     WHERE v.term OPERATOR(pg_catalog.=) a.term;
    RETURN NULL;
END $$;
CREATE FUNCTION _schema_memory_terms_removed() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE ask.schema_memory_vocabulary v SET df = v.df OPERATOR(pg_catalog.-) r.n
      FROM (SELECT o.term, pg_catalog.count(*)::pg_catalog.int4 AS n FROM removed o GROUP BY o.term) r
     WHERE v.term OPERATOR(pg_catalog.=) r.term;
    UPDATE ask.schema_memory_vocabulary v SET name_df = v.name_df OPERATOR(pg_catalog.-) r.n
      FROM (SELECT o.term, pg_catalog.count(*)::pg_catalog.int4 AS n FROM removed o
             WHERE o.tf[1] OPERATOR(pg_catalog.>) 0 OR o.tf[2] OPERATOR(pg_catalog.>) 0 OR o.tf[3] OPERATOR(pg_catalog.>) 0
             GROUP BY o.term) r
     WHERE v.term OPERATOR(pg_catalog.=) r.term;
    DELETE FROM ask.schema_memory_vocabulary v
     WHERE v.df OPERATOR(pg_catalog.<=) 0 AND v.term OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT o.term FROM removed o));
    RETURN NULL;
END $$;
CREATE FUNCTION _schema_memory_terms_truncated() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    TRUNCATE ask.schema_memory_vocabulary;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION _schema_memory_terms_added(), _schema_memory_terms_removed(), _schema_memory_terms_truncated() FROM PUBLIC;
CREATE TRIGGER schema_memory_terms_added AFTER INSERT ON schema_memory_terms
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_terms_added();
CREATE TRIGGER schema_memory_terms_removed AFTER DELETE ON schema_memory_terms
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_terms_removed();
CREATE TRIGGER schema_memory_terms_truncated AFTER TRUNCATE ON schema_memory_terms
    FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_terms_truncated();

-- Mark the relations a DDL command created or changed (a schema's: all of its relations) when
-- they are in a schema the memory describes. It runs as the extension's owner (the role
-- running the DDL may not write the memory), with the search path pinned and every operator
-- qualified, skips temporary objects and partitions (never described), and never fails the
-- command: on any error it warns and the memory is refreshed by ask.index_schema() or by the
-- full comparison of a backend that reads its whole catalog.
CREATE FUNCTION _schema_memory_touched() RETURNS event_trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO ask.schema_memory_dirty (relid)
    SELECT DISTINCT c.oid
      FROM pg_catalog.pg_event_trigger_ddl_commands() d
      JOIN pg_catalog.pg_class c
        ON (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
            AND c.oid OPERATOR(pg_catalog.=) d.objid)
        OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
            AND c.relnamespace OPERATOR(pg_catalog.=) d.objid)
     WHERE NOT d.in_extension
       AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog."char"[])
       AND c.relpersistence OPERATOR(pg_catalog.<>) 't'
       AND NOT c.relispartition
       AND EXISTS (SELECT 1 FROM ask.schema_memory_schemas s WHERE s.nspid OPERATOR(pg_catalog.=) c.relnamespace)
    ON CONFLICT DO NOTHING;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'pg_ask: could not note a change for the schema selection memory: %', SQLERRM
        USING HINT = 'ask.index_schema() describes the changed tables again.';
END $$;
REVOKE ALL ON FUNCTION _schema_memory_touched() FROM PUBLIC;
CREATE EVENT TRIGGER ask_schema_memory_touched ON ddl_command_end EXECUTE FUNCTION _schema_memory_touched();

-- The tables nearest to a question by embedding are read through an HNSW index of the
-- embeddings of one dimension, cast to it (the column takes any dimension): here 384, that of
-- all-MiniLM-L6-v2, the local embedder; ask.index_schema() gives other dimensions theirs.
CREATE INDEX IF NOT EXISTS schema_memory_tables_hnsw_384 ON ask.schema_memory_tables
    USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) WHERE vector_dims(embedding) = 384;
