-- ask.suggest_questions(): questions to start from, as a reader, a role without privileges and
-- a role whose own verified queries the reader does not trust; a query that no longer runs
-- is not offered; n out of range.
SELECT last_value AS vq_last, is_called AS vq_called FROM ask.verified_queries_id_seq \gset
CREATE SCHEMA suggest;
CREATE TABLE suggest.rooms (id int PRIMARY KEY, floor int, label text);
INSERT INTO suggest.rooms VALUES (1, 1, 'lobby'), (2, 2, 'office');
CREATE TABLE suggest.salaries (id int PRIMARY KEY, amount int);
CREATE ROLE suggest_reader;
CREATE ROLE suggest_nobody;
CREATE ROLE suggest_other;
GRANT USAGE ON SCHEMA suggest TO suggest_reader, suggest_nobody, suggest_other;
GRANT SELECT ON suggest.rooms TO suggest_reader, suggest_other;
SELECT ask.add_verified('How many rooms are there?', 'SELECT count(*) FROM suggest.rooms') > 0 AS by_superuser;
SELECT ask.add_verified('Which rooms are on floor 1?', 'SELECT label FROM suggest.rooms WHERE floor = 1') > 0 AS by_superuser;
SELECT ask.add_verified('What is the total payroll?', 'SELECT sum(amount) FROM suggest.salaries') > 0 AS by_superuser;
SET ROLE suggest_other;
SELECT ask.add_verified('Which rooms are there?', 'SELECT label FROM suggest.rooms ORDER BY id') > 0 AS by_other;
-- The other role: its own first, then the superuser's it may read.
SELECT question, tables FROM ask.suggest_questions();
SET ROLE suggest_reader;
-- The reader: not the salaries it may not read, not the other role's own.
SELECT question, tables FROM ask.suggest_questions();
SELECT count(*) AS at_most_one FROM ask.suggest_questions(1);
SET ROLE suggest_nobody;
SELECT count(*) AS nothing FROM ask.suggest_questions();
RESET ROLE;
-- A verified query that no longer runs is not offered.
ALTER TABLE suggest.rooms RENAME COLUMN floor TO storey;
SET ROLE suggest_reader;
SELECT question FROM ask.suggest_questions();
RESET ROLE;
SELECT * FROM error_of('SELECT * FROM ask.suggest_questions(0)');
SELECT * FROM error_of('SELECT * FROM ask.suggest_questions(51)');
SELECT count(*) AS null_is_none FROM ask.suggest_questions(NULL);
DROP SCHEMA suggest CASCADE;
DELETE FROM ask.verified_queries;
DROP ROLE suggest_reader, suggest_nobody, suggest_other;
SELECT setval('ask.verified_queries_id_seq', :vq_last, :'vq_called') IS NOT NULL AS sequence_restored;
