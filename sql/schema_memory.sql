-- The schema selection memory: a text description of each described table and schema, with
-- its embedding. Nobody but the extension's owner reads these tables directly: pg_ask's
-- functions use a stored embedding only for a table the caller may read now and only while
-- the stored description is the one the caller's catalog gives (so dropped, renamed or
-- altered objects are never served from a stale row).
CREATE TABLE schema_memory_tables (
    relid        oid PRIMARY KEY,
    name         text NOT NULL,
    description  text NOT NULL,
    embedding    vector(384),
    embedding_provider text NOT NULL,
    indexed_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE schema_memory_tables IS 'Descriptions of tables and their embeddings (ask.index_schema).';
CREATE INDEX schema_memory_tables_embedding ON schema_memory_tables USING hnsw (embedding vector_cosine_ops);

CREATE TABLE schema_memory_schemas (
    nspid        oid PRIMARY KEY,
    name         text NOT NULL,
    description  text NOT NULL,
    embedding    vector(384),
    embedding_provider text NOT NULL,
    indexed_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE schema_memory_schemas IS 'Descriptions of schemas, each treated as one database, and their embeddings (ask.index_schema).';
CREATE INDEX schema_memory_schemas_embedding ON schema_memory_schemas USING hnsw (embedding vector_cosine_ops);

REVOKE ALL ON schema_memory_tables, schema_memory_schemas FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('schema_memory_tables', '');
SELECT pg_catalog.pg_extension_config_dump('schema_memory_schemas', '');
