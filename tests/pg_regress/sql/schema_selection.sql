-- The schema selection memory: descriptions of tables and schemas with local embeddings
-- (all-MiniLM-L6-v2), the tables and schemas that best match a question, and ask() planning
-- over two schemas. Everything runs in one transaction, rolled back at the end, so that the
-- memory does not outlive this test (with a memory, ask() describes only selected tables).
BEGIN;
CREATE SCHEMA music;
COMMENT ON SCHEMA music IS 'Concerts and singers';
CREATE TABLE music.singer (id int PRIMARY KEY, name text NOT NULL, country text);
COMMENT ON TABLE music.singer IS 'Singers who performed';
CREATE TABLE music.concert (id int PRIMARY KEY, singer_id int REFERENCES music.singer(id), venue text, year int);
CREATE SCHEMA staff;
CREATE TABLE staff.employee (id int PRIMARY KEY, name text NOT NULL, department_id int, salary numeric);
COMMENT ON TABLE staff.employee IS 'Employees of the company';
CREATE TABLE staff.department (id int PRIMARY KEY, title text);
CREATE SCHEMA garden;
CREATE TABLE garden.plant (id int PRIMARY KEY, species text, watered_at date);
INSERT INTO music.singer VALUES (1, 'Ada', 'France'), (2, 'Bo', 'Chile'), (3, 'Cy', 'Peru');
INSERT INTO staff.employee VALUES (1, 'Di', 1, 10), (2, 'Ed', 1, 20), (3, 'Fa', 2, 30), (4, 'Gu', 2, 40), (5, 'Ha', 2, 50);
-- Without a memory the ranking is by words only, and says so.
SELECT rel, round(score::numeric, 4) AS score FROM ask.select_tables('average salary per department', 2);
-- Build it for the three schemas (public, not listed, stays out of the memory).
SELECT ask.index_schema(ARRAY['music', 'staff', 'garden']);
SELECT name, vector_dims(embedding) AS dims, embedding_provider FROM ask.schema_memory_tables ORDER BY name;
SELECT name, vector_dims(embedding) AS dims FROM ask.schema_memory_schemas ORDER BY name;
-- Questions that share no word with any name: the embeddings decide.
SELECT row_number() OVER () AS rank, schema FROM ask.select_schemas('vocalists and their performances', 3);
SELECT row_number() OVER () AS rank, rel FROM ask.select_tables('flowers that need water', 3);
-- Words and embeddings together.
SELECT row_number() OVER () AS rank, rel, round(score::numeric, 4) AS score
FROM ask.select_tables('what is the average salary per department?', 4);
SELECT row_number() OVER () AS rank, schema, round(score::numeric, 4) AS score
FROM ask.select_schemas('how many singers performed in concerts?', 2);
-- A comment changes a description: the next selection ranks by it. Through the stored index
-- (ask.selection_index, on) the schema's tables are candidates, noted as changed, with the
-- schema's live comment; the whole catalog's ranking also stores the schema's description again.
COMMENT ON SCHEMA garden IS 'Botanical collection';
SELECT schema FROM ask.select_schemas('botanical collection', 1);
SET ask.selection_index = off;
SELECT schema FROM ask.select_schemas('botanical collection', 1);
RESET ask.selection_index;
SELECT description LIKE '%Botanical collection%' AS described FROM ask.schema_memory_schemas WHERE name = 'garden';
-- Only tables the role may read are candidates, whoever built the memory.
CREATE ROLE ask_regress_fan;
GRANT USAGE ON SCHEMA music, staff TO ask_regress_fan;
GRANT SELECT ON music.singer TO ask_regress_fan;
SET ROLE ask_regress_fan;
SELECT rel FROM ask.select_tables('employees salary singers', 10);
SELECT schema FROM ask.select_schemas('employees salary', 5);
RESET ROLE;
-- ask() over two schemas: the LLM writes a retrieval plan of one step per schema, each step
-- runs, and the answer compares their results.
SELECT ask('which has more: singers or employees?');
SELECT jsonb_path_query_array(t, '$.stages[*].stage') AS stages,
       jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "select").output.schemas[*].schema') AS schemas,
       jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "select").output.tables[*] ? (@.reason == "retrieved").table') AS retrieved
FROM ask.explain('which has more: singers or employees?') t;
SELECT * FROM ask.select_tables('x', -1);
ROLLBACK;
SELECT count(*) AS remembered FROM ask.schema_memory_tables;
