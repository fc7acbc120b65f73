-- ask.do(): its arguments and refusals, and that every step runs as the caller, under its
-- privileges and row-level security, in its transaction.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
CREATE SCHEMA do_function;
CREATE TABLE do_function.lamps (id int PRIMARY KEY, room text, watts int NOT NULL);
INSERT INTO do_function.lamps VALUES (1, 'hall', 40), (2, 'kitchen', 60), (3, 'hall', 25);
SET ask.allow_writes = on;
-- The normal path: the plan's steps, each as the caller.
SELECT s->>'step' AS step, s->>'kind' AS kind, coalesce(s->>'rows_affected', s->>'rows_returned') AS n, s->>'sql' AS sql
FROM ask.do('golden do: double the watts of the hall lamps') r, jsonb_array_elements(r->'steps') s;
SELECT id, watts FROM do_function.lamps ORDER BY id;
-- Refusals: an empty instruction, an unknown provider, a server that is not there, a
-- max_steps under 1.
SELECT * FROM error_of($$SELECT ask.do('')$$);
SELECT * FROM error_of($$SELECT ask.do('golden do: double the watts of the hall lamps', provider => 'gpt')$$);
SELECT code FROM error_of($$SELECT ask.do('golden do: double the watts of the hall lamps', base_url => 'http://127.0.0.1:1/v1')$$);
SELECT * FROM error_of($$SET ask.max_steps = 0$$);
-- In a read-only transaction the write step fails, and nothing is kept.
BEGIN READ ONLY;
SELECT code, message FROM error_of($$SELECT ask.do('golden do: double the watts of the hall lamps')$$);
ROLLBACK;
-- Another role: without UPDATE on the table its step fails as the role.
CREATE ROLE do_function_guest;
GRANT USAGE ON SCHEMA do_function TO do_function_guest;
GRANT SELECT ON do_function.lamps TO do_function_guest;
SET ROLE do_function_guest;
SHOW ask.allow_writes;
SELECT code, message FROM error_of($$SELECT ask.do('golden do: double the watts of the hall lamps')$$);
RESET ROLE;
-- With UPDATE, under row-level security: only the rows its policies show it change.
GRANT UPDATE ON do_function.lamps TO do_function_guest;
ALTER TABLE do_function.lamps ENABLE ROW LEVEL SECURITY;
CREATE POLICY do_function_one ON do_function.lamps USING (id = 3);
SET ROLE do_function_guest;
SELECT s->>'step' AS step, coalesce(s->>'rows_affected', s->>'rows_returned') AS n
FROM ask.do('golden do: double the watts of the hall lamps') r, jsonb_array_elements(r->'steps') s;
RESET ROLE;
SELECT id, watts FROM do_function.lamps ORDER BY id;
-- Off again: refused before any LLM call, whoever asks.
RESET ask.allow_writes;
SET ROLE do_function_guest;
SELECT * FROM error_of($$SELECT ask.do('golden do: double the watts of the hall lamps')$$);
RESET ROLE;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
DROP SCHEMA do_function CASCADE;
DROP ROLE do_function_guest;
