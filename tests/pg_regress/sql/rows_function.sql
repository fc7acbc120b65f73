-- ask.rows(): the rows of a question's SQL, one jsonb object per row, as the caller: row-level
-- security and the row limit apply; its refusals.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS questions_before FROM ask.questions \gset
CREATE SCHEMA rows_function;
CREATE TABLE rows_function.tickets (id int PRIMARY KEY, owner_name text, title text);
INSERT INTO rows_function.tickets VALUES (1, 'ann', 'printer'), (2, 'bob', 'network'), (3, 'ann', 'mail');
SELECT * FROM ask.rows('golden rows: list the tickets');
-- The row limit cuts the rows, with a NOTICE.
SET ask.row_limit = 1;
SELECT * FROM ask.rows('golden rows: list the tickets');
RESET ask.row_limit;
-- Refusals, as for ask.sql().
SELECT * FROM error_of($$SELECT * FROM ask.rows('golden rows: list the tickets', provider => 'gpt')$$);
SELECT * FROM error_of($$SELECT * FROM ask.rows('golden rows: list the tickets', max_attempts => 0)$$);
SELECT * FROM error_of($$SELECT * FROM ask.rows('  ')$$);
SELECT * FROM error_of($$SELECT * FROM ask.rows('golden rows: list the tickets', conversation => -1)$$);
-- A role under row-level security gets the rows its policies show it.
CREATE ROLE rows_function_ann;
GRANT USAGE ON SCHEMA rows_function TO rows_function_ann;
GRANT SELECT ON rows_function.tickets TO rows_function_ann;
ALTER TABLE rows_function.tickets ENABLE ROW LEVEL SECURITY;
CREATE POLICY rows_function_own ON rows_function.tickets FOR SELECT USING (owner_name = 'ann');
SET ROLE rows_function_ann;
SELECT * FROM ask.rows('golden rows: list the tickets');
RESET ROLE;
-- A role that may not read the table: the generated SQL fails as the role.
CREATE ROLE rows_function_other;
GRANT SELECT ON cities TO rows_function_other;
SET ROLE rows_function_other;
SELECT code, message FROM error_of($$SELECT * FROM ask.rows('golden rows: list the tickets', max_attempts => 1)$$);
RESET ROLE;
DELETE FROM ask.questions WHERE id > :questions_before;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
DROP SCHEMA rows_function CASCADE;
REVOKE ALL ON cities FROM rows_function_other;
DROP ROLE rows_function_ann, rows_function_other;
