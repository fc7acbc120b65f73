-- ask.shadow_enable() and ask.shadow_disable(): capture of a table's changes switched on and
-- off by its owner; their arguments and refusals.
CREATE SCHEMA shadow_enable;
CREATE TABLE shadow_enable.kites (id int PRIMARY KEY, colour text);
INSERT INTO shadow_enable.kites VALUES (1, 'red'), (2, 'blue');
-- Snapshot by default: the rows already there are logged, and their count returned.
SELECT ask.shadow_enable('shadow_enable.kites');
SELECT rel, key_columns, complete, entries, enabled_by::text FROM ask.shadow_status WHERE rel = 'shadow_enable.kites'::regclass;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'shadow_enable.kites'::regclass AND NOT tgisinternal ORDER BY 1;
-- Again: nothing new.
SELECT ask.shadow_enable('shadow_enable.kites');
-- Without a snapshot the log does not start from empty.
CREATE TABLE shadow_enable.tails (id int PRIMARY KEY, len int);
INSERT INTO shadow_enable.tails VALUES (1, 3);
SELECT ask.shadow_enable('shadow_enable.tails', snapshot => false);
SELECT ask.shadow_enable('shadow_enable.tails', NULL);
SELECT rel, complete, entries FROM ask.shadow_status WHERE rel = 'shadow_enable.tails'::regclass;
-- Refusals: a view, a table that is not there, a read-only transaction; NULL is NULL.
CREATE VIEW shadow_enable.kite_view AS SELECT * FROM shadow_enable.kites;
SELECT * FROM error_of($$SELECT ask.shadow_enable('shadow_enable.kite_view')$$);
SELECT * FROM error_of($$SELECT ask.shadow_enable('shadow_enable.nothing')$$);
SELECT ask.shadow_enable(NULL) IS NULL AS enable_null, ask.shadow_disable(NULL) IS NULL AS disable_null;
BEGIN READ ONLY;
SELECT code FROM error_of($$SELECT ask.shadow_disable('shadow_enable.kites')$$);
ROLLBACK;
-- Only the owner: another role, even one that may write the table, may do neither, through
-- the functions or the internal ones.
CREATE ROLE shadow_enable_writer;
GRANT USAGE ON SCHEMA shadow_enable TO shadow_enable_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON shadow_enable.kites TO shadow_enable_writer;
CREATE TABLE shadow_enable.other (id int PRIMARY KEY);
GRANT ALL ON shadow_enable.other TO shadow_enable_writer;
SET ROLE shadow_enable_writer;
SELECT * FROM error_of($$SELECT ask.shadow_disable('shadow_enable.kites')$$);
SELECT * FROM error_of($$SELECT ask._shadow_disable('shadow_enable.kites'::regclass, false)$$);
SELECT * FROM error_of($$SELECT ask.shadow_enable('shadow_enable.other')$$);
SELECT * FROM error_of($$SELECT ask._shadow_enable('shadow_enable.other'::regclass, true)$$);
-- Its writes are captured all the same.
INSERT INTO shadow_enable.kites VALUES (3, 'green');
RESET ROLE;
SELECT rel, entries FROM ask.shadow_status WHERE rel = 'shadow_enable.kites'::regclass;
-- The capture trigger attached to a table that is not shadowed refuses the write.
CREATE TRIGGER planted AFTER INSERT ON shadow_enable.other FOR EACH ROW EXECUTE FUNCTION ask._shadow_capture();
SELECT * FROM error_of($$INSERT INTO shadow_enable.other VALUES (1)$$);
DROP TRIGGER planted ON shadow_enable.other;
-- Disabling with keep_log keeps the log; disabling what is not shadowed is refused.
SELECT ask.shadow_disable('shadow_enable.tails', keep_log => true);
SELECT count(*) AS kept_entries FROM ask.shadow_log WHERE relid = 'shadow_enable.tails'::regclass;
SELECT * FROM error_of($$SELECT ask.shadow_disable('shadow_enable.tails')$$);
SELECT ask.shadow_disable('shadow_enable.kites');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'shadow_enable.kites'::regclass AND NOT tgisinternal;
-- Dropping a table forgets its log.
DROP TABLE shadow_enable.tails;
SELECT count(*) AS log_entries FROM ask.shadow_log;
DROP SCHEMA shadow_enable CASCADE;
SELECT count(*) AS shadowed FROM ask.shadow_tables;
DROP ROLE shadow_enable_writer;
