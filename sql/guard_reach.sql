-- The code that relations $1 (with their inheritance children and partitions, which the
-- planner expands, and for a write the tables its foreign keys' actions change) and types $2 bring into the planning and execution of a statement that
-- reads them: index expressions and predicates, extended statistics' expressions, check
-- constraints, partition keys, and, for the types of their columns (and of types within
-- them: domains' base types, arrays' elements, ranges' subtypes, composites' columns),
-- domain constraints and range types' subtype_diff and canonical functions. For a statement
-- that writes ($3, the writing role, not 0): the column defaults and generated columns of the
-- relations another role owns and the defaults of domains another role owns, which the write
-- computes (a table's own serial default aside: an INSERT advances its own sequence), the
-- conditions of another role's triggers, another role's rules (refused: a rule's action runs
-- as the writer), and the deferrable triggers, which fire at COMMIT, after every check pg_ask
-- makes while the statement runs (refused when a table of their constraint is another role's:
-- planning a foreign key's check there runs that table's code in the writer's session; for
-- the writer's own tables, their functions are checked). One row per object: what it is, its
-- node tree or its function, why it is refused whatever its code (NULL: its code decides), and
-- its kind: 'relation' (a relation's own code, evaluated row by row only when the statement
-- writes; a read's planner folds only its constant parts), 'others_write' (another role's
-- default or trigger condition, computed by a write, row by row too), 'domain_check' (run
-- wherever a value of the domain is read), 'type' (a range type's function). Read by
-- src/guard/reach.rs.
WITH RECURSIVE rels(oid) AS (
    SELECT r FROM pg_catalog.unnest($1::pg_catalog.oid[]) r
    UNION
    -- Inheritance children and partitions; for a write, also the tables its foreign keys'
    -- actions change (ON DELETE/UPDATE CASCADE, SET NULL, SET DEFAULT), at every remove.
    SELECT x.oid FROM rels CROSS JOIN LATERAL (
        SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent OPERATOR(pg_catalog.=) rels.oid
        UNION ALL
        SELECT k.conrelid FROM pg_catalog.pg_constraint k
         WHERE $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND k.contype OPERATOR(pg_catalog.=) 'f'
           AND k.confrelid OPERATOR(pg_catalog.=) rels.oid
           AND (k.confdeltype OPERATOR(pg_catalog.=) ANY ('{c,n,d}'::"char"[]) OR k.confupdtype OPERATOR(pg_catalog.=) ANY ('{c,n,d}'::"char"[]))
    ) x(oid)
), types(oid) AS (
    SELECT a.atttypid FROM pg_catalog.pg_attribute a JOIN rels ON a.attrelid OPERATOR(pg_catalog.=) rels.oid
     WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped AND a.atttypid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    UNION
    SELECT t FROM pg_catalog.unnest($2::pg_catalog.oid[]) t WHERE t OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    UNION
    SELECT x.oid FROM types JOIN pg_catalog.pg_type ty ON ty.oid OPERATOR(pg_catalog.=) types.oid
     CROSS JOIN LATERAL (
        SELECT ty.typbasetype
        UNION ALL SELECT ty.typelem
        UNION ALL SELECT r.rngsubtype FROM pg_catalog.pg_range r WHERE r.rngtypid OPERATOR(pg_catalog.=) ty.oid
        UNION ALL SELECT r.rngtypid FROM pg_catalog.pg_range r WHERE r.rngmultitypid OPERATOR(pg_catalog.=) ty.oid
        UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid OPERATOR(pg_catalog.=) ty.typrelid AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
     ) x(oid)
     WHERE x.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
)
SELECT pg_catalog.format('the index %s', i.indexrelid::pg_catalog.regclass), i.indexprs::pg_catalog.text, NULL::pg_catalog.oid, NULL::pg_catalog.text, 'relation'
  FROM pg_catalog.pg_index i JOIN rels ON i.indrelid OPERATOR(pg_catalog.=) rels.oid WHERE i.indexprs IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the predicate of index %s', i.indexrelid::pg_catalog.regclass), i.indpred::pg_catalog.text, NULL, NULL::pg_catalog.text, 'relation'
  FROM pg_catalog.pg_index i JOIN rels ON i.indrelid OPERATOR(pg_catalog.=) rels.oid WHERE i.indpred IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the statistics object %I.%I', s.stxnamespace::pg_catalog.regnamespace, s.stxname), s.stxexprs::pg_catalog.text, NULL, NULL::pg_catalog.text, 'relation'
  FROM pg_catalog.pg_statistic_ext s JOIN rels ON s.stxrelid OPERATOR(pg_catalog.=) rels.oid WHERE s.stxexprs IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the constraint %I of %s', c.conname, c.conrelid::pg_catalog.regclass), c.conbin::pg_catalog.text, NULL, NULL::pg_catalog.text, 'relation'
  FROM pg_catalog.pg_constraint c JOIN rels ON c.conrelid OPERATOR(pg_catalog.=) rels.oid WHERE c.conbin IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the default of %s.%I', d.adrelid::pg_catalog.regclass, a.attname), d.adbin::pg_catalog.text, NULL, NULL::pg_catalog.text, 'others_write'
  FROM pg_catalog.pg_attrdef d JOIN rels ON d.adrelid OPERATOR(pg_catalog.=) rels.oid
  JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.adrelid AND a.attnum OPERATOR(pg_catalog.=) d.adnum
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.adrelid
 WHERE $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND c.relowner OPERATOR(pg_catalog.<>) $3
   -- A serial column's own default, nextval of the sequence the column owns: an INSERT into
   -- the table advances the table's own sequence.
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend dep
                    WHERE dep.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                      AND dep.refobjid OPERATOR(pg_catalog.=) d.adrelid AND dep.refobjsubid OPERATOR(pg_catalog.=) d.adnum
                      AND dep.deptype OPERATOR(pg_catalog.=) 'a'
                      AND pg_catalog.pg_get_expr(d.adbin, d.adrelid) OPERATOR(pg_catalog.=)
                          pg_catalog.format('nextval(%L::regclass)', dep.objid::pg_catalog.regclass::pg_catalog.text))
UNION ALL
SELECT pg_catalog.format('the default of domain %s', ty.oid::pg_catalog.regtype), ty.typdefaultbin::pg_catalog.text, NULL, NULL::pg_catalog.text, 'others_write'
  FROM pg_catalog.pg_type ty JOIN types ON ty.oid OPERATOR(pg_catalog.=) types.oid
 WHERE ty.typdefaultbin IS NOT NULL AND $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND ty.typowner OPERATOR(pg_catalog.<>) $3
UNION ALL
SELECT pg_catalog.format('the deferrable trigger %I of %s', t.tgname, t.tgrelid::pg_catalog.regclass), NULL, t.tgfoid,
       CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_class c
                          WHERE c.oid OPERATOR(pg_catalog.=) ANY (ARRAY[t.tgrelid, k.conrelid, k.confrelid])
                            AND c.relowner OPERATOR(pg_catalog.<>) $3)
            THEN 'a check PostgreSQL makes at COMMIT, after the step and every check pg_ask makes, over a table another role owns' END, 'relation'
  FROM pg_catalog.pg_trigger t JOIN rels ON t.tgrelid OPERATOR(pg_catalog.=) rels.oid
  LEFT JOIN pg_catalog.pg_constraint k ON k.oid OPERATOR(pg_catalog.=) t.tgconstraint
 WHERE $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND t.tgdeferrable AND t.tgenabled OPERATOR(pg_catalog.<>) 'D'
UNION ALL
SELECT pg_catalog.format('the condition of trigger %I of %s', t.tgname, t.tgrelid::pg_catalog.regclass), t.tgqual::pg_catalog.text, NULL, NULL, 'others_write'
  FROM pg_catalog.pg_trigger t JOIN rels ON t.tgrelid OPERATOR(pg_catalog.=) rels.oid
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.tgrelid
 WHERE $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND t.tgqual IS NOT NULL AND c.relowner OPERATOR(pg_catalog.<>) $3
UNION ALL
SELECT pg_catalog.format('the trigger %I of %s', t.tgname, t.tgrelid::pg_catalog.regclass), NULL, NULL,
       'another role''s trigger that runs a function of the writer''s own, where the writer did not put it', 'relation'
  FROM pg_catalog.pg_trigger t JOIN rels ON t.tgrelid OPERATOR(pg_catalog.=) rels.oid
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.tgrelid
  JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid
 WHERE $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND c.relowner OPERATOR(pg_catalog.<>) $3
   AND p.proowner OPERATOR(pg_catalog.=) $3 AND t.tgenabled OPERATOR(pg_catalog.<>) 'D'
UNION ALL
SELECT pg_catalog.format('the rule %I of %s', r.rulename, r.ev_class::pg_catalog.regclass), NULL, NULL,
       'a rule another role wrote, whose action a write runs as the writer', 'relation'
  FROM pg_catalog.pg_rewrite r JOIN rels ON r.ev_class OPERATOR(pg_catalog.=) rels.oid
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.ev_class
 WHERE $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND r.ev_type OPERATOR(pg_catalog.<>) '1' AND c.relowner OPERATOR(pg_catalog.<>) $3
UNION ALL
SELECT pg_catalog.format('the partition key of %s', p.partrelid::pg_catalog.regclass), p.partexprs::pg_catalog.text, NULL, NULL::pg_catalog.text, 'relation'
  FROM pg_catalog.pg_partitioned_table p JOIN rels ON p.partrelid OPERATOR(pg_catalog.=) rels.oid WHERE p.partexprs IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the constraint %I of domain %s', c.conname, c.contypid::pg_catalog.regtype), c.conbin::pg_catalog.text, NULL, NULL::pg_catalog.text, 'domain_check'
  FROM pg_catalog.pg_constraint c JOIN types ON c.contypid OPERATOR(pg_catalog.=) types.oid WHERE c.conbin IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the subtype_diff function of range type %s', r.rngtypid::pg_catalog.regtype), NULL, r.rngsubdiff::pg_catalog.oid, NULL::pg_catalog.text, 'type'
  FROM pg_catalog.pg_range r JOIN types ON r.rngtypid OPERATOR(pg_catalog.=) types.oid WHERE r.rngsubdiff::pg_catalog.oid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
UNION ALL
SELECT pg_catalog.format('the canonical function of range type %s', r.rngtypid::pg_catalog.regtype), NULL, r.rngcanonical::pg_catalog.oid, NULL::pg_catalog.text, 'type'
  FROM pg_catalog.pg_range r JOIN types ON r.rngtypid OPERATOR(pg_catalog.=) types.oid WHERE r.rngcanonical::pg_catalog.oid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
