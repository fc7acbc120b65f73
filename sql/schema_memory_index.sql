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
-- them, with their owner and their words (names and comments) as the DDL left them: a question
-- from the lexical index takes as candidates only those that share a word with it (one role's
-- DDL adds nothing to the work of other roles' questions), describes them live, and one that
-- may write describes them in the memory again and forgets them here.
CREATE TABLE schema_memory_dirty (
    relid oid PRIMARY KEY,
    owner oid NOT NULL,
    words text[] NOT NULL
);
-- A question reads the notes that share a word with it, never the whole list (fastupdate off:
-- no pending list for every reader to scan).
CREATE INDEX schema_memory_dirty_words ON schema_memory_dirty USING gin (words) WITH (fastupdate = off);
CREATE INDEX schema_memory_dirty_owner ON schema_memory_dirty (owner);
COMMENT ON TABLE schema_memory_dirty IS 'Relations of indexed schemas changed by DDL since the schema selection memory described them (an event trigger), with their owner and words; at most 100 per owner.';

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
-- full comparison of a backend that reads its whole catalog. A note keeps the relation's words
-- split and lower-cased as the lexical index's are (plural -s taken off as well), for the
-- questions' look-up; each owner has at most 100 notes (the DDL of one role cannot grow the
-- list without bound: ask.index_schema() describes the relations past it). The words of a
-- relation noted already are replaced.
CREATE FUNCTION _schema_memory_touched() RETURNS event_trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    WITH touched AS (
        SELECT DISTINCT c.oid, c.relowner
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
           AND EXISTS (SELECT 1 FROM ask.schema_memory_schemas s WHERE s.nspid OPERATOR(pg_catalog.=) c.relnamespace)),
    ranked AS (
        SELECT t.oid, t.relowner,
               EXISTS (SELECT 1 FROM ask.schema_memory_dirty o WHERE o.relid OPERATOR(pg_catalog.=) t.oid) AS noted,
               pg_catalog.row_number() OVER (PARTITION BY t.relowner ORDER BY t.oid) AS n
          FROM touched t)
    INSERT INTO ask.schema_memory_dirty (relid, owner, words)
    SELECT r.oid, r.relowner, ARRAY(
             SELECT DISTINCT pg_catalog.unnest(ARRAY[w, CASE
                    WHEN pg_catalog.length(w) OPERATOR(pg_catalog.<=) 3 OR w OPERATOR(pg_catalog.~) '[^[:alpha:]]' THEN w
                    WHEN w OPERATOR(pg_catalog.~) '^.{2,}ies$' THEN pg_catalog.regexp_replace(w, 'ies$', 'y')
                    WHEN w OPERATOR(pg_catalog.~) '(sses|xes|ches|shes)$' THEN pg_catalog.regexp_replace(w, 'es$', '')
                    WHEN w OPERATOR(pg_catalog.~) '[^uis]s$' THEN pg_catalog.regexp_replace(w, 's$', '')
                    ELSE w END])
               FROM pg_catalog.regexp_split_to_table(pg_catalog.lower(
                        pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
                            pg_catalog.concat_ws(' ', n.nspname, c.relname,
                                (SELECT pg_catalog.string_agg(a.attname::pg_catalog.text, ' ') FROM pg_catalog.pg_attribute a
                                  WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped),
                                (SELECT pg_catalog.string_agg(e.description, ' ') FROM pg_catalog.pg_description e
                                  WHERE e.objoid OPERATOR(pg_catalog.=) c.oid
                                    AND e.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid)),
                            '([[:lower:]])([[:upper:]])', '\1 \2', 'g'),
                            '([[:alpha:]])([[:digit:]])', '\1 \2', 'g'),
                            '([[:digit:]])([[:alpha:]])', '\1 \2', 'g')),
                    '[^[:alnum:]]+') AS w
              WHERE w OPERATOR(pg_catalog.<>) '')
      FROM ranked r
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.oid
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE r.noted
        OR r.n OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM ask.schema_memory_dirty o
                                        WHERE o.owner OPERATOR(pg_catalog.=) r.relowner) OPERATOR(pg_catalog.<=) 100
    ON CONFLICT ON CONSTRAINT schema_memory_dirty_pkey DO UPDATE SET words = EXCLUDED.words;
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
