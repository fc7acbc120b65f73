-- Data in a pg_ask of an earlier version, written through that version's own functions: value
-- and schema memory, the ledger, a shadow table's log and replays, an evaluation run, a
-- benchmark run. The application's tables live in schema app (left out of the schema dump).
-- psql variables: llm (the stand-in's base URL), w1_sql and w1_nl (an InConDB workload).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE SCHEMA app;
SET search_path = app, public;
SET ask.base_url = :'llm';
CREATE TABLE app.cities (id int PRIMARY KEY, name text NOT NULL, state_code char(2));
CREATE TABLE app.restaurants (
    id int PRIMARY KEY,
    name text NOT NULL,
    city_id int NOT NULL REFERENCES app.cities(id),
    cuisine text NOT NULL,
    rating numeric(2,1)
);
INSERT INTO app.cities VALUES (1, 'Los Angeles', 'CA'), (2, 'San Francisco', 'CA'), (3, 'New York', 'NY');
INSERT INTO app.restaurants VALUES
    (1, 'Roma', 1, 'Italian', 4.5), (2, 'Trattoria Nona', 1, 'Italian', 4.1),
    (3, 'Le Petit', 2, 'French', 4.7), (4, 'Sushi Ko', 3, 'Japanese', 4.4);
SELECT ask.index_values('app.cities');
SELECT ask.index_values('app.restaurants');
SELECT ask.index_schema(ARRAY['app']);
SELECT ask('which Italian restaurants are in LA?');
-- A shadow table with changes, and a replay.
CREATE TABLE app.orchard (id int PRIMARY KEY, name text NOT NULL, price numeric(6,2));
INSERT INTO app.orchard VALUES (1, 'cherry', 1.30), (2, 'apple', 0.50);
SELECT ask.shadow_enable('app.orchard');
INSERT INTO app.orchard VALUES (3, 'fig', 3);
UPDATE app.orchard SET price = 1.40 WHERE id = 1;
DELETE FROM app.orchard WHERE id = 2;
SELECT score FROM ask.shadow_replay('SELECT name FROM app.orchard ORDER BY price');
-- An evaluation run.
SELECT ask.load_suite('upgrade_quiz', $$[
  {"question": "How many Italian restaurants are there?", "gold_sql": "SELECT count(*) FROM app.restaurants WHERE cuisine = 'Italian'", "schema": "app"},
  {"question": "Which restaurant is rated best?", "gold_sql": "SELECT name FROM app.restaurants ORDER BY rating DESC LIMIT 1", "schema": "app"}
]$$);
SELECT ask.evaluate_step('upgrade_quiz', 'before', 5);
-- Suites of one name loaded by two roles dropped since: after the upgrade, no role's.
DROP ROLE IF EXISTS upgrade_gone1;
DROP ROLE IF EXISTS upgrade_gone2;
CREATE ROLE upgrade_gone1;
CREATE ROLE upgrade_gone2;
SET ROLE upgrade_gone1;
SELECT ask.load_suite('upgrade_quiz', '[{"question": "How many cities are there?", "gold_sql": "SELECT count(*) FROM app.cities"}]');
SET ROLE upgrade_gone2;
SELECT ask.load_suite('upgrade_quiz', '[{"question": "How many cities are there?", "gold_sql": "SELECT count(*) FROM app.cities"}]');
RESET ROLE;
DROP ROLE upgrade_gone1, upgrade_gone2;
-- A benchmark run on an InConDB workload.
SELECT ask.load_workload('w1', :'w1_sql'::jsonb, :'w1_nl'::jsonb);
CALL ask.benchmark('w1', 5, 0.5, 0.5, 2, ARRAY['sql', 'nl'], ARRAY['few_shot']);
