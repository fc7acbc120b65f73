-- Conversations: ask.conversation_start(), _end(), _forget(), _purge(); turns of standalone
-- questions through ask.sql(); each role reaches only its own conversations.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS questions_before FROM ask.questions \gset
SELECT ask.conversation_start('golden conversations') AS conv \gset
SELECT title, role = current_user::regrole AS mine, ended_at IS NULL AS open FROM ask.conversations WHERE id = :conv;
-- A question without follow-up signs is a standalone turn.
SELECT ask.sql('golden conversations: list the cities of New York state', conversation => :conv);
SELECT turn, question, reading, standalone, sql, columns, row_count, call_id IS NOT NULL AS has_call
FROM ask.conversation_turns WHERE conversation_id = :conv ORDER BY turn;
-- A title of more than 200 characters; NULL (no title).
SELECT * FROM error_of($$SELECT ask.conversation_start(repeat('t', 201))$$);
SELECT ask.conversation_start() AS untitled \gset
SELECT title IS NULL AS untitled FROM ask.conversations WHERE id = :untitled;
-- Another role's id is as if it did not exist, for every function that takes one.
CREATE ROLE conversations_other;
GRANT SELECT ON cities TO conversations_other;
SET ROLE conversations_other;
SELECT count(*) AS visible_conversations FROM ask.conversations;
SELECT count(*) AS visible_turns FROM ask.conversation_turns;
SELECT code, regexp_replace(message, '\d+', 'N', 'g') AS message, hint FROM error_of(format('SELECT ask.conversation_end(%s)', :conv));
SELECT ask.conversation_forget(:conv) AS forgot_anothers;
SELECT code, regexp_replace(message, '\d+', 'N', 'g') AS message, hint FROM error_of(format('SELECT ask.sql(%L, conversation => %s)', 'golden conversations: list the cities of New York state', :conv));
-- Purging every role's conversations is a superuser's.
SELECT * FROM error_of($$SELECT ask.conversation_purge('0 seconds', all_roles => true)$$);
SELECT ask.conversation_purge('-1 day') AS purged_own;
RESET ROLE;
SELECT count(*) AS still_there FROM ask.conversations WHERE id IN (:conv, :untitled);
-- Ended: no more turns (55000); ending again is false; the turns stay readable.
SELECT ask.conversation_end(:conv) AS ended;
SELECT ask.conversation_end(:conv) AS ended_again;
SELECT code, regexp_replace(message, '\d+', 'N', 'g') AS message, hint FROM error_of(format('SELECT ask.sql(%L, conversation => %s)', 'golden conversations: list the cities of New York state', :conv));
SELECT count(*) AS turns FROM ask.conversation_turns WHERE conversation_id = :conv;
-- Ids that do not exist, NULLs.
SELECT code, message, hint FROM error_of('SELECT ask.conversation_end(-1)');
SELECT ask.conversation_forget(-1) AS forgot_none;
SELECT ask.conversation_end(NULL) IS NULL AS end_null, ask.conversation_forget(NULL) IS NULL AS forget_null,
       ask.conversation_purge(NULL) IS NULL AS purge_null;
-- Not in a read-only transaction.
BEGIN READ ONLY;
SELECT code, message FROM error_of('SELECT ask.conversation_start()');
SELECT code, message FROM error_of(format('SELECT ask.conversation_forget(%s)', :conv));
SELECT code, message FROM error_of($$SELECT ask.conversation_purge('1 day')$$);
ROLLBACK;
-- Forget: gone with its turns; a purge of what is older than a day leaves today's.
SELECT ask.conversation_forget(:conv) AS forgot;
SELECT count(*) AS turns FROM ask.conversation_turns WHERE conversation_id = :conv;
SELECT ask.conversation_purge('1 day') AS purged_old;
SELECT ask.conversation_purge('-1 second', all_roles => true) >= 1 AS purged_all;
SELECT count(*) AS conversations FROM ask.conversations;
DELETE FROM ask.questions WHERE id > :questions_before;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
REVOKE ALL ON cities FROM conversations_other;
DROP ROLE conversations_other;
