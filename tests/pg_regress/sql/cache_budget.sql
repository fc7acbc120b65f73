-- The response cache (ask.cache) and token budgets (ask.max_tokens_per_day), with the usage view.
SELECT coalesce(max(id), 0) AS before FROM ask.llm_calls \gset
-- Off by default: the same question twice is two rounds of calls.
SHOW ask.cache;
SET ask.cache = on;
SELECT ask('which Italian restaurants are in LA?');
SELECT ask('which Italian restaurants are in LA?');
-- The second ask() made no LLM call: each of its stages was answered from the cache, and the
-- ledger says so, with the tokens the first call spent.
SELECT stage, cached, tokens_saved > 0 AS saved, prompt_tokens, completion_tokens
FROM ask.llm_calls WHERE id > :before ORDER BY id;
-- ask.explain() shows it per call.
SELECT jsonb_path_query_array(t, '$.stages[*] ? (exists(@.output.cached)).stage') AS cached_stages
FROM ask.explain('which Italian restaurants are in LA?') t;
-- Another setting is another request: no hit.
SET ask.max_tokens = 500;
SELECT ask('which Italian restaurants are in LA?');
SELECT count(*) FILTER (WHERE cached) AS hits, count(*) FILTER (WHERE NOT cached) AS calls
FROM ask.llm_calls WHERE id > :before;
RESET ask.max_tokens;
-- The usage view: calls, tokens and hits per role and day.
SELECT role, calls >= 4 AS calls, tokens > 0 AS tokens, cache_hits >= 2 AS cache_hits, tokens_saved > 0 AS saved
FROM ask.usage WHERE role = current_user::regrole AND day = (now() AT TIME ZONE 'UTC')::date;
-- Nobody reads the cache but pg_ask.
CREATE ROLE ask_budget_user;
GRANT SELECT ON cities, restaurants TO ask_budget_user;
SET ROLE ask_budget_user;
SELECT * FROM error_of('SELECT count(*) FROM ask.llm_cache');
-- A role cannot lift its own budget.
SELECT * FROM error_of('SET ask.max_tokens_per_day = 0');
RESET ROLE;
-- A budget refuses the call that could go over it, before it is sent: nothing reaches the
-- ledger.
RESET ask.cache;
SET ask.max_tokens_per_day = 100;
SET ROLE ask_budget_user;
SELECT * FROM error_of($$SELECT ask('list the restaurants in San Francisco')$$);
SELECT count(*) AS calls FROM ask.llm_calls;
RESET ROLE;
-- Within the budget the call goes through.
SET ask.max_tokens_per_day = 1000000;
SET ROLE ask_budget_user;
SELECT ask.sql('list the restaurants in San Francisco');
SELECT calls, tokens > 0 AS tokens FROM ask.usage;
RESET ROLE;
RESET ask.max_tokens_per_day;
DELETE FROM ask.llm_calls WHERE role = 'ask_budget_user'::regrole;
REVOKE ALL ON cities, restaurants FROM ask_budget_user;
DROP ROLE ask_budget_user;
