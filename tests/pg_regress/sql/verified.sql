-- Verified queries (ask.add_verified, ask.feedback, ask.verify_suite, ask.remove_verified) and
-- clarifying questions (ask.clarify).
SELECT coalesce(max(id), 0) AS before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS first_call FROM ask.questions \gset
SELECT ask.index_values('restaurants', ARRAY['cuisine']) AS cuisines, ask.index_values('cities', ARRAY['name']) AS cities;
-- A verified query is checked and run as the caller before it is stored.
SELECT ask.add_verified('Which restaurants serve Italian food?',
                        'SELECT name FROM restaurants WHERE cuisine = ''Italian'' ORDER BY name') AS italian \gset
SELECT * FROM error_of($$SELECT ask.add_verified('remove the closed ones', 'DELETE FROM restaurants')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('list them', 'SELECT nme FROM restaurants')$$);
SELECT question, sql, schema, tables, verified_by_role = current_user::regrole AS mine, source FROM ask.verified_queries;
-- The same question, and the same words with another value the value memory resolves: answered
-- from the verified query, without an LLM call.
SELECT ask('which restaurants serve italian food');
SELECT ask('Which restaurants serve japanese food?');
SELECT count(*) AS llm_calls FROM ask.llm_calls WHERE id > :before;
SELECT t->>'source' AS source, (t->>'verified_id')::bigint = :italian AS from_italian,
       t->'stages'->0->'output'->>'rule' AS rule, t->'stages'->0->'output'->'substituted' AS substituted,
       t->>'final_sql' AS final_sql
FROM ask.explain('Which restaurants serve French food?') t;
-- Its uses are counted for the role that asked (ask.verified_uses), not on the shared row.
SELECT uses, last_used IS NOT NULL AS used FROM ask.verified_uses WHERE verified_id = :italian AND role = current_user::regrole;
-- Off, the LLM is asked.
SET ask.verified = off;
SELECT * FROM error_of($$SELECT ask('Which restaurants serve Italian food?')$$);
RESET ask.verified;
-- Feedback on an earlier call (its id is in the trace, the ledger and ask.questions): marked
-- right, its question and SQL become a verified query...
SELECT ask('list the restaurants in San Francisco');
SELECT id AS call FROM ask.questions ORDER BY id DESC LIMIT 1 \gset
SELECT question, source, sql FROM ask.questions WHERE id = :call;
-- Three LLM calls: the choice among verified templates (the Italian query is near; the model
-- chose none), generation and the answer.
SELECT count(*) AS calls_with_the_id FROM ask.llm_calls WHERE call_id = :call;
SELECT ask.feedback(:call, true) AS sf \gset
SELECT question, sql, source FROM ask.verified_queries WHERE id = :sf;
-- ... that answers the same question about another city.
SELECT ask('list the restaurants in Los Angeles');
-- Marked wrong with the corrected query, the correction is verified for the question.
SELECT ask.remove_verified(:sf);
SELECT ask('how many restaurants per cuisine?');
SELECT id AS call FROM ask.questions ORDER BY id DESC LIMIT 1 \gset
SELECT ask.feedback(:call, false, 'SELECT cuisine, count(*) AS restaurants FROM restaurants GROUP BY cuisine ORDER BY 2 DESC, 1') IS NOT NULL AS verified;
SELECT sql FROM ask.verified_queries WHERE question = 'how many restaurants per cuisine?';
SELECT * FROM error_of('SELECT ask.feedback(999999, true)');
SELECT * FROM error_of(format('SELECT ask.feedback(%s, true, %L)', :call, 'SELECT 1'));
SELECT question, source, feedback FROM ask.questions WHERE id > :first_call ORDER BY id;
SELECT verified_answers FROM ask.usage WHERE role = current_user::regrole;
-- An evaluation suite's questions, verified with their gold SQL.
SELECT ask.load_suite('verified_suite', '[{"question": "How many cities are there?", "gold_sql": "SELECT count(*) FROM cities"},
                                          {"question": "Broken", "gold_sql": "SELECT nothing FROM cities"}]');
SELECT ask.verify_suite('verified_suite');
-- A role sees, and is answered from, only the verified queries over tables it may read; it
-- removes none it did not verify.
CREATE ROLE ask_verified_reader;
GRANT SELECT ON cities TO ask_verified_reader;
SET ROLE ask_verified_reader;
SELECT question FROM ask.verified_queries ORDER BY id;
SELECT * FROM error_of(format('SELECT ask.remove_verified(%s)', :italian));
SELECT * FROM error_of('SELECT ask.remove_verified(id) FROM ask.verified_queries');
RESET ROLE;
SELECT ask.remove_verified(:italian);
DELETE FROM ask.verified_queries;
-- Clarifying questions: "New York" is a city and a state; "LA" a state code and, read as an
-- abbreviation, Los Angeles.
CREATE TABLE states (code text PRIMARY KEY, name text NOT NULL);
INSERT INTO states VALUES ('CA', 'California'), ('NY', 'New York'), ('LA', 'Louisiana');
SELECT ask.index_values('states');
SET ask.clarify = on;
SELECT ask('how many restaurants are in New York?');
SELECT ask('how many restaurants are in LA?');
SELECT * FROM error_of($$SELECT ask.sql('how many restaurants are in LA?')$$);
SELECT t->>'source' AS source, t->'llm_calls' AS llm_calls,
       jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "clarify").output.ambiguities[*].why') AS why
FROM ask.explain('how many restaurants are in LA?') t;
-- The context says which: the SQL is written for that reading.
SELECT ask('how many restaurants are in LA?', context => 'the city');
SELECT jsonb_path_query_first(t, '$.stages[*] ? (@.stage == "clarify").output.question_for_sql') AS question_for_sql
FROM ask.explain('how many restaurants are in LA?', context => 'the city') t;
RESET ask.clarify;
DROP TABLE states;
DELETE FROM ask.eval_suites WHERE suite = 'verified_suite';
REVOKE ALL ON cities FROM ask_verified_reader;
DROP ROLE ask_verified_reader;
