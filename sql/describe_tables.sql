-- The tables, views, materialized views and foreign tables the current role may read, with
-- the columns it may read, keys and comments, as one jsonb array. Identifiers come quoted as
-- quote_ident would. Objects of extensions and of pg_ask itself are left out.
WITH rels AS (
    SELECT c.oid, n.nspname, c.relname, c.relkind
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
      AND NOT c.relispartition
      AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'ask')
      AND n.nspname !~ '^pg_(toast|temp_)'
      AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
      AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
      AND NOT EXISTS (
          SELECT 1 FROM pg_catalog.pg_depend d
          WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
)
SELECT coalesce(jsonb_agg(jsonb_build_object(
    'schema', quote_ident(r.nspname),
    'name', quote_ident(r.relname),
    'kind', CASE r.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
                           WHEN 'f' THEN 'foreign table' ELSE 'table' END,
    'comment', pg_catalog.obj_description(r.oid, 'pg_class'),
    'columns', (
        SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'name', quote_ident(a.attname),
                   'data_type', pg_catalog.format_type(a.atttypid, a.atttypmod),
                   'not_null', a.attnotnull,
                   'comment', pg_catalog.col_description(r.oid, a.attnum)) ORDER BY a.attnum), '[]')
        FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
          AND pg_catalog.has_column_privilege(r.oid, a.attnum, 'SELECT')),
    'primary_key', (
        SELECT coalesce(jsonb_agg(quote_ident(a.attname) ORDER BY k.ord), '[]')
        FROM pg_catalog.pg_constraint con
        CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
        JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
        WHERE con.conrelid = r.oid AND con.contype = 'p'),
    'foreign_keys', (
        SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'columns', (SELECT jsonb_agg(quote_ident(a.attname) ORDER BY k.ord)
                               FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
                               JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum),
                   'references', quote_ident(fn.nspname) || '.' || quote_ident(fc.relname),
                   'ref_columns', (SELECT jsonb_agg(quote_ident(a.attname) ORDER BY k.ord)
                                   FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
                                   JOIN pg_catalog.pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum))
                   ORDER BY con.conname), '[]')
        FROM pg_catalog.pg_constraint con
        JOIN pg_catalog.pg_class fc ON fc.oid = con.confrelid
        JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
        WHERE con.conrelid = r.oid AND con.contype = 'f'
          AND pg_catalog.has_schema_privilege(fn.oid, 'USAGE')
          AND pg_catalog.has_any_column_privilege(fc.oid, 'SELECT'))
) ORDER BY r.nspname, r.relname), '[]'::jsonb)
FROM rels r
