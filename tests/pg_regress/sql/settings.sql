-- Settings: names, defaults, validation, the masked key. Settings made before the library
-- is loaded are placeholders that PostgreSQL checks only at load time: load it first.
LOAD 'pg_ask';
SELECT name, setting, unit, context FROM pg_settings WHERE name LIKE 'ask.%' AND name <> 'ask.base_url' ORDER BY name;
SET ask.provider = 'gpt';
SET ask.max_attempts = 0;
SET ask.structured_output = 'sometimes';
SET ask.sql_grammar = 'maybe';
SET ask.api_key = 'sk-regress-0123456789';
SHOW ask.api_key;
RESET ask.api_key;
SHOW ask.api_key;
CREATE ROLE ask_regress_user;
SET ROLE ask_regress_user;
SET ask.api_key = 'sk-not-allowed';
SHOW ask.api_key;
RESET ROLE;
DROP ROLE ask_regress_user;
-- Per-call arguments are checked too.
SELECT ask('q', provider => 'gpt');
SELECT ask('q', max_attempts => 99);
SELECT ask('   ');
