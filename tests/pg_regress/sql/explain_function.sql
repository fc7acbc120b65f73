-- ask.explain(): the trace of a question's pipeline, which does not raise: a failing run ends
-- with its error; the per-call arguments; the key scrubbed; what another role sees.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS questions_before FROM ask.questions \gset
CREATE TEMP TABLE explain_function_trace AS
SELECT t FROM ask.explain('golden explain: which cities are in California?') t;
SELECT t->>'source' AS source, t->'attempts' AS attempts, t->>'final_sql' AS final_sql,
       jsonb_path_query_first(t, '$.stages[*] ? (@.stage == "execute").output.rows') AS rows
FROM explain_function_trace;
-- Its call_id is the call's row in ask.questions.
SELECT q.question, q.source FROM explain_function_trace e JOIN ask.questions q ON q.id = (e.t->>'call_id')::bigint;
DROP TABLE explain_function_trace;
-- A run that fails returns its trace with the error, and is recorded as failed.
SELECT t->'error'->>'message' AS error, t->>'final_sql' IS NULL AS no_sql
FROM ask.explain('golden explain: a question answered without SQL', max_attempts => 1) t;
SELECT source FROM ask.questions ORDER BY id DESC LIMIT 1;
-- Arguments it refuses raise, before any stage runs.
SELECT * FROM error_of($$SELECT ask.explain('golden explain: which cities are in California?', provider => 'gpt')$$);
SELECT * FROM error_of($$SELECT ask.explain('golden explain: which cities are in California?', max_attempts => 99)$$);
SELECT code, message FROM error_of($$SELECT ask.explain('golden explain: which cities are in California?', conversation => -1)$$);
-- An empty question, a server that is not there: the trace says so.
SELECT t->'error'->>'message' AS error, t->'llm_calls' AS llm_calls FROM ask.explain('') t;
SELECT t->'error'->>'kind' AS kind, t->'error'->>'stage' AS stage
FROM ask.explain('golden explain: which cities are in California?', base_url => 'http://127.0.0.1:1/v1') t;
-- The key never appears in a trace, prompts included.
SET ask.api_key = 'sk-golden-explain-secret';
SET ask.explain_prompts = on;
SELECT position('sk-golden-explain-secret' IN t::text) = 0 AS key_absent,
       jsonb_path_exists(t, '$.stages[*].input.prompt') AS prompts_shown
FROM ask.explain('golden explain: which cities are in California?') t;
RESET ask.explain_prompts;
RESET ask.api_key;
-- A role that may read no table gets a trace with the refusal; one that may read cities, its
-- own trace and calls.
CREATE ROLE explain_function_nobody;
SET ROLE explain_function_nobody;
SELECT t->'error'->>'message' AS error, t->'llm_calls' AS llm_calls FROM ask.explain('golden explain: which cities are in California?') t;
RESET ROLE;
GRANT SELECT ON cities TO explain_function_nobody;
SET ROLE explain_function_nobody;
SELECT t->>'final_sql' AS final_sql FROM ask.explain('golden explain: which cities are in California?') t;
SELECT count(*) AS own_questions FROM ask.questions;
RESET ROLE;
DELETE FROM ask.questions WHERE id > :questions_before;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
REVOKE ALL ON cities FROM explain_function_nobody;
DROP ROLE explain_function_nobody;
