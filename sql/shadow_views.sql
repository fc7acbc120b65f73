-- The SQL faces of the shadow functions (regclass arguments, defaults).
CREATE FUNCTION shadow_enable(rel regclass, snapshot boolean DEFAULT true)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN ask._shadow_enable(rel::oid, coalesce(snapshot, true));
COMMENT ON FUNCTION shadow_enable(regclass, boolean) IS
    'Capture every INSERT, UPDATE and DELETE of a table into ask.shadow_log (owner only); with snapshot, log the current rows as INSERTs first. Returns the rows snapshotted.';
CREATE FUNCTION shadow_disable(rel regclass, keep_log boolean DEFAULT false)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN ask._shadow_disable(rel::oid, coalesce(keep_log, false));
COMMENT ON FUNCTION shadow_disable(regclass, boolean) IS
    'Stop capturing a table''s changes; unless keep_log, delete its log. Returns the log entries deleted.';
CREATE FUNCTION shadow_command(rel regclass, op "char", old_row jsonb, new_row jsonb, encoding text DEFAULT 'sql')
    RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ask._shadow_command(rel::oid, op, old_row, new_row, coalesce(encoding, 'sql'));
COMMENT ON FUNCTION shadow_command(regclass, "char", jsonb, jsonb, text) IS
    'One captured change as an SQL statement (encoding sql) or an English sentence (nl).';

-- The captured log as commands, for the tables the caller may read and whose rows row-level
-- security hides none of from it (the log holds every row's changes, whatever the policies say:
-- under policies only the owner, a superuser or a BYPASSRLS role sees it).
CREATE VIEW shadow_commands WITH (security_barrier) AS
SELECT l.seq,
       l.xid,
       l.relid::regclass AS rel,
       CASE l.op WHEN 'I' THEN 'INSERT' WHEN 'U' THEN 'UPDATE' ELSE 'DELETE' END AS operation,
       ask.shadow_command(l.relid::regclass, l.op, l.old_row, l.new_row, 'sql') AS command,
       ask.shadow_command(l.relid::regclass, l.op, l.old_row, l.new_row, 'nl') AS sentence,
       l.old_row,
       l.new_row
  FROM ask.shadow_log l
 WHERE pg_catalog.has_table_privilege(l.relid, 'SELECT') AND NOT pg_catalog.row_security_active(l.relid);
COMMENT ON VIEW shadow_commands IS 'Captured changes of shadowed tables as SQL statements and English sentences, in order.';
GRANT SELECT ON shadow_commands TO PUBLIC;

CREATE VIEW shadow_status WITH (security_barrier) AS
SELECT t.relid::regclass AS rel, t.key_columns, t.complete, t.enabled_at, t.enabled_by,
       (SELECT count(*) FROM ask.shadow_log l WHERE l.relid = t.relid) AS entries
  FROM ask.shadow_tables t
 WHERE pg_catalog.has_table_privilege(t.relid, 'SELECT') AND NOT pg_catalog.row_security_active(t.relid);
COMMENT ON VIEW shadow_status IS 'Shadowed tables and the size of their captured log.';
GRANT SELECT ON shadow_status TO PUBLIC;
