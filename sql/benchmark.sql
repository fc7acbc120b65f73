-- The views read the runs as the role that queries them (security_invoker): each role sees its
-- own runs, a superuser every run.
--
-- CALL ask.benchmark(...): start or resume a run, then score batches of answers, committing
-- after each, until the run is complete. Call it outside an explicit transaction block.
CREATE PROCEDURE benchmark(
    workload     text,
    length       integer,
    insert_ratio float8,
    overlap      float8,
    samples      integer,
    encodings    text[],
    promptings   text[],
    seed         integer DEFAULT 0
) LANGUAGE plpgsql AS $$
DECLARE
    run  bigint;
    done integer;
BEGIN
    run := ask._benchmark_start(workload, length, insert_ratio, overlap, samples, encodings, promptings, seed);
    COMMIT;
    LOOP
        done := ask._benchmark_step(run);
        COMMIT;
        EXIT WHEN done = 0;
    END LOOP;
    PERFORM ask._benchmark_finish(run);
    COMMIT;
END
$$;
COMMENT ON PROCEDURE benchmark(text, integer, float8, float8, integer, text[], text[], integer) IS
  'Benchmark the LLM as an in-context database on a loaded workload; results in ask.benchmark_results.';

CREATE VIEW benchmark_results WITH (security_invoker = true) AS
SELECT s.run_id AS run, r.workload, r.model, s.encoding, s.prompting, s.operation, s.category AS select_category,
       r.length, r.insert_ratio, r.overlap, s.achieved_insert_ratio, s.achieved_overlap,
       s.score, coalesce(s.prompt_tokens, 0) + coalesce(s.completion_tokens, 0) AS tokens, s.ms,
       s.truth_class, s.sample, s.query, s.truth, s.answer, s.error
  FROM ask.benchmark_samples s JOIN ask.benchmark_runs r ON r.id = s.run_id;
COMMENT ON VIEW benchmark_results IS 'One row per scored answer: run, model, encoding, prompting, operation, SELECT category, score, tokens, ms.';

CREATE VIEW benchmark_progress WITH (security_invoker = true) AS
SELECT r.id AS run, r.workload, r.model, r.status,
       r.samples * cardinality(r.encodings) * cardinality(r.promptings) AS total,
       count(s.run_id) AS done,
       round(100.0 * count(s.run_id) / (r.samples * cardinality(r.encodings) * cardinality(r.promptings)), 1) AS percent,
       avg(s.score) AS mean_score,
       r.started_at, max(s.done_at) AS last_answer_at,
       CASE WHEN count(s.run_id) > 0 AND r.status = 'running' THEN
            (max(s.done_at) - r.started_at) / count(s.run_id)
            * (r.samples * cardinality(r.encodings) * cardinality(r.promptings) - count(s.run_id)) END AS eta
  FROM ask.benchmark_runs r LEFT JOIN ask.benchmark_samples s ON s.run_id = r.id
 GROUP BY r.id;
COMMENT ON VIEW benchmark_progress IS 'Answers done per benchmark run, mean score so far, and an estimate of the time left.';

-- The paper's Table 1: model × prompting × encoding, one column per operation.
CREATE VIEW benchmark_table1 WITH (security_invoker = true) AS
SELECT model, prompting, encoding, "select", "insert", "update", "delete",
       (SELECT avg(v) FROM unnest(ARRAY["select", "insert", "update", "delete"]) v) AS mean,
       samples
  FROM (SELECT model, prompting, encoding,
               ask._metric(array_agg(score) FILTER (WHERE operation = 'select'), array_agg(truth_class) FILTER (WHERE operation = 'select')) AS "select",
               ask._metric(array_agg(score) FILTER (WHERE operation = 'insert'), array_agg(truth_class) FILTER (WHERE operation = 'insert')) AS "insert",
               ask._metric(array_agg(score) FILTER (WHERE operation = 'update'), array_agg(truth_class) FILTER (WHERE operation = 'update')) AS "update",
               ask._metric(array_agg(score) FILTER (WHERE operation = 'delete'), array_agg(truth_class) FILTER (WHERE operation = 'delete')) AS "delete",
               count(*) AS samples
          FROM ask.benchmark_results WHERE score IS NOT NULL
         GROUP BY model, prompting, encoding) t;
COMMENT ON VIEW benchmark_table1 IS 'Scores by model, prompting and encoding per operation (InConDB Table 1).';

-- The paper's Table 2: the ten SELECT categories.
CREATE VIEW benchmark_table2 WITH (security_invoker = true) AS
SELECT model, prompting, encoding,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'no_filtering'), array_agg(truth_class) FILTER (WHERE select_category = 'no_filtering')) AS no_filtering,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'single_filtering'), array_agg(truth_class) FILTER (WHERE select_category = 'single_filtering')) AS single_filtering,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'double_filtering'), array_agg(truth_class) FILTER (WHERE select_category = 'double_filtering')) AS double_filtering,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'triple_filtering'), array_agg(truth_class) FILTER (WHERE select_category = 'triple_filtering')) AS triple_filtering,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'range_filtering'), array_agg(truth_class) FILTER (WHERE select_category = 'range_filtering')) AS range_filtering,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'ranking'), array_agg(truth_class) FILTER (WHERE select_category = 'ranking')) AS ranking,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'count'), array_agg(truth_class) FILTER (WHERE select_category = 'count')) AS count,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'single_table'), array_agg(truth_class) FILTER (WHERE select_category = 'single_table')) AS single_table,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'double_table'), array_agg(truth_class) FILTER (WHERE select_category = 'double_table')) AS double_table,
       ask._metric(array_agg(score) FILTER (WHERE select_category = 'three_table'), array_agg(truth_class) FILTER (WHERE select_category = 'three_table')) AS three_table
  FROM ask.benchmark_results WHERE score IS NOT NULL AND operation = 'select'
 GROUP BY model, prompting, encoding;
COMMENT ON VIEW benchmark_table2 IS 'SELECT scores by category (InConDB Table 2).';

-- Score against the sampler's parameters l (length), b (insert ratio), o (overlap): the mean
-- of the per-operation scores at each value.
CREATE VIEW benchmark_by_parameter WITH (security_invoker = true) AS
WITH per_op AS (
    SELECT model, prompting, encoding, p.parameter, p.value, operation,
           ask._metric(array_agg(score), array_agg(truth_class)) AS score, count(*) AS samples
      FROM ask.benchmark_results
     CROSS JOIN LATERAL (VALUES ('length', length::float8), ('insert_ratio', insert_ratio), ('overlap', overlap)) AS p(parameter, value)
     WHERE score IS NOT NULL
     GROUP BY model, prompting, encoding, p.parameter, p.value, operation
)
SELECT model, prompting, encoding, parameter, value, avg(score) AS score, sum(samples) AS samples
  FROM per_op GROUP BY model, prompting, encoding, parameter, value;
COMMENT ON VIEW benchmark_by_parameter IS 'Mean per-operation score against l (length), b (insert_ratio) and o (overlap).';

GRANT SELECT ON benchmark_results, benchmark_progress, benchmark_table1, benchmark_table2, benchmark_by_parameter TO PUBLIC;
GRANT SELECT ON workloads, benchmark_runs, benchmark_samples TO PUBLIC;
