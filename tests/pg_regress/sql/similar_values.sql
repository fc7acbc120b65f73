-- ask.similar_values(): what the value memory finds for a phrase in one column; its arguments,
-- and what each role may see of the memory. The memory's column ids name its indexes in
-- NOTICEs of other files: their sequence is put back at the end.
SELECT last_value AS vc_last, is_called AS vc_called FROM ask.value_columns_id_seq \gset
CREATE SCHEMA similar_values;
CREATE TABLE similar_values.shops (id int PRIMARY KEY, city text, owner_name text, region text);
INSERT INTO similar_values.shops VALUES (1, 'Los Angeles', 'Ann', 'west'), (2, 'San Diego', 'Bob', 'west'),
    (3, 'Boston', 'Cy', 'east'), (4, 'New York', 'Di', 'east');
SELECT ask.index_values('similar_values.shops');
-- The best matches first, each with the method that found it: k nearest by embedding, and
-- trigram matches; a typo is found by both.
SELECT value, method FROM ask.similar_values('similar_values.shops', 'city', 'Bostn', 1);
SELECT value FROM ask.similar_values('similar_values.shops', 'city', 'San Deigo', 10) WHERE method = 'trigram';
SELECT count(*) FILTER (WHERE method = 'embedding') AS by_embedding FROM ask.similar_values('similar_values.shops', 'city', 'Boston', 2);
SELECT count(*) FILTER (WHERE method = 'embedding') AS by_embedding FROM ask.similar_values('similar_values.shops', 'city', 'Boston', NULL);
-- A column that is not text-like, or not there, is refused; NULL arguments find nothing.
SELECT * FROM error_of($$SELECT * FROM ask.similar_values('similar_values.shops', 'id', '1')$$);
SELECT * FROM error_of($$SELECT * FROM ask.similar_values('similar_values.shops', 'colour', 'red')$$);
SELECT count(*) AS found FROM ask.similar_values('similar_values.shops', NULL, 'Boston');
SELECT count(*) AS found FROM ask.similar_values('similar_values.shops', 'city', NULL);
SELECT count(*) AS found FROM ask.similar_values(NULL, 'city', 'Boston');
-- Embedded by another model than the one now set: refused with a hint; with embeddings off,
-- trigrams only.
SET ask.embedding_provider = openai;
SET ask.embedding_base_url = 'http://127.0.0.1:47811/v1';
SELECT * FROM error_of($$SELECT * FROM ask.similar_values('similar_values.shops', 'city', 'Boston')$$);
RESET ask.embedding_base_url;
SET ask.embedding_provider = off;
SELECT DISTINCT method FROM ask.similar_values('similar_values.shops', 'city', 'Bostn');
RESET ask.embedding_provider;
-- A role sees remembered values only of columns it may SELECT now.
CREATE ROLE similar_values_clerk;
GRANT USAGE ON SCHEMA similar_values TO similar_values_clerk;
GRANT SELECT (id, city) ON similar_values.shops TO similar_values_clerk;
SET ROLE similar_values_clerk;
SELECT value FROM ask.similar_values('similar_values.shops', 'city', 'Boston', 1);
SELECT * FROM error_of($$SELECT * FROM ask.similar_values('similar_values.shops', 'owner_name', 'Ann')$$);
SELECT * FROM error_of($$SELECT * FROM ask._similar_values('similar_values.shops'::regclass, 'owner_name', 'Ann', 1)$$);
SELECT * FROM error_of($$SELECT ask._value_lookup('similar_values.shops'::regclass, 'owner_name', 'Ann', NULL)$$);
RESET ROLE;
REVOKE SELECT (city) ON similar_values.shops FROM similar_values_clerk;
SET ROLE similar_values_clerk;
SELECT * FROM error_of($$SELECT * FROM ask.similar_values('similar_values.shops', 'city', 'Boston')$$);
RESET ROLE;
-- Row-level security: a role whose policies hide rows sees no remembered values, unless the
-- owner indexed the table with allow_rls.
GRANT SELECT ON similar_values.shops TO similar_values_clerk;
ALTER TABLE similar_values.shops ENABLE ROW LEVEL SECURITY;
CREATE POLICY similar_values_west ON similar_values.shops FOR SELECT USING (region = 'west');
SET ROLE similar_values_clerk;
SELECT count(*) AS rows_visible FROM similar_values.shops;
SELECT * FROM error_of($$SELECT * FROM ask.similar_values('similar_values.shops', 'city', 'Boston')$$);
RESET ROLE;
SELECT ask.index_values('similar_values.shops', ARRAY['city'], allow_rls => true);
SET ROLE similar_values_clerk;
SELECT value FROM ask.similar_values('similar_values.shops', 'city', 'Boston', 1);
RESET ROLE;
-- The owner is not subject to its own policies: it sees them.
SELECT value FROM ask.similar_values('similar_values.shops', 'city', 'New York', 1);
DROP SCHEMA similar_values CASCADE;
-- The memory of the dropped tables is forgotten (its NOTICEs come in the order the memory
-- stores its rows, which differs between PostgreSQL versions: not shown).
SET client_min_messages = warning;
SELECT ask.refresh_values() >= 0 AS refreshed;
RESET client_min_messages;
DROP ROLE similar_values_clerk;
SELECT setval('ask.value_columns_id_seq', :vc_last, :'vc_called') IS NOT NULL AS sequence_restored;
-- The memory's tables are empty again; rewritten, they are as setup left them (other files see
-- their rows in the order they are stored).
VACUUM FULL ask.value_columns, ask.value_memory;
