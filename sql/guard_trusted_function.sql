-- Whether function $1 may start while the guard runs SQL it did not write, though it is
-- neither built in nor in ask.allowed_functions: a function a superuser wired into PostgreSQL
-- (a type's input, output, send, receive or type-modifier function: only a superuser creates a
-- base type; an operator class's support function or operator; an access method's handler; a
-- planner support function), or the calling role's own function, which runs as its owner's
-- code would anyway. Read by src/guard/trusted.rs.
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc f
                WHERE f.oid OPERATOR(pg_catalog.=) $1
                  AND f.proowner OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r
                                                          WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER))
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_type t
                WHERE $1 OPERATOR(pg_catalog.=) ANY (ARRAY[t.typinput, t.typoutput, t.typreceive, t.typsend,
                                                          t.typmodin, t.typmodout]::pg_catalog.oid[]))
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_amproc p WHERE p.amproc::pg_catalog.oid OPERATOR(pg_catalog.=) $1)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_amop a JOIN pg_catalog.pg_operator o ON o.oid OPERATOR(pg_catalog.=) a.amopopr
                WHERE o.oprcode::pg_catalog.oid OPERATOR(pg_catalog.=) $1)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_am m WHERE m.amhandler::pg_catalog.oid OPERATOR(pg_catalog.=) $1)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc f WHERE f.prosupport::pg_catalog.oid OPERATOR(pg_catalog.=) $1)
