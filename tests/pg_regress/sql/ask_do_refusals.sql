-- ask.do() refuses what it may not do: writes while ask.allow_writes is off, DDL anywhere in
-- the plan, more steps than ask.max_steps, volatile functions; a step the LLM finds impossible
-- ends the chain. In every case nothing of the chain is kept.
CREATE SCHEMA depot;
CREATE TABLE depot.items (id int PRIMARY KEY, name text NOT NULL, qty int NOT NULL CHECK (qty >= 0));
INSERT INTO depot.items VALUES (1, 'bolt', 100), (2, 'nut', 80);
CREATE VIEW depot.state AS SELECT string_agg(name || '=' || qty, ', ' ORDER BY id) AS items FROM depot.items;
-- Off by default: refused before any LLM call.
SHOW ask.allow_writes;
SELECT ask.do('Depot: count 5 more bolts');
SET ask.allow_writes = on;
-- An empty instruction.
SELECT ask.do('  ');
-- DDL in the plan: refused before the first step runs (step 1 would have zeroed the bolts).
SELECT ask.do('Depot: start over with an empty items table');
SELECT ask.do('Depot: drop the quantity check');
SELECT * FROM depot.state;
-- A plan of three steps where one is allowed.
SET ask.max_steps = 1;
SELECT ask.do('Depot: count 5 more bolts and 5 more nuts, then list them');
RESET ask.max_steps;
SELECT * FROM depot.state;
-- A volatile function in a step.
SELECT ask.do('Depot: set a random quantity of nuts');
SELECT * FROM depot.state;
-- The LLM finds, from step 1's empty result, that step 2 cannot be done.
SELECT ask.do('Depot: take 3 washers out of stock');
SELECT * FROM depot.state;
-- A step that fails at run time rolls back the steps before it.
SELECT ask.do('Depot: ship 50 nuts and 200 bolts');
SELECT * FROM depot.state;
-- The same chain that succeeds is kept.
SELECT (ask.do('Depot: ship 10 nuts and 20 bolts'))->>'summary' AS summary;
SELECT * FROM depot.state;
RESET ask.allow_writes;
DROP SCHEMA depot CASCADE;
