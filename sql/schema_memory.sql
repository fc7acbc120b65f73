-- The schema selection memory: a text description of each described table and schema, with
-- its embedding. Nobody but the extension's owner reads these tables directly: pg_ask's
-- functions use a stored embedding only for a table the caller may read now and only while
-- the stored description is the one the caller's catalog gives (so dropped, renamed or
-- altered objects are never served from a stale row), and compare a stored embedding with a
-- question's only when both come from the same provider and model.
CREATE TABLE schema_memory_tables (
    relid        oid PRIMARY KEY,
    name         text NOT NULL,
    description  text NOT NULL,
    embedding    vector,
    embedding_provider text NOT NULL,
    embedding_model text,
    indexed_at   timestamptz NOT NULL DEFAULT now(),
    field_lengths int4[]
);
COMMENT ON TABLE schema_memory_tables IS 'Descriptions of tables and their embeddings (ask.index_schema).';

CREATE TABLE schema_memory_schemas (
    nspid        oid PRIMARY KEY,
    name         text NOT NULL,
    description  text NOT NULL,
    embedding    vector,
    embedding_provider text NOT NULL,
    embedding_model text,
    indexed_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE schema_memory_schemas IS 'Descriptions of schemas, each treated as one database, and their embeddings (ask.index_schema).';

COMMENT ON COLUMN schema_memory_tables.embedding IS
    'The description''s embedding, any dimension (NULL: stored with embeddings off). A backend reads the embeddings of the caller''s candidates once, by key, and compares each question with them itself, so no vector index.';
COMMENT ON COLUMN schema_memory_tables.embedding_provider IS 'ask.embedding_provider when the description was embedded (off: no embedding).';
COMMENT ON COLUMN schema_memory_tables.embedding_model IS 'The embedding model: the local model directory''s name, or ask.embedding_model (NULL when off).';
COMMENT ON COLUMN schema_memory_tables.field_lengths IS
    'The length in words of each field of the table''s words (schema, table, column, comment, value names; values are not stored): its part of the lexical index in ask.schema_memory_terms. NULL: stored before the lexical index existed.';
COMMENT ON COLUMN schema_memory_schemas.embedding_provider IS 'ask.embedding_provider when the description was embedded (off: no embedding).';
COMMENT ON COLUMN schema_memory_schemas.embedding_model IS 'The embedding model: the local model directory''s name, or ask.embedding_model (NULL when off).';

REVOKE ALL ON schema_memory_tables, schema_memory_schemas FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('schema_memory_tables', '');
SELECT pg_catalog.pg_extension_config_dump('schema_memory_schemas', '');
-- A version of the schema selection memory, moved on by every statement that writes it, in the
-- writer's transaction: a backend that found the memory fresh for its catalog keeps that
-- finding while the version (and its catalog) stay the same, instead of comparing every
-- description again at each question.
CREATE TABLE schema_memory_version (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE schema_memory_version IS 'One row: a number moved on by every write to the schema selection memory (a statement trigger on its two tables).';
INSERT INTO schema_memory_version DEFAULT VALUES;
CREATE FUNCTION _schema_memory_changed() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE ask.schema_memory_version SET version = version OPERATOR(pg_catalog.+) 1;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION _schema_memory_changed() FROM PUBLIC;
CREATE TRIGGER schema_memory_tables_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON schema_memory_tables
    FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_changed();
CREATE TRIGGER schema_memory_schemas_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON schema_memory_schemas
    FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_changed();
REVOKE ALL ON schema_memory_version FROM PUBLIC;
