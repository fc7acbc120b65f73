-- ask.load_workload(): an InConDB workload stored for benchmarks; its formats, translation of
-- MySQL's dialect, refusals, and that a workload is replaced only by the role that loaded it.
SELECT ask.load_workload('load_workload_w', $${
  "create_tables": ["CREATE TABLE golden_lw_gears (id INT AUTO_INCREMENT PRIMARY KEY, `name` VARCHAR(20), made DATETIME);"],
  "insert": ["INSERT INTO golden_lw_gears (name, made) VALUES ('spur', '2020-01-01 00:00:00');"],
  "delete": ["DELETE FROM golden_lw_gears WHERE id = 1;"],
  "update": ["UPDATE golden_lw_gears SET name = 'bevel' WHERE id = 1;"],
  "select": {"no_filtering": ["SELECT name FROM golden_lw_gears;"], "count": ["SELECT COUNT(*) FROM golden_lw_gears;"]}
}$$);
SELECT name, statements, translated, skipped, nl IS NULL AS sql_only, loaded_by::text FROM ask.workloads WHERE name = 'load_workload_w';
-- The {"sql": ..., "nl": ...} form, with its English twin.
SELECT ask.load_workload('load_workload_w', $${"sql": {
  "create_tables": ["CREATE TABLE golden_lw_gears (id INT PRIMARY KEY, name VARCHAR(20));"],
  "insert": ["INSERT INTO golden_lw_gears VALUES (1, 'spur');"], "delete": [], "update": [],
  "select": {"no_filtering": ["SELECT name FROM golden_lw_gears;"]}},
  "nl": {"create_tables": ["Create the gears table."], "insert": ["Add gear 1, a spur."], "delete": [], "update": [],
  "select": {"no_filtering": ["List the gear names."]}}}$$) ->> 'nl' AS nl;
-- Statements that cannot be translated are skipped, each with a NOTICE; unknown keys too.
SELECT ask.load_workload('load_workload_skips', $${
  "create_tables": ["CREATE TABLE golden_lw_t (id INT PRIMARY KEY);"],
  "insert": ["INSERT INTO golden_lw_t VALUES (1);", "LOCK TABLES golden_lw_t WRITE;"],
  "delete": [], "update": [], "select": {}, "extra": 1
}$$) - 'name' AS summary;
-- Refusals: not a workload, an empty name.
SELECT * FROM error_of($$SELECT ask.load_workload('load_workload_bad', '{"insert": []}')$$);
SELECT * FROM error_of($$SELECT ask.load_workload('load_workload_bad', '[]')$$);
SELECT * FROM error_of($$SELECT ask.load_workload('', '{"create_tables": [], "insert": [], "delete": [], "update": [], "select": {}}')$$);
-- Roles that are not superusers: without CREATE on the database a role may not load one; with
-- it, a role may not replace another role's workload; a superuser replaces anyone's.
CREATE ROLE load_workload_a;
CREATE ROLE load_workload_b;
SET ROLE load_workload_a;
SELECT * FROM error_of($$SELECT ask.load_workload('load_workload_a', '{"create_tables": [], "insert": [], "delete": [], "update": [], "select": {}}')$$);
RESET ROLE;
SELECT format('GRANT CREATE ON DATABASE %I TO load_workload_a, load_workload_b', current_database()) \gexec
SET ROLE load_workload_a;
SELECT ask.load_workload('load_workload_a', '{"create_tables": [], "insert": [], "delete": [], "update": [], "select": {}}') ->> 'name' AS loaded;
SET ROLE load_workload_b;
SELECT * FROM error_of($$SELECT ask.load_workload('load_workload_a', '{"create_tables": [], "insert": [], "delete": [], "update": [], "select": {}}')$$);
SELECT name, loaded_by::text FROM ask.workloads ORDER BY name;
RESET ROLE;
SELECT ask.load_workload('load_workload_a', '{"create_tables": [], "insert": [], "delete": [], "update": [], "select": {}}') ->> 'name' AS replaced;
SELECT loaded_by::text FROM ask.workloads WHERE name = 'load_workload_a';
-- No role writes the table itself.
SET ROLE load_workload_b;
SELECT * FROM error_of($$DELETE FROM ask.workloads$$);
SELECT * FROM error_of($$UPDATE ask.workloads SET spec = '{}'$$);
RESET ROLE;
DELETE FROM ask.workloads WHERE name LIKE 'load_workload%';
SELECT format('REVOKE CREATE ON DATABASE %I FROM load_workload_a, load_workload_b', current_database()) \gexec
DROP ROLE load_workload_a, load_workload_b;
