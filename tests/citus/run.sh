#!/usr/bin/env bash
# pg_ask on Citus: a coordinator and two workers on this machine (scripts/citus.sh), the
# stand-in LLM answering from tests/citus/standin.json. Not part of scripts/test.sh: run it
# where scripts/citus.sh built Citus, as root.
#
#   bash tests/citus/run.sh            fresh clusters (scripts/citus.sh start), then the checks
#   CITUS_REUSE=1 bash tests/citus/run.sh   use the running clusters (objects are made again)
#
# Roles, none of them superuser but the set-up's:
#   citus_owner   owns schema citus_t: a distributed table (orders), a reference table
#                 (customers), the same orders as a local table (orders_local), and a distributed
#                 table with row-level security (tickets: each role sees its own rows)
#   citus_reader  may read orders, customers and tickets
#   citus_nopriv  may read nothing
#   citus_other   owns schema citus_o (a distributed table of its own); may read tickets only
#
# A check that shows a pg_ask problem on Citus expects today's behaviour and says so loudly
# (KNOWN PROBLEM); it fails when the behaviour changes, so that the expectation is revisited.
set -euo pipefail

cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/cache/pg_ask/target}  # for the stand-in
eval "$(bash scripts/citus.sh --print)"
PSQL="$PGBIN/psql"
DB=postgres

if [ "${CITUS_REUSE:-0}" != 1 ] || ! "$PSQL" -X -q -h "$PGHOST" -p "$PGPORT" -U postgres -d "$DB" -c 'SELECT 1' >/dev/null 2>&1; then
  bash scripts/citus.sh start >/dev/null
fi

