-- ask.embed() and ask.embed_real(): the embedding of a text under ask.embedding_provider.
-- Local (all-MiniLM-L6-v2): 384 dimensions, L2-normalised, the same text the same vector.
SELECT vector_dims(ask.embed('Italian restaurants in Los Angeles')) AS dims,
       round(vector_norm(ask.embed('Italian restaurants in Los Angeles'))::numeric, 3) AS norm;
SELECT ask.embed('pasta') = ask.embed('pasta') AS deterministic;
SELECT array_length(ask.embed_real('pasta'), 1) AS dims,
       ask.embed_real('pasta')::vector = ask.embed('pasta') AS same;
-- Nearer for nearer meanings.
SELECT ask.embed('pizza') <=> ask.embed('pasta') < ask.embed('pizza') <=> ask.embed('tax return') AS nearer;
-- NULL in, NULL out; an empty text has an embedding too.
SELECT ask.embed(NULL) IS NULL AS embed_null, ask.embed_real(NULL) IS NULL AS embed_real_null;
SELECT vector_dims(ask.embed('')) AS empty_dims;
-- Off: refused.
SET ask.embedding_provider = off;
SELECT * FROM error_of($$SELECT ask.embed('pasta')$$);
SELECT * FROM error_of($$SELECT ask.embed_real('pasta')$$);
RESET ask.embedding_provider;
SELECT * FROM error_of($$SET ask.embedding_provider = 'word2vec'$$);
-- An embedding server (the stand-in's OpenAI-compatible /embeddings): its dimensions, and the
-- call in the ledger.
SELECT coalesce(max(id), 0) AS before FROM ask.llm_calls \gset
SET ask.embedding_provider = openai;
SET ask.embedding_base_url = 'http://127.0.0.1:47811/v1';
SELECT vector_dims(ask.embed('pasta')) > 0 AS served;
SELECT stage, outcome FROM ask.llm_calls WHERE id > :before ORDER BY id;
-- A server that is not there.
SET ask.embedding_base_url = 'http://127.0.0.1:1/v1';
SELECT code, message FROM error_of($$SELECT ask.embed('pasta')$$);
RESET ask.embedding_base_url;
RESET ask.embedding_provider;
-- Any role may embed.
CREATE ROLE embed_user;
SET ROLE embed_user;
SELECT vector_dims(ask.embed('pasta')) AS dims;
RESET ROLE;
DROP ROLE embed_user;
DELETE FROM ask.llm_calls WHERE id > :before;
