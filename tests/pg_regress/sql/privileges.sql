-- Who may run what, as a DBA reviews it: every function and procedure pg_ask installs, whether
-- PUBLIC may execute it, whether it runs as its owner (SECURITY DEFINER), and the settings it
-- pins; then every table and view of schema ask with what PUBLIC may do to it and whether
-- row-level security guards it. A new function or a changed grant shows here first.
SELECT p.oid::regprocedure AS function,
       CASE p.prokind WHEN 'p' THEN 'procedure' ELSE 'function' END AS kind,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_may_execute,
       p.prosecdef AS security_definer,
       coalesce(array_to_string(p.proconfig, ', '), '') AS pinned
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ask')
ORDER BY p.oid::regprocedure::text COLLATE "C";
-- The internal functions PUBLIC may not run are the ones that do privileged work: all of them
-- are named with a leading underscore, and every public name is PUBLIC's.
SELECT p.proname ~ '^_' AS internal, has_function_privilege('public', p.oid, 'EXECUTE') AS public_may_execute,
       count(*) AS functions
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ask')
GROUP BY 1, 2 ORDER BY 1, 2;
-- Every SECURITY DEFINER function pins its search path.
SELECT p.oid::regprocedure AS definer_without_pinned_search_path
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ask')
  AND p.prosecdef AND NOT coalesce(p.proconfig::text LIKE '%search_path=pg_catalog%', false);
-- Tables and views: PUBLIC's rights and row-level security.
SELECT c.oid::regclass AS relation,
       CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' ELSE c.relkind::text END AS kind,
       concat_ws(',', CASE WHEN has_table_privilege('public', c.oid, 'SELECT') THEN 'select' END,
                      CASE WHEN has_table_privilege('public', c.oid, 'INSERT') THEN 'insert' END,
                      CASE WHEN has_table_privilege('public', c.oid, 'UPDATE') THEN 'update' END,
                      CASE WHEN has_table_privilege('public', c.oid, 'DELETE') THEN 'delete' END,
                      CASE WHEN has_table_privilege('public', c.oid, 'TRUNCATE') THEN 'truncate' END) AS public_may,
       c.relrowsecurity AS row_security,
       coalesce(array_to_string(c.reloptions, ', '), '') AS options
FROM pg_class c
JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ask') AND c.relkind IN ('r', 'v', 'm', 'p')
ORDER BY c.oid::regclass::text COLLATE "C";
-- A table PUBLIC may read or write is guarded by row-level security, or is a view that reads
-- as the caller or through a security barrier, or holds no role's data (ask.workloads).
SELECT c.oid::regclass AS readable_without_a_guard
FROM pg_class c
JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_ask')
  AND has_table_privilege('public', c.oid, 'SELECT') AND NOT c.relrowsecurity
  AND NOT coalesce(c.reloptions && ARRAY['security_invoker=true', 'security_barrier=true'], false)
ORDER BY 1;
-- The policies.
SELECT tablename, policyname, cmd, roles FROM pg_policies WHERE schemaname = 'ask' ORDER BY 1, 2;
-- A role without any grant calls an internal function PUBLIC may not run.
CREATE ROLE privileges_nobody;
SET ROLE privileges_nobody;
SELECT * FROM error_of($$SELECT ask._invalidate_relation('cities'::regclass)$$);
SELECT * FROM error_of($$SELECT ask._refresh_values_as_owner('cities'::regclass)$$);
SELECT * FROM error_of($$SELECT ask._comment_changed()$$);
-- ... nor reads pg_ask's own tables.
SELECT * FROM error_of($$SELECT count(*) FROM ask.value_memory$$);
SELECT * FROM error_of($$SELECT count(*) FROM ask.shadow_log$$);
SELECT * FROM error_of($$SELECT count(*) FROM ask.schema_memory_tables$$);
SELECT * FROM error_of($$SELECT count(*) FROM ask.llm_cache$$);
SELECT * FROM error_of($$DELETE FROM ask.verified_queries$$);
SELECT * FROM error_of($$INSERT INTO ask.questions (role, question, source) VALUES (current_user::regrole, 'planted', 'llm')$$);
RESET ROLE;
DROP ROLE privileges_nobody;