cargo build -q -p llm-standin --bin llm-standin
work=$(mktemp -d /tmp/pg_ask-citus-test.XXXXXX)
# shellcheck source=scripts/standin.sh
source scripts/standin.sh
cleanup() {
  [ -n "$STANDIN_PID" ] && kill "$STANDIN_PID" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
standin_start tests/citus/standin.json "$work"
LLM=$STANDIN_URL

# -- helpers -----------------------------------------------------------------------------------
passed=0 failed=0 known=0
failures=()
# as ROLE [PORT] < script: runs the script as ROLE (on the coordinator, or the node at PORT),
# stops at the first error, prints rows unaligned and errors with their SQLSTATE.
as() {
  local role=$1 port=${2:-$PGPORT}
  "$PSQL" -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -h "$PGHOST" -p "$port" -U "$role" -d "$DB"
}
pass() { passed=$((passed + 1)); printf 'ok    %s\n' "$1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); printf 'FAIL  %s\n      %s\n' "$1" "$2"; }
# ROLE may be "role port" (a worker's port).
# check NAME ROLE EXPECTED SQL: the statement's output (all rows, one per line) is EXPECTED.
check() {
  local name=$1 role=$2 expected=$3 sql=$4 out
  if out=$(as $role <<<"$sql" 2>"$work/err"); then
    if [ "$out" = "$expected" ]; then pass "$name"; else fail "$name" "expected [$expected], got [$out]"; fi
  else
    fail "$name" "error: $(grep -m1 ERROR "$work/err" || head -c 400 "$work/err")"
  fi
}
# refused NAME ROLE SQLSTATE MESSAGE_PART SQL: the statement fails with SQLSTATE, and its error
# line contains MESSAGE_PART.
refused() {
  local name=$1 role=$2 state=$3 part=$4 sql=$5 line
  if as $role <<<"$sql" >/dev/null 2>"$work/err"; then
    fail "$name" "it succeeded; expected SQLSTATE $state"
    return
  fi
  line=$(grep -m1 '^ERROR:' "$work/err" || true)
  if [[ "$line" == "ERROR:  $state: "* && "$line" == *"$part"* ]]; then pass "$name ($state)"; else fail "$name" "expected $state with '$part', got: $line"; fi
}
# known NAME WHAT: today's behaviour on Citus that pg_ask should change; the check before it
# asserted that behaviour.
known() {
  known=$((known + 1))
  printf '\n!!!!! KNOWN PROBLEM (pg_ask on Citus): %s\n!!!!! %s\n\n' "$1" "$2"
}

# -- set-up ----------------------------------------------------------------------------------------
as postgres >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_ask CASCADE;
DROP SCHEMA IF EXISTS citus_t, citus_o CASCADE;
DROP TABLE IF EXISTS public.bench_orders;
DO \$\$ DECLARE r text; BEGIN
  FOREACH r IN ARRAY ARRAY['citus_owner','citus_reader','citus_nopriv','citus_other'] LOOP
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
      EXECUTE format('DROP OWNED BY %I CASCADE', r);
      EXECUTE format('DROP ROLE %I', r);
    END IF;
  END LOOP; END \$\$;
DELETE FROM ask.schema_memory_tables; DELETE FROM ask.schema_memory_schemas;
CREATE ROLE citus_owner LOGIN; CREATE ROLE citus_reader LOGIN;
CREATE ROLE citus_nopriv LOGIN; CREATE ROLE citus_other LOGIN;
CREATE SCHEMA citus_t AUTHORIZATION citus_owner;
CREATE SCHEMA citus_o AUTHORIZATION citus_other;
GRANT USAGE ON SCHEMA citus_t TO citus_reader, citus_nopriv, citus_other;
GRANT CREATE ON DATABASE $DB TO citus_owner;
ALTER DATABASE $DB SET ask.base_url = '$LLM/v1';
ALTER DATABASE $DB SET ask.provider = 'openai';
ALTER DATABASE $DB SET ask.embedding_provider = 'openai';
SQL

as citus_owner >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE citus_t.customers (id int PRIMARY KEY, name text NOT NULL, city text NOT NULL);
CREATE TABLE citus_t.orders (id bigint NOT NULL, customer_id int NOT NULL, status text NOT NULL,
                             amount numeric(10,2) NOT NULL, PRIMARY KEY (customer_id, id));
COMMENT ON TABLE citus_t.orders IS 'orders placed by customers, with their status and amount';
CREATE TABLE citus_t.orders_local (LIKE citus_t.orders INCLUDING ALL);
CREATE TABLE citus_t.tickets (id int NOT NULL, owner_name text NOT NULL, body text NOT NULL, PRIMARY KEY (id));
SELECT create_reference_table('citus_t.customers');
SELECT create_distributed_table('citus_t.orders', 'customer_id');
SELECT create_distributed_table('citus_t.tickets', 'id');
INSERT INTO citus_t.customers SELECT g, 'customer ' || g, (ARRAY['Berlin','Lisbon','Paris'])[g % 3 + 1] FROM generate_series(1, 60) g;
INSERT INTO citus_t.orders SELECT g, g % 60 + 1, (ARRAY['shipped','pending','cancelled','returned'])[g % 4 + 1], (g % 97) + 0.25 FROM generate_series(1, 3000) g;
INSERT INTO citus_t.orders_local SELECT * FROM citus_t.orders;
INSERT INTO citus_t.tickets SELECT g, (ARRAY['citus_owner','citus_reader','citus_other'])[g % 3 + 1], 'ticket ' || g FROM generate_series(1, 30) g;
ALTER TABLE citus_t.tickets ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_tickets ON citus_t.tickets FOR SELECT USING (owner_name = current_user);
GRANT SELECT ON citus_t.orders, citus_t.customers, citus_t.tickets TO citus_reader;
GRANT SELECT ON citus_t.tickets TO citus_other;
SQL

as citus_other >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE citus_o.notes (id int PRIMARY KEY, body text NOT NULL);
SELECT create_distributed_table('citus_o.notes', 'id');
INSERT INTO citus_o.notes VALUES (1, 'the other role''s note');
SQL

echo "== pg_ask on Citus: coordinator $PGHOST:$PGPORT, workers $CITUS_WORKER_PORTS, stand-in $LLM"

# -- 1. ask() over distributed and reference tables ------------------------------------------------
check "the set-up: orders is distributed (hash, 32 shards), customers a reference table" postgres \
  $'citus_t.orders|h|32\ncitus_t.customers|n|1' \
  "SELECT logicalrelid::regclass::text COLLATE \"C\" AS t, partmethod, (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid)
     FROM pg_dist_partition p WHERE logicalrelid IN ('citus_t.orders'::regclass, 'citus_t.customers'::regclass) ORDER BY 1 DESC"
check "ask() counts a distributed table (the count Citus gathers from both workers)" citus_reader \
  "n: 3000" "SELECT ask('how many orders are there in total?')"
# The coordinator holds no shard: the 3000 rows can only have come from the workers.
check "the coordinator holds no placement of orders; both workers do" postgres "2|0" \
  "SELECT count(DISTINCT groupid), count(*) FILTER (WHERE groupid = 0) FROM pg_dist_placement pl
     JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 'citus_t.orders'::regclass"
final=$(as citus_reader <<<"SELECT ask.explain('how many orders are there in total?')->>'final_sql'" 2>&1 || true)
plan=$(as citus_reader <<<"EXPLAIN (COSTS OFF) $final" 2>&1 || true)
if [[ "$plan" == *"Custom Scan (Citus Adaptive)"* ]]; then pass "the generated SQL is planned by Citus' adaptive executor ($final)"
else fail "the generated SQL is planned by Citus' adaptive executor" "final SQL [$final], plan [$plan]"; fi
check "ask.rows() of a join of a distributed and a reference table equals the query's own result" citus_reader t \
  "SELECT (SELECT jsonb_agg(r) FROM ask.rows('what is the order amount per city?') r)
        = (SELECT jsonb_agg(to_jsonb(x)) FROM (SELECT c.city, sum(o.amount) AS total FROM citus_t.orders o
             JOIN citus_t.customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY c.city) x)"
check "the same over the local copy gives the same rows" citus_owner t \
  "SELECT (SELECT jsonb_agg(r) FROM ask.rows('what is the order amount per city?') r)
        = (SELECT jsonb_agg(r) FROM ask.rows('what is the local order amount per city?') r)"
check "row-level security on a distributed table holds on the workers: citus_reader sees its 10 tickets" citus_reader \
  "n: 10" "SELECT ask('how many tickets can I see?')"
check "... and citus_other its own 10, not citus_reader's" citus_other \
  "n: 10" "SELECT ask('how many tickets can I see?')"
check "... and the owner, whom the policy does not bind, all 30" citus_owner \
  "n: 30" "SELECT ask('how many tickets can I see?')"
# The first query fails on the workers (the filter is pushed down to the shards); pg_ask's
# subtransaction is rolled back on every node and the repair runs in the same transaction.
check "a query that fails on the workers is repaired, inside a transaction that goes on" citus_reader \
  $'n: 3000\n2\n3000' \
  "BEGIN;
   SELECT ask('how many orders cost more than nothing?');
   SELECT (ask.explain('how many orders cost more than nothing?')->>'attempts');
   SELECT count(*) FROM citus_t.orders;
   COMMIT;"
# ask.statement_timeout reaches the workers: the pushed-down join (375 million rows, tens of
# seconds) is cancelled there, and nothing of it runs on afterwards.
refused "ask.statement_timeout cancels a distributed query" citus_reader 57014 "ran longer than ask.statement_timeout" \
  "SET ask.statement_timeout = '300ms'; SET ask.max_attempts = 1; SELECT ask('how many order quadruples share a customer?')"
check "... on the workers too: no query of citus_reader is left running there" postgres "0" \
  "SELECT sum(result::int) FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_stat_activity WHERE usename = 'citus_reader' AND state = 'active'\$\$)"
refused "a role without privileges is told there is nothing it may read" citus_nopriv 42501 "no tables the current role may read" \
  "SELECT ask('how many orders are there in total?')"
refused "a second role cannot read the first one's distributed table through ask()" citus_other 42501 "permission denied for table orders" \
  "SELECT ask('how many orders are there in total?')"
refused "... nor the first one the second one's" citus_owner 42501 "permission denied for schema citus_o" \
  "SELECT ask('what do the other notes say?')"
# Citus puts views of its own in public (citus_tables, citus_schemas); the prompt describes the
# caller's tables, not them.
check "the SQL prompt describes the distributed and reference tables, not Citus' views" citus_reader \
  "t|f|3" "SET ask.explain_prompts = on;
   SELECT p LIKE '%TABLE citus_t.orders %' AND p LIKE '%TABLE citus_t.customers%', p LIKE '%citus_tables%', n
     FROM (SELECT t->'stages'->1->'input'->'prompt'->>'messages' AS p, (t->'stages'->0->'output'->>'tables')::int AS n
             FROM ask.explain('how many orders are there in total?') t) x"

# -- 2. the guard refuses Citus' own functions -----------------------------------------------------
# citus_owner owns orders: only the guard stands between the stand-in's SQL and the data.
for q in "tidy up on the workers|run_command_on_workers" "tidy up on every node|run_command_on_all_nodes" \
         "tidy up the shards|run_command_on_shards" "tidy up with a CTE|run_command_on_workers" \
         "retire the last worker|citus_remove_node" "spread the local orders out|create_distributed_table" \
         "how many bytes do the orders take?|citus_table_size"; do
  refused "guard: ${q#*|} written by the LLM is refused ('${q%|*}')" citus_owner 2F003 "${q#*|}" "SELECT ask('${q%|*}')"
done
refused "guard: the citus_shards view (it calls Citus functions) is refused" citus_owner 2F003 "not a built-in function" \
  "SELECT ask('where do the order shards live?')"
check "after the refusals: every order is still there, on both workers" postgres \
  $'3000\n2|2' "SELECT count(*) FROM citus_t.orders;
   SELECT count(*), count(*) FILTER (WHERE success) FROM run_command_on_workers('SELECT 1')"
check "... orders_local is still a local table" postgres "0" \
  "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'citus_t.orders_local'::regclass"

# -- 3. the value memory over a distributed column ------------------------------------------------
check "ask.index_values() reads the distinct values of a distributed column (from both workers)" citus_owner \
  "4" "SELECT ask.index_values('citus_t.orders', ARRAY['status'])"
check "... and of a reference table's column" citus_owner "3|Lisbon" \
  "SELECT ask.index_values('citus_t.customers', ARRAY['city']),
          (SELECT value FROM ask.similar_values('citus_t.customers', 'city', 'lisbonn', 5) ORDER BY score DESC LIMIT 1)"
check "the memory holds the four statuses" citus_reader "cancelled,pending,returned,shipped" \
  "SELECT string_agg(DISTINCT value, ',' ORDER BY value) FROM ask.similar_values('citus_t.orders', 'status', 'shipped', 10)"
check "ask.similar_values() finds 'shipped' for 'shiped'" citus_reader "shipped" \
  "SELECT value FROM ask.similar_values('citus_t.orders', 'status', 'shiped', 10) ORDER BY score DESC LIMIT 1"
check "ask() corrects the literal through the memory and counts the shipped orders" citus_reader \
  $'n: 750\nSELECT count(*) AS n FROM citus_t.orders WHERE status = \'shipped\'' \
  "SELECT ask('how many orders are shiped?'); SELECT ask.explain('how many orders are shiped?')->>'final_sql'"
refused "a role that may not read orders gets nothing from its value memory" citus_other 42501 "permission denied for column status" \
  "SELECT * FROM ask.similar_values('citus_t.orders', 'status', 'shiped', 10)"
refused "... nor does a role without privileges" citus_nopriv 42501 "permission denied for column status" \
  "SELECT * FROM ask.similar_values('citus_t.orders', 'status', 'shiped', 10)"
check "ask.refresh_values() picks up a value written on a worker's shard" citus_owner $'1\nlost' \
  "INSERT INTO citus_t.orders VALUES (9001, 7, 'lost', 1);
   SELECT ask.refresh_values('citus_t.orders');
   SELECT value FROM ask.similar_values('citus_t.orders', 'status', 'lost', 10) WHERE value = 'lost' AND method = 'embedding'"
check "... and forgets it when it is gone" citus_owner "1" \
  "DELETE FROM citus_t.orders WHERE id = 9001; SELECT ask.refresh_values('citus_t.orders')"
# Citus refuses triggers on distributed tables, and keep_values_current() installs a statement
# trigger: pg_ask refuses first, and says what to do instead; turning it off is a no-op.
refused "ask.keep_values_current() on a distributed table is refused by pg_ask" citus_owner 0A000 "is a Citus distributed or reference table" \
  "SELECT ask.keep_values_current('citus_t.orders')"
refused "... on a reference table too" citus_owner 0A000 "is a Citus distributed or reference table" \
  "SELECT ask.keep_values_current('citus_t.customers')"
check "... and turning it off there does nothing, without an error" citus_owner "" \
  "SELECT ask.keep_values_current('citus_t.orders', false)"

# -- 4. the schema memory of a Citus catalog --------------------------------------------------------
check "ask.index_schema() describes the four tables of citus_t (no shard, no Citus view)" citus_owner "4" \
  "SELECT ask.index_schema(ARRAY['citus_t'])"
check "ask.select_tables() ranks the distributed table first, and lists only what citus_reader may read" citus_reader \
  "citus_t.orders|3" \
  "SELECT (array_agg(rel::text ORDER BY score DESC))[1], count(*) FROM ask.select_tables('which orders were shipped and for what amount?', 10)"
# The coordinator holds a shard of the reference table (Citus places one on every node in its
# metadata); Citus hides shards from catalog queries unless citus.show_shards_for_app_name_prefixes
# says otherwise.
check "the coordinator holds a shard of customers, hidden from the catalog by default" postgres $'1\n0' \
  "SET citus.show_shards_for_app_name_prefixes = '*';
   SELECT count(*) FROM pg_class WHERE relname ~ '^customers_[0-9]{6,}\$' AND relnamespace = 'citus_t'::regnamespace;
   RESET citus.show_shards_for_app_name_prefixes;
   SELECT count(*) FROM pg_class WHERE relname ~ '^customers_[0-9]{6,}\$' AND relnamespace = 'citus_t'::regnamespace"
check "the memory of the whole database (as superuser) holds no shard and no Citus catalog table" postgres $'t\n0|0' \
  "SELECT ask.index_schema(NULL) >= 4;
   SELECT count(*) FILTER (WHERE name ~ '_[0-9]{6,}\$'), count(*) FILTER (WHERE name ~ '^(pg_catalog|citus|citus_internal|columnar|columnar_internal)\\.')
     FROM ask.schema_memory_tables"
# ask() selects from the memory's stored lexical index: the candidates it described are the
# distributed and reference tables, never a shard, and only what the role may read.
check "ask() selects from the stored index over the distributed tables, no shard, only what citus_reader may read" citus_reader \
  "true|t|0|f" \
  "SELECT s->'output'->>'index', (s->'output'->'tables') @> '[{\"table\": \"citus_t.orders\"}]',
          (SELECT count(*) FROM jsonb_array_elements(s->'output'->'tables') t WHERE t->>'table' ~ '_[0-9]{6,}\$'),
          (s->'output'->'tables') @> '[{\"table\": \"citus_o.notes\"}]'
     FROM ask.explain('which orders were shipped and for what amount?') e, jsonb_array_elements(e->'stages') s
    WHERE s->>'stage' = 'select'"
check "DDL on a distributed table by its owner (not superuser) works with the stored index's event trigger" citus_owner "" \
  "ALTER TABLE citus_t.orders ADD COLUMN shipped_note text"
check "... and is noted for the stored index: the table, not its shards" postgres "1|0" \
  "SELECT count(*) FILTER (WHERE relid = 'citus_t.orders'::regclass), count(*) FILTER (WHERE relid::regclass::text ~ '_[0-9]{6,}\$')
     FROM ask.schema_memory_dirty"
check "ask.select_tables() on the coordinator lists no shard" postgres "0|t" \
  "SELECT count(*) FILTER (WHERE rel::text ~ '_[0-9]{6,}\$'), bool_or(rel = 'citus_t.customers'::regclass)
     FROM ask.select_tables('customers and their city', 50)"
# On a worker, where the shards of orders live, with the metadata Citus syncs to it.
W1=${CITUS_WORKER_PORTS%% *}
WSET="SET ask.base_url = '$LLM/v1'; SET ask.provider = 'openai'; SET ask.embedding_provider = 'openai';"
check "on a worker (16 shards of orders there): the memory holds the 3 distributed and reference tables, no shard" \
  "postgres $W1" "16|3|0|citus_t.orders" \
  "$WSET
   SET citus.show_shards_for_app_name_prefixes = '*';
   CREATE TEMP TABLE n AS SELECT count(*) AS shards FROM pg_class WHERE relname ~ '^orders_[0-9]{6,}\$' AND relnamespace = 'citus_t'::regnamespace;
   RESET citus.show_shards_for_app_name_prefixes;
   SELECT (SELECT shards FROM n), ask.index_schema(ARRAY['citus_t']),
          (SELECT count(*) FROM ask.select_tables('orders status amount', 50) WHERE rel::text ~ '_[0-9]{6,}\$'),
          (SELECT rel::text FROM ask.select_tables('orders status amount', 1))"
check "ask() on a worker over the distributed table (Citus runs it from there too)" "citus_reader $W1" "n: 3000" \
  "$WSET SELECT ask('how many orders are there in total?')"
# A session that shows shards (a setting any role may change) still describes no shard: the
# description leaves out every relation Citus knows as a shard, whatever the setting.
check "on a worker with citus.show_shards_for_app_name_prefixes = '*': still no shard described or ranked" \
  "postgres $W1" "3|0" \
  "$WSET
   SET citus.show_shards_for_app_name_prefixes = '*';
   SELECT ask.index_schema(ARRAY['citus_t']),
          (SELECT count(*) FROM ask.select_tables('orders status amount', 50) WHERE rel::text ~ '_[0-9]{6,}\$')"

# -- 5. shadow capture on distributed and reference tables ------------------------------------------
refused "ask.shadow_enable() on a distributed table is refused by pg_ask" citus_owner 0A000 "is a Citus distributed or reference table" \
  "SELECT ask.shadow_enable('citus_t.orders')"
refused "ask.shadow_enable() on a reference table is refused by pg_ask" citus_owner 0A000 "is a Citus distributed or reference table" \
  "SELECT ask.shadow_enable('citus_t.customers')"
check "... nothing is left shadowed, and both tables take writes" citus_owner $'0\n0\n0' \
  "SELECT count(*) FROM ask.shadow_status WHERE rel::text LIKE 'citus_t.%';
   INSERT INTO citus_t.orders VALUES (9002, 8, 'pending', 2); DELETE FROM citus_t.orders WHERE id = 9002;
   UPDATE citus_t.customers SET city = city WHERE id = 1;
   SELECT count(*) FROM citus_t.orders WHERE id = 9002;
   SELECT count(*) FROM ask.shadow_commands WHERE rel::text LIKE 'citus_t.%'"
check "shadow capture works on a local table of the coordinator" citus_owner $'3000\n1|INSERT' \
  "SELECT ask.shadow_enable('citus_t.orders_local');
   INSERT INTO citus_t.orders_local VALUES (9003, 9, 'pending', 3);
   SELECT count(*), min(operation) FROM ask.shadow_commands WHERE rel = 'citus_t.orders_local'::regclass AND command LIKE '%9003%'"
# With citus.enable_unsafe_triggers (superuser), Citus would copy the capture trigger to every
# shard, where no shadow knows the shard and every write would fail: pg_ask refuses still.
refused "with citus.enable_unsafe_triggers = on, shadow_enable() on a distributed table is refused still" postgres 0A000 \
  "is a Citus distributed or reference table" \
  "SET client_min_messages = warning; SET citus.enable_unsafe_triggers = on; SELECT ask.shadow_enable('citus_t.orders')"
check "... and the table takes writes" postgres "0" \
  "INSERT INTO citus_t.orders VALUES (9004, 10, 'pending', 4); DELETE FROM citus_t.orders WHERE id = 9004;
   SELECT count(*) FROM citus_t.orders WHERE id = 9004"

# -- 6. CALL ask.benchmark on the coordinator --------------------------------------------------------
# InConDB's workload 1, read from the datasets beside the repository (../shared/datasets).
W1SQL=$(cat ../shared/datasets/incondb/1_sql.json 2>/dev/null || true)
dist_before=$(as postgres <<<"SELECT count(*) FROM pg_dist_partition")
if [ -z "$W1SQL" ]; then
  fail "CALL ask.benchmark" "no InConDB workload at $(pwd)/../shared/datasets/incondb/1_sql.json"
else
  as citus_owner >"$work/bench.out" 2>"$work/err" <<SQL || fail "CALL ask.benchmark" "$(grep -m1 ERROR "$work/err")"
SET client_min_messages = warning;
SELECT (ask.load_workload('citus_w1', \$json\$$W1SQL\$json\$::jsonb)) IS NOT NULL;
CALL ask.benchmark('citus_w1', 5, 0.5, 0.5, 6, ARRAY['sql'], ARRAY['zero_shot'], 0);
SQL
  check "CALL ask.benchmark completes on the coordinator: 6 samples scored, run done" citus_owner "done|6|6|0" \
    "SELECT r.status, r.samples, count(s.*), count(*) FILTER (WHERE s.error IS NOT NULL)
       FROM ask.benchmark_runs r JOIN ask.benchmark_samples s ON s.run_id = r.id
      WHERE r.id = (SELECT max(id) FROM ask.benchmark_runs WHERE workload = 'citus_w1') GROUP BY r.id, r.status, r.samples"
  check "... its tables were temporary and local: Citus distributed nothing new" postgres "$dist_before" \
    "SELECT count(*) FROM pg_dist_partition"
fi

# -- 6b. CALL ask.evaluate over distributed tables -------------------------------------------------
# Predictions and gold SQL both run through Citus; the misspelt status is corrected by the value
# memory of section 3.
as citus_reader >/dev/null 2>"$work/err" <<'SQL' || fail "CALL ask.evaluate" "$(grep -m1 ERROR "$work/err")"
SET client_min_messages = warning;
SELECT ask.load_suite('citus_quiz', '[
  {"question": "how many orders are there in total?", "gold_sql": "SELECT count(*) FROM citus_t.orders", "schema": "citus_t"},
  {"question": "what is the order amount per city?", "gold_sql": "SELECT c.city, sum(o.amount) FROM citus_t.customers c JOIN citus_t.orders o ON o.customer_id = c.id GROUP BY 1", "schema": "citus_t"},
  {"question": "how many orders are shiped?", "gold_sql": "SELECT count(*) FROM citus_t.orders WHERE status = ''shipped''", "schema": "citus_t"},
  {"question": "how many tickets can I see?", "gold_sql": "SELECT count(*) FROM citus_t.tickets", "schema": "citus_t"}
]');
CALL ask.evaluate('citus_quiz', 'standin');
SQL
check "CALL ask.evaluate over distributed and reference tables: 4 of 4 correct (EX 1)" citus_reader "4|4|1" \
  "SELECT questions, correct, round(ex::numeric, 3)::float8 FROM ask.eval_summary WHERE run_label = 'standin'"

# -- 7. what an asker holds on the workers while the LLM writes the answer -------------------------
# The generated SQL runs inside ask()'s statement, in a subtransaction; Citus runs it in
# transaction blocks on the workers, which stay open until the coordinator's transaction ends,
# after the answer stage's LLM call (3 s here). Each asker holds its connections meanwhile.
held() {  # held POOL_SIZE: idle-in-transaction connections of citus_reader on both workers, mid-answer
  local pool=$1 total=0 p
  as citus_reader >/dev/null 2>&1 <<<"SET citus.max_adaptive_executor_pool_size = $pool; SELECT ask('how many orders, slowly answered?')" &
  local asker=$!
  sleep 1.5
  for p in $CITUS_WORKER_PORTS; do
    total=$((total + $(as "postgres" "$p" <<<"SELECT count(*) FROM pg_stat_activity WHERE usename = 'citus_reader' AND state = 'idle in transaction'")))
  done
  wait "$asker" || true
  echo "$total"
}
n16=$(held 16); n1=$(held 1)
if [ "$n16" -ge 2 ] && [ "$n1" = 2 ]; then
  pass "during the answer stage one asker holds worker connections idle in transaction: $n16 (pool size 16), 2 (pool size 1: one per worker)"
else
  fail "worker connections held during the answer stage" "pool 16: $n16, pool 1: $n1 (expected >= 2 and 2)"
fi
known "worker connections held through the answer stage's LLM call" \
  "each ask() keeps its Citus transaction blocks open on the workers (here $n16 connections) until its statement ends, LLM answer included; citus.max_adaptive_executor_pool_size = 1 for askers bounds it to one per worker"

# -- summary ---------------------------------------------------------------------------------------
echo
echo "== Citus: $passed passed, $failed failed, $known known problems of pg_ask on Citus (printed above)"
for f in "${failures[@]}"; do echo "   failed: $f"; done
[ "$failed" = 0 ]
