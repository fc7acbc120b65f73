-- ask.do(): an instruction carried out as a chain of SQL steps planned by the (stand-in) LLM,
-- later steps filled from earlier results, all in the caller's transaction.
CREATE SCHEMA shop;
CREATE TABLE shop.suppliers (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL UNIQUE);
CREATE TABLE shop.fruits (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL UNIQUE,
    stock_kg numeric NOT NULL DEFAULT 0 CHECK (stock_kg >= 0), sell_price numeric);
CREATE TABLE shop.purchases (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    supplier_id int NOT NULL REFERENCES shop.suppliers, fruit_id int NOT NULL REFERENCES shop.fruits,
    kg numeric NOT NULL CHECK (kg > 0), unit_price numeric NOT NULL, purchased_on date NOT NULL);
CREATE TABLE shop.customers (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL);
CREATE TABLE shop.sales (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id int NOT NULL REFERENCES shop.customers, sold_on date NOT NULL);
CREATE TABLE shop.sale_items (sale_id int REFERENCES shop.sales, fruit_id int REFERENCES shop.fruits,
    kg numeric NOT NULL, price numeric NOT NULL, PRIMARY KEY (sale_id, fruit_id));
INSERT INTO shop.suppliers (name) VALUES ('Orchard Co');
INSERT INTO shop.fruits (name, stock_kg, sell_price) VALUES ('cherry', 10, 1.3), ('apple', 50, 0.9), ('banana', 30, 0.5);
INSERT INTO shop.customers (name) VALUES ('John Doe'), ('Jane Roe');
INSERT INTO shop.sales (customer_id, sold_on) VALUES (1, '2023-01-05');
INSERT INTO shop.sale_items VALUES (1, 1, 2, 1.3), (1, 2, 3, 0.9);
CREATE VIEW shop.stock AS SELECT name, stock_kg FROM shop.fruits ORDER BY id;
SET ask.allow_writes = on;
-- A restock: the supplier and the fruit are looked up, the purchase is recorded with their
-- ids (filled from the one-row results without another LLM call), the stock goes up.
SELECT jsonb_pretty(r - '{ms,prompt_tokens,completion_tokens}'::text[]) AS result
FROM ask.do('Restock: 24 kg cherry from Orchard Co at 0.8 on 2023-01-06') r;
SELECT * FROM shop.stock;
SELECT supplier_id, fruit_id, kg, unit_price, purchased_on FROM shop.purchases;
-- A sale to a customer: the sale, its items, the stock taken.
SELECT s->>'step' AS step, s->>'kind' AS kind, s->>'filled' AS filled,
       coalesce(s->>'rows_affected', s->>'rows_returned') AS n, s->>'sql' AS sql
FROM ask.do('Sold to Jane Roe on 2023-01-07: 2 kg apple and 1 kg banana') r,
     jsonb_array_elements(r->'steps') s;
SELECT * FROM shop.stock;
SELECT sale_id, fruit_id, kg, price FROM shop.sale_items ORDER BY sale_id, fruit_id;
-- Undoing a sale: step 2 returns two rows, so step 3's placeholders go to the LLM with the
-- real rows, which rewrites it into one UPDATE.
SELECT s->>'step' AS step, s->>'kind' AS kind, s->>'filled' AS filled,
       coalesce(s->>'rows_affected', s->>'rows_returned') AS n, s->>'sql' AS sql
FROM ask.do('Undo the sale to John Doe of 2023-01-05') r,
     jsonb_array_elements(r->'steps') s;
SELECT * FROM shop.stock;
SELECT count(*) AS sales, (SELECT count(*) FROM shop.sale_items) AS sale_items FROM shop.sales;
-- A failing step: the stock may not go below zero. Nothing of the chain is kept: the sale of
-- step 1 and the items of step 2 are gone with it.
SELECT ask.do('Sold to John Doe on 2023-01-08: 100 kg cherry');
SELECT count(*) AS sales, (SELECT count(*) FROM shop.sale_items) AS sale_items FROM shop.sales;
SELECT * FROM shop.stock;
-- Every call is in the ledger: plans, the rewrite, summaries.
SELECT stage, count(*) FROM ask.llm_calls WHERE stage IN ('plan', 'rewrite', 'summary') GROUP BY 1 ORDER BY 1;
RESET ask.allow_writes;
DROP SCHEMA shop CASCADE;
