CREATE FUNCTION embed(text text) RETURNS vector
    LANGUAGE sql VOLATILE PARALLEL UNSAFE STRICT
    RETURN embed_real(text)::vector;
COMMENT ON FUNCTION embed(text) IS 'The embedding of a text under ask.embedding_provider (local all-MiniLM-L6-v2 by default: 384 dimensions, L2-normalised).';
