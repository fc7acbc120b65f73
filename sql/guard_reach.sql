-- The code that relations $1 (with their inheritance children and partitions, which the
-- planner expands, and for a write the tables its foreign keys' actions change) and types $2 bring into the planning and execution of a statement that
-- reads them: index expressions and predicates, extended statistics' expressions, check
-- constraints, partition keys, and, for the types of their columns (and of types within
-- them: domains' base types, arrays' elements, ranges' subtypes, composites' columns),
-- domain constraints and range types' subtype_diff and canonical functions. For a statement
-- that writes ($3, the writing role, not 0): the column defaults and generated columns of the
-- relations another role owns and the defaults of domains another role owns, which the write
-- computes, and the functions of deferrable triggers, which would fire at COMMIT, after every
-- check pg_ask makes while the statement runs. One row per object: what it is, its
-- node tree or its function, and whether it is a relation's (evaluated row by row only when
-- the statement writes; a read's planner folds only its constant parts). Read by
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
SELECT pg_catalog.format('the index %s', i.indexrelid::pg_catalog.regclass), i.indexprs::pg_catalog.text, NULL::pg_catalog.oid, true
  FROM pg_catalog.pg_index i JOIN rels ON i.indrelid OPERATOR(pg_catalog.=) rels.oid WHERE i.indexprs IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the predicate of index %s', i.indexrelid::pg_catalog.regclass), i.indpred::pg_catalog.text, NULL, true
  FROM pg_catalog.pg_index i JOIN rels ON i.indrelid OPERATOR(pg_catalog.=) rels.oid WHERE i.indpred IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the statistics object %I.%I', s.stxnamespace::pg_catalog.regnamespace, s.stxname), s.stxexprs::pg_catalog.text, NULL, true
  FROM pg_catalog.pg_statistic_ext s JOIN rels ON s.stxrelid OPERATOR(pg_catalog.=) rels.oid WHERE s.stxexprs IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the constraint %I of %s', c.conname, c.conrelid::pg_catalog.regclass), c.conbin::pg_catalog.text, NULL, true
  FROM pg_catalog.pg_constraint c JOIN rels ON c.conrelid OPERATOR(pg_catalog.=) rels.oid WHERE c.conbin IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the default of %s.%I', d.adrelid::pg_catalog.regclass, a.attname), d.adbin::pg_catalog.text, NULL, true
  FROM pg_catalog.pg_attrdef d JOIN rels ON d.adrelid OPERATOR(pg_catalog.=) rels.oid
  JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.adrelid AND a.attnum OPERATOR(pg_catalog.=) d.adnum
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.adrelid
 WHERE $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND c.relowner OPERATOR(pg_catalog.<>) $3
UNION ALL
SELECT pg_catalog.format('the default of domain %s', ty.oid::pg_catalog.regtype), ty.typdefaultbin::pg_catalog.text, NULL, true
  FROM pg_catalog.pg_type ty JOIN types ON ty.oid OPERATOR(pg_catalog.=) types.oid
 WHERE ty.typdefaultbin IS NOT NULL AND $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND ty.typowner OPERATOR(pg_catalog.<>) $3
UNION ALL
SELECT pg_catalog.format('the deferred trigger %I of %s', t.tgname, t.tgrelid::pg_catalog.regclass), NULL, t.tgfoid, true
  FROM pg_catalog.pg_trigger t JOIN rels ON t.tgrelid OPERATOR(pg_catalog.=) rels.oid
 WHERE $3 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid AND t.tgdeferrable AND t.tgenabled OPERATOR(pg_catalog.<>) 'D'
UNION ALL
SELECT pg_catalog.format('the partition key of %s', p.partrelid::pg_catalog.regclass), p.partexprs::pg_catalog.text, NULL, true
  FROM pg_catalog.pg_partitioned_table p JOIN rels ON p.partrelid OPERATOR(pg_catalog.=) rels.oid WHERE p.partexprs IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the constraint %I of domain %s', c.conname, c.contypid::pg_catalog.regtype), c.conbin::pg_catalog.text, NULL, false
  FROM pg_catalog.pg_constraint c JOIN types ON c.contypid OPERATOR(pg_catalog.=) types.oid WHERE c.conbin IS NOT NULL
UNION ALL
SELECT pg_catalog.format('the subtype_diff function of range type %s', r.rngtypid::pg_catalog.regtype), NULL, r.rngsubdiff::pg_catalog.oid, false
  FROM pg_catalog.pg_range r JOIN types ON r.rngtypid OPERATOR(pg_catalog.=) types.oid WHERE r.rngsubdiff::pg_catalog.oid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
UNION ALL
SELECT pg_catalog.format('the canonical function of range type %s', r.rngtypid::pg_catalog.regtype), NULL, r.rngcanonical::pg_catalog.oid, false
  FROM pg_catalog.pg_range r JOIN types ON r.rngtypid OPERATOR(pg_catalog.=) types.oid WHERE r.rngcanonical::pg_catalog.oid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
