-- The response cache (ask.cache): the reply of an LLM request, reused for the identical
-- request (same provider, base URL, model, settings and full prompt) up to ask.cache_ttl.
-- Only pg_ask reads and writes it, as the extension's owner, keyed by the SHA-256 of the whole
-- request: a role finds a reply only for a request it sends itself, and nobody can store a
-- reply that did not come from the server the request names.
CREATE TABLE llm_cache (
    role       regrole NOT NULL,
    key        bytea NOT NULL,
    provider   text NOT NULL,
    model      text NOT NULL,
    reply      jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (role, key)
);
COMMENT ON TABLE llm_cache IS 'Replies of LLM requests for ask.cache, per role (by OID) and keyed by the SHA-256 of the whole request (provider, base URL, body): a role is answered only from replies to its own requests. Read and written by pg_ask only.';
REVOKE ALL ON llm_cache FROM PUBLIC;
