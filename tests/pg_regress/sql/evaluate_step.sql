-- ask.evaluate_step(): one batch of an evaluation run, for use inside a transaction block;
-- its arguments and refusals, and that a run is its role's alone.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
CREATE SCHEMA evaluate_step;
CREATE TABLE evaluate_step.comets (id int PRIMARY KEY, name text, period_years numeric);
INSERT INTO evaluate_step.comets VALUES (1, 'Halley', 76), (2, 'Encke', 3.3), (3, 'Swift-Tuttle', 133);
SELECT ask.load_suite('evaluate_step_suite', $$[
  {"question": "golden eval: how many comets are there?", "gold_sql": "SELECT count(*) FROM comets", "schema": "evaluate_step"},
  {"question": "golden eval: which comets return within a decade?", "gold_sql": "SELECT name FROM comets WHERE period_years < 10", "schema": "evaluate_step"}
]$$);
-- Batches of one: 1, 1, then 0 when the run is complete.
SELECT ask.evaluate_step('evaluate_step_suite', 'r1', 1) AS first, ask.evaluate_step('evaluate_step_suite', 'r1', 1) AS second,
       ask.evaluate_step('evaluate_step_suite', 'r1', 1) AS done;
SELECT qno, outcome, ex, predicted_sql FROM ask.eval_results WHERE suite = 'evaluate_step_suite' AND run_label = 'r1' ORDER BY qno;
SELECT run_label, finished_at IS NOT NULL AS finished, questions, evaluated, judged, correct, ex
FROM ask.eval_summary WHERE suite = 'evaluate_step_suite';
-- A finished run takes no more: 0.
SELECT ask.evaluate_step('evaluate_step_suite', 'r1');
-- The batch defaults to ask.concurrency; NULL is the default.
SELECT ask.evaluate_step('evaluate_step_suite', 'r2', NULL) AS evaluated;
-- Refusals: a batch under 1, a suite that is not the caller's.
SELECT * FROM error_of($$SELECT ask.evaluate_step('evaluate_step_suite', 'r3', 0)$$);
SELECT * FROM error_of($$SELECT ask.evaluate_step('evaluate_step_suite', 'r3', -5)$$);
SELECT * FROM error_of($$SELECT ask.evaluate_step('evaluate_step_none', 'r3')$$);
-- Not in a read-only transaction.
BEGIN READ ONLY;
SELECT code, message FROM error_of($$SELECT ask.evaluate_step('evaluate_step_suite', 'r3', 1)$$);
ROLLBACK;
-- Another role: the suite is not its own (42704), it sees none of the runs or results and
-- changes none.
CREATE ROLE evaluate_step_other;
GRANT USAGE ON SCHEMA evaluate_step TO evaluate_step_other;
GRANT SELECT ON evaluate_step.comets TO evaluate_step_other;
SET ROLE evaluate_step_other;
SELECT * FROM error_of($$SELECT ask.evaluate_step('evaluate_step_suite', 'r1', 1)$$);
SELECT count(*) AS runs FROM ask.eval_runs;
SELECT count(*) AS results FROM ask.eval_results;
SELECT count(*) AS summaries FROM ask.eval_summary;
SELECT * FROM error_of($$UPDATE ask.eval_results SET ex = true$$);
RESET ROLE;
SELECT count(*) FILTER (WHERE ex) AS correct FROM ask.eval_results WHERE suite = 'evaluate_step_suite';
DELETE FROM ask.eval_suites WHERE suite = 'evaluate_step_suite';
DELETE FROM ask.llm_calls WHERE id > :calls_before;
DROP SCHEMA evaluate_step CASCADE;
DROP ROLE evaluate_step_other;
