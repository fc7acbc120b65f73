-- The first relation that another role's security_invoker view, among relations $1 or the
-- views they read at every level, reads although that role may not read
-- it: the view would read it with the privileges of $2, the caller. Such a view runs another
-- role's query over the caller's data, and which relations its branches scan is counted in
-- statistics every role reads. A superuser's views, and the caller's own, are not held to it.
-- One row: the refusal, named. Read by src/guard/reach.rs.
WITH RECURSIVE invoker(oid) AS (
    SELECT c.oid FROM pg_catalog.pg_class c
     WHERE c.relkind OPERATOR(pg_catalog.=) 'v'
       AND EXISTS (SELECT FROM pg_catalog.unnest(c.reloptions) o
                    WHERE pg_catalog.split_part(o, '=', 1) OPERATOR(pg_catalog.=) 'security_invoker'
                      AND pg_catalog.lower(pg_catalog.split_part(o, '=', 2)) OPERATOR(pg_catalog.<>) ALL ('{false,off,0,no,f,n}'::pg_catalog.text[]))
), deps(view, rel) AS (
    SELECT w.ev_class, d.refobjid
      FROM pg_catalog.pg_rewrite w
      JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                                 AND d.objid OPERATOR(pg_catalog.=) w.oid
                                 AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
     WHERE w.rulename OPERATOR(pg_catalog.=) '_RETURN' AND d.refobjid OPERATOR(pg_catalog.<>) w.ev_class
), views(oid) AS (
    SELECT r FROM pg_catalog.unnest($1::pg_catalog.oid[]) r
    UNION
    SELECT deps.rel FROM views JOIN deps ON deps.view OPERATOR(pg_catalog.=) views.oid
), reads(owner, view, rel) AS (
    SELECT v.relowner, v.oid, d.refobjid
      FROM views
      JOIN pg_catalog.pg_class v ON v.oid OPERATOR(pg_catalog.=) views.oid
      JOIN pg_catalog.pg_rewrite w ON w.ev_class OPERATOR(pg_catalog.=) v.oid AND w.rulename OPERATOR(pg_catalog.=) '_RETURN'
      JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                                 AND d.objid OPERATOR(pg_catalog.=) w.oid
                                 AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
     WHERE v.oid IN (SELECT oid FROM invoker) AND v.relowner OPERATOR(pg_catalog.<>) $2
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid OPERATOR(pg_catalog.=) v.relowner AND a.rolsuper)
       AND d.refobjid OPERATOR(pg_catalog.<>) v.oid
    UNION
    -- A security_invoker view read by one reads with the same privileges: its owner's reads
    -- are the outer owner's too.
    SELECT reads.owner, reads.view, d.refobjid
      FROM reads
      JOIN pg_catalog.pg_rewrite w ON w.ev_class OPERATOR(pg_catalog.=) reads.rel AND w.rulename OPERATOR(pg_catalog.=) '_RETURN'
      JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                                 AND d.objid OPERATOR(pg_catalog.=) w.oid
                                 AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
     WHERE reads.rel IN (SELECT oid FROM invoker) AND d.refobjid OPERATOR(pg_catalog.<>) reads.rel
)
SELECT pg_catalog.format('the view %s, another role''s security_invoker view, reads %s, which its owner may not read (it would read it with your privileges)',
                         reads.view::pg_catalog.regclass, reads.rel::pg_catalog.regclass)
  FROM reads JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) reads.rel
 WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::"char"[])
   AND NOT pg_catalog.has_any_column_privilege(reads.owner, reads.rel, 'SELECT')
 LIMIT 1
