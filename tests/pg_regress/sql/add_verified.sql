-- ask.add_verified(): a question and the SQL that answers it, checked as the caller and kept
-- as a verified query; every refusal with its SQLSTATE.
SELECT last_value AS vq_last, is_called AS vq_called FROM ask.verified_queries_id_seq \gset
CREATE SCHEMA add_verified;
CREATE TABLE add_verified.books (id int PRIMARY KEY, title text, author text, price numeric);
INSERT INTO add_verified.books VALUES (1, 'Dune', 'Herbert', 9.5), (2, 'Emma', 'Austen', 7);
-- Kept with the tables it reads, its schema, who verified it and how.
SELECT ask.add_verified('Which books cost less than 8?', 'SELECT title FROM add_verified.books WHERE price < 8') > 0 AS added;
SELECT question, sql, schema, tables, verified_by_role = current_user::regrole AS mine, source, embedding IS NOT NULL AS embedded
FROM ask.verified_queries ORDER BY id;
-- With a schema: the SQL runs with the search path set to it.
SELECT ask.add_verified('How many books are there?', 'SELECT count(*) FROM books', schema => 'add_verified') > 0 AS added;
SELECT question, schema, tables FROM ask.verified_queries WHERE question = 'How many books are there?';
-- Refusals: an empty question, a schema that does not exist, SQL that is not one
-- read-only query, SQL that reads no table, SQL that fails.
SELECT * FROM error_of($$SELECT ask.add_verified('', 'SELECT 1 FROM add_verified.books')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT count(*) FROM books', schema => 'add_verified_none')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'DELETE FROM add_verified.books')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT 1; SELECT 2')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT now()')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT pg_sleep(0) FROM add_verified.books')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT titel FROM add_verified.books')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT count(*) FROM books')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', '')$$);
-- A role verifies only queries over whole tables it may read: not over a table it may not
-- read, nor one it may read only some columns of; a role with no grant at all neither.
CREATE ROLE add_verified_clerk;
GRANT USAGE ON SCHEMA add_verified TO add_verified_clerk;
GRANT SELECT (id, title) ON add_verified.books TO add_verified_clerk;
SET ROLE add_verified_clerk;
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT title FROM add_verified.books')$$);
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT name FROM public.cities')$$);
-- It sees none of the verified queries over books.
SELECT count(*) AS visible FROM ask.verified_queries;
RESET ROLE;
-- Granted the table, it verifies its own; another role sees it only with SELECT on the table.
GRANT SELECT ON add_verified.books TO add_verified_clerk;
SET ROLE add_verified_clerk;
SELECT ask.add_verified('Who wrote Emma?', 'SELECT author FROM add_verified.books WHERE title = ''Emma''') > 0 AS added;
SELECT question, verified_by FROM ask.verified_queries ORDER BY id;
RESET ROLE;
-- Row-level security hiding rows from the role: it may verify a query over the rows it sees,
-- and is shown no verified query over the table, its own included (a query's literals may
-- come from any row).
ALTER TABLE add_verified.books ENABLE ROW LEVEL SECURITY;
CREATE POLICY add_verified_cheap ON add_verified.books FOR SELECT USING (price < 8);
SET ROLE add_verified_clerk;
SELECT * FROM error_of($$SELECT ask.add_verified('q', 'SELECT title FROM add_verified.books')$$);
SELECT count(*) AS visible FROM ask.verified_queries;
RESET ROLE;
DELETE FROM ask.verified_queries;
DROP SCHEMA add_verified CASCADE;
DROP ROLE add_verified_clerk;
SELECT setval('ask.verified_queries_id_seq', :vq_last, :'vq_called') IS NOT NULL AS sequence_restored;
