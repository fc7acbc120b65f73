-- Whether function $1 may start while the guard runs SQL it did not write, though it is
-- neither built in nor in ask.allowed_functions: a function of role $2 (the role that entered
-- the guard, 0 when it is a superuser: a superuser owns every extension's functions), or one a
-- superuser wired into PostgreSQL (a type's input, output, send, receive or type-modifier
-- function: only a superuser creates a base type; an operator class's support function or
-- operator; an access method's handler; a foreign-data wrapper's handler or validator; a text
-- search template's or parser's function; a planner support function; an event trigger's
-- function, which the DDL of a benchmark's scratch tables fires), or one of pg_ask's own
-- trigger functions (shadow capture, value refresh), which check the table they fire for.
-- Read by
-- src/guard/trusted.rs.
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc f
                WHERE f.oid OPERATOR(pg_catalog.=) $1 AND $2 OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
                  AND f.proowner OPERATOR(pg_catalog.=) $2)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_type t
                WHERE $1 OPERATOR(pg_catalog.=) ANY (ARRAY[t.typinput, t.typoutput, t.typreceive, t.typsend,
                                                          t.typmodin, t.typmodout]::pg_catalog.oid[]))
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_amproc p WHERE p.amproc::pg_catalog.oid OPERATOR(pg_catalog.=) $1)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_amop a JOIN pg_catalog.pg_operator o ON o.oid OPERATOR(pg_catalog.=) a.amopopr
                WHERE o.oprcode::pg_catalog.oid OPERATOR(pg_catalog.=) $1)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_am m WHERE m.amhandler::pg_catalog.oid OPERATOR(pg_catalog.=) $1)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_foreign_data_wrapper w
                WHERE $1 OPERATOR(pg_catalog.=) ANY (ARRAY[w.fdwhandler, w.fdwvalidator]::pg_catalog.oid[]))
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_ts_template t
                WHERE $1 OPERATOR(pg_catalog.=) ANY (ARRAY[t.tmplinit, t.tmpllexize]::pg_catalog.oid[]))
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_ts_parser p
                WHERE $1 OPERATOR(pg_catalog.=) ANY (ARRAY[p.prsstart, p.prstoken, p.prsend, p.prsheadline, p.prslextype]::pg_catalog.oid[]))
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc f WHERE f.prosupport::pg_catalog.oid OPERATOR(pg_catalog.=) $1)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger e WHERE e.evtfoid OPERATOR(pg_catalog.=) $1)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc f
                 JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                                            AND d.objid OPERATOR(pg_catalog.=) f.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
                 JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) d.refobjid AND x.extname OPERATOR(pg_catalog.=) 'pg_ask'
                WHERE f.oid OPERATOR(pg_catalog.=) $1
                  AND f.prorettype OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.trigger'::pg_catalog.regtype,
                                                                      'pg_catalog.event_trigger'::pg_catalog.regtype]::pg_catalog.oid[]))
