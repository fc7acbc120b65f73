-- Another role's code that would read with the privileges of $2, the caller, what that role
-- may not read itself, among relations $1 and the views they read at every level:
-- - a view (and the security_invoker views it reads) of another role reads a column, a
--   relation or a sequence its owner may not read, or a table whose row-level security is not
--   its owner's to see past (a view of another owner it reads, the caller's too, is walked
--   by src/guard/others.rs: it may not follow the caller);
-- - a row-level security policy of another role's table reads such a relation (a policy runs
--   with the reader's privileges);
-- - another role's view reads, at any level, a relation whose rows follow whoever reads it
--   (pg_stats, pg_stat_activity, pg_settings, pg_user_mappings);
-- - another role's foreign table (read with the caller's user mapping), an inheritance child
--   or a partition of a relation reached too.
-- Such code runs its owner's query over the caller's data, and which relations its branches
-- scan is counted in statistics every role reads. A superuser's code, and the caller's own,
-- are not held to it. One row: the first refusal, named. Read by src/guard/reach.rs.
WITH RECURSIVE edges(view, rel, col) AS (
    -- What each view reads (its rule's dependencies: a column, or 0 for a whole relation), at
    -- every level, from the relations $1 (seeded as read by no view); and the inheritance
    -- children and partitions of every relation reached, which the planner reads with it (a
    -- foreign child is read with the reader's user mapping), as read by no view.
    SELECT NULL::pg_catalog.oid, r, 0 FROM pg_catalog.unnest($1::pg_catalog.oid[]) r
    UNION
    SELECT x.view, x.rel, x.col FROM edges CROSS JOIN LATERAL (
        SELECT w.ev_class, d.refobjid, d.refobjsubid
          FROM pg_catalog.pg_rewrite w
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) w.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
         WHERE w.ev_class OPERATOR(pg_catalog.=) edges.rel AND w.rulename OPERATOR(pg_catalog.=) '_RETURN'
           AND d.refobjid OPERATOR(pg_catalog.<>) w.ev_class
        UNION ALL
        SELECT NULL::pg_catalog.oid, i.inhrelid, 0::pg_catalog.int4
          FROM pg_catalog.pg_inherits i WHERE i.inhparent OPERATOR(pg_catalog.=) edges.rel
    ) x(view, rel, col)
), rels(oid) AS (
    SELECT DISTINCT rel FROM edges
), invoker(oid) AS (
    SELECT c.oid FROM rels JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) rels.oid
     WHERE c.relkind OPERATOR(pg_catalog.=) 'v'
       AND EXISTS (SELECT FROM pg_catalog.unnest(c.reloptions) o
                    WHERE pg_catalog.split_part(o, '=', 1) OPERATOR(pg_catalog.=) 'security_invoker'
                      AND pg_catalog.lower(pg_catalog.split_part(o, '=', 2)) OPERATOR(pg_catalog.<>) ALL ('{false,off,0,no,f,n}'::pg_catalog.text[]))
), held(oid, relkind, relowner, relrowsecurity) AS (
    -- The relations reached whose owner's code is held to it: not the caller's, not a superuser's.
    SELECT c.oid, c.relkind, c.relowner, c.relrowsecurity
      FROM rels JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) rels.oid
     WHERE c.relowner OPERATOR(pg_catalog.<>) $2
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid OPERATOR(pg_catalog.=) c.relowner AND a.rolsuper)
), follows(oid) AS (
    -- Relations whose rows follow whoever reads them: statistics with stored values, other
    -- sessions' queries, settings, user mappings' options.
    SELECT r FROM pg_catalog.unnest(ARRAY['pg_catalog.pg_stats'::pg_catalog.regclass, 'pg_catalog.pg_stats_ext'::pg_catalog.regclass,
         'pg_catalog.pg_stats_ext_exprs'::pg_catalog.regclass, 'pg_catalog.pg_stat_activity'::pg_catalog.regclass,
         'pg_catalog.pg_settings'::pg_catalog.regclass, 'pg_catalog.pg_user_mappings'::pg_catalog.regclass]::pg_catalog.oid[]) r
), reads(owner, what, rel, col) AS (
    SELECT h.relowner, pg_catalog.format('the view %s, another role''s view,', h.oid::pg_catalog.regclass), e.rel, e.col
      FROM held h JOIN edges e ON e.view OPERATOR(pg_catalog.=) h.oid
     WHERE h.relkind OPERATOR(pg_catalog.=) 'v'
    UNION
    SELECT h.relowner, pg_catalog.format('the row-level security policy %I of %s, another role''s table,', p.polname, h.oid::pg_catalog.regclass),
           d.refobjid, d.refobjsubid
      FROM held h
      JOIN pg_catalog.pg_policy p ON p.polrelid OPERATOR(pg_catalog.=) h.oid
      JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_policy'::pg_catalog.regclass
                                 AND d.objid OPERATOR(pg_catalog.=) p.oid
                                 AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
     WHERE h.relrowsecurity AND d.refobjid OPERATOR(pg_catalog.<>) h.oid
    UNION
    -- A security_invoker view read by such code reads with the same privileges.
    SELECT reads.owner, reads.what, e.rel, e.col
      FROM reads JOIN invoker i ON i.oid OPERATOR(pg_catalog.=) reads.rel
      JOIN edges e ON e.view OPERATOR(pg_catalog.=) i.oid
)
SELECT pg_catalog.format('%s reads %s, which its owner may not read (it would read it with your privileges)', reads.what,
                         CASE WHEN reads.col OPERATOR(pg_catalog.>) 0
                              THEN pg_catalog.format('%s.%I', reads.rel::pg_catalog.regclass, a.attname)
                              ELSE reads.rel::pg_catalog.regclass::pg_catalog.text END)
  FROM reads JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) reads.rel
  LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) reads.rel AND a.attnum OPERATOR(pg_catalog.=) reads.col
 WHERE CASE
         WHEN c.relkind OPERATOR(pg_catalog.=) 'S'
           THEN NOT pg_catalog.has_sequence_privilege(reads.owner, reads.rel, 'SELECT, USAGE')
         WHEN c.relkind OPERATOR(pg_catalog.<>) ALL ('{r,p,v,m,f}'::"char"[]) THEN false
         WHEN reads.col OPERATOR(pg_catalog.>) 0
           THEN NOT pg_catalog.has_column_privilege(reads.owner, reads.rel, reads.col::pg_catalog.int2, 'SELECT')
         -- The whole relation (a whole-row reference reads every column).
         ELSE NOT pg_catalog.has_table_privilege(reads.owner, reads.rel, 'SELECT')
       END
    OR reads.rel IN (SELECT oid FROM follows)
    -- Rows the owner's row-level security would not show it.
    OR (c.relrowsecurity AND c.relowner OPERATOR(pg_catalog.<>) reads.owner
        AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles b WHERE b.oid OPERATOR(pg_catalog.=) reads.owner AND b.rolbypassrls))
UNION ALL
-- The same relations under a superuser's view that another role's view reads.
SELECT pg_catalog.format('another role''s view reads %s, whose rows follow your privileges, through other views', rels.oid::pg_catalog.regclass)
  FROM rels
 WHERE rels.oid IN (SELECT oid FROM follows)
   AND EXISTS (SELECT FROM held WHERE held.relkind OPERATOR(pg_catalog.=) 'v')
UNION ALL
-- Another role's foreign table is read through the caller's user mapping.
SELECT pg_catalog.format('the foreign table %s, another role''s, would be read with your user mapping', h.oid::pg_catalog.regclass)
  FROM held h WHERE h.relkind OPERATOR(pg_catalog.=) 'f'
LIMIT 1
