-- What the generated SQL and the caller's settings can go wrong with, each with its SQLSTATE
-- and hint (README, "Errors"), as an application catching them sees them.
\x on
-- No SQL in any of the replies (the question is asked again up to ask.max_attempts).
SELECT * FROM error_of($$SELECT ask.sql('write me a poem about the cities')$$);
-- Only a write, every time: refused, never run.
SELECT * FROM error_of($$SELECT ask.sql('rename every city to Springfield')$$);
-- A column that does not exist, every time: the statement's own SQLSTATE.
SELECT * FROM error_of($$SELECT ask.sql('what is the population of each city?')$$);
-- A query that runs longer than ask.statement_timeout is cancelled.
SET ask.statement_timeout = '200ms';
SELECT * FROM error_of($$SELECT ask.sql('count to half a billion')$$);
RESET ask.statement_timeout;
-- A role that may read no table: refused before any LLM call.
CREATE ROLE ask_regress_nobody;
SET ROLE ask_regress_nobody;
SELECT * FROM error_of($$SELECT ask('how many cities are there?')$$);
RESET ROLE;
-- A role that may read some tables: the SQL the LLM writes for another one fails on the
-- privilege check, as the role.
GRANT SELECT ON cities TO ask_regress_nobody;
SET ROLE ask_regress_nobody;
SELECT * FROM error_of($$SELECT ask.sql('list the cuisines of the restaurants', max_attempts => 1)$$);
RESET ROLE;
-- ask.api_key where every role could read it: per role, per database, in a function's SET
-- clause.
SELECT * FROM error_of($$ALTER ROLE ask_regress_nobody SET ask.api_key = 'sk-stored-for-all-to-see'$$);
SELECT * FROM error_of(format('ALTER DATABASE %I SET ask.api_key = %L', current_database(), 'sk-stored-for-all-to-see'));
SELECT * FROM error_of($$CREATE FUNCTION pg_temp.keyed() RETURNS int LANGUAGE sql SET ask.api_key = 'sk-stored-for-all-to-see' RETURN 1$$);
\x off
-- Nothing of it was stored.
SELECT count(*) AS stored_settings FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') LIKE '%api_key%';
REVOKE SELECT ON cities FROM ask_regress_nobody;
DROP ROLE ask_regress_nobody;
