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
    indexed_at   timestamptz NOT NULL DEFAULT now()
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
    'The description''s embedding, any dimension (NULL: stored with embeddings off). Cosines with a question are computed for the caller''s candidates only (a few hundred rows), so no vector index.';
COMMENT ON COLUMN schema_memory_tables.embedding_provider IS 'ask.embedding_provider when the description was embedded (off: no embedding).';
COMMENT ON COLUMN schema_memory_tables.embedding_model IS 'The embedding model: the local model directory''s name, or ask.embedding_model (NULL when off).';
COMMENT ON COLUMN schema_memory_schemas.embedding_provider IS 'ask.embedding_provider when the description was embedded (off: no embedding).';
COMMENT ON COLUMN schema_memory_schemas.embedding_model IS 'The embedding model: the local model directory''s name, or ask.embedding_model (NULL when off).';

REVOKE ALL ON schema_memory_tables, schema_memory_schemas FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('schema_memory_tables', '');
SELECT pg_catalog.pg_extension_config_dump('schema_memory_schemas', '');
