-- CALL ask.benchmark(): an in-context database benchmark over a workload, run by a role that is
-- not a superuser against the stand-in (which answers every prompt about golden_bench_gears
-- with []); its refusals; the views and the HTML report, each role seeing its own runs. The
-- runs' ids appear in NOTICEs: their sequence is put back at the end.
SELECT last_value AS br_last, is_called AS br_called FROM ask.benchmark_runs_id_seq \gset
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT ask.load_workload('benchmark_w', $${
  "create_tables": ["CREATE TABLE golden_bench_gears (id INT PRIMARY KEY, name VARCHAR(20));"],
  "insert": ["INSERT INTO golden_bench_gears VALUES (1, 'spur');", "INSERT INTO golden_bench_gears VALUES (2, 'bevel');"],
  "delete": ["DELETE FROM golden_bench_gears WHERE id = 1;"],
  "update": ["UPDATE golden_bench_gears SET name = 'worm' WHERE id = 2;"],
  "select": {"no_filtering": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "single_filtering": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "double_filtering": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "triple_filtering": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "range_filtering": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "ranking": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "count": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "single_table": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "double_table": ["SELECT name FROM golden_bench_gears WHERE id > 0;"], "three_table": ["SELECT name FROM golden_bench_gears WHERE id > 0;"]}
}$$) ->> 'tables' AS tables;
CREATE ROLE benchmark_runner;
CREATE ROLE benchmark_other;
SELECT format('GRANT CREATE ON DATABASE %I TO benchmark_runner', current_database()) \gexec
SET ROLE benchmark_runner;
SET ask.concurrency = 2;
CALL ask.benchmark('benchmark_w', 2, 0.5, 0.5, 2, ARRAY['sql'], ARRAY['zero_shot'], 1);
RESET ask.concurrency;
SELECT workload, status, samples, encodings, promptings, seed, started_by::text FROM ask.benchmark_runs;
SELECT total, done, percent FROM ask.benchmark_progress;
SELECT operation, count(*) AS answers, count(score) AS scored FROM ask.benchmark_results GROUP BY 1 ORDER BY 1;
SELECT count(*) > 0 AS table1 FROM ask.benchmark_table1;
SELECT count(*) > 0 AS by_parameter FROM ask.benchmark_by_parameter;
SELECT html LIKE '<!DOCTYPE html>%' AS page, html LIKE '%<svg%' AS charts, html NOT LIKE '%<script%' AS no_script
FROM ask.benchmark_report_html() AS html;
SELECT ask.benchmark_report_html(ARRAY[-1]::bigint[]) LIKE '<!DOCTYPE html>%' AS empty_page;
-- The same CALL after the run finished starts another run.
CALL ask.benchmark('benchmark_w', 2, 0.5, 0.5, 2, ARRAY['sql'], ARRAY['zero_shot'], 1);
SELECT count(*) AS runs, count(*) FILTER (WHERE status = 'done') AS done FROM ask.benchmark_runs;
-- Refusals before it starts: an unknown workload, parameters out of range, an unknown
-- encoding or prompting; inside a transaction block.
CALL ask.benchmark('benchmark_none', 2, 0.5, 0.5, 2, ARRAY['sql'], ARRAY['zero_shot'], 1);
CALL ask.benchmark('benchmark_w', -1, 0.5, 0.5, 2, ARRAY['sql'], ARRAY['zero_shot'], 1);
CALL ask.benchmark('benchmark_w', 2, 1.5, 0.5, 2, ARRAY['sql'], ARRAY['zero_shot'], 1);
CALL ask.benchmark('benchmark_w', 2, 0.5, -0.5, 2, ARRAY['sql'], ARRAY['zero_shot'], 1);
CALL ask.benchmark('benchmark_w', 2, 0.5, 0.5, 0, ARRAY['sql'], ARRAY['zero_shot'], 1);
CALL ask.benchmark('benchmark_w', 2, 0.5, 0.5, 2, ARRAY['xml'], ARRAY['zero_shot'], 1);
CALL ask.benchmark('benchmark_w', 2, 0.5, 0.5, 2, ARRAY['sql'], ARRAY['many_shot'], 1);
BEGIN;
CALL ask.benchmark('benchmark_w', 2, 0.5, 0.5, 2, ARRAY['sql'], ARRAY['zero_shot'], 1);
ROLLBACK;
SELECT min(id) AS run FROM ask.benchmark_runs \gset
-- Another role sees none of the runs, and may neither step nor finish one through the internal
-- functions; without CREATE on the database it may not run a benchmark.
SET ROLE benchmark_other;
SELECT count(*) AS runs FROM ask.benchmark_runs;
SELECT count(*) AS samples FROM ask.benchmark_samples;
SELECT count(*) AS results FROM ask.benchmark_results;
SELECT count(*) AS progress_rows FROM ask.benchmark_progress;
SELECT count(*) AS table1_rows FROM ask.benchmark_table1;
SELECT code, regexp_replace(message, '\d+', 'N', 'g') AS message, hint FROM error_of(format('SELECT ask._benchmark_step(%s)', :run));
SELECT code, regexp_replace(message, '\d+', 'N', 'g') AS message, hint FROM error_of(format('SELECT ask._benchmark_finish(%s)', :run));
CALL ask.benchmark('benchmark_w', 2, 0.5, 0.5, 2, ARRAY['sql'], ARRAY['zero_shot'], 1);
RESET ROLE;
-- A superuser sees every role's runs.
SELECT started_by::text, count(*) AS runs FROM ask.benchmark_runs GROUP BY 1;
-- Dropping the workload drops its runs.
DELETE FROM ask.workloads WHERE name = 'benchmark_w';
SELECT count(*) AS runs_left FROM ask.benchmark_runs;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
SELECT format('REVOKE CREATE ON DATABASE %I FROM benchmark_runner', current_database()) \gexec
DISCARD TEMP;
DROP ROLE benchmark_runner, benchmark_other;
SELECT setval('ask.benchmark_runs_id_seq', :br_last, :'br_called') IS NOT NULL AS sequence_restored;
