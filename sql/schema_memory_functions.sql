CREATE FUNCTION index_schema(schemas name[] DEFAULT NULL)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _index_schema(schemas::text[]);
COMMENT ON FUNCTION index_schema(name[]) IS
    'Build the schema selection memory: a description and an embedding of every table the caller may read in the given schemas (NULL: all) and of each schema. Returns the number of tables described.';
CREATE FUNCTION select_tables(question text, k int DEFAULT 10)
    RETURNS TABLE (rel regclass, score float8) LANGUAGE sql VOLATILE PARALLEL UNSAFE
    BEGIN ATOMIC SELECT pg_catalog.to_regclass(s.rel), s.score FROM _select_tables(question, coalesce(k, 10)) s; END;
COMMENT ON FUNCTION select_tables(text, int) IS
    'The k readable tables that best match a question: embedding similarity fused with a lexical score. No LLM call.';
CREATE FUNCTION select_schemas(question text, k int DEFAULT 5)
    RETURNS TABLE (schema name, score float8) LANGUAGE sql VOLATILE PARALLEL UNSAFE
    BEGIN ATOMIC SELECT s.schema::name, s.score FROM _select_schemas(question, coalesce(k, 5)) s; END;
COMMENT ON FUNCTION select_schemas(text, int) IS
    'The k schemas (each treated as one database) that best match a question: embedding similarity fused with a lexical score. No LLM call.';
