-- The value memory: distinct values of indexed text columns, with embeddings and trigrams.
-- Nobody but the extension's owner reads these tables directly: pg_ask's functions check the
-- caller's SELECT privilege on the source column first, then read them as the owner.
CREATE TABLE value_columns (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    relid           oid NOT NULL,
    attnum          smallint NOT NULL,
    distinct_values bigint NOT NULL DEFAULT 0,
    capped          boolean NOT NULL DEFAULT false,
    allow_rls       boolean NOT NULL DEFAULT false,
    embedding_provider text NOT NULL,
    indexed_at      timestamptz NOT NULL DEFAULT now(),
    indexed_by      name NOT NULL DEFAULT current_user,
    UNIQUE (relid, attnum)
);
COMMENT ON TABLE value_columns IS 'Columns whose distinct values pg_ask remembers (ask.index_values).';

CREATE TABLE value_memory (
    column_id bigint NOT NULL REFERENCES value_columns(id) ON DELETE CASCADE,
    value     text NOT NULL,
    frequency bigint NOT NULL,
    embedding vector(384),
    PRIMARY KEY (column_id, value)
);
COMMENT ON TABLE value_memory IS 'Distinct values of indexed columns with their frequency and embedding.';
CREATE INDEX value_memory_embedding ON value_memory USING hnsw (embedding vector_cosine_ops);
CREATE INDEX value_memory_trigram ON value_memory USING gin (value gin_trgm_ops);

REVOKE ALL ON value_columns, value_memory FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('value_columns', '');
SELECT pg_catalog.pg_extension_config_dump('value_memory', '');
