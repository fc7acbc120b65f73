-- The code of other roles that would run in the session of $2, the caller, when a statement
-- reads relations $1, and the code beneath it:
-- - 'own': the queries of the views another role owns, at every level of the views and
--   policies read, and the row-level security policies (USING and WITH CHECK) of the tables
--   another role owns (a superuser's code, and the caller's own, are not among them);
-- - 'beneath': the views such code reads, at every level below it, that a role other than
--   the code's owner owns (a superuser's system views, a third role's, the caller's), and the
--   policies of the tables they read: what the code's owner reads through them in the
--   caller's session, which must not follow the caller (src/guard/others.rs).
-- One row each: what it is, its node tree, the owner of the code it runs as part of, its kind.
-- Read by src/guard/others.rs.
WITH RECURSIVE rels(oid) AS (
    SELECT r FROM pg_catalog.unnest($1::pg_catalog.oid[]) r
    UNION
    -- What a view's query and a policy read (their dependencies), at every level.
    SELECT x.oid FROM rels CROSS JOIN LATERAL (
        SELECT d.refobjid
          FROM pg_catalog.pg_rewrite w
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) w.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
         WHERE w.ev_class OPERATOR(pg_catalog.=) rels.oid AND w.rulename OPERATOR(pg_catalog.=) '_RETURN'
           AND d.refobjid OPERATOR(pg_catalog.<>) rels.oid
        UNION ALL
        SELECT d.refobjid
          FROM pg_catalog.pg_policy p
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_policy'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) p.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
         WHERE p.polrelid OPERATOR(pg_catalog.=) rels.oid AND d.refobjid OPERATOR(pg_catalog.<>) rels.oid
    ) x(oid)
), held(oid, relkind, relowner, relrowsecurity) AS (
    SELECT c.oid, c.relkind, c.relowner, c.relrowsecurity
      FROM rels JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) rels.oid
     WHERE c.relowner OPERATOR(pg_catalog.<>) $2
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid OPERATOR(pg_catalog.=) c.relowner AND a.rolsuper)
), below(root, oid) AS (
    -- What held code reads (a held view's query, a held table's policies), then everything
    -- below it, with the owner of the held code.
    SELECT h.relowner, x.oid FROM held h CROSS JOIN LATERAL (
        SELECT d.refobjid
          FROM pg_catalog.pg_rewrite w
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) w.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
         WHERE h.relkind OPERATOR(pg_catalog.=) 'v' AND w.ev_class OPERATOR(pg_catalog.=) h.oid
           AND w.rulename OPERATOR(pg_catalog.=) '_RETURN' AND d.refobjid OPERATOR(pg_catalog.<>) h.oid
        UNION ALL
        SELECT d.refobjid
          FROM pg_catalog.pg_policy p
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_policy'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) p.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
         WHERE h.relrowsecurity AND p.polrelid OPERATOR(pg_catalog.=) h.oid AND d.refobjid OPERATOR(pg_catalog.<>) h.oid
    ) x(oid)
    UNION
    SELECT below.root, x.oid FROM below CROSS JOIN LATERAL (
        SELECT d.refobjid
          FROM pg_catalog.pg_rewrite w
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) w.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
         WHERE w.ev_class OPERATOR(pg_catalog.=) below.oid AND w.rulename OPERATOR(pg_catalog.=) '_RETURN'
           AND d.refobjid OPERATOR(pg_catalog.<>) below.oid
        UNION ALL
        SELECT d.refobjid
          FROM pg_catalog.pg_policy p
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_policy'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) p.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
         WHERE p.polrelid OPERATOR(pg_catalog.=) below.oid AND d.refobjid OPERATOR(pg_catalog.<>) below.oid
    ) x(oid)
), beneath(root, oid, relkind, relrowsecurity) AS (
    SELECT DISTINCT b.root, c.oid, c.relkind, c.relrowsecurity
      FROM below b JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) b.oid
     WHERE c.relowner OPERATOR(pg_catalog.<>) b.root
)
SELECT pg_catalog.format('the view %s, another role''s view,', h.oid::pg_catalog.regclass), w.ev_action::pg_catalog.text, h.relowner, 'own'
  FROM held h
  JOIN pg_catalog.pg_rewrite w ON w.ev_class OPERATOR(pg_catalog.=) h.oid AND w.rulename OPERATOR(pg_catalog.=) '_RETURN'
 WHERE h.relkind OPERATOR(pg_catalog.=) 'v'
UNION ALL
SELECT pg_catalog.format('the row-level security policy %I of %s, another role''s table,', p.polname, h.oid::pg_catalog.regclass), e.tree, h.relowner, 'own'
  FROM held h
  JOIN pg_catalog.pg_policy p ON p.polrelid OPERATOR(pg_catalog.=) h.oid
 CROSS JOIN LATERAL (VALUES (p.polqual::pg_catalog.text), (p.polwithcheck::pg_catalog.text)) e(tree)
 WHERE h.relrowsecurity AND e.tree IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the view %s, which %s''s code reads,', b.oid::pg_catalog.regclass, b.root::pg_catalog.regrole), w.ev_action::pg_catalog.text, b.root, 'beneath'
  FROM beneath b
  JOIN pg_catalog.pg_rewrite w ON w.ev_class OPERATOR(pg_catalog.=) b.oid AND w.rulename OPERATOR(pg_catalog.=) '_RETURN'
 WHERE b.relkind OPERATOR(pg_catalog.=) 'v'
UNION ALL
SELECT pg_catalog.format('the row-level security policy %I of %s, which %s''s code reads,', p.polname, b.oid::pg_catalog.regclass, b.root::pg_catalog.regrole),
       e.tree, b.root, 'beneath'
  FROM beneath b
  JOIN pg_catalog.pg_policy p ON p.polrelid OPERATOR(pg_catalog.=) b.oid
 CROSS JOIN LATERAL (VALUES (p.polqual::pg_catalog.text), (p.polwithcheck::pg_catalog.text)) e(tree)
 WHERE b.relrowsecurity AND e.tree IS NOT NULL
