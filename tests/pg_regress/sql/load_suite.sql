-- ask.load_suite(): an evaluation suite of questions with gold SQL, in the formats of common
-- suites; its refusals, and that a suite is its loader's alone.
SELECT ask.load_suite('load_suite_a', $$[
  {"question": "q1", "gold_sql": "SELECT 1 FROM cities", "schema": "public", "category": "c1", "difficulty": "easy"},
  {"question": "q2", "query": "SELECT 2 FROM cities", "db_name": "public", "query_category": "c2", "hardness": "hard"},
  {"question": "q3", "sql": "SELECT 3 FROM cities", "db_id": "public", "level": "medium", "instructions": "count carefully"},
  {"question": "q4", "gold": "SELECT 4 FROM cities"}
]$$);
SELECT qno, question, gold_sql, schema, category, difficulty, instructions FROM ask.eval_questions
WHERE suite = 'load_suite_a' ORDER BY qno;
SELECT suite, questions, owner = current_user::regrole AS mine FROM ask.eval_suites WHERE suite = 'load_suite_a';
-- Refusals, each naming what is wrong: not an array, a row that is not an object or lacks its
-- question or gold SQL, an empty name; NULL arguments are NULL.
SELECT * FROM error_of($$SELECT ask.load_suite('load_suite_b', '{"question": "q", "gold_sql": "SELECT 1"}')$$);
SELECT * FROM error_of($$SELECT ask.load_suite('load_suite_b', '["SELECT 1"]')$$);
SELECT * FROM error_of($$SELECT ask.load_suite('load_suite_b', '[{"gold_sql": "SELECT 1"}]')$$);
SELECT * FROM error_of($$SELECT ask.load_suite('load_suite_b', '[{"question": "q", "gold_sql": "SELECT 1"}, {"question": "no gold"}]')$$);
SELECT * FROM error_of($$SELECT ask.load_suite('load_suite_b', '[{"question": "", "gold_sql": "SELECT 1"}]')$$);
SELECT * FROM error_of($$SELECT ask.load_suite('load_suite_b', '[]')$$);
SELECT * FROM error_of($$SELECT ask.load_suite('  ', '[{"question": "q", "gold_sql": "SELECT 1"}]')$$);
SELECT ask.load_suite(NULL, '[]') IS NULL AS null_name, ask.load_suite('load_suite_b', NULL) IS NULL AS null_rows;
SELECT count(*) AS suites FROM ask.eval_suites WHERE suite = 'load_suite_b';
-- Loading again replaces the suite.
SELECT ask.load_suite('load_suite_a', '[{"question": "only", "gold_sql": "SELECT 1 FROM cities"}]');
SELECT qno, question FROM ask.eval_questions WHERE suite = 'load_suite_a' ORDER BY qno;
-- Another role: it does not see the first role's suite, loads one of the same name that is
-- its own, changes none of the first role's rows, and cannot write rows as another owner.
CREATE ROLE load_suite_other;
SET ROLE load_suite_other;
SELECT count(*) AS visible FROM ask.eval_suites;
SELECT ask.load_suite('load_suite_a', '[{"question": "mine", "gold_sql": "SELECT 1"}]');
SELECT suite, questions FROM ask.eval_suites;
SELECT * FROM error_of($$UPDATE ask.eval_questions SET question = 'changed' WHERE suite = 'load_suite_a' AND question = 'only'$$);
SELECT * FROM error_of($$INSERT INTO ask.eval_suites (suite, questions, owner) VALUES ('load_suite_planted', 1, 'postgres')$$);
DELETE FROM ask.eval_suites WHERE suite = 'load_suite_a';
RESET ROLE;
SELECT question FROM ask.eval_questions WHERE suite = 'load_suite_a' ORDER BY qno;
-- Not in a read-only transaction.
BEGIN READ ONLY;
SELECT code, message FROM error_of($$SELECT ask.load_suite('load_suite_c', '[{"question": "q", "gold_sql": "SELECT 1"}]')$$);
ROLLBACK;
DELETE FROM ask.eval_suites WHERE suite LIKE 'load_suite%';
DROP ROLE load_suite_other;
