-- ask.allowed_functions: the functions generated SQL (and ask.query()) may call besides the
-- built-in ones; only a superuser lists them; a name stands for the function it names only.
CREATE SCHEMA allowed_functions;
CREATE FUNCTION allowed_functions.double_it(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1 * 2;
CREATE FUNCTION allowed_functions.stamp() RETURNS text LANGUAGE sql STABLE RETURN 'stamped';
-- Not listed: refused, whatever volatility it declares.
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT allowed_functions.double_it(2)')$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT allowed_functions.stamp()')$$);
-- Listed: allowed.
SET ask.allowed_functions = 'allowed_functions.double_it';
SELECT * FROM ask.query('SELECT allowed_functions.double_it(2) AS four');
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT allowed_functions.stamp()')$$);
SET ask.allowed_functions = 'allowed_functions.double_it, allowed_functions.stamp';
SELECT * FROM ask.query('SELECT allowed_functions.stamp() AS s, allowed_functions.double_it(1) AS two');
-- A built-in that runs SQL text stays refused even when listed.
SET ask.allowed_functions = 'pg_catalog.query_to_xml';
SELECT code FROM error_of($$SELECT * FROM ask.query('SELECT query_to_xml(''SELECT 1'', true, true, '''')')$$);
-- A name that is not schema-qualified stands for no function.
SET ask.allowed_functions = 'double_it';
SELECT code FROM error_of($$SELECT * FROM ask.query('SELECT allowed_functions.double_it(2)')$$);
SET search_path = allowed_functions, public;
SELECT code FROM error_of($$SELECT * FROM ask.query('SELECT double_it(2)')$$);
RESET search_path;
RESET ask.allowed_functions;
-- Only a superuser lists functions; a role may not, in its session or for itself.
CREATE ROLE allowed_functions_user;
GRANT USAGE ON SCHEMA allowed_functions TO allowed_functions_user;
SET ROLE allowed_functions_user;
SELECT * FROM error_of($$SET ask.allowed_functions = 'allowed_functions.double_it'$$);
SELECT * FROM error_of($$SELECT set_config('ask.allowed_functions', 'allowed_functions.double_it', false)$$);
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT allowed_functions.double_it(2)')$$);
RESET ROLE;
-- Listed by the superuser for the session, it counts for the role set after.
SET ask.allowed_functions = 'allowed_functions.double_it';
SET ROLE allowed_functions_user;
SELECT * FROM ask.query('SELECT allowed_functions.double_it(3) AS six');
-- An overload another role adds under a listed name is not the listed function.
RESET ROLE;
GRANT CREATE ON SCHEMA allowed_functions TO allowed_functions_user;
SET ROLE allowed_functions_user;
CREATE FUNCTION allowed_functions.double_it(text) RETURNS text LANGUAGE sql IMMUTABLE RETURN $1 || $1;
SELECT * FROM error_of($$SELECT * FROM ask.query('SELECT allowed_functions.double_it(''ab''::text)')$$);
RESET ROLE;
RESET ask.allowed_functions;
DROP SCHEMA allowed_functions CASCADE;
DROP ROLE allowed_functions_user;
