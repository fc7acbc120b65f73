-- ask.tables(): the relations the current role may read, with their comments, as a client
-- lists them before asking.
CREATE SCHEMA tables_function;
COMMENT ON SCHEMA tables_function IS 'not shown: schema comments are not listed';
CREATE TABLE tables_function.open_t (id int, secret text);
COMMENT ON TABLE tables_function.open_t IS 'Readable by a column grant';
CREATE TABLE tables_function.closed_t (id int);
CREATE VIEW tables_function.open_v AS SELECT id FROM tables_function.open_t;
CREATE MATERIALIZED VIEW tables_function.open_m AS SELECT 1 AS one;
CREATE TABLE tables_function.parted (id int) PARTITION BY RANGE (id);
CREATE TABLE tables_function.parted_1 PARTITION OF tables_function.parted FOR VALUES FROM (0) TO (10);
-- A superuser sees every relation (not pg_ask's own, nor the partitions).
SELECT * FROM ask.tables() WHERE schema_name IN ('public', 'tables_function');
-- A role with no grant sees nothing; with USAGE on the schema and SELECT on a column, the table.
CREATE ROLE tables_function_reader;
SET ROLE tables_function_reader;
SELECT count(*) AS visible FROM ask.tables();
RESET ROLE;
GRANT SELECT (id) ON tables_function.open_t TO tables_function_reader;
SET ROLE tables_function_reader;
SELECT * FROM ask.tables();
RESET ROLE;
GRANT USAGE ON SCHEMA tables_function TO tables_function_reader;
GRANT SELECT ON tables_function.open_v, tables_function.open_m, tables_function.parted TO tables_function_reader;
GRANT SELECT ON cities TO tables_function_reader;
SET ROLE tables_function_reader;
SELECT * FROM ask.tables();
RESET ROLE;
-- It takes no argument and is stable: usable in a query's FROM and joins.
SELECT count(*) AS twice FROM ask.tables() a JOIN ask.tables() b USING (schema_name, table_name) WHERE a.schema_name = 'tables_function';
SELECT * FROM error_of($$SELECT * FROM ask.tables('public')$$);
DROP SCHEMA tables_function CASCADE;
REVOKE ALL ON cities FROM tables_function_reader;
DROP ROLE tables_function_reader;
