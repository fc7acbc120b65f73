-- The tables, views, materialized views and foreign tables the current role may read, with
-- the columns it may read, keys and comments, as one jsonb array. Identifiers come quoted as
-- quote_ident would. Objects of extensions and of pg_ask itself are left out.
-- Set-based (one pass over each catalog) so that it stays fast on hundreds of tables.
-- The line `-- @only-these` becomes, for a read of the relations that changed ($1, their oids),
-- a filter to those and the relations whose foreign keys reference them (their description
-- names the referenced table); for a read of everything, it stays a comment.
-- Each object carries the relation's oid and its schema and name unquoted (the order to show).
WITH rels AS (
    SELECT c.oid, n.nspname, c.relname, c.relkind,
           pg_catalog.has_table_privilege(c.oid, 'SELECT') AS whole_table
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
      AND NOT c.relispartition
      -- @only-these
      AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'ask')
      AND n.nspname !~ '^pg_(toast|temp_)'
      AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
      AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
      AND NOT EXISTS (
          SELECT 1 FROM pg_catalog.pg_depend d
          WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
),
cols AS (
    SELECT a.attrelid,
           jsonb_agg(jsonb_build_object(
               'name', quote_ident(a.attname),
               'data_type', pg_catalog.format_type(a.atttypid, a.atttypmod),
               'not_null', a.attnotnull,
               'comment', d.description) ORDER BY a.attnum) AS columns
    FROM rels r
    JOIN pg_catalog.pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_catalog.pg_description d
           ON d.classoid = 'pg_catalog.pg_class'::regclass AND d.objoid = a.attrelid AND d.objsubid = a.attnum
    WHERE r.whole_table OR pg_catalog.has_column_privilege(r.oid, a.attnum, 'SELECT')
    GROUP BY a.attrelid
),
keys AS (
    SELECT con.conrelid, con.contype, con.conname, con.confrelid,
           jsonb_agg(quote_ident(a.attname) ORDER BY k.ord) AS columns,
           jsonb_agg(quote_ident(fa.attname) ORDER BY k.ord) FILTER (WHERE fa.attname IS NOT NULL) AS ref_columns
    FROM rels r
    JOIN pg_catalog.pg_constraint con ON con.conrelid = r.oid AND con.contype IN ('p', 'f')
    CROSS JOIN LATERAL unnest(con.conkey, coalesce(con.confkey, con.conkey)) WITH ORDINALITY AS k(attnum, fattnum, ord)
    JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
    LEFT JOIN pg_catalog.pg_attribute fa ON con.contype = 'f' AND fa.attrelid = con.confrelid AND fa.attnum = k.fattnum
    GROUP BY con.conrelid, con.contype, con.conname, con.confrelid
),
pks AS (
    SELECT conrelid, columns FROM keys WHERE contype = 'p'
),
fks AS (
    SELECT k.conrelid,
           jsonb_agg(jsonb_build_object(
               'columns', k.columns,
               'references', quote_ident(fn.nspname) || '.' || quote_ident(fc.relname),
               'ref_columns', k.ref_columns) ORDER BY k.conname) AS foreign_keys
    FROM keys k
    JOIN pg_catalog.pg_class fc ON fc.oid = k.confrelid
    JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
    WHERE k.contype = 'f'
      AND pg_catalog.has_schema_privilege(fn.oid, 'USAGE')
      AND pg_catalog.has_any_column_privilege(fc.oid, 'SELECT')
    GROUP BY k.conrelid
)
SELECT coalesce(jsonb_agg(jsonb_build_object(
    'oid', r.oid::bigint,
    'sort', jsonb_build_array(r.nspname, r.relname),
    'schema', quote_ident(r.nspname),
    'name', quote_ident(r.relname),
    'kind', CASE r.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
                           WHEN 'f' THEN 'foreign table' ELSE 'table' END,
    'comment', td.description,
    'columns', coalesce(cols.columns, '[]'),
    'primary_key', coalesce(pks.columns, '[]'),
    'foreign_keys', coalesce(fks.foreign_keys, '[]')
) ORDER BY r.nspname, r.relname), '[]'::jsonb)
FROM rels r
LEFT JOIN cols ON cols.attrelid = r.oid
LEFT JOIN pks ON pks.conrelid = r.oid
LEFT JOIN fks ON fks.conrelid = r.oid
LEFT JOIN pg_catalog.pg_description td
       ON td.classoid = 'pg_catalog.pg_class'::regclass AND td.objoid = r.oid AND td.objsubid = 0
