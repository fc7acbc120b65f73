#!/usr/bin/env bash
# ask() over a distributed table against the same table local, on the Citus coordinator of
# scripts/citus.sh, with the stand-in LLM answering at once (tests/citus/standin.json).
#
#   bash tests/citus/bench.sh [N]      N rounds (default 100); uses the running clusters, or
#                                      starts them
#
# Schema citus_b: orders (ROWS rows, default 200,000) distributed by customer_id in 32 shards
# over the two workers, the same rows in the coordinator's local table orders_local, and a
# reference table customers. Two questions, each over both tables: a count, and a join with
# the reference table grouped by city. The variants alternate within each round, in one
# session, so that load on the machine falls on both alike. Measured:
#   own      pg_ask's own time: ask.explain()'s total less its LLM stages
#   execute  the execute stage of that trace (the guarded run of the generated SQL)
#   wall     client wall time of SELECT ask(...) (psql's \timing, over the Unix socket)
#   bare     client wall time of the generated SQL run by itself, without pg_ask
#   subx     the same SQL in a subtransaction that is rolled back (a PL/pgSQL block with an
#            exception handler), as pg_ask runs it, without pg_ask
# Then the first ask() of new backends (a connection each), and the distributed count alone in
# autocommit, in a transaction block, and in a subtransaction released or rolled back.
set -euo pipefail

cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/cache/pg_ask/target}
N=${1:-100}
ROWS=${ROWS:-200000}
eval "$(bash scripts/citus.sh --print)"
PSQL="$PGBIN/psql"
"$PSQL" -X -q -h "$PGHOST" -p "$PGPORT" -U postgres -d postgres -c 'SELECT 1' >/dev/null 2>&1 || bash scripts/citus.sh start >/dev/null

