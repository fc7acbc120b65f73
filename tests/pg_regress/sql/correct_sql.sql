-- ask.correct_sql(): a statement's string literals checked against the value memory, on its
-- own; its arguments, and that it uses only what the caller may read. The memory's column ids
-- name its indexes in NOTICEs of other files: their sequence is put back at the end.
SELECT last_value AS vc_last, is_called AS vc_called FROM ask.value_columns_id_seq \gset
CREATE SCHEMA correct_sql;
CREATE TABLE correct_sql.teams (id int PRIMARY KEY, city text, league text);
INSERT INTO correct_sql.teams VALUES (1, 'Los Angeles', 'West'), (2, 'Chicago', 'Central'), (3, 'Boston', 'East');
SELECT ask.index_values('correct_sql.teams');
SELECT ask.correct_sql($$SELECT id FROM correct_sql.teams WHERE city = 'chicago'$$, use_llm => false);
SELECT ask.correct_sql($$SELECT id FROM correct_sql.teams WHERE league = 'west' AND city = 'Bostn'$$, use_llm => false);
-- Nothing to correct: the statement back as written.
SELECT ask.correct_sql($$SELECT id FROM correct_sql.teams WHERE id = 1$$, use_llm => false);
SELECT ask.correct_sql($$SELECT 'Chicago'$$, use_llm => false);
-- NULL in, NULL out.
SELECT ask.correct_sql(NULL) IS NULL AS null_sql, ask.correct_sql('SELECT 1', NULL) IS NULL AS null_use_llm;
-- A statement that does not parse, several statements, an empty text: returned as given.
SELECT ask.correct_sql('SELECT FROM WHERE', use_llm => false) AS unparsed,
       ask.correct_sql('SELECT 1; SELECT 2', use_llm => false) AS two,
       ask.correct_sql('', use_llm => false) = '' AS empty;
-- A write is returned as written, and never run.
SELECT ask.correct_sql($$DELETE FROM correct_sql.teams WHERE city = 'chicago'$$, use_llm => false);
SELECT count(*) AS teams FROM correct_sql.teams;
-- A role that may not read the column gets no correction from its memory.
CREATE ROLE correct_sql_fan;
GRANT USAGE ON SCHEMA correct_sql TO correct_sql_fan;
GRANT SELECT (id, league) ON correct_sql.teams TO correct_sql_fan;
SET ROLE correct_sql_fan;
SELECT ask.correct_sql($$SELECT id FROM correct_sql.teams WHERE city = 'chicago'$$, use_llm => false);
SELECT ask.correct_sql($$SELECT id FROM correct_sql.teams WHERE league = 'west'$$, use_llm => false);
RESET ROLE;
-- Nor under row-level security that hides rows from it.
GRANT SELECT ON correct_sql.teams TO correct_sql_fan;
ALTER TABLE correct_sql.teams ENABLE ROW LEVEL SECURITY;
CREATE POLICY correct_sql_one ON correct_sql.teams FOR SELECT USING (id = 1);
SET ROLE correct_sql_fan;
SELECT ask.correct_sql($$SELECT id FROM correct_sql.teams WHERE city = 'chicago'$$, use_llm => false);
RESET ROLE;
DROP SCHEMA correct_sql CASCADE;
-- The memory of the dropped tables is forgotten (its NOTICEs come in the order the memory
-- stores its rows, which differs between PostgreSQL versions: not shown).
SET client_min_messages = warning;
SELECT ask.refresh_values() >= 0 AS refreshed;
RESET client_min_messages;
DROP ROLE correct_sql_fan;
SELECT setval('ask.value_columns_id_seq', :vc_last, :'vc_called') IS NOT NULL AS sequence_restored;
-- The memory's tables are empty again; rewritten, they are as setup left them (other files see
-- their rows in the order they are stored).
VACUUM FULL ask.value_columns, ask.value_memory;
