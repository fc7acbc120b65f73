-- ask.shadow_replay(): its arguments and refusals, and who may replay which table's log.
SELECT coalesce(max(id), 0) AS calls_before FROM ask.llm_calls \gset
CREATE TABLE golden_replay_kites (id int PRIMARY KEY, colour text);
INSERT INTO golden_replay_kites VALUES (1, 'red');
SELECT ask.shadow_enable('golden_replay_kites');
INSERT INTO golden_replay_kites VALUES (2, 'blue');
-- The stand-in answers [["blue"], ["red"]]: right.
SELECT llm_answer, true_answer, score, tokens > 0 AS counted FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites ORDER BY colour');
SELECT llm_answer, score FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites ORDER BY colour', encoding => 'nl', prompting => 'zero_shot', last_n => 1);
SELECT query, encoding, prompting, commands, score, role_name = current_user::regrole AS mine FROM ask.shadow_replays ORDER BY id;
-- Refusals: an unknown encoding, prompting or provider, a negative last_n, a query that reads
-- no table, that names a table that is not shadowed or not there, DDL.
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites', encoding => 'xml')$$);
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites', prompting => 'many_shot')$$);
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites', last_n => -1)$$);
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT 1')$$);
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT name FROM cities')$$);
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT * FROM golden_replay_nothing')$$);
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('DROP TABLE golden_replay_kites')$$);
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites', provider => 'gpt')$$);
-- Another role: without SELECT on the table, refused; with it, its own replay, and it sees
-- only its own replays.
CREATE ROLE shadow_replay_other;
SET ROLE shadow_replay_other;
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites ORDER BY colour')$$);
SELECT count(*) AS replays_visible FROM ask.shadow_replays;
SELECT * FROM error_of($$INSERT INTO ask.shadow_replays (role_name, query, encoding, prompting, commands, llm_answer, score) VALUES ('postgres', 'q', 'sql', 'few_shot', 0, '[]', 1)$$);
RESET ROLE;
GRANT SELECT ON golden_replay_kites TO shadow_replay_other;
SET ROLE shadow_replay_other;
SELECT score FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites ORDER BY colour');
SELECT count(*) AS replays_visible FROM ask.shadow_replays;
RESET ROLE;
-- Under row-level security that hides rows from it: refused.
ALTER TABLE golden_replay_kites ENABLE ROW LEVEL SECURITY;
CREATE POLICY golden_replay_red ON golden_replay_kites FOR SELECT USING (colour = 'red');
SET ROLE shadow_replay_other;
SELECT * FROM error_of($$SELECT * FROM ask.shadow_replay('SELECT colour FROM golden_replay_kites ORDER BY colour')$$);
RESET ROLE;
SELECT ask.shadow_disable('golden_replay_kites');
DROP TABLE golden_replay_kites;
DELETE FROM ask.shadow_replays;
DELETE FROM ask.llm_calls WHERE id > :calls_before;
DROP ROLE shadow_replay_other;
