-- The tables the current role may read, with their descriptions: what a client (an agent's
-- tool, an IDE) shows before asking. Runs as the caller: its privileges decide. Objects of
-- extensions and of pg_ask itself are left out, as ask() leaves them out.
CREATE FUNCTION tables() RETURNS TABLE (schema_name name, table_name name, description text)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.nspname, c.relname, pg_catalog.obj_description(c.oid, 'pg_class')
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog."char"[])
       AND NOT c.relispartition
       AND n.nspname OPERATOR(pg_catalog.<>) ALL ('{pg_catalog,information_schema,ask}'::pg_catalog.name[])
       AND n.nspname OPERATOR(pg_catalog.!~) '^pg_(toast|temp_)'
       AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
       AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
       AND NOT EXISTS (
           SELECT FROM pg_catalog.pg_depend d
            WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
              AND d.objid OPERATOR(pg_catalog.=) c.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')
     ORDER BY 1, 2
$$;
COMMENT ON FUNCTION tables() IS 'The tables, views, materialized views and foreign tables the current role may read (SELECT on the table or one of its columns, USAGE on its schema), with their comments; those of extensions and of pg_ask are left out.';
