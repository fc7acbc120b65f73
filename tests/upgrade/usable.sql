-- After ALTER EXTENSION pg_ask UPDATE: what was there still works, with the new version's
-- functions over the old rows. Every check raises an error when it fails.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = app, public;
SET ask.base_url = :'llm';
CREATE FUNCTION pg_temp.check(ok boolean, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN RAISE EXCEPTION 'after the upgrade: %', what; END IF;
END $$;
SELECT pg_temp.check(count(*) = 0, 'no table of pg_ask is empty')
FROM (VALUES ('llm_calls', (SELECT count(*) FROM ask.llm_calls)), ('value_memory', (SELECT count(*) FROM ask.value_memory)),
             ('schema_memory_tables', (SELECT count(*) FROM ask.schema_memory_tables)), ('shadow_log', (SELECT count(*) FROM ask.shadow_log)),
             ('shadow_replays', (SELECT count(*) FROM ask.shadow_replays)), ('benchmark_samples', (SELECT count(*) FROM ask.benchmark_samples)),
             ('eval_results', (SELECT count(*) FROM ask.eval_results))) AS c(t, n)
WHERE n = 0;
-- The value memory answers from the rows indexed before.
SELECT pg_temp.check(bool_or(value = 'Los Angeles'), 'the value memory finds Los Angeles for LA')
FROM ask.similar_values('app.cities', 'name', 'Los Angeles', 3);
-- ask() answers, and the ledger keeps counting.
SELECT pg_temp.check(ask('which Italian restaurants are in LA?') LIKE '%Roma%', 'ask() answers');
SELECT pg_temp.check(count(*) >= 4, 'the ledger has the calls of before and after') FROM ask.llm_calls;
-- The ledger's rows of before name their role by OID now: the role that made them.
SELECT pg_temp.check(bool_and(role = current_user::regrole), 'the ledger rows keep their role, by OID') FROM ask.llm_calls;
-- So do the other tables that name a role: the role of before, by OID.
SELECT pg_temp.check(bool_and(coalesce(r = current_user::regrole, false)) AND count(*) = 7, 'every converted row keeps its role, by OID')
FROM (SELECT (SELECT owner FROM ask.eval_suites WHERE suite = 'upgrade_quiz'), (SELECT owner FROM ask.eval_results LIMIT 1),
             (SELECT role_name FROM ask.shadow_replays LIMIT 1), (SELECT enabled_by FROM ask.shadow_tables LIMIT 1),
             (SELECT loaded_by FROM ask.workloads LIMIT 1), (SELECT started_by FROM ask.benchmark_runs LIMIT 1),
             (SELECT indexed_by FROM ask.value_columns LIMIT 1)) AS t(a, b, c, d, e, f, g)
CROSS JOIN LATERAL unnest(ARRAY[a, b, c, d, e, f, g]) AS u(r);
-- The suites of the dropped roles are no role's (OID 0), renamed apart, their questions kept.
SELECT pg_temp.check(count(*) = 2 AND bool_and(s.owner = 0::oid::regrole AND s.owner::text = '-'), 'the dropped roles'' suites are no role''s')
FROM ask.eval_suites s WHERE s.suite IN ('upgrade_gone1.upgrade_quiz', 'upgrade_gone2.upgrade_quiz');
SELECT pg_temp.check(count(*) = 2, 'their questions follow them') FROM ask.eval_questions q
WHERE q.owner = 0::oid::regrole AND q.suite LIKE 'upgrade_gone_.upgrade_quiz';
-- Capture goes on into the same log, and a replay reads it.
INSERT INTO app.orchard VALUES (4, 'pear', 2);
SELECT pg_temp.check(count(*) = 1, 'the shadow log records an insert after the upgrade') FROM ask.shadow_commands WHERE command LIKE '%pear%';
SELECT pg_temp.check(score IS NOT NULL, 'a replay scores') FROM ask.shadow_replay('SELECT name FROM app.orchard ORDER BY price');
-- The old evaluation run is reported; a new run fills the new trace column.
SELECT pg_temp.check(judged = 2, 'the run of before is reported') FROM ask.eval_summary WHERE run_label = 'before';
SELECT ask.evaluate_step('upgrade_quiz', 'after', 5);
SELECT pg_temp.check(count(trace) = 2, 'the new run keeps traces') FROM ask.eval_results WHERE run_label = 'after';
SELECT pg_temp.check(count(trace) = 0, 'the old run has none') FROM ask.eval_results WHERE run_label = 'before';
-- The benchmark's views read the old run.
SELECT pg_temp.check(count(*) > 0, 'benchmark results of before') FROM ask.benchmark_results WHERE workload = 'w1';
-- The response cache, new in 0.2.0, works on the upgraded database.
SET ask.cache = on;
SELECT ask('which Italian restaurants are in LA?') IS NOT NULL AS asked;
SELECT ask('which Italian restaurants are in LA?') IS NOT NULL AS asked_again;
-- (Its SQL generation; the two rows are said without a model call.)
SELECT pg_temp.check(count(*) >= 1, 'the second ask() is answered from the cache') FROM ask.llm_calls WHERE cached;
SELECT pg_temp.check(sum(cache_hits) >= 1, 'ask.usage counts the hits') FROM ask.usage;