cargo build -q -p llm-standin --bin llm-standin
work=$(mktemp -d /tmp/pg_ask-citus-bench.XXXXXX)
# shellcheck source=scripts/standin.sh
source scripts/standin.sh
cleanup() {
  [ -n "$STANDIN_PID" ] && kill "$STANDIN_PID" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/script.json" <<'JSON'
{"rules": [
  {"contains": ["<schema>", "bench: how many distributed orders?"], "reply": {"text": "SELECT count(*) AS n FROM citus_b.orders"}},
  {"contains": ["<schema>", "bench: how many local orders?"], "reply": {"text": "SELECT count(*) AS n FROM citus_b.orders_local"}},
  {"contains": ["<schema>", "bench: distributed amount per city?"], "reply": {"text": "SELECT c.city, sum(o.amount) AS total FROM citus_b.orders o JOIN citus_b.customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY c.city"}},
  {"contains": ["<schema>", "bench: local amount per city?"], "reply": {"text": "SELECT c.city, sum(o.amount) AS total FROM citus_b.orders_local o JOIN citus_b.customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY c.city"}},
  {"contains": ["<result"], "reply": {"text": "ROWS"}}
], "default": {"text": "ROWS"}}
JSON
standin_start "$work/script.json" "$work"
LLM="$STANDIN_URL/v1"
sql() { "$PSQL" -X -q -At -v ON_ERROR_STOP=1 -h "$PGHOST" -p "$PGPORT" -U postgres -d postgres "$@"; }

sql >/dev/null <<SQL
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS citus_b CASCADE;
CREATE SCHEMA citus_b;
CREATE TABLE citus_b.customers (id int PRIMARY KEY, name text NOT NULL, city text NOT NULL);
CREATE TABLE citus_b.orders (id bigint NOT NULL, customer_id int NOT NULL, status text NOT NULL,
                             amount numeric(10,2) NOT NULL, PRIMARY KEY (customer_id, id));
CREATE TABLE citus_b.orders_local (LIKE citus_b.orders INCLUDING ALL);
SELECT create_reference_table('citus_b.customers');
SELECT create_distributed_table('citus_b.orders', 'customer_id', shard_count => 32);
INSERT INTO citus_b.customers SELECT g, 'customer ' || g, (ARRAY['Berlin','Lisbon','Paris','Oslo'])[g % 4 + 1] FROM generate_series(1, 1000) g;
INSERT INTO citus_b.orders SELECT g, g % 1000 + 1, (ARRAY['shipped','pending','cancelled'])[g % 3 + 1], (g % 997) + 0.5 FROM generate_series(1, $ROWS) g;
INSERT INTO citus_b.orders_local SELECT * FROM citus_b.orders;
ANALYZE citus_b.orders_local; ANALYZE citus_b.customers;
SQL

# One session: settings, then N rounds of the four questions alternating, each as ask.explain()
# (own and execute times into a temporary table), SELECT ask() and the bare SQL (\timing).
{
  echo "SET client_min_messages = warning; SET search_path = citus_b, public;"
  echo "SET ask.base_url = '$LLM'; SET ask.provider = 'openai'; SET ask.embedding_provider = 'off';"
  echo "CREATE TEMP TABLE m (variant text, own float8, execute float8, total float8);"
  echo "\\o /dev/null"
  for round in $(seq 0 "$N"); do
    for v in "distributed|how many distributed orders?|SELECT count(*) AS n FROM citus_b.orders" \
             "local|how many local orders?|SELECT count(*) AS n FROM citus_b.orders_local" \
             "distributed join|distributed amount per city?|SELECT c.city, sum(o.amount) AS total FROM citus_b.orders o JOIN citus_b.customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY c.city" \
             "local join|local amount per city?|SELECT c.city, sum(o.amount) AS total FROM citus_b.orders_local o JOIN citus_b.customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY c.city"; do
      IFS='|' read -r name q bare <<<"$v"
      # Round 0 warms the backend (catalog description, connections to the workers) and is not kept.
      keep=$([ "$round" = 0 ] && echo "AND false" || echo "")
      echo "INSERT INTO m SELECT '$name', (t->>'ms')::float8 - coalesce((SELECT sum((s->>'ms')::float8) FROM jsonb_array_elements(t->'stages') s WHERE s->>'stage' IN ('generate','repair','answer','plan','context')), 0), (SELECT sum((s->>'ms')::float8) FROM jsonb_array_elements(t->'stages') s WHERE s->>'stage' = 'execute'), (t->>'ms')::float8 FROM ask.explain('bench: $q') t WHERE true $keep;"
      echo "\\timing on"
      echo "\\echo WALL $name"
      echo "SELECT ask('bench: $q');"
      echo "\\echo BARE $name"
      echo "$bare;"
      echo "\\echo SUBX $name"
      echo "DO \$\$ BEGIN PERFORM * FROM ($bare) q; RAISE EXCEPTION 'rolled back'; EXCEPTION WHEN raise_exception THEN NULL; END \$\$;"
      echo "\\timing off"
    done
  done
  echo "\\o"
  echo "\\echo RESULT"
  echo "SELECT variant, count(*), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY own)::numeric, 2), round(percentile_cont(0.95) WITHIN GROUP (ORDER BY own)::numeric, 2),
               round(percentile_cont(0.5) WITHIN GROUP (ORDER BY execute)::numeric, 2), round(percentile_cont(0.95) WITHIN GROUP (ORDER BY execute)::numeric, 2),
               round(percentile_cont(0.5) WITHIN GROUP (ORDER BY own - execute)::numeric, 2)
          FROM m GROUP BY variant ORDER BY variant;"
} >"$work/bench.sql"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
sql -f "$work/bench.sql" >"$work/out" 2>&1
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "ask() on the Citus coordinator, stand-in LLM at 0 ms, $ROWS orders, $N rounds (first round not kept)"
echo "load average before / after the rounds: $load_before / $load_after ($(nproc) cores)"
echo "pg_ask's $("$PGBIN/pg_config" --version), Citus $(sql -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'"); pg_ask.so $(du -m "$("$PGBIN/pg_config" --pkglibdir)/pg_ask.so" | cut -f1) MB"
echo
echo "variant | n | own p50 | own p95 | execute p50 | execute p95 | own less execute p50 (ms, from ask.explain)"
sed -n '/^RESULT$/,$p' "$work/out" | sed 1d
echo
echo "variant | wall p50 | wall p95 of SELECT ask() | bare SQL p50 | p95 | in a rolled-back subtransaction p50 | p95 (ms, client)"
# psql prints "Time: x ms" after each timed statement; pair them with the labels echoed before.
awk -v skip=4 '
  /^(WALL|BARE|SUBX) / { kind = $1; $1 = ""; name = substr($0, 2); next }
  /^Time: / && kind != "" { seen[kind name]++; if (seen[kind name] > 1) { v[kind, name, ++n[kind, name]] = $2; names[name] = 1 }; kind = ""; next }
  END {
    for (name in names) {
      for (k = 1; k <= 3; k++) {
        kind = (k == 1) ? "WALL" : (k == 2) ? "BARE" : "SUBX"; c = n[kind, name]
        for (i = 1; i <= c; i++) a[i] = v[kind, name, i]
        # insertion sort, small n
        for (i = 2; i <= c; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
        p50[k] = a[int(0.5 * (c - 1)) + 1]; p95[k] = a[int(0.95 * (c - 1)) + 1]
      }
      printf "%s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f\n", name, p50[1], p95[1], p50[2], p95[2], p50[3], p95[3]
    }
  }' "$work/out" | sort

# New backends, as a client that connects per question gets them: the first ask() of each (its
# catalog description read, and for the distributed table its first connections to the workers).
echo
echo "variant | first ask() of a new backend, client wall time incl. connecting, p50 | p95 (ms, $((N / 5)) backends each)"
for v in "distributed|how many distributed orders?" "local|how many local orders?"; do
  IFS='|' read -r name q <<<"$v"
  times=()
  for _ in $(seq "$((N / 5))"); do
    t0=$(date +%s%N)
    PGOPTIONS="-c ask.base_url=$LLM -c ask.provider=openai -c ask.embedding_provider=off -c search_path=citus_b,public -c client_min_messages=warning" \
      sql -c "SELECT ask('bench: $q')" >/dev/null
    times+=("$(( ($(date +%s%N) - t0) / 1000 ))")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v name="$name" '{ a[NR] = $1 / 1000 } END { printf "%s | %.1f | %.1f\n", name, a[int(0.5 * (NR - 1)) + 1], a[int(0.95 * (NR - 1)) + 1] }'
done

# How a subtransaction around the distributed count ends, without pg_ask: Citus sends SAVEPOINT,
# RELEASE and ROLLBACK TO SAVEPOINT to every worker connection the query used.
{
  echo "\\o /dev/null"
  echo "SELECT count(*) FROM citus_b.orders;"
  for _ in $(seq "$N"); do
    for v in "autocommit|SELECT count(*) FROM citus_b.orders;" \
             "transaction block|BEGIN; SELECT count(*) FROM citus_b.orders; COMMIT;" \
             "subtransaction released|BEGIN; SAVEPOINT s; SELECT count(*) FROM citus_b.orders; RELEASE SAVEPOINT s; COMMIT;" \
             "subtransaction rolled back|BEGIN; SAVEPOINT s; SELECT count(*) FROM citus_b.orders; ROLLBACK TO SAVEPOINT s; COMMIT;"; do
      echo "\\echo K ${v%%|*}"; echo "\\timing on"; echo "${v#*|}"; echo "\\timing off"
    done
  done
} >"$work/subx.sql"
sql -f "$work/subx.sql" >"$work/subx.out" 2>&1
echo
echo "the distributed count alone, by how its (sub)transaction ends: p50 | p95 (ms, client, all its statements, $N each)"
awk '/^K /{ if (k != "") v[k, ++n[k]] = t; k = substr($0, 3); t = 0; next } /^Time: /{ t += $2 }
     END { if (k != "") v[k, ++n[k]] = t
           for (k in n) { c = n[k]; for (i = 1; i <= c; i++) a[i] = v[k, i]
             for (i = 2; i <= c; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
             printf "%s | %.2f | %.2f\n", k, a[int(0.5 * (c - 1)) + 1], a[int(0.95 * (c - 1)) + 1] } }' "$work/subx.out" | sort
