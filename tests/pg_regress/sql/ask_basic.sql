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
-- A misspelt column is repaired from the error message (an edit repair; `auto`, the default,
-- asks a misspelt name afresh).
SET ask.first_repair = edit;
SELECT t->'attempts' AS attempts,
       jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "execute").output') AS executions
FROM ask.explain('average rating of Italian restaurants') t;
RESET ask.first_repair;
-- Constrained output: in auto (above) the model writes its first query itself; on, SQL
-- generation is under a grammar of the described tables from the first call (its size in the
-- trace), the answer stage under its JSON schema; the stand-in answers free text, which the
-- stage's parser reads. (A question whose one value is too long to be said as it is: the
-- model is asked for the answer.)
SET ask.sql_grammar = on;
SELECT jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "grammar").output') #- '{0,bytes}' AS grammar,
       jsonb_path_query_array(t, '$.stages[*] ? (@.output.reply != null).output.constrained') AS constrained,
       jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "answer").output.read') AS answer_read
FROM ask.explain('one long value') t;
RESET ask.sql_grammar;
SET ask.sql_grammar = off;
SET ask.structured_output = off;
SELECT jsonb_path_query_array(t, '$.stages[*].stage') AS stages,
       jsonb_path_query_array(t, '$.stages[*] ? (@.output.reply != null).output.unconstrained') AS unconstrained
FROM ask.explain('one long value') t;
RESET ask.sql_grammar;
RESET ask.structured_output;
-- With ask.explain_prompts on, each call's stage shows the prompt it sent.
SET ask.explain_prompts = on;
SELECT jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "generate").input.prompt.messages[*].role') AS roles,
       jsonb_path_query_first(t, '$.stages[*] ? (@.stage == "generate").input.prompt.system') #>> '{}' LIKE 'You are an expert PostgreSQL analyst%' AS system_prompt,
       position('<question>how many restaurants per cuisine?</question>' IN t::text) > 0 AS question_in_prompt
FROM ask.explain('how many restaurants per cuisine?') t;
RESET ask.explain_prompts;
-- Anthropic takes JSON schemas (as a forced tool) but no grammar: in auto the SQL request goes
-- without it; on, that is an error.
SET ask.sql_grammar = on;
SELECT ask.sql('how many restaurants per cuisine?', provider => 'anthropic');
RESET ask.sql_grammar;
-- Every call is in the ledger.
SELECT stage, outcome, count(*) FROM ask.llm_calls GROUP BY 1, 2 ORDER BY 1, 2;
-- Bounded prompts: rows too wide for ask.max_prompt_tokens come back without a written
-- answer, and a NOTICE says why; a result larger than ask.max_result_size is cut, and a
-- NOTICE says so.
SET ask.max_prompt_tokens = 600;
SELECT length(ask('twelve wide columns')) > 10000 AS the_rows;
RESET ask.max_prompt_tokens;
SET ask.max_result_size = '1kB';
SELECT ask('one long value') LIKE '%…[cut: 5000 bytes]%' AS cut;
RESET ask.max_result_size;
