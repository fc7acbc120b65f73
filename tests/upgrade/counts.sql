-- Rows in every table of pg_ask, before and after the upgrade.
SELECT format('%s %s', t, n) FROM (VALUES
    ('llm_calls', (SELECT count(*) FROM ask.llm_calls)),
    ('value_columns', (SELECT count(*) FROM ask.value_columns)),
    ('value_memory', (SELECT count(*) FROM ask.value_memory)),
    ('schema_memory_tables', (SELECT count(*) FROM ask.schema_memory_tables)),
    ('schema_memory_schemas', (SELECT count(*) FROM ask.schema_memory_schemas)),
    ('shadow_tables', (SELECT count(*) FROM ask.shadow_tables)),
    ('shadow_log', (SELECT count(*) FROM ask.shadow_log)),
    ('shadow_replays', (SELECT count(*) FROM ask.shadow_replays)),
    ('workloads', (SELECT count(*) FROM ask.workloads)),
    ('benchmark_runs', (SELECT count(*) FROM ask.benchmark_runs WHERE status = 'done')),
    ('benchmark_samples', (SELECT count(*) FROM ask.benchmark_samples)),
    ('eval_suites', (SELECT count(*) FROM ask.eval_suites)),
    ('eval_questions', (SELECT count(*) FROM ask.eval_questions)),
    ('eval_runs', (SELECT count(*) FROM ask.eval_runs)),
    ('eval_results', (SELECT count(*) FROM ask.eval_results))
) AS c(t, n) ORDER BY t;
