-- The ledger (ask.llm_calls), the call log (ask.questions) and ask.usage: each role reads its
-- own rows; nobody plants rows as another role or changes them.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS questions_before FROM ask.questions \gset
CREATE ROLE ledger_a;
CREATE ROLE ledger_b;
GRANT SELECT ON cities TO ledger_a, ledger_b;
SET ROLE ledger_a;
SELECT ask.sql('golden ledger: how many cities are there?');
SELECT stage, outcome, role::text, prompt_tokens > 0 AS prompt_tokens, completion_tokens > 0 AS completion_tokens,
       ms >= 0 AS timed, cached, http_attempts, error
FROM ask.llm_calls;
SELECT question, source, role::text FROM ask.questions;
SELECT role::text, calls, tokens > 0 AS tokens, cache_hits, failed_calls, verified_answers FROM ask.usage;
RESET ROLE;
-- Another role sees none of it.
SET ROLE ledger_b;
SELECT count(*) AS calls FROM ask.llm_calls;
SELECT count(*) AS questions FROM ask.questions;
SELECT count(*) AS usage_rows FROM ask.usage;
-- It may add rows of its own to the ledger, never another role's; it changes and deletes none.
SELECT * FROM error_of($$INSERT INTO ask.llm_calls (role, stage, provider, model, prompt_tokens, completion_tokens, ms, http_attempts, outcome) VALUES ('ledger_a', 'generate', 'openai', 'm', 1000000, 0, 0, 1, 'ok')$$);
SELECT * FROM error_of($$UPDATE ask.llm_calls SET prompt_tokens = 0$$);
SELECT * FROM error_of($$DELETE FROM ask.llm_calls$$);
SELECT * FROM error_of($$DELETE FROM ask.questions$$);
SELECT * FROM error_of($$UPDATE ask.questions SET feedback = true$$);
SELECT * FROM error_of($$TRUNCATE ask.llm_calls$$);
RESET ROLE;
-- A superuser sees every role's rows.
SELECT role::text, count(*) AS calls FROM ask.llm_calls WHERE id > :calls_before GROUP BY 1 ORDER BY 1;
-- In a read-only transaction the call is made and nothing is written.
SET ROLE ledger_a;
BEGIN READ ONLY;
SELECT ask.sql('golden ledger: how many cities are there?') IS NOT NULL AS answered;
COMMIT;
SELECT count(*) AS calls FROM ask.llm_calls;
RESET ROLE;
-- A failed statement takes its ledger rows with it.
SET ROLE ledger_a;
SELECT * FROM error_of($$SELECT ask.sql('golden ledger: how many cities are there?', base_url => 'http://127.0.0.1:1/v1')$$);
SELECT count(*) AS calls FROM ask.llm_calls;
RESET ROLE;
DELETE FROM ask.questions WHERE id > :questions_before;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
REVOKE ALL ON cities FROM ledger_a, ledger_b;
DROP ROLE ledger_a, ledger_b;
