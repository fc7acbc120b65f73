-- The ledger of LLM calls: one row per call, written in the caller's transaction.
CREATE TABLE llm_calls (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    called_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    role              regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)),
    stage             text NOT NULL,
    provider          text NOT NULL,
    model             text NOT NULL,
    prompt_tokens     integer,
    completion_tokens integer,
    ms                double precision NOT NULL,
    http_attempts     integer,
    outcome           text NOT NULL,
    error             text,
    cached            boolean NOT NULL DEFAULT false,
    tokens_saved      integer,
    call_id           bigint,
    CONSTRAINT llm_calls_tokens_not_negative CHECK (prompt_tokens >= 0 AND completion_tokens >= 0 AND tokens_saved >= 0)
);
COMMENT ON TABLE llm_calls IS 'One row per LLM call made by pg_ask: who, which stage, which model, tokens, milliseconds, outcome. Rows are written in the caller''s transaction; each role sees its own rows.';
COMMENT ON COLUMN llm_calls.role IS 'the role that made the call, by OID (shown by name): a role created later with a dropped role''s name sees none of its rows';
COMMENT ON COLUMN llm_calls.stage IS 'pipeline stage: generate, repair, answer, ...';
COMMENT ON COLUMN llm_calls.outcome IS 'ok, or the failure kind: connect_error, timeout, rate_limited, context_overflow, http_error, malformed, truncated, empty';
COMMENT ON COLUMN llm_calls.http_attempts IS 'HTTP requests made for the call, retries included';
COMMENT ON COLUMN llm_calls.cached IS 'answered from the response cache (ask.cache) without a call: no tokens spent';
COMMENT ON COLUMN llm_calls.tokens_saved IS 'for a cached answer, the tokens the original call spent';
COMMENT ON COLUMN llm_calls.call_id IS 'the ask() call the LLM call was made for (ask.questions.id, shown as call_id by ask.explain())';
CREATE INDEX llm_calls_called_at ON llm_calls (called_at);
CREATE INDEX llm_calls_call_id ON llm_calls (call_id);

ALTER TABLE llm_calls ENABLE ROW LEVEL SECURITY;
CREATE POLICY llm_calls_own_read ON llm_calls FOR SELECT USING (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
CREATE POLICY llm_calls_own_write ON llm_calls FOR INSERT WITH CHECK (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));

GRANT USAGE ON SCHEMA ask TO PUBLIC;
GRANT SELECT, INSERT ON llm_calls TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('llm_calls', '');

-- ask.api_key is only safe from other roles when the library is preloaded: until a library
-- defines a setting in a session, PostgreSQL keeps its value as a placeholder anyone can SHOW.
DO $$
BEGIN
    IF pg_catalog.current_setting('shared_preload_libraries') !~ '(^|[\s,"/])pg_ask($|[\s,"])' THEN
        RAISE NOTICE 'pg_ask is not in shared_preload_libraries: ask.api_key will be refused until it is'
            USING DETAIL = 'Until pg_ask is loaded in a session, PostgreSQL keeps ask.api_key as a placeholder setting that any role can read. A local LLM server without a key needs nothing more.',
                  HINT = 'ALTER SYSTEM SET shared_preload_libraries = ''pg_ask'' (keep the libraries already listed there) and restart PostgreSQL before setting ask.api_key.';
    END IF;
END $$;
