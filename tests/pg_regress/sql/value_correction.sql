-- Value correction: string literals compared with indexed columns are checked against the
-- value memory and replaced when one stored value is clearly meant, kept when they look like a
-- legitimate value without rows, and put to the (stand-in) LLM otherwise. ask() does the same
-- between generating and running the SQL.
CREATE SCHEMA vc;
CREATE TYPE vc.status AS ENUM ('pending', 'shipped', 'delivered', 'returned');
CREATE TABLE vc.stores (id int PRIMARY KEY, city text NOT NULL, country text NOT NULL, category text NOT NULL);
CREATE TABLE vc.orders (id int PRIMARY KEY, store_id int REFERENCES vc.stores, status vc.status NOT NULL);
INSERT INTO vc.stores VALUES
    (1, 'Los Angeles', 'United States', 'Grocery'), (2, 'San Francisco', 'United States', 'Bakery'),
    (3, 'Chicago', 'United States', 'Butcher'), (4, 'Toronto', 'Canada', 'Grocery'),
    (5, 'Paris', 'France', 'Bakery'), (6, 'Lyon', 'France', 'Cheese shop');
INSERT INTO vc.orders VALUES (1, 1, 'shipped'), (2, 1, 'pending'), (3, 2, 'shipped'), (4, 5, 'delivered');
SELECT ask.index_values('vc.stores');
-- Without the LLM (use_llm => false), each rule on its own:
-- a case slip,
SELECT ask.correct_sql($$SELECT id FROM vc.stores WHERE city = 'san francisco'$$, use_llm => false);
-- an initialism,
SELECT ask.correct_sql($$SELECT id FROM vc.stores WHERE city = 'LA'$$, use_llm => false);
-- a typo,
SELECT ask.correct_sql($$SELECT id FROM vc.stores WHERE city = 'Chcago'$$, use_llm => false);
-- several literals, through aliases and IN lists,
SELECT ask.correct_sql($$SELECT s.id FROM vc.stores s WHERE s.country IN ('france', 'USA') AND s.category <> 'bakery'$$, use_llm => false);
-- a legitimate value without rows, kept,
SELECT ask.correct_sql($$SELECT id FROM vc.stores WHERE city = 'Gotham'$$, use_llm => false);
-- an enum label, checked against the enum's labels without any memory,
SELECT ask.correct_sql($$SELECT o.id FROM vc.orders o JOIN vc.stores s ON s.id = o.store_id WHERE o.status = 'Shipped' AND s.city = 'Paris'$$, use_llm => false);
-- and a literal of a column without memory, left alone.
SELECT ask.correct_sql($$SELECT name FROM public.cities WHERE name = 'LA'$$, use_llm => false);
-- An unclear literal goes to the LLM with the closest stored values; its SQL is taken only if
-- nothing but string values changed.
SELECT ask.correct_sql($$SELECT id FROM vc.stores WHERE category = 'dairy'$$);
SELECT ask.correct_sql($$SELECT id FROM vc.stores WHERE category = 'dairy'$$, use_llm => false);
SELECT ask.correct_sql($$SELECT count(*) FROM vc.stores WHERE category = 'patisserie'$$);
-- In ask(): the LLM wrote 'LA' and 'Shipped'; the SQL that runs has the stored values.
SELECT ask('how many orders of the LA store have shipped?');
SELECT lit->>'literal' AS literal, lit->>'column' AS column, lit->>'rule' AS rule,
       CASE jsonb_typeof(lit->'decision') WHEN 'object'
            THEN concat_ws(' ', lit->'decision'->>'action', quote_literal(lit->'decision'->>'value'))
            ELSE lit->>'decision' END AS decision
FROM ask.explain('how many orders of the LA store have shipped?') t,
     jsonb_path_query(t, '$.stages[*] ? (@.stage == "correct").output.literals[*]') lit;
SELECT stage, count(*) FROM ask.llm_calls WHERE stage = 'correct' GROUP BY 1;
-- A statement that does not parse.
SELECT ask.correct_sql('SELECT FROM WHERE');
DROP SCHEMA vc CASCADE;
SELECT ask.refresh_values();
