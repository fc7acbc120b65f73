-- The tables, views, materialized views and foreign tables the current role may read, with
-- the columns it may read, keys and comments, as one jsonb array. Identifiers come quoted as
-- quote_ident would. Objects of extensions and of pg_ask itself are left out.
-- Set-based (one pass over each catalog) so that it stays fast on hundreds of tables.
-- The line `-- @only-these` becomes, for a read of the relations that changed ($1, their oids),
-- a filter to those and the relations whose foreign keys reference them (their description
-- names the referenced table); for a read of everything, it stays a comment.
-- Each object carries the relation's oid and its schema and name unquoted (the order to show).
-- Every operator, function and cast is schema-qualified: the caller's search path (which may
-- hold a schema another role can create in) cannot redirect what this query runs.
WITH rels AS (
    SELECT c.oid, n.nspname, c.relname, c.relkind,
           pg_catalog.has_table_privilege(c.oid, 'SELECT') AS whole_table
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog."char"[])
      AND NOT c.relispartition
      -- @only-these
      AND n.nspname OPERATOR(pg_catalog.<>) ALL ('{pg_catalog,information_schema,ask}'::pg_catalog.name[])
      AND n.nspname OPERATOR(pg_catalog.!~) '^pg_(toast|temp_)'
      AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
      AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
      AND NOT EXISTS (
          SELECT 1 FROM pg_catalog.pg_depend d
          WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid AND d.objid OPERATOR(pg_catalog.=) c.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')
),
cols AS (
    SELECT a.attrelid,
           pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'name', pg_catalog.quote_ident(a.attname),
               'data_type', pg_catalog.format_type(a.atttypid, a.atttypmod),
               'not_null', a.attnotnull,
               'comment', d.description) ORDER BY a.attnum) AS columns
    FROM rels r
    JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) r.oid AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
    LEFT JOIN pg_catalog.pg_description d
           ON d.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid AND d.objoid OPERATOR(pg_catalog.=) a.attrelid AND d.objsubid OPERATOR(pg_catalog.=) a.attnum
    WHERE r.whole_table OR pg_catalog.has_column_privilege(r.oid, a.attnum, 'SELECT')
    GROUP BY a.attrelid
),
keys AS (
    SELECT con.conrelid, con.contype, con.conname, con.confrelid,
           pg_catalog.jsonb_agg(pg_catalog.quote_ident(a.attname) ORDER BY k.ord) AS columns,
           pg_catalog.jsonb_agg(pg_catalog.quote_ident(fa.attname) ORDER BY k.ord) FILTER (WHERE fa.attname IS NOT NULL) AS ref_columns
    FROM rels r
    JOIN pg_catalog.pg_constraint con ON con.conrelid OPERATOR(pg_catalog.=) r.oid AND con.contype OPERATOR(pg_catalog.=) ANY ('{p,f}'::pg_catalog."char"[])
    CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(con.conkey), pg_catalog.unnest(coalesce(con.confkey, con.conkey)))
                       WITH ORDINALITY AS k(attnum, fattnum, ord)
    JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) con.conrelid AND a.attnum OPERATOR(pg_catalog.=) k.attnum
    LEFT JOIN pg_catalog.pg_attribute fa ON con.contype OPERATOR(pg_catalog.=) 'f' AND fa.attrelid OPERATOR(pg_catalog.=) con.confrelid AND fa.attnum OPERATOR(pg_catalog.=) k.fattnum
    GROUP BY con.conrelid, con.contype, con.conname, con.confrelid
),
pks AS (
    SELECT conrelid, columns FROM keys WHERE contype OPERATOR(pg_catalog.=) 'p'
),
fks AS (
    SELECT k.conrelid,
           pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'columns', k.columns,
               'references', pg_catalog.quote_ident(fn.nspname) OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(fc.relname),
               'ref_columns', k.ref_columns) ORDER BY k.conname) AS foreign_keys
    FROM keys k
    JOIN pg_catalog.pg_class fc ON fc.oid OPERATOR(pg_catalog.=) k.confrelid
    JOIN pg_catalog.pg_namespace fn ON fn.oid OPERATOR(pg_catalog.=) fc.relnamespace
    WHERE k.contype OPERATOR(pg_catalog.=) 'f'
      AND pg_catalog.has_schema_privilege(fn.oid, 'USAGE')
      AND pg_catalog.has_any_column_privilege(fc.oid, 'SELECT')
    GROUP BY k.conrelid
)
SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
    'oid', r.oid::pg_catalog.int8,
    'sort', pg_catalog.jsonb_build_array(r.nspname, r.relname),
    'schema', pg_catalog.quote_ident(r.nspname),
    'name', pg_catalog.quote_ident(r.relname),
    'kind', CASE WHEN r.relkind OPERATOR(pg_catalog.=) 'v' THEN 'view' WHEN r.relkind OPERATOR(pg_catalog.=) 'm' THEN 'materialized view'
                  WHEN r.relkind OPERATOR(pg_catalog.=) 'f' THEN 'foreign table' ELSE 'table' END,
    'comment', td.description,
    'columns', coalesce(cols.columns, '[]'),
    'primary_key', coalesce(pks.columns, '[]'),
    'foreign_keys', coalesce(fks.foreign_keys, '[]')
) ORDER BY r.nspname, r.relname), '[]'::pg_catalog.jsonb)
FROM rels r
LEFT JOIN cols ON cols.attrelid OPERATOR(pg_catalog.=) r.oid
LEFT JOIN pks ON pks.conrelid OPERATOR(pg_catalog.=) r.oid
LEFT JOIN fks ON fks.conrelid OPERATOR(pg_catalog.=) r.oid
LEFT JOIN pg_catalog.pg_description td
       ON td.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid AND td.objoid OPERATOR(pg_catalog.=) r.oid AND td.objsubid OPERATOR(pg_catalog.=) 0
