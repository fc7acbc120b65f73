-- The response cache across roles and settings: a role is answered only from its own earlier
-- requests; ask.cache_ttl bounds a reply's reuse; nobody but pg_ask reads the cache.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
SELECT coalesce(max(id), 0) AS questions_before FROM ask.questions \gset
SELECT count(*) AS cached_before FROM ask.llm_cache \gset
CREATE ROLE cache_roles_a;
CREATE ROLE cache_roles_b;
GRANT SELECT ON cities TO cache_roles_a, cache_roles_b;
SET ask.cache = on;
SET ROLE cache_roles_a;
SELECT ask.sql('golden cache: how many cities are there?') IS NOT NULL AS first;
SELECT ask.sql('golden cache: how many cities are there?') IS NOT NULL AS second;
SELECT stage, cached, tokens_saved > 0 AS saved FROM ask.llm_calls ORDER BY id;
RESET ROLE;
-- Another role sending the very same request is not answered from the first one's reply.
SET ROLE cache_roles_b;
SELECT ask.sql('golden cache: how many cities are there?') IS NOT NULL AS first;
SELECT stage, cached FROM ask.llm_calls ORDER BY id;
SELECT * FROM error_of($$SELECT count(*) FROM ask.llm_cache$$);
SELECT * FROM error_of($$DELETE FROM ask.llm_cache$$);
RESET ROLE;
-- A reply older than ask.cache_ttl is not reused.
SET ask.cache_ttl = '1s';
SELECT pg_sleep(1.5);
SET ROLE cache_roles_a;
SELECT ask.sql('golden cache: how many cities are there?') IS NOT NULL AS third;
SELECT cached FROM ask.llm_calls ORDER BY id DESC LIMIT 1;
RESET ROLE;
RESET ask.cache_ttl;
-- Off: no lookup, whatever is cached.
RESET ask.cache;
SET ROLE cache_roles_a;
SELECT ask.sql('golden cache: how many cities are there?') IS NOT NULL AS fourth;
SELECT cached FROM ask.llm_calls ORDER BY id DESC LIMIT 1;
SELECT cache_hits FROM ask.usage;
RESET ROLE;
SELECT count(*) - :cached_before AS cached_replies FROM ask.llm_cache;
DELETE FROM ask.llm_cache WHERE role IN ('cache_roles_a'::regrole, 'cache_roles_b'::regrole);
DELETE FROM ask.questions WHERE id > :questions_before;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
REVOKE ALL ON cities FROM cache_roles_a, cache_roles_b;
DROP ROLE cache_roles_a, cache_roles_b;
