-- ask.verify_suite(): an evaluation suite's questions kept as verified queries with their gold
-- SQL; gold SQL that fails is left out; only the caller's own suite.
SELECT last_value AS vq_last, is_called AS vq_called FROM ask.verified_queries_id_seq \gset
CREATE SCHEMA verify_suite;
CREATE TABLE verify_suite.planets (id int PRIMARY KEY, name text, moons int);
INSERT INTO verify_suite.planets VALUES (1, 'Mars', 2), (2, 'Venus', 0), (3, 'Earth', 1);
SELECT ask.load_suite('verify_suite_planets', $$[
  {"question": "How many planets have moons?", "gold_sql": "SELECT count(*) FROM planets WHERE moons > 0", "schema": "verify_suite"},
  {"question": "Which planet has the most moons?", "gold_sql": "SELECT name FROM verify_suite.planets ORDER BY moons DESC LIMIT 1"},
  {"question": "Broken gold", "gold_sql": "SELECT nothing FROM verify_suite.planets"},
  {"question": "A write", "gold_sql": "DELETE FROM verify_suite.planets"}
]$$);
SELECT ask.verify_suite('verify_suite_planets');
SELECT question, schema, source FROM ask.verified_queries ORDER BY id;
SELECT count(*) AS planets FROM verify_suite.planets;
-- Again: the same questions are not kept twice.
SELECT ask.verify_suite('verify_suite_planets');
SELECT count(*) AS verified FROM ask.verified_queries;
-- No such suite; NULL.
SELECT * FROM error_of($$SELECT ask.verify_suite('verify_suite_none')$$);
SELECT ask.verify_suite(NULL) IS NULL AS null_in_null_out;
-- Another role's suite is not the caller's: as if it did not exist. It may verify a suite of
-- its own only over tables it may read.
CREATE ROLE verify_suite_guest;
GRANT USAGE ON SCHEMA verify_suite TO verify_suite_guest;
SET ROLE verify_suite_guest;
SELECT * FROM error_of($$SELECT ask.verify_suite('verify_suite_planets')$$);
SELECT ask.load_suite('verify_suite_mine', '[{"question": "How many planets?", "gold_sql": "SELECT count(*) FROM verify_suite.planets"}]');
SELECT ask.verify_suite('verify_suite_mine');
SELECT count(*) AS visible FROM ask.verified_queries;
DELETE FROM ask.eval_suites WHERE suite = 'verify_suite_mine';
RESET ROLE;
DELETE FROM ask.verified_queries;
DELETE FROM ask.eval_suites WHERE suite LIKE 'verify_suite%';
DROP SCHEMA verify_suite CASCADE;
DROP ROLE verify_suite_guest;
SELECT setval('ask.verified_queries_id_seq', :vq_last, :'vq_called') IS NOT NULL AS sequence_restored;
