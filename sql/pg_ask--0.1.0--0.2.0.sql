-- pg_ask 0.1.0 -> 0.2.0 (ALTER EXTENSION pg_ask UPDATE). Runs with the search path set to the
-- extension's schema, ask. What a fresh 0.2.0 install has and 0.1.0 had not:
\echo Use "ALTER EXTENSION pg_ask UPDATE TO '0.2.0'" to load this file. \quit

-- Evaluation results keep each question's pipeline trace (NULL for the rows of earlier runs).
ALTER TABLE eval_results ADD COLUMN trace jsonb;
COMMENT ON COLUMN eval_results.trace IS 'the question''s pipeline trace, as ask.explain() shows it: every LLM call with its reply and tokens, the guard''s and value correction''s decisions, executions';

-- The ledger marks calls answered from the response cache.
ALTER TABLE llm_calls ADD COLUMN cached boolean NOT NULL DEFAULT false, ADD COLUMN tokens_saved integer;
-- Token counts are never negative (a role writes its own ledger rows; budgets sum them).
ALTER TABLE llm_calls ADD CONSTRAINT llm_calls_tokens_not_negative
    CHECK (prompt_tokens >= 0 AND completion_tokens >= 0 AND tokens_saved >= 0);
COMMENT ON COLUMN llm_calls.cached IS 'answered from the response cache (ask.cache) without a call: no tokens spent';
COMMENT ON COLUMN llm_calls.tokens_saved IS 'for a cached answer, the tokens the original call spent';

-- The response cache (ask.cache) and the usage view: as in sql/cache.sql.
CREATE TABLE llm_cache (
    key        bytea PRIMARY KEY,
    provider   text NOT NULL,
    model      text NOT NULL,
    reply      jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE llm_cache IS 'Replies of LLM requests for ask.cache, keyed by the SHA-256 of the whole request (provider, base URL, body). Read and written by pg_ask only.';
REVOKE ALL ON llm_cache FROM PUBLIC;

-- Tokens and calls per role and day, from the ledger (each role sees its own rows).
CREATE VIEW usage WITH (security_invoker = true) AS
SELECT role,
       (called_at AT TIME ZONE 'UTC')::date AS day,
       count(*) FILTER (WHERE NOT cached) AS calls,
       coalesce(sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)), 0) AS tokens,
       count(*) FILTER (WHERE cached) AS cache_hits,
       coalesce(sum(tokens_saved), 0) AS tokens_saved,
       count(*) FILTER (WHERE outcome <> 'ok') AS failed_calls
FROM llm_calls
GROUP BY role, (called_at AT TIME ZONE 'UTC')::date;
COMMENT ON VIEW usage IS 'LLM calls and tokens per role and day (UTC), cache hits and the tokens they saved; ask.max_tokens_per_day counts the same tokens.';
GRANT SELECT ON usage TO PUBLIC;

-- A failure kind the ledger records since 0.2.0.
COMMENT ON COLUMN llm_calls.outcome IS 'ok, or the failure kind: connect_error, timeout, rate_limited, context_overflow, http_error, malformed, truncated, empty';

-- ask.api_key is only safe from other roles when the library is preloaded.
DO $$
BEGIN
    IF pg_catalog.current_setting('shared_preload_libraries') !~ '(^|[\s,"/])pg_ask($|[\s,"])' THEN
        RAISE NOTICE 'pg_ask is not in shared_preload_libraries: ask.api_key will be refused until it is'
            USING DETAIL = 'Until pg_ask is loaded in a session, PostgreSQL keeps ask.api_key as a placeholder setting that any role can read. A local LLM server without a key needs nothing more.',
                  HINT = 'ALTER SYSTEM SET shared_preload_libraries = ''pg_ask'' (keep the libraries already listed there) and restart PostgreSQL before setting ask.api_key.';
    END IF;
END $$;
