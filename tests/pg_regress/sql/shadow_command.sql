-- ask.shadow_command(): one captured change as an SQL statement or an English sentence, and
-- what the views ask.shadow_commands and ask.shadow_status show each role.
CREATE SCHEMA shadow_command;
CREATE TABLE shadow_command.boats (id int PRIMARY KEY, name text, length_m numeric);
SELECT ask.shadow_command('shadow_command.boats', 'I', NULL, '{"id": 1, "name": "Ark", "length_m": 9.5}');
SELECT ask.shadow_command('shadow_command.boats', 'I', NULL, '{"id": 1, "name": "Ark", "length_m": 9.5}', 'nl');
SELECT ask.shadow_command('shadow_command.boats', 'U', '{"id": 1, "name": "Ark"}', '{"name": "Arc"}');
SELECT ask.shadow_command('shadow_command.boats', 'U', '{"id": 1, "name": "Ark"}', '{"name": "Arc"}', 'nl');
SELECT ask.shadow_command('shadow_command.boats', 'D', '{"id": 1, "name": "Arc", "length_m": 9.5}', NULL);
SELECT ask.shadow_command('shadow_command.boats', 'D', '{"id": 1, "name": "Arc", "length_m": 9.5}', NULL, 'nl');
-- A quote in a value, a NULL value.
SELECT ask.shadow_command('shadow_command.boats', 'I', NULL, '{"id": 2, "name": "Bob''s", "length_m": null}');
-- An unknown encoding is refused; NULL is the default, 'sql'.
SELECT * FROM error_of($$SELECT ask.shadow_command('shadow_command.boats', 'I', NULL, '{"id": 1}', 'xml')$$);
SELECT ask.shadow_command('shadow_command.boats', 'I', NULL, '{"id": 1}', NULL) AS default_encoding;
-- The views: a role sees the log of the tables it may read and whose policies hide nothing.
SELECT ask.shadow_enable('shadow_command.boats');
INSERT INTO shadow_command.boats VALUES (1, 'Ark', 9.5), (2, 'Bee', 4);
UPDATE shadow_command.boats SET name = 'Arc' WHERE id = 1;
CREATE ROLE shadow_command_viewer;
GRANT USAGE ON SCHEMA shadow_command TO shadow_command_viewer;
SET ROLE shadow_command_viewer;
SELECT count(*) AS commands FROM ask.shadow_commands;
SELECT count(*) AS status_rows FROM ask.shadow_status;
SELECT * FROM error_of($$SELECT count(*) FROM ask.shadow_log$$);
RESET ROLE;
GRANT SELECT ON shadow_command.boats TO shadow_command_viewer;
SET ROLE shadow_command_viewer;
SELECT operation, command FROM ask.shadow_commands ORDER BY seq;
SELECT rel, entries FROM ask.shadow_status;
RESET ROLE;
-- Under row-level security that hides rows from it, nothing.
ALTER TABLE shadow_command.boats ENABLE ROW LEVEL SECURITY;
CREATE POLICY shadow_command_small ON shadow_command.boats FOR SELECT USING (length_m < 5);
SET ROLE shadow_command_viewer;
SELECT count(*) AS rows_visible FROM shadow_command.boats;
SELECT count(*) AS commands FROM ask.shadow_commands;
SELECT count(*) AS status_rows FROM ask.shadow_status;
RESET ROLE;
SELECT ask.shadow_disable('shadow_command.boats');
DROP SCHEMA shadow_command CASCADE;
DROP ROLE shadow_command_viewer;
