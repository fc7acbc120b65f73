-- ask.max_tokens_per_day per role: set by a superuser for a role, held before a call is sent
-- (53000), counted per role; a role cannot lift its own.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS questions_before FROM ask.questions \gset
CREATE ROLE budget_roles_small;
CREATE ROLE budget_roles_free;
GRANT SELECT ON cities TO budget_roles_small, budget_roles_free;
-- A budget too small for one call: refused before it is sent, with a hint; nothing in the ledger.
SET ask.max_tokens_per_day = 50;
SET ROLE budget_roles_small;
SELECT code, regexp_replace(message, '\d+', 'N', 'g') AS message, hint FROM error_of($$SELECT ask.sql('golden budget: how many cities are there?')$$);
SELECT count(*) AS calls FROM ask.llm_calls;
-- The role cannot raise it, in any way.
SELECT * FROM error_of($$SET ask.max_tokens_per_day = 0$$);
SELECT * FROM error_of($$SELECT set_config('ask.max_tokens_per_day', '0', false)$$);
SELECT * FROM error_of($$SET LOCAL ask.max_tokens_per_day = 0$$);
RESET ROLE;
-- Another role's spending does not count against it: each role has its own day's count.
SET ask.max_tokens_per_day = 100000;
SET ROLE budget_roles_free;
SELECT ask.sql('golden budget: how many cities are there?') IS NOT NULL AS answered;
RESET ROLE;
SET ROLE budget_roles_small;
SELECT ask.sql('golden budget: how many cities are there?') IS NOT NULL AS answered;
SELECT role::text, calls, tokens > 0 AS spent FROM ask.usage;
RESET ROLE;
-- ask.embed() counts too, when it calls an embedding server.
SET ask.max_tokens_per_day = 1;
SET ask.embedding_provider = openai;
SET ask.embedding_base_url = 'http://127.0.0.1:47811/v1';
SET ROLE budget_roles_small;
SELECT code FROM error_of($$SELECT ask.embed('a phrase long enough to pass a budget of one token')$$);
RESET ROLE;
RESET ask.embedding_base_url;
RESET ask.embedding_provider;
-- The local model costs nothing.
SET ROLE budget_roles_small;
SELECT vector_dims(ask.embed('free')) AS dims;
RESET ROLE;
RESET ask.max_tokens_per_day;
DELETE FROM ask.questions WHERE id > :questions_before;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
REVOKE ALL ON cities FROM budget_roles_small, budget_roles_free;
DROP ROLE budget_roles_small, budget_roles_free;
