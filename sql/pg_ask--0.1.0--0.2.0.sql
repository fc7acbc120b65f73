-- pg_ask 0.1.0 -> 0.2.0 (ALTER EXTENSION pg_ask UPDATE). Runs with the search path set to the
-- extension's schema, ask. What a fresh 0.2.0 install has and 0.1.0 had not:
\echo Use "ALTER EXTENSION pg_ask UPDATE TO '0.2.0'" to load this file. \quit

-- Evaluation results keep each question's pipeline trace (NULL for the rows of earlier runs).
ALTER TABLE eval_results ADD COLUMN trace jsonb;
COMMENT ON COLUMN eval_results.trace IS 'the question''s pipeline trace, as ask.explain() shows it: every LLM call with its reply and tokens, the guard''s and value correction''s decisions, executions';

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
