-- The tables, views, materialized views and foreign tables the current role may read, with
-- the columns it may read, keys and comments: one row per relation, in the order to show
-- (schema, then name, unquoted). Identifiers come quoted as quote_ident would. Objects of
-- extensions and of pg_ask itself are left out.
-- Each relation's columns, keys and comment are read by its oid through the catalogs'
-- indexes (lateral subqueries), so that the cost grows with the relations read and no
-- catalog is sorted or aggregated whole.
-- The line `-- @only-these` becomes, for a read of the relations that changed ($1, their oids),
-- a filter to those and the relations whose foreign keys reference them (their description
-- names the referenced table); for a read of everything, it stays a comment.
-- The line `-- @not-shards` becomes, where Citus is installed, a filter that leaves out the
-- shards of its tables on this node (which any session can make visible to catalog queries).
-- Columns: oid, schema and name unquoted (the order), schema and name quoted, kind, comment,
-- the readable columns' names, types, NOT NULL flags and comments (parallel arrays), the
-- primary key's columns, and each foreign key as a JSON array [columns, referenced table,
-- referenced columns], by constraint name.
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
      -- @not-shards
      AND n.nspname OPERATOR(pg_catalog.<>) ALL ('{pg_catalog,information_schema,ask}'::pg_catalog.name[])
      AND n.nspname OPERATOR(pg_catalog.!~) '^pg_(toast|temp_)'
      AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
      AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
      AND NOT EXISTS (
          SELECT 1 FROM pg_catalog.pg_depend d
          WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid AND d.objid OPERATOR(pg_catalog.=) c.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')
)
SELECT r.oid::pg_catalog.int8, r.nspname::pg_catalog.text, r.relname::pg_catalog.text,
       pg_catalog.quote_ident(r.nspname), pg_catalog.quote_ident(r.relname),
       CASE WHEN r.relkind OPERATOR(pg_catalog.=) 'v' THEN 'view' WHEN r.relkind OPERATOR(pg_catalog.=) 'm' THEN 'materialized view'
            WHEN r.relkind OPERATOR(pg_catalog.=) 'f' THEN 'foreign table' ELSE 'table' END,
       td.description,
       cols.names, cols.types, cols.not_null, cols.comments,
       pk.columns,
       fks.keys
FROM rels r
CROSS JOIN LATERAL (
    SELECT pg_catalog.array_agg(pg_catalog.quote_ident(a.attname) ORDER BY a.attnum) AS names,
           pg_catalog.array_agg(pg_catalog.format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum) AS types,
           pg_catalog.array_agg(a.attnotnull ORDER BY a.attnum) AS not_null,
           pg_catalog.array_agg(d.description ORDER BY a.attnum) AS comments
    FROM pg_catalog.pg_attribute a
    LEFT JOIN pg_catalog.pg_description d
           ON d.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid AND d.objoid OPERATOR(pg_catalog.=) a.attrelid AND d.objsubid OPERATOR(pg_catalog.=) a.attnum
    WHERE a.attrelid OPERATOR(pg_catalog.=) r.oid AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
      AND (r.whole_table OR pg_catalog.has_column_privilege(r.oid, a.attnum, 'SELECT'))
) cols
LEFT JOIN pg_catalog.pg_description td
       ON td.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid AND td.objoid OPERATOR(pg_catalog.=) r.oid AND td.objsubid OPERATOR(pg_catalog.=) 0
LEFT JOIN LATERAL (
    SELECT ARRAY(SELECT pg_catalog.quote_ident(a.attname)
                 FROM pg_catalog.unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
                 JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) con.conrelid AND a.attnum OPERATOR(pg_catalog.=) k.attnum
                 ORDER BY k.ord) AS columns
    FROM pg_catalog.pg_constraint con
    WHERE con.conrelid OPERATOR(pg_catalog.=) r.oid AND con.contype OPERATOR(pg_catalog.=) 'p'
) pk ON true
CROSS JOIN LATERAL (
    SELECT pg_catalog.array_agg(pg_catalog.jsonb_build_array(
               ARRAY(SELECT pg_catalog.quote_ident(a.attname)
                     FROM pg_catalog.unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
                     JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) con.conrelid AND a.attnum OPERATOR(pg_catalog.=) k.attnum
                     ORDER BY k.ord),
               pg_catalog.quote_ident(fn.nspname) OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(fc.relname),
               ARRAY(SELECT pg_catalog.quote_ident(fa.attname)
                     FROM pg_catalog.unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
                     JOIN pg_catalog.pg_attribute fa ON fa.attrelid OPERATOR(pg_catalog.=) con.confrelid AND fa.attnum OPERATOR(pg_catalog.=) k.attnum
                     ORDER BY k.ord))::pg_catalog.text ORDER BY con.conname) AS keys
    FROM pg_catalog.pg_constraint con
    JOIN pg_catalog.pg_class fc ON fc.oid OPERATOR(pg_catalog.=) con.confrelid
    JOIN pg_catalog.pg_namespace fn ON fn.oid OPERATOR(pg_catalog.=) fc.relnamespace
    WHERE con.conrelid OPERATOR(pg_catalog.=) r.oid AND con.contype OPERATOR(pg_catalog.=) 'f'
      AND pg_catalog.has_schema_privilege(fn.oid, 'USAGE')
      AND pg_catalog.has_any_column_privilege(fc.oid, 'SELECT')
) fks
ORDER BY r.nspname, r.relname
