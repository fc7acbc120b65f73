-- ask.refresh_values() and ask.keep_values_current(): bringing a table's value memory up to
-- date, by hand and after every write; who may do either. The memory's column ids name its
-- indexes in NOTICEs of other files: their sequence is put back at the end.
SELECT last_value AS vc_last, is_called AS vc_called FROM ask.value_columns_id_seq \gset
CREATE SCHEMA refresh_values;
CREATE TABLE refresh_values.colours (id int PRIMARY KEY, name text);
INSERT INTO refresh_values.colours VALUES (1, 'red'), (2, 'green');
CREATE TABLE refresh_values.never (label text);
SELECT ask.index_values('refresh_values.colours');
-- Values added and removed; nothing changed is 0.
INSERT INTO refresh_values.colours VALUES (3, 'blue');
DELETE FROM refresh_values.colours WHERE id = 1;
SELECT ask.refresh_values('refresh_values.colours');
SELECT ask.refresh_values('refresh_values.colours');
SELECT value FROM ask.value_memory m JOIN ask.value_columns c ON c.id = m.column_id
WHERE c.relid = 'refresh_values.colours'::regclass ORDER BY value;
-- A table without memory has nothing to refresh.
SELECT ask.refresh_values('refresh_values.never');
SELECT * FROM error_of($$SELECT ask.refresh_values('refresh_values.nothing')$$);
-- A column dropped since is forgotten.
ALTER TABLE refresh_values.colours ADD COLUMN shade text;
UPDATE refresh_values.colours SET shade = 'dark';
SELECT ask.index_values('refresh_values.colours', ARRAY['shade']);
ALTER TABLE refresh_values.colours DROP COLUMN shade;
SELECT ask.refresh_values('refresh_values.colours');
SELECT count(*) AS columns FROM ask.value_columns WHERE relid = 'refresh_values.colours'::regclass;
-- Another role refreshes only its own tables: another's is refused, and "all" is its own.
CREATE ROLE refresh_values_other;
GRANT USAGE ON SCHEMA refresh_values TO refresh_values_other;
GRANT SELECT, INSERT, DELETE ON refresh_values.colours TO refresh_values_other;
INSERT INTO refresh_values.colours VALUES (4, 'violet');
SET ROLE refresh_values_other;
SELECT * FROM error_of($$SELECT ask.refresh_values('refresh_values.colours')$$);
SELECT * FROM error_of($$SELECT ask._refresh_values('refresh_values.colours'::regclass)$$);
SELECT ask.refresh_values();
RESET ROLE;
SELECT count(*) AS violet FROM ask.value_memory m JOIN ask.value_columns c ON c.id = m.column_id
WHERE c.relid = 'refresh_values.colours'::regclass AND m.value = 'violet';
-- keep_values_current: a statement trigger refreshes the memory after every write, as the
-- table's owner, whoever writes (here a role that may not read the memory).
SELECT ask.keep_values_current('refresh_values.colours');
SELECT tgname FROM pg_trigger WHERE tgrelid = 'refresh_values.colours'::regclass AND NOT tgisinternal;
SET ROLE refresh_values_other;
INSERT INTO refresh_values.colours VALUES (5, 'amber');
DELETE FROM refresh_values.colours WHERE name = 'green';
RESET ROLE;
SELECT value FROM ask.value_memory m JOIN ask.value_columns c ON c.id = m.column_id
WHERE c.relid = 'refresh_values.colours'::regclass ORDER BY value;
-- Twice is the same trigger; off removes it, twice too.
SELECT ask.keep_values_current('refresh_values.colours');
SELECT ask.keep_values_current('refresh_values.colours', false);
SELECT ask.keep_values_current('refresh_values.colours', false);
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'refresh_values.colours'::regclass AND NOT tgisinternal;
-- Only the owner opts a table in; the trigger's function may not be called by hand.
SET ROLE refresh_values_other;
SELECT * FROM error_of($$SELECT ask.keep_values_current('refresh_values.colours')$$);
SELECT * FROM error_of($$SELECT ask._refresh_values_as_owner('refresh_values.colours'::regclass)$$);
RESET ROLE;
-- Even a superuser's direct call is refused unless the owner opted in.
SELECT * FROM error_of($$SELECT ask._refresh_values_as_owner('refresh_values.colours'::regclass)$$);
SELECT * FROM error_of($$SELECT ask.keep_values_current('refresh_values.nothing')$$);
DROP SCHEMA refresh_values CASCADE;
-- The memory of the dropped tables is forgotten (its NOTICEs come in the order the memory
-- stores its rows, which differs between PostgreSQL versions: not shown).
SET client_min_messages = warning;
SELECT ask.refresh_values() >= 0 AS refreshed;
RESET client_min_messages;
SELECT count(*) AS columns_remembered FROM ask.value_columns;
DROP ROLE refresh_values_other;
SELECT setval('ask.value_columns_id_seq', :vc_last, :'vc_called') IS NOT NULL AS sequence_restored;
-- The memory's tables are empty again; rewritten, they are as setup left them (other files see
-- their rows in the order they are stored).
VACUUM FULL ask.value_columns, ask.value_memory;
