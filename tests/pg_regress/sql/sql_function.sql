-- ask.sql(): the checked SQL for a question; its per-call arguments and their refusals, and
-- what a role without privileges gets.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS questions_before FROM ask.questions \gset
SELECT ask.sql('golden sql: which cities are in California?');
-- Recorded: the call in the ledger and the question in ask.questions.
SELECT stage, outcome, model, provider FROM ask.llm_calls WHERE id > :calls_before ORDER BY id;
SELECT question, source, sql IS NOT NULL AS has_sql FROM ask.questions WHERE id > :questions_before ORDER BY id;
-- Per-call settings: the model and the provider (the stand-in speaks Ollama's protocol too).
SELECT ask.sql('golden sql: which cities are in California?', model => 'golden-model') IS NOT NULL AS answered;
SELECT ask.sql('golden sql: which cities are in California?', provider => 'ollama', base_url => 'http://127.0.0.1:47811') IS NOT NULL AS answered;
SELECT model, provider FROM ask.llm_calls WHERE id > :calls_before ORDER BY id;
-- Refusals: an unknown provider, max_attempts out of range, an empty question, a conversation
-- that does not exist, a temperature out of range, a server that is not there.
SELECT * FROM error_of($$SELECT ask.sql('golden sql: which cities are in California?', provider => 'gpt')$$);
SELECT * FROM error_of($$SELECT ask.sql('golden sql: which cities are in California?', max_attempts => 0)$$);
SELECT * FROM error_of($$SELECT ask.sql('golden sql: which cities are in California?', max_attempts => 21)$$);
SELECT * FROM error_of($$SELECT ask.sql('golden sql: which cities are in California?', temperature => -1)$$);
SELECT * FROM error_of($$SELECT ask.sql('')$$);
SELECT * FROM error_of($$SELECT ask.sql('golden sql: which cities are in California?', conversation => -1)$$);
SELECT * FROM error_of($$SELECT ask.sql('golden sql: which cities are in California?', base_url => 'http://127.0.0.1:1/v1')$$);
-- In a read-only transaction it answers; nothing is written.
SELECT count(*) AS calls FROM ask.llm_calls WHERE id > :calls_before \gset
BEGIN READ ONLY;
SELECT ask.sql('golden sql: which cities are in California?') IS NOT NULL AS answered;
COMMIT;
SELECT count(*) - :calls AS new_calls FROM ask.llm_calls WHERE id > :calls_before;
-- A role that may read no table: refused before any LLM call. One that may read the table: the
-- same SQL, its call in its own rows of the ledger.
CREATE ROLE sql_function_nobody;
SET ROLE sql_function_nobody;
SELECT * FROM error_of($$SELECT ask.sql('golden sql: which cities are in California?')$$);
SELECT count(*) AS calls_visible FROM ask.llm_calls;
RESET ROLE;
GRANT SELECT ON cities TO sql_function_nobody;
SET ROLE sql_function_nobody;
SELECT ask.sql('golden sql: which cities are in California?');
SELECT stage, outcome FROM ask.llm_calls;
RESET ROLE;
DELETE FROM ask.questions WHERE id > :questions_before;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
REVOKE ALL ON cities FROM sql_function_nobody;
DROP ROLE sql_function_nobody;
