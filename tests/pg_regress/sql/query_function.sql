-- ask.query(): SQL the caller wrote, run as pg_ask runs generated SQL: the guard's check,
-- read-only, as the caller, within the row and size limits, one jsonb object per row.
CREATE SCHEMA query_function;
CREATE TABLE query_function.notes (id int PRIMARY KEY, owner_name text, body text);
INSERT INTO query_function.notes VALUES (1, 'ann', 'first'), (2, 'bob', 'second'), (3, 'ann', 'third');
SELECT * FROM ask.query('SELECT id, body FROM query_function.notes ORDER BY id');
SELECT * FROM ask.query('WITH n AS (SELECT count(*) AS c FROM query_function.notes) SELECT c FROM n');
SELECT * FROM ask.query('VALUES (1, ''a''), (2, NULL)');
SELECT count(*) AS no_rows FROM ask.query('SELECT * FROM query_function.notes WHERE false');
-- The row limit, with a NOTICE.
SET ask.row_limit = 2;
SELECT * FROM ask.query('SELECT id FROM query_function.notes ORDER BY id');
RESET ask.row_limit;
-- Refused by the guard (2F003): writes, several statements, DDL, locks, volatile functions,
-- functions that run SQL text, an empty text.
SELECT * FROM error_of($$SELECT * FROM ask.query('DELETE FROM query_function.notes')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('WITH d AS (DELETE FROM query_function.notes RETURNING *) SELECT * FROM d')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT 1; SELECT 2')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('DROP TABLE query_function.notes')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT * FROM query_function.notes FOR UPDATE')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT random()')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT set_config(''ask.row_limit'', ''5'', false)')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT query_to_xml(''SELECT 1'', true, true, '''')')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT pg_sleep(1)')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('')$$);
-- Errors of the statement itself, with their own SQLSTATE and hint.
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT bodie FROM query_function.notes')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT 1/0')$$);
-- ask.statement_timeout holds (57014, which PL/pgSQL's WHEN OTHERS does not catch: shown as
-- psql shows it).
SET ask.statement_timeout = '100ms';
SELECT * FROM ask.query('SELECT count(*) FROM generate_series(1, 500000000)');
RESET ask.statement_timeout;
-- NULL is NULL; in a read-only transaction it runs.
SELECT count(*) AS null_rows FROM ask.query(NULL);
BEGIN READ ONLY;
SELECT count(*) AS read_only_rows FROM ask.query('SELECT * FROM query_function.notes');
ROLLBACK;
-- As the caller: its privileges and its row-level security decide.
CREATE ROLE query_function_ann;
SET ROLE query_function_ann;
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT * FROM query_function.notes')$$);
RESET ROLE;
GRANT USAGE ON SCHEMA query_function TO query_function_ann;
GRANT SELECT (id, body) ON query_function.notes TO query_function_ann;
SET ROLE query_function_ann;
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT owner_name FROM query_function.notes')$$);
SELECT * FROM ask.query('SELECT id FROM query_function.notes ORDER BY id');
RESET ROLE;
GRANT SELECT ON query_function.notes TO query_function_ann;
ALTER TABLE query_function.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY query_function_own ON query_function.notes FOR SELECT USING (owner_name = 'ann');
SET ROLE query_function_ann;
SELECT * FROM ask.query('SELECT id, body FROM query_function.notes ORDER BY id');
RESET ROLE;
DROP SCHEMA query_function CASCADE;
DROP ROLE query_function_ann;
