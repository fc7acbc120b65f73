-- Shadow tables: capture of a table's changes, the log as SQL commands and English sentences,
-- replay to the (stand-in) LLM scored against the real answer, and the end of capture.
CREATE TABLE orchard (id int PRIMARY KEY, name text NOT NULL, price numeric(6,2), picked date);
CREATE TABLE orchard_notes (body text);
INSERT INTO orchard VALUES (1, 'cherry', 1.30, '2023-06-01'), (2, 'apple', 0.50, NULL);
-- Enabling logs the rows already there as INSERTs (snapshot), so the log starts from empty.
SELECT ask.shadow_enable('orchard');
SELECT ask.shadow_enable('orchard');
-- A table without a primary key: its changes are keyed by the whole old row.
SELECT ask.shadow_enable('orchard_notes');
INSERT INTO orchard VALUES (3, 'fig', 3, NULL);
UPDATE orchard SET price = 1.40 WHERE id = 1;
DELETE FROM orchard WHERE id = 2;
UPDATE orchard SET id = 10, name = 'black fig' WHERE id = 3;
-- What is rolled back leaves nothing: a failed statement, a rolled-back transaction.
INSERT INTO orchard VALUES (4, 'pear', 2, NULL), (1, 'duplicate', 9, NULL);
BEGIN;
INSERT INTO orchard VALUES (5, 'plum', 1.10, NULL);
ROLLBACK;
INSERT INTO orchard_notes VALUES ('it''s ripe');
UPDATE orchard_notes SET body = 'eaten';
SELECT rel, operation, command FROM ask.shadow_commands ORDER BY seq;
SELECT rel, sentence FROM ask.shadow_commands ORDER BY seq;
SELECT rel, key_columns, complete, entries FROM ask.shadow_status ORDER BY rel::text;
-- Replay: the LLM sees the commands and answers the query as if it had run them; the query
-- runs for real and the answer is scored (1 for the right rows in the right order).
SELECT llm_answer, true_answer, score FROM ask.shadow_replay('SELECT name FROM orchard ORDER BY price');
-- A partly wrong answer (zero-shot: every command in one message).
SELECT llm_answer, true_answer, score FROM ask.shadow_replay('SELECT name FROM orchard ORDER BY name', prompting => 'zero_shot');
-- A modification is answered Succeed or Fail; its truth comes from running it, rolled back.
SELECT llm_answer, true_answer, score FROM ask.shadow_replay('INSERT INTO orchard VALUES (1, ''quince'', 2, NULL)', encoding => 'nl');
SELECT count(*) AS orchard_rows FROM orchard;
-- A reply that cannot be read scores 0.
SELECT llm_answer, true_answer, score FROM ask.shadow_replay('SELECT count(*) FROM orchard', prompting => 'zero_cot');
SELECT query, encoding, prompting, commands, llm_answer, score FROM ask.shadow_replays ORDER BY id;
-- What cannot be replayed.
SELECT * FROM ask.shadow_replay('SELECT * FROM cities');
SELECT * FROM ask.shadow_replay('DROP TABLE orchard');
SELECT * FROM ask.shadow_replay('SELECT name FROM orchard', encoding => 'xml');
-- TRUNCATE empties a table's log: what happened before no longer matters.
TRUNCATE orchard_notes;
SELECT rel, complete, entries FROM ask.shadow_status ORDER BY rel::text;
-- Disabling removes the triggers and the log.
SELECT ask.shadow_disable('orchard');
SELECT ask.shadow_disable('orchard');
INSERT INTO orchard VALUES (6, 'lime', 0.7, NULL);
SELECT ask.shadow_disable('orchard_notes');
SELECT count(*) AS log_entries FROM ask.shadow_log;
SELECT count(*) AS shadowed FROM ask.shadow_status;
DROP TABLE orchard, orchard_notes;
