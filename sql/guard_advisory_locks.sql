-- The advisory locks this backend holds: (classid, objid, objsubid, shared). Read by the
-- guard (src/guard/mod.rs) before and after a statement it did not write, to release and
-- refuse a session-level lock the statement left (it would outlive the rollback and tell
-- other sessions what it read).
SELECT l.classid::pg_catalog.int8, l.objid::pg_catalog.int8, l.objsubid::pg_catalog.int4,
       l.mode OPERATOR(pg_catalog.=) 'ShareLock'
  FROM pg_catalog.pg_locks l
 WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory' AND l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid() AND l.granted
