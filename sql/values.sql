-- The value memory: distinct values of indexed text columns, with embeddings and trigrams.
-- Nobody but the extension's owner reads these tables directly: pg_ask's functions check the
-- caller's SELECT privilege on the source column first, then read them as the owner.
--
-- Search: a column of at most 500 values is searched exactly (its rows are found through the
-- primary key, every cosine and trigram similarity computed). A larger column gets its own
-- partial indexes, named value_memory_c<id>_hnsw (HNSW, cosine, on the embeddings as halfvec of
-- the column's dimension), value_memory_c<id>_trgm (pg_trgm GIN) and value_memory_c<id>_rev
-- (btree on the reversed lower-cased values), and is searched through a pool of candidates
-- that pgvector and pg_trgm then score: the HNSW beam and the literal's sort-order neighbours
-- in value_memory_lower and _rev (a typo after the first letters or before the last keeps the
-- literal next to its value). pg_trgm's own trigram search through the GIN index costs too
-- much for correction (about 5 ms at 2,000 three-word names, 70–200 ms at a million: its
-- posting lists grow with the column); ask.similar_values(), which should be complete, and
-- lookups without an embedding use it.
-- One index over every column would return the neighbours of other columns first and miss a
-- small column's; one index per large column also lets each provider have its own dimension.

-- The text-like type a column's type stands for: the type itself, or a domain's base type,
-- when it is text, varchar, char (bpchar), citext or an enum; NULL for anything else.
CREATE FUNCTION _text_base(typ oid) RETURNS oid LANGUAGE sql STABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    WITH RECURSIVE chain(oid, typtype, typbasetype, typname, depth) AS (
        SELECT t.oid, t.typtype, t.typbasetype, t.typname, 0 FROM pg_catalog.pg_type t WHERE t.oid = typ
        UNION ALL
        SELECT t.oid, t.typtype, t.typbasetype, t.typname, c.depth + 1
        FROM chain c JOIN pg_catalog.pg_type t ON t.oid = c.typbasetype
        WHERE c.typtype = 'd' AND c.depth < 32
    )
    SELECT c.oid FROM chain c
    WHERE c.typtype <> 'd'
      AND (c.typtype = 'e'
           OR c.oid IN ('pg_catalog.text'::pg_catalog.regtype, 'pg_catalog.varchar'::pg_catalog.regtype,
                        'pg_catalog.bpchar'::pg_catalog.regtype)
           OR (c.typname = 'citext' AND c.typtype = 'b'));
END;
COMMENT ON FUNCTION _text_base(oid) IS 'The text-like base type (text, varchar, char, citext or an enum) of a type or domain, else NULL.';

CREATE TABLE value_columns (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    relid           oid NOT NULL,
    attnum          smallint NOT NULL,
    distinct_values bigint NOT NULL DEFAULT 0,
    capped          boolean NOT NULL DEFAULT false,
    allow_rls       boolean NOT NULL DEFAULT false,
    embedding_provider text NOT NULL,
    embedding_model text,
    dims            integer,
    own_indexes     boolean NOT NULL DEFAULT false,
    indexed_at      timestamptz NOT NULL DEFAULT now(),
    indexed_by      regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)),
    UNIQUE (relid, attnum)
);
COMMENT ON TABLE value_columns IS 'Columns whose distinct values pg_ask remembers (ask.index_values).';
COMMENT ON COLUMN value_columns.embedding_provider IS 'ask.embedding_provider when the values were embedded (off: trigrams only).';
COMMENT ON COLUMN value_columns.embedding_model IS 'The embedding model: the local model directory''s name, or ask.embedding_model.';
COMMENT ON COLUMN value_columns.dims IS 'Dimension of the stored embeddings (NULL: none).';
COMMENT ON COLUMN value_columns.indexed_by IS 'The role whose rights last read the values (the caller of ask.index_values or ask.refresh_values, or the table''s owner for a refresh it opted in to), by OID (shown by name).';
COMMENT ON COLUMN value_columns.own_indexes IS 'The column has its own partial HNSW, trigram and reversed-value indexes (more than 500 values).';

CREATE TABLE value_memory (
    column_id bigint NOT NULL REFERENCES value_columns(id) ON DELETE CASCADE,
    value     text NOT NULL,
    frequency bigint NOT NULL,
    embedding vector,
    PRIMARY KEY (column_id, value)
);
COMMENT ON TABLE value_memory IS 'Distinct values of indexed columns with their frequency and embedding (any dimension; one per column).';
CREATE INDEX value_memory_lower ON value_memory (column_id, lower(value) COLLATE "C");

REVOKE ALL ON value_columns, value_memory FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('value_columns', '');
SELECT pg_catalog.pg_extension_config_dump('value_memory', '');
