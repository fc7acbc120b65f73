-- Every ask.* setting: a value it takes and values it refuses, with their SQLSTATE, and the
-- settings only a superuser may set. Settings made before the library is loaded are
-- placeholders that PostgreSQL checks only at load time: load it first. Each block runs in a
-- transaction rolled back, so that no setting outlives it.
LOAD 'pg_ask';
BEGIN;
SELECT g.name, g.value, e.code, CASE WHEN e.code = 'none' THEN current_setting(g.name) END AS now_set, e.message, e.hint
FROM (VALUES
    ('ask.provider', 'anthropic'), ('ask.provider', 'gpt'),
    ('ask.base_url', 'http://127.0.0.1:9/v1'), ('ask.base_url', ''),
    ('ask.model', 'another-model'), ('ask.model', ''),
    ('ask.request_timeout', '2min'), ('ask.request_timeout', '0'), ('ask.request_timeout', 'soon'),
    ('ask.temperature', '1.5'), ('ask.temperature', '-0.1'), ('ask.temperature', '3'),
    ('ask.structured_output', 'on'), ('ask.structured_output', 'sometimes'),
    ('ask.sql_grammar', 'off'), ('ask.sql_grammar', 'maybe'),
    ('ask.max_tokens', '100'), ('ask.max_tokens', '0'),
    ('ask.max_attempts', '20'), ('ask.max_attempts', '21'),
    ('ask.candidates', '3'), ('ask.candidates', '8'),
    ('ask.row_limit', '1'), ('ask.row_limit', '0'),
    ('ask.statement_timeout', '0'), ('ask.statement_timeout', '-1'),
    ('ask.embedding_provider', 'ollama'), ('ask.embedding_provider', 'word2vec'),
    ('ask.embedding_model', 'nomic-embed-text'), ('ask.embedding_model', ''),
    ('ask.embedding_base_url', 'http://127.0.0.1:9/v1'), ('ask.embedding_base_url', 'not a url'),
    ('ask.verified', 'examples'), ('ask.verified', 'always'),
    ('ask.verified_min_cosine', '0.5'), ('ask.verified_min_cosine', '1.5'),
    ('ask.clarify', 'on'), ('ask.clarify', 'sometimes'),
    ('ask.allow_writes', 'on'), ('ask.allow_writes', 'maybe'),
    ('ask.max_steps', '1'), ('ask.max_steps', '0'),
    ('ask.max_tables', '1'), ('ask.max_tables', '0'),
    ('ask.concurrency', '1'), ('ask.concurrency', '0'),
    ('ask.max_values_per_column', '1'), ('ask.max_values_per_column', '0'),
    ('ask.max_listed_values', '0'), ('ask.max_listed_values', '-1'),
    ('ask.selection_index', 'off'), ('ask.selection_index', 'sometimes'),
    ('ask.cache', 'on'), ('ask.cache', 'sometimes'),
    ('ask.cache_ttl', '1h'), ('ask.cache_ttl', '-1'),
    ('ask.explain_prompts', 'on'), ('ask.explain_prompts', 'sometimes'),
    ('ask.max_prompt_tokens', '256'), ('ask.max_prompt_tokens', '100'),
    ('ask.max_result_size', '1MB'), ('ask.max_result_size', '0'),
    ('ask.max_tokens_per_day', '1000'), ('ask.max_tokens_per_day', '-1'),
    ('ask.max_response_size', '64kB'), ('ask.max_response_size', '1kB'),
    ('ask.model_path', '/nonexistent'),
    ('ask.allowed_functions', 'public.lower'),
    ('ask.no_such_setting', 'x')
) AS g(name, value), LATERAL error_of(format('SET %s = %L', g.name, g.value)) e;
ROLLBACK;
-- A role that is not a superuser sets every user setting, and none of the superuser's.
CREATE ROLE settings_values_user;
BEGIN;
SET LOCAL ROLE settings_values_user;
SELECT s.name, s.context, e.code
FROM pg_settings s, LATERAL error_of(format('SET %s = %L', s.name, coalesce(s.setting, ''))) e
WHERE s.name LIKE 'ask.%' AND s.name NOT IN ('ask.api_key') ORDER BY s.name;
SELECT * FROM error_of($$SET ask.api_key = 'sk-golden'$$);
SELECT code FROM error_of($$SHOW ask.api_key$$);
-- pg_settings lists every setting but the key, to every role.
SELECT count(*) AS listed, count(*) FILTER (WHERE name = 'ask.api_key') AS key_listed FROM pg_settings WHERE name LIKE 'ask.%';
ROLLBACK;
-- Per role: a superuser sets a role's budget; the role cannot change it.
ALTER ROLE settings_values_user SET ask.max_tokens_per_day = 500;
SELECT setconfig FROM pg_db_role_setting WHERE setrole = 'settings_values_user'::regrole;
BEGIN;
SET LOCAL ROLE settings_values_user;
SELECT * FROM error_of($$ALTER ROLE settings_values_user SET ask.max_tokens_per_day = 0$$);
SELECT * FROM error_of($$ALTER ROLE settings_values_user RESET ask.max_tokens_per_day$$);
ROLLBACK;
DROP ROLE settings_values_user;
