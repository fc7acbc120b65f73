-- The value memory: the distinct values of a table's text-like columns, with embeddings (local
-- all-MiniLM-L6-v2) and trigrams; what it finds for a phrase; refreshes; who may build and
-- read it. Scores are rounded: the last digits of a cosine are not part of the contract.
CREATE SCHEMA vm;
CREATE TYPE vm.kind AS ENUM ('restaurant', 'bar', 'cafe');
CREATE TABLE vm.places (id int PRIMARY KEY, city text NOT NULL, cuisine varchar(20), kind vm.kind,
    code char(3), opened date, tags text[]);
INSERT INTO vm.places VALUES
    (1, 'Los Angeles', 'Italian', 'restaurant', 'LAX', '2020-01-01', '{x}'),
    (2, 'Los Angeles', 'Mexican', 'bar', 'LAX', '2021-01-01', '{y}'),
    (3, 'San Francisco', 'French', 'restaurant', 'SFO', NULL, NULL),
    (4, 'New York City', 'Italian', 'cafe', 'JFK', NULL, NULL),
    (5, 'Chicago', 'Japanese', 'restaurant', 'ORD', NULL, NULL);
-- Every text-like column (text, varchar, an enum, char): 4 + 4 + 3 + 4 values.
SELECT ask.index_values('vm.places');
SELECT a.attname, c.distinct_values, c.embedding_provider, c.dims, c.own_indexes
FROM ask.value_columns c JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum
WHERE c.relid = 'vm.places'::regclass ORDER BY c.attnum;
SELECT value, frequency FROM ask.value_memory m JOIN ask.value_columns c ON c.id = m.column_id
WHERE c.relid = 'vm.places'::regclass AND c.attnum = 2 ORDER BY frequency DESC, value;
-- An initialism: the nearest embedding.
SELECT value, round(score::numeric, 2) AS score, method FROM ask.similar_values('vm.places', 'city', 'LA', 2);
-- A typo: trigrams find it too.
SELECT value, round(score::numeric, 2) AS score, method
FROM ask.similar_values('vm.places', 'city', 'San Fransisco', 10) WHERE method = 'trigram';
SELECT value FROM ask.similar_values('vm.places', 'cuisine', 'pasta and pizza', 1);
-- Columns that are not text-like, or not there, are refused.
SELECT ask.index_values('vm.places', ARRAY['opened']);
SELECT ask.index_values('vm.places', ARRAY['nope']);
-- A column without memory finds nothing.
SELECT count(*) FROM ask.similar_values('public.cities', 'name', 'LA');
-- Rebuilding the listed columns only.
SELECT ask.index_values('vm.places', ARRAY['city']);
-- A refresh adds new values, drops vanished ones, and updates frequencies.
INSERT INTO vm.places VALUES (6, 'Boston', 'Thai', 'bar', 'BOS', NULL, NULL);
UPDATE vm.places SET city = 'San Jose' WHERE id = 3;
SELECT ask.refresh_values('vm.places');
SELECT ask.refresh_values('vm.places');
SELECT value FROM ask.similar_values('vm.places', 'city', 'Boston', 1);
SELECT count(*) AS san_francisco FROM ask.similar_values('vm.places', 'city', 'San Francisco', 10) WHERE value = 'San Francisco';
-- Kept current by a trigger, for any writer.
SELECT ask.keep_values_current('vm.places');
INSERT INTO vm.places VALUES (7, 'Denver', 'Thai', 'cafe', 'DEN', NULL, NULL);
SELECT value FROM ask.similar_values('vm.places', 'city', 'Denver', 1);
SELECT ask.keep_values_current('vm.places', false);
INSERT INTO vm.places VALUES (8, 'Seattle', 'Thai', 'cafe', 'SEA', NULL, NULL);
SELECT count(*) AS seattle FROM ask.similar_values('vm.places', 'city', 'Seattle', 10) WHERE value = 'Seattle';
-- Privileges: values only for roles that may SELECT the column; only the owner builds.
CREATE ROLE ask_regress_partial;
GRANT USAGE ON SCHEMA vm TO ask_regress_partial;
GRANT SELECT (id, cuisine) ON vm.places TO ask_regress_partial;
SET ROLE ask_regress_partial;
SELECT value FROM ask.similar_values('vm.places', 'cuisine', 'Thai food', 1);
SELECT value FROM ask.similar_values('vm.places', 'city', 'LA', 1);
SELECT ask.index_values('vm.places');
SELECT count(*) FROM ask.value_memory;
RESET ROLE;
-- Row-level security: the memory would show values of rows the policies hide.
ALTER TABLE vm.places ENABLE ROW LEVEL SECURITY;
SELECT ask.index_values('vm.places', ARRAY['city']);
SELECT ask.index_values('vm.places', ARRAY['city'], allow_rls => true);
-- A dropped table's memory is forgotten by the next refresh of everything.
REVOKE ALL ON SCHEMA vm FROM ask_regress_partial;
REVOKE ALL ON vm.places FROM ask_regress_partial;
DROP ROLE ask_regress_partial;
DROP SCHEMA vm CASCADE;
SELECT ask.refresh_values();
SELECT count(*) AS columns_remembered FROM ask.value_columns;
