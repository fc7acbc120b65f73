-- The relations this backend holds a RowExclusiveLock on: those a write step writes, with the
-- partitions and inheritance children its rows went to (locked as they are routed there, not
-- when the statement is checked). Read by the guard (src/guard/written.rs) before and after a
-- write step runs, to check again what it wrote, now that no other session can change it.
SELECT l.relation
  FROM pg_catalog.pg_locks l
 WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()
   AND l.mode OPERATOR(pg_catalog.=) 'RowExclusiveLock' AND l.granted AND l.relation IS NOT NULL
