-- ask.index_values(): remembering a table's distinct text values; who may build the memory,
-- of what, and its refusals. The memory's column ids name its indexes in NOTICEs of other
-- files: their sequence is put back at the end.
SELECT last_value AS vc_last, is_called AS vc_called FROM ask.value_columns_id_seq \gset
CREATE SCHEMA index_values;
CREATE TABLE index_values.pets (id int PRIMARY KEY, name text, species varchar(10), born date, note text);
INSERT INTO index_values.pets VALUES (1, 'Rex', 'dog', '2020-01-01', NULL), (2, 'Tom', 'cat', NULL, 'shy'),
    (3, 'Kit', 'cat', NULL, NULL), (4, 'Rex', 'dog', NULL, 'loud');
-- Every text-like column: 3 names + 2 species + 2 notes (NULLs are not values).
SELECT ask.index_values('index_values.pets');
SELECT a.attname, c.distinct_values, c.capped, c.allow_rls, c.indexed_by = current_user::regrole AS mine
FROM ask.value_columns c JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum
WHERE c.relid = 'index_values.pets'::regclass ORDER BY c.attnum;
-- The listed columns only; NULL is every column, an empty list none.
SELECT ask.index_values('index_values.pets', ARRAY['species']);
SELECT ask.index_values('index_values.pets', NULL);
SELECT ask.index_values('index_values.pets', ARRAY[]::text[]);
-- Columns that are not text-like, or not there; a relation that is not there.
SELECT * FROM error_of($$SELECT ask.index_values('index_values.pets', ARRAY['born'])$$);
SELECT * FROM error_of($$SELECT ask.index_values('index_values.pets', ARRAY['colour'])$$);
SELECT * FROM error_of($$SELECT ask.index_values('index_values.nothing')$$);
-- A column with more distinct values than ask.max_values_per_column keeps its most frequent.
SET ask.max_values_per_column = 1;
SELECT ask.index_values('index_values.pets', ARRAY['name']);
RESET ask.max_values_per_column;
SELECT value FROM ask.value_memory m JOIN ask.value_columns c ON c.id = m.column_id
WHERE c.relid = 'index_values.pets'::regclass AND c.attnum = 2;
-- Without embeddings the values are kept for trigrams alone.
SET ask.embedding_provider = off;
SELECT ask.index_values('index_values.pets', ARRAY['species']);
RESET ask.embedding_provider;
SELECT c.embedding_provider, c.dims FROM ask.value_columns c WHERE c.relid = 'index_values.pets'::regclass AND c.attnum = 3;
-- A view (reading it would run its owner's code), a sequence: refused.
CREATE VIEW index_values.pet_names AS SELECT name FROM index_values.pets;
CREATE SEQUENCE index_values.seq;
SELECT * FROM error_of($$SELECT ask.index_values('index_values.pet_names')$$);
SELECT code, message FROM error_of($$SELECT ask.index_values('index_values.seq')$$);
-- A materialized view is a table of its owner's.
CREATE MATERIALIZED VIEW index_values.species AS SELECT DISTINCT species FROM index_values.pets;
SELECT ask.index_values('index_values.species');
-- Only the table's owner (or a member of its owning role) builds its memory, through the
-- function or the internal one; a reader may not.
CREATE ROLE index_values_reader;
CREATE ROLE index_values_keeper;
GRANT USAGE ON SCHEMA index_values TO index_values_reader, index_values_keeper;
GRANT SELECT ON index_values.pets TO index_values_reader;
SET ROLE index_values_reader;
SELECT * FROM error_of($$SELECT ask.index_values('index_values.pets')$$);
SELECT * FROM error_of($$SELECT ask._index_values('index_values.pets'::regclass, NULL, false)$$);
SELECT * FROM error_of($$SELECT count(*) FROM ask.value_columns$$);
SELECT * FROM error_of($$SELECT count(*) FROM ask.value_memory$$);
RESET ROLE;
CREATE TABLE index_values.kept (label text);
INSERT INTO index_values.kept VALUES ('a'), ('b');
ALTER TABLE index_values.kept OWNER TO index_values_keeper;
GRANT index_values_keeper TO index_values_reader;
SET ROLE index_values_reader;
SELECT ask.index_values('index_values.kept');
RESET ROLE;
SELECT c.indexed_by::text FROM ask.value_columns c WHERE c.relid = 'index_values.kept'::regclass;
-- Row-level security: refused unless the owner opts in to show values past the policies
-- (allow_rls NULL is false).
CREATE TABLE index_values.guarded (label text);
ALTER TABLE index_values.guarded ENABLE ROW LEVEL SECURITY;
INSERT INTO index_values.guarded VALUES ('x');
SELECT * FROM error_of($$SELECT ask.index_values('index_values.guarded')$$);
SELECT code FROM error_of($$SELECT ask.index_values('index_values.guarded', allow_rls => NULL)$$);
SELECT ask.index_values('index_values.guarded', allow_rls => true);
SELECT allow_rls FROM ask.value_columns WHERE relid = 'index_values.guarded'::regclass;
DROP SCHEMA index_values CASCADE;
-- The memory of the dropped tables is forgotten (its NOTICEs come in the order the memory
-- stores its rows, which differs between PostgreSQL versions: not shown).
SET client_min_messages = warning;
SELECT ask.refresh_values() >= 0 AS refreshed;
RESET client_min_messages;
SELECT count(*) AS columns_remembered FROM ask.value_columns;
REVOKE index_values_keeper FROM index_values_reader;
DROP ROLE index_values_reader;
DROP ROLE index_values_keeper;
SELECT setval('ask.value_columns_id_seq', :vc_last, :'vc_called') IS NOT NULL AS sequence_restored;
-- The memory's tables are empty again; rewritten, they are as setup left them (other files see
-- their rows in the order they are stored).
VACUUM FULL ask.value_columns, ask.value_memory;
