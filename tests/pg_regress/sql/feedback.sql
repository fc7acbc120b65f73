-- ask.feedback(): marking an ask() call right (its SQL becomes a verified query) or wrong
-- (with the corrected SQL, verified instead); only the caller's own calls.
SELECT last_value AS vq_last, is_called AS vq_called FROM ask.verified_queries_id_seq \gset
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS questions_before FROM ask.questions \gset
SELECT ask.sql('golden feedback: how many cities are in California?');
SELECT id AS call FROM ask.questions ORDER BY id DESC LIMIT 1 \gset
-- Right: the call's own SQL, verified for its question.
SELECT ask.feedback(:call, true) AS verified_id \gset
SELECT question, sql, source FROM ask.verified_queries WHERE id = :verified_id;
SELECT feedback, feedback_sql IS NULL AS no_correction FROM ask.questions WHERE id = :call;
-- Asked again, the question is answered from it, without an LLM call (its NOTICE names the
-- verified query's id, which varies: not shown).
SELECT count(*) AS llm_calls_before FROM ask.llm_calls WHERE id > :calls_before \gset
SET client_min_messages = warning;
SELECT ask.sql('golden feedback: how many cities are in California?');
RESET client_min_messages;
SELECT count(*) - :llm_calls_before AS new_llm_calls FROM ask.llm_calls WHERE id > :calls_before;
SELECT id AS again FROM ask.questions ORDER BY id DESC LIMIT 1 \gset
SELECT source, verified_id = :verified_id AS from_it FROM ask.questions WHERE id = :again;
-- Marked right again, it is the same verified query, not a second one.
SELECT ask.feedback(:again, true) = :verified_id AS same_query;
SELECT count(*) AS verified FROM ask.verified_queries;
SELECT ask.remove_verified(:verified_id);
-- Wrong, with the corrected SQL: the correction is verified for the question.
SELECT ask.feedback(:call, false, 'SELECT count(*) AS cities FROM public.cities WHERE state_code = ''CA''') > 0 AS corrected;
SELECT sql, source FROM ask.verified_queries WHERE question = 'golden feedback: how many cities are in California?';
SELECT feedback, feedback_sql FROM ask.questions WHERE id = :call;
-- Wrong, without a correction: only the mark.
SELECT ask.feedback(:call, false) IS NULL AS nothing_verified;
-- Refusals: a correction with correct => true, a correction that is not a read-only query or
-- fails, a call that does not exist.
SELECT * FROM error_of(format('SELECT ask.feedback(%s, true, %L)', :call, 'SELECT 1'));
SELECT * FROM error_of(format('SELECT ask.feedback(%s, false, %L)', :call, 'DELETE FROM public.cities'));
SELECT * FROM error_of(format('SELECT ask.feedback(%s, false, %L)', :call, 'SELECT nope FROM public.cities'));
SELECT * FROM error_of('SELECT ask.feedback(-1, true)');
-- A call whose run failed has no SQL to verify.
SELECT t->'error'->>'message' AS error FROM ask.explain('golden feedback: a question without SQL', max_attempts => 1) t;
SELECT id AS failed FROM ask.questions ORDER BY id DESC LIMIT 1 \gset
SELECT code, regexp_replace(message, '\d+', 'N', 'g') AS message, hint FROM error_of(format('SELECT ask.feedback(%s, true)', :failed));
-- Another role may not mark the call: for it, the call does not exist.
CREATE ROLE feedback_other;
GRANT SELECT ON cities TO feedback_other;
SET ROLE feedback_other;
SELECT code, regexp_replace(message, '\d+', 'N', 'g') AS message, hint FROM error_of(format('SELECT ask.feedback(%s, true)', :call));
SELECT count(*) AS calls_visible FROM ask.questions;
RESET ROLE;
-- Not in a read-only transaction.
BEGIN READ ONLY;
SELECT code, message FROM error_of(format('SELECT ask.feedback(%s, true)', :call));
ROLLBACK;
DELETE FROM ask.verified_queries;
DELETE FROM ask.questions WHERE id > :questions_before;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
REVOKE ALL ON cities FROM feedback_other;
DROP ROLE feedback_other;
SELECT setval('ask.verified_queries_id_seq', :vq_last, :'vq_called') IS NOT NULL AS sequence_restored;
