-- ask.select_schemas(): the schemas that best match a question, without an LLM call; its
-- arguments and what another role sees.
CREATE SCHEMA select_schemas_zoo;
COMMENT ON SCHEMA select_schemas_zoo IS 'Animals, keepers and feeding times';
CREATE TABLE select_schemas_zoo.animals (id int PRIMARY KEY, species text, keeper_id int);
CREATE SCHEMA select_schemas_bank;
COMMENT ON SCHEMA select_schemas_bank IS 'Accounts and transfers';
CREATE TABLE select_schemas_bank.accounts (id int PRIMARY KEY, owner text, balance numeric);
-- Without a memory: words only, and a NOTICE says so.
SELECT schema FROM ask.select_schemas('which species does each keeper feed?', 1);
SELECT count(*) AS schemas FROM ask.select_schemas('accounts', 0);
SELECT count(*) > 0 AS some FROM ask.select_schemas('accounts', NULL);
SELECT * FROM error_of($$SELECT * FROM ask.select_schemas('accounts', -1)$$);
SELECT count(*) AS schemas FROM ask.select_schemas(NULL);
BEGIN;
SELECT ask.index_schema(ARRAY['select_schemas_zoo', 'select_schemas_bank']);
SELECT schema FROM ask.select_schemas('balance of every account', 1);
SELECT schema FROM ask.select_schemas('animals and their keepers', 1);
-- A role that may read only the bank's tables is offered only the bank.
CREATE ROLE select_schemas_teller;
GRANT USAGE ON SCHEMA select_schemas_bank, select_schemas_zoo TO select_schemas_teller;
GRANT SELECT ON select_schemas_bank.accounts TO select_schemas_teller;
SET ROLE select_schemas_teller;
SELECT schema FROM ask.select_schemas('animals and their keepers, accounts', 5);
RESET ROLE;
ROLLBACK;
DROP SCHEMA select_schemas_zoo, select_schemas_bank CASCADE;
