-- Questions in, answers out, against the stand-in LLM (tests/pg_regress/standin.json).
SELECT ask('which Italian restaurants are in LA?');
SELECT ask('list the restaurants in San Francisco');
SELECT ask.sql('which Italian restaurants are in LA?');
SELECT * FROM ask.rows('which Italian restaurants are in LA?');
-- The SQL itself can be run with real column types.
SELECT ask.sql('best rated restaurant per city') \gexec
-- The trace: stages in order, attempts, the final SQL.
SELECT t->'attempts' AS attempts,
       jsonb_path_query_array(t, '$.stages[*].stage') AS stages,
       t->>'final_sql' AS final_sql
FROM ask.explain('how many restaurants per cuisine?') t;
-- A misspelt column is repaired from the error message.
SELECT t->'attempts' AS attempts,
       jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "execute").output') AS executions
FROM ask.explain('average rating of Italian restaurants') t;
-- Every call is in the ledger.
SELECT stage, outcome, count(*) FROM ask.llm_calls GROUP BY 1, 2 ORDER BY 1, 2;
