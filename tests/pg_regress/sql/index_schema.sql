-- ask.index_schema(): building the schema selection memory; what it describes for each role,
-- its NOTICEs and its refusals. In transactions rolled back, so that no memory outlives this
-- file.
CREATE SCHEMA index_schema_a;
CREATE TABLE index_schema_a.lots (id int PRIMARY KEY, label text);
COMMENT ON TABLE index_schema_a.lots IS 'Lots at the auction';
CREATE TABLE index_schema_a.bids (id int PRIMARY KEY, lot_id int REFERENCES index_schema_a.lots, amount numeric);
CREATE SCHEMA index_schema_b;
CREATE TABLE index_schema_b.hidden (id int);
BEGIN;
-- The listed schemas: the tables described, then one row per table and per schema.
SELECT ask.index_schema(ARRAY['index_schema_a']);
SELECT name, vector_dims(embedding) AS dims, embedding_provider, description LIKE '%Lots at the auction%' AS commented
FROM ask.schema_memory_tables ORDER BY name;
SELECT name FROM ask.schema_memory_schemas ORDER BY name;
-- Again: the same tables, described again.
SELECT ask.index_schema(ARRAY['index_schema_a']);
-- A schema that does not exist, or has nothing readable, is named in a NOTICE.
SELECT ask.index_schema(ARRAY['index_schema_none']);
-- An empty list describes nothing.
SELECT ask.index_schema(ARRAY[]::name[]);
-- Without embeddings: stored without, and a NOTICE says so.
SET LOCAL ask.embedding_provider = off;
SELECT ask.index_schema(ARRAY['index_schema_a']);
SELECT name, embedding IS NULL AS no_embedding FROM ask.schema_memory_tables ORDER BY name;
ROLLBACK;
-- A role describes only what it may read: the table it may not read is not in its memory.
CREATE ROLE index_schema_owner;
GRANT USAGE ON SCHEMA index_schema_a, index_schema_b TO index_schema_owner;
GRANT SELECT ON index_schema_a.lots TO index_schema_owner;
BEGIN;
SET LOCAL ROLE index_schema_owner;
SELECT ask.index_schema(ARRAY['index_schema_a', 'index_schema_b']);
RESET ROLE;
SELECT name FROM ask.schema_memory_tables ORDER BY name;
-- and it may not read the memory itself.
SET LOCAL ROLE index_schema_owner;
SELECT * FROM error_of($$SELECT count(*) FROM ask.schema_memory_tables$$);
ROLLBACK;
-- What a superuser described stays described when a role that may read less indexes the same
-- schema.
BEGIN;
SELECT ask.index_schema(ARRAY['index_schema_a']);
SET LOCAL ROLE index_schema_owner;
SELECT ask.index_schema(ARRAY['index_schema_a']);
RESET ROLE;
SELECT name FROM ask.schema_memory_tables ORDER BY name;
ROLLBACK;
-- NULL: every schema with a table the caller may read (here these two and public).
BEGIN;
SELECT ask.index_schema(NULL);
SELECT name FROM ask.schema_memory_schemas ORDER BY name;
ROLLBACK;
-- Not in a read-only transaction.
BEGIN READ ONLY;
SELECT * FROM error_of($$SELECT ask.index_schema(ARRAY['index_schema_a'])$$);
ROLLBACK;
SELECT count(*) AS remembered FROM ask.schema_memory_tables;
DROP SCHEMA index_schema_a, index_schema_b CASCADE;
DROP ROLE index_schema_owner;
