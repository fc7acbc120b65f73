-- Evaluating text-to-SQL on one's own schema: a suite of questions with gold SQL, runs through
-- ask.sql()'s pipeline against the (stand-in) LLM, execution accuracy overall and by group.
CREATE SCHEMA grocer;
CREATE TABLE grocer.fruits (id int PRIMARY KEY, name text NOT NULL, color text, price numeric(6,2));
INSERT INTO grocer.fruits VALUES (1, 'cherry', 'red', 1.30), (2, 'apple', 'red', 0.50),
    (3, 'banana', 'yellow', 0.25), (4, 'lime', 'green', 0.70);
-- Malformed suites are refused, naming the row.
SELECT ask.load_suite('grocer_quiz', '{"question": "q", "gold_sql": "SELECT 1"}');
SELECT ask.load_suite('grocer_quiz', '[{"question": "q", "gold_sql": "SELECT 1"}, {"question": "no gold"}]');
-- Five questions: the stand-in answers the first two with right SQL (the second after a
-- repair), the third with SQL that returns other rows, the fourth with no SQL at all; the
-- fifth question's gold SQL cannot run, so it is left out of EX.
SELECT ask.load_suite('grocer_quiz', $$[
  {"question": "How many red fruits are there?", "gold_sql": "SELECT count(*) FROM fruits WHERE color = 'red'",
   "schema": "grocer", "category": "aggregate", "difficulty": "easy"},
  {"question": "List fruit names from cheapest to dearest", "gold_sql": "SELECT name FROM fruits ORDER BY price",
   "schema": "grocer", "category": "order_by", "difficulty": "easy"},
  {"question": "Which fruits cost more than one dollar?", "gold_sql": "SELECT name FROM fruits WHERE price > 1",
   "schema": "grocer", "category": "filter", "difficulty": "medium"},
  {"question": "What is the most popular fruit colour?", "gold_sql": "SELECT color FROM fruits GROUP BY color ORDER BY count(*) DESC LIMIT 1",
   "schema": "grocer", "category": "aggregate", "difficulty": "hard"},
  {"question": "How many vegetables are there?", "query": "SELECT count(*) FROM vegetables",
   "db_name": "grocer", "query_category": "aggregate", "hardness": "medium"}
]$$);
SELECT qno, question, schema, category, difficulty FROM ask.eval_questions WHERE suite = 'grocer_quiz' ORDER BY qno;
-- Repairs as edits, which show the error the stand-in's repair answers (`auto`, the default,
-- asks a missing relation afresh).
SET ask.first_repair = edit;
-- A run, two questions at a time (the function form of CALL ask.evaluate, for use inside a
-- transaction block): it returns how many questions each batch evaluated, 0 when done.
SELECT ask.evaluate_step('grocer_quiz', 'standin', 2) AS batch_1;
SELECT ask.evaluate_step('grocer_quiz', 'standin', 2) AS batch_2;
SELECT ask.evaluate_step('grocer_quiz', 'standin', 2) AS batch_3;
SELECT ask.evaluate_step('grocer_quiz', 'standin', 2) AS batch_4;
SELECT qno, outcome, ex, attempts, llm_calls, predicted_sql, error
FROM ask.eval_results WHERE run_label = 'standin' ORDER BY qno;
SELECT suite, run_label, provider, model, finished_at IS NOT NULL AS finished, questions, evaluated, pending,
       gold_failed, judged, correct, errors, ex
FROM ask.eval_summary ORDER BY run_label;
SELECT grouped_by, "group", questions, gold_failed, judged, correct, errors, ex
FROM ask.eval_report WHERE run_label = 'standin' ORDER BY grouped_by, "group";
-- The procedure runs the same suite in batches of ask.concurrency, committing after each.
SET ask.concurrency = 3;
CALL ask.evaluate('grocer_quiz', 'standin-call');
CALL ask.evaluate('grocer_quiz', 'standin-call');
RESET ask.concurrency;
-- Where it cannot commit, it says so before it starts: several statements sent as one (as
-- psql -c "SET ...; CALL ..." sends them), a transaction block, a function.
SET ask.concurrency = 2 \; CALL ask.evaluate('grocer_quiz', 'standin-call');
BEGIN;
CALL ask.evaluate('grocer_quiz', 'standin-call');
ROLLBACK;
SELECT * FROM error_of($$CALL ask.evaluate('grocer_quiz', 'standin-call')$$);
SELECT run_label, finished_at IS NOT NULL AS finished, evaluated, pending, judged, correct, ex
FROM ask.eval_summary ORDER BY run_label;
-- A batch size of zero is refused; an unknown suite is named.
SELECT ask.evaluate_step('grocer_quiz', 'standin', 0);
SELECT ask.evaluate_step('no_such_quiz', 'standin');
-- Loading the suite again replaces it, with its runs.
SELECT ask.load_suite('grocer_quiz', '[{"question": "How many red fruits are there?", "gold_sql": "SELECT count(*) FROM fruits WHERE color = ''red''", "schema": "grocer"}]');
SELECT count(*) AS runs FROM ask.eval_summary;
DELETE FROM ask.eval_suites WHERE suite = 'grocer_quiz';
DROP SCHEMA grocer CASCADE;
