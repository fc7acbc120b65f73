-- ask.select_tables(): the readable tables that best match a question, without an LLM call;
-- its arguments, its NOTICE without a memory, and what another role sees.
CREATE SCHEMA select_tables;
CREATE TABLE select_tables.invoices (id int PRIMARY KEY, customer text, amount numeric, paid_on date);
COMMENT ON TABLE select_tables.invoices IS 'Invoices sent to customers';
CREATE TABLE select_tables.parcels (id int PRIMARY KEY, weight_kg numeric, shipped_on date);
CREATE TABLE select_tables.payroll (id int PRIMARY KEY, employee text, salary numeric);
-- Without a memory: words only, and a NOTICE says so.
SELECT rel, score > 0 AS matched FROM ask.select_tables('unpaid invoices of each customer', 3);
-- k defaults to 10; NULL k is the default too; 0 is no table.
SELECT count(*) AS tables FROM ask.select_tables('invoices');
SELECT count(*) AS tables FROM ask.select_tables('invoices', NULL);
SELECT count(*) AS tables FROM ask.select_tables('invoices', 0);
-- A negative k, and a NULL question.
SELECT * FROM error_of($$SELECT * FROM ask.select_tables('invoices', -2)$$);
SELECT count(*) AS tables FROM ask.select_tables(NULL);
SELECT count(*) AS tables FROM ask.select_tables('');
-- With a memory of the schema (in a transaction, rolled back: the memory changes what ask()
-- describes for the files after this one).
BEGIN;
SELECT ask.index_schema(ARRAY['select_tables']);
SELECT rel FROM ask.select_tables('salary of each employee', 1);
SELECT rel FROM ask.select_tables('parcels shipped this week', 1);
-- Through the stored index only the memory's candidates are ranked (the three tables of the
-- schema); off, every readable table (with the two of public, which the memory does not hold).
SELECT count(*) AS listed FROM ask.select_tables('parcels shipped this week', 10);
SET LOCAL ask.selection_index = off;
SELECT count(*) AS listed FROM ask.select_tables('parcels shipped this week', 10);
RESET ask.selection_index;
-- A role sees only the tables it may read; a table it may not read is never ranked, even
-- named in the question.
CREATE ROLE select_tables_clerk;
GRANT USAGE ON SCHEMA select_tables TO select_tables_clerk;
GRANT SELECT ON select_tables.invoices TO select_tables_clerk;
SET ROLE select_tables_clerk;
SELECT rel FROM ask.select_tables('payroll salary of each employee and invoices', 10);
RESET ROLE;
-- A role that may read nothing gets no rows, not an error.
CREATE ROLE select_tables_nobody;
SET ROLE select_tables_nobody;
SELECT count(*) AS tables FROM ask.select_tables('payroll salary of each employee', 10);
-- The internal function makes the same checks as the face.
SELECT count(*) AS tables FROM ask._select_tables('payroll salary of each employee', 10);
RESET ROLE;
ROLLBACK;
DROP SCHEMA select_tables CASCADE;
SELECT count(*) AS remembered FROM ask.schema_memory_tables;
