-- CALL ask.evaluate(): a whole run, committing after each batch; where it cannot commit it
-- says so before it starts; its internal start function refuses to run as a plain SELECT.
-- And the views ask.eval_summary and ask.eval_report, per role.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
CREATE SCHEMA evaluate_call;
CREATE TABLE evaluate_call.comets (id int PRIMARY KEY, name text, period_years numeric);
INSERT INTO evaluate_call.comets VALUES (1, 'Halley', 76), (2, 'Encke', 3.3), (3, 'Swift-Tuttle', 133);
SELECT ask.load_suite('evaluate_call_suite', $$[
  {"question": "golden eval: how many comets are there?", "gold_sql": "SELECT count(*) FROM comets", "schema": "evaluate_call", "category": "count", "difficulty": "easy"},
  {"question": "golden eval: which comets return within a decade?", "gold_sql": "SELECT name FROM comets WHERE period_years < 10", "schema": "evaluate_call", "category": "filter", "difficulty": "easy"},
  {"question": "golden eval: name the slowest comet", "gold_sql": "SELECT name FROM comets ORDER BY period_years DESC LIMIT 1", "schema": "evaluate_call", "category": "order_by", "difficulty": "hard"}
]$$);
CALL ask.evaluate('evaluate_call_suite', 'run');
SELECT run_label, finished_at IS NOT NULL AS finished, questions, evaluated, pending, gold_failed, judged, correct, errors, ex
FROM ask.eval_summary WHERE suite = 'evaluate_call_suite';
SELECT grouped_by, "group", questions, judged, correct, ex FROM ask.eval_report
WHERE suite = 'evaluate_call_suite' ORDER BY grouped_by, "group";
-- Again: the run is complete, nothing left.
CALL ask.evaluate('evaluate_call_suite', 'run');
-- Refusals before it starts: an unknown suite; inside a transaction block; the start
-- function called as a SELECT.
CALL ask.evaluate('evaluate_call_none', 'run');
BEGIN;
CALL ask.evaluate('evaluate_call_suite', 'in_a_block');
ROLLBACK;
SELECT * FROM error_of($$SELECT ask._evaluate_begin('evaluate_call_suite', 'by_hand')$$);
SELECT count(*) AS runs FROM ask.eval_runs WHERE suite = 'evaluate_call_suite';
-- Another role sees no run in the views, and may not evaluate the suite.
CREATE ROLE evaluate_call_other;
SET ROLE evaluate_call_other;
SELECT count(*) AS summaries FROM ask.eval_summary;
SELECT count(*) AS report_rows FROM ask.eval_report;
CALL ask.evaluate('evaluate_call_suite', 'theirs');
RESET ROLE;
DELETE FROM ask.eval_suites WHERE suite = 'evaluate_call_suite';
DELETE FROM ask.llm_calls WHERE id > :calls_before;
DROP SCHEMA evaluate_call CASCADE;
DROP ROLE evaluate_call_other;
