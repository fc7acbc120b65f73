-- The extension as installed: its version, what it requires, its schema, and the objects an
-- upgrade must keep.
SELECT extname, extversion, extrelocatable, n.nspname AS schema
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE extname = 'pg_ask';
SELECT extname FROM pg_extension WHERE extname IN ('vector', 'pg_trgm') ORDER BY 1;
-- The versions an ALTER EXTENSION UPDATE can come from.
SELECT source, target FROM pg_extension_update_paths('pg_ask') WHERE path IS NOT NULL ORDER BY 1, 2;
SELECT name, version, installed, superuser, trusted, relocatable, schema, requires
FROM pg_available_extension_versions WHERE name = 'pg_ask' AND installed;
-- ask() lives in public, so that it works with the default search path.
SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname = 'ask' AND p.pronamespace = 'public'::regnamespace;
-- Counts of what it installs: functions, relations, event triggers (PostgreSQL 17 also records
-- the row types of its tables, 15 does not: not counted).
SELECT classid::regclass::text AS catalog, count(*) FROM pg_depend
WHERE refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ask') AND deptype = 'e'
  AND classid IN ('pg_proc'::regclass, 'pg_class'::regclass, 'pg_event_trigger'::regclass)
GROUP BY 1 ORDER BY 1;
-- The event triggers.
SELECT evtname, evtevent, evtfoid::regproc FROM pg_event_trigger ORDER BY 1;
-- Its configuration tables, dumped with the database.
SELECT unnest(extconfig)::regclass::text AS dumped FROM pg_extension WHERE extname = 'pg_ask' ORDER BY 1;
-- It cannot move schema, and cannot be created twice.
SELECT * FROM error_of($$ALTER EXTENSION pg_ask SET SCHEMA public$$);
SELECT * FROM error_of($$CREATE EXTENSION pg_ask$$);
