-- ask.remove_verified(): only the verifier (or the extension's owner, or a superuser) removes
-- a verified query; others get 42501 when they may see it, 42704 when they may not.
SELECT last_value AS vq_last, is_called AS vq_called FROM ask.verified_queries_id_seq \gset
CREATE SCHEMA remove_verified;
CREATE TABLE remove_verified.rooms (id int PRIMARY KEY, floor int, label text);
INSERT INTO remove_verified.rooms VALUES (1, 1, 'lobby'), (2, 2, 'office');
CREATE ROLE remove_verified_a;
CREATE ROLE remove_verified_b;
CREATE ROLE remove_verified_c;
GRANT USAGE ON SCHEMA remove_verified TO remove_verified_a, remove_verified_b, remove_verified_c;
GRANT SELECT ON remove_verified.rooms TO remove_verified_a, remove_verified_b;
-- remove_verified_a verifies two queries.
SET ROLE remove_verified_a;
SELECT ask.add_verified('Which rooms are on floor 1?', 'SELECT label FROM remove_verified.rooms WHERE floor = 1') AS first_id \gset
SELECT ask.add_verified('How many rooms are there?', 'SELECT count(*) FROM remove_verified.rooms') AS second_id \gset
RESET ROLE;
-- b may see them (it reads the table) but did not verify them: 42501, naming the verifier.
SET ROLE remove_verified_b;
SELECT code, replace(message, :'first_id', 'N') AS message, hint FROM error_of(format('SELECT ask.remove_verified(%s)', :first_id));
-- c may not see them: as if there were none.
SET ROLE remove_verified_c;
SELECT code, replace(message, :'first_id', 'N') AS message, hint FROM error_of(format('SELECT ask.remove_verified(%s)', :first_id));
-- An id that does not exist, and NULL.
SELECT code, message FROM error_of('SELECT ask.remove_verified(-1)');
SELECT ask.remove_verified(NULL) IS NULL AS null_in_null_out;
-- The verifier removes its own; then it is gone.
SET ROLE remove_verified_a;
SELECT ask.remove_verified(:first_id);
SELECT code, replace(message, :'first_id', 'N') AS message FROM error_of(format('SELECT ask.remove_verified(%s)', :first_id));
-- A member of the verifier role is not the verifier.
RESET ROLE;
GRANT remove_verified_a TO remove_verified_b;
SET ROLE remove_verified_b;
SELECT code, replace(message, :'second_id', 'N') AS message FROM error_of(format('SELECT ask.remove_verified(%s)', :second_id));
RESET ROLE;
REVOKE remove_verified_a FROM remove_verified_b;
-- A superuser removes anyone's.
SELECT ask.remove_verified(:second_id);
SELECT count(*) AS left_over FROM ask.verified_queries;
-- Not in a read-only transaction.
SELECT ask.add_verified('Which rooms are there?', 'SELECT label FROM remove_verified.rooms') AS third_id \gset
BEGIN READ ONLY;
SELECT code FROM error_of(format('SELECT ask.remove_verified(%s)', :third_id));
ROLLBACK;
SELECT ask.remove_verified(:third_id);
DROP SCHEMA remove_verified CASCADE;
DROP ROLE remove_verified_a, remove_verified_b, remove_verified_c;
SELECT setval('ask.verified_queries_id_seq', :vq_last, :'vq_called') IS NOT NULL AS sequence_restored;
