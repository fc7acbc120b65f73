-- The captured log as commands, for the tables the caller may read.
CREATE VIEW shadow_commands WITH (security_barrier) AS
SELECT l.seq,
       l.xid,
       l.relid::regclass AS rel,
       CASE l.op WHEN 'I' THEN 'INSERT' WHEN 'U' THEN 'UPDATE' ELSE 'DELETE' END AS operation,
       ask.shadow_command(l.relid, l.op, l.old_row, l.new_row, 'sql') AS command,
       ask.shadow_command(l.relid, l.op, l.old_row, l.new_row, 'nl') AS sentence,
       l.old_row,
       l.new_row
  FROM ask.shadow_log l
 WHERE pg_catalog.has_table_privilege(l.relid, 'SELECT');
COMMENT ON VIEW shadow_commands IS 'Captured changes of shadowed tables as SQL statements and English sentences, in order.';
GRANT SELECT ON shadow_commands TO PUBLIC;

CREATE VIEW shadow_status WITH (security_barrier) AS
SELECT t.relid::regclass AS rel, t.key_columns, t.complete, t.enabled_at, t.enabled_by,
       (SELECT count(*) FROM ask.shadow_log l WHERE l.relid = t.relid) AS entries
  FROM ask.shadow_tables t
 WHERE pg_catalog.has_table_privilege(t.relid, 'SELECT');
COMMENT ON VIEW shadow_status IS 'Shadowed tables and the size of their captured log.';
GRANT SELECT ON shadow_status TO PUBLIC;
