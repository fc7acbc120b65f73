#!/usr/bin/env bash
# Benchmarks (slow, not part of CI). As root, on a machine prepared by scripts/setup.sh:
#   bash scripts/bench.sh [all|ask|shadow|values|schema|grammar|verified|soak|concurrent|values-llm|real|templates|knowledge-offered]
# Builds pg_ask in release mode, installs it into PostgreSQL 15, starts a throwaway cluster
# and runs the chosen benchmarks; the numbers go to stdout (see BENCHMARKS.md for recorded ones).
#   ask     ask() outside the LLM on a 200-table schema
#   capture capture overhead only, capture off and on alternating (quick; not part of `all`)
#   shadow  capture overhead (200k-row INSERT/UPDATE, many small transactions with pgbench)
#           and CALL ask.benchmark at concurrency 1 vs 8
#   values  value memory: lookups against 1,000,000 values, local embeddings, a 100k-value
#           build (not part of `all`: it needs ~20 minutes and a 2 GB shared_buffers restart)
#   schema  schema selection memory on 200 tables: prompt size, selection time (not in `all`)
#   grammar the SQL grammar's size and build time by table count (10 to 10,000 tables), and
#           what constrained sampling costs: generation tokens/s with and without the grammar
#           on llama-server with each tiny model (not in `all`)
#   verified answers from verified queries without the LLM (precision and recall on twin
#           questions, variants and near misses, swept over ask.verified_min_cosine, tuning and
#           reporting parts) and clarifying questions on the sample's traps (not in `all`;
#           built in debug, with the dependencies and the embedding model optimised, unless
#           PG_ASK_RELEASE=1)
#   templates [MODEL...]  verified templates with a real model (default: qwen-coder smollm2): the
#           sample's 48 questions stored as verified queries; their twins, variants and
#           paraphrases (bench/fixtures/template_paraphrases.json) and near misses asked through
#           ask.sql() with the store on and off: precision and recall of answers from the store,
#           EX on and off, seconds per question by how it was answered (not in `all`; debug
#           build unless PG_ASK_RELEASE=1)
#   conversations [MODEL...]  follow-up questions (bench/fixtures/follow_ups.json: conversations of
#           3 to 5 turns over the sample and defog's car_dealership, gold SQL per turn) asked with
#           conversation => id: EX per turn, follow-ups read as standalone by mistake (default:
#           stand-in, the stand-in as an oracle, then qwen-coder; debug build, not in `all`)
#   scale   200 and 10,000 generated tables in 50 schemas: ask.index_schema() time and memory,
#           selection p95, the described share of the full description, new backends (a
#           connection per question; a pool of 8), the first ask() after ALTER TABLE, COMMENT ON
#           and CREATE TABLE (embeddings off, then local; SCALE_TABLES, SCALE_EMBEDDINGS,
#           SCALE_FRESH_ONLY, SCALE_KEEP; not in `all`). To measure new backends again on a
#           kept catalog: start that cluster again by hand and run release/bench_scale with
#           SCALE_REUSE=1 PG_ASK_IT_HOST=<socket dir> PG_ASK_IT_PORT=<port>
#   soak [ask|do|benchmark]  one backend's memory over 10,000 ask() calls, 2,000 ask.do()
#           chains and a 10,000-sample CALL ask.benchmark (growth after warm-up ≤ 5 MB; exits
#           non-zero over it; SOAK_SCALE=0.1 for a tenth; about 15 minutes; not in `all`)
#   concurrent [ask|procedures]  32 pgbench sessions calling ask() at once against the
#           stand-in answering after 200 ms (≥ 90 % of the ideal throughput, no failure, no lock
#           wait), then CALL ask.evaluate and ask.benchmark from four sessions at once (not in
#           `all`; CONC_CLIENTS, CONC_SECONDS, CONC_EMBEDDINGS=off|local)
#   knowledge-offered  which of defog's instructions, registered once per database, each defog
#           question is offered (no model, no database): its own lines offered, and lines that
#           are not its own, by part (databases alternate between tuning and reporting; not in
#           `all`; VERBOSE=1 lists each question's)
#   faults [llm|postgres|index]  the LLM server killed (SIGKILL) and restarted during CALL
#           ask.benchmark and ask.evaluate; PostgreSQL stopped with -m immediate during a
#           benchmark batch; a backend terminated during ask.index_values() (exits non-zero
#           when a check fails; not in `all`)
#   values-llm [MODEL...]  value correction end to end on bench/fixtures/values_unseen.json's
#           databases (local embeddings), a real model choosing where the memory is unsure,
#           ask.max_listed_values 0 and 20, by part (tuning, reporting) (not in `all`; a few
#           minutes per model; default: smollm2 gemma3)
#   real [MODEL...]  real models on llama-server (scripts/llm.sh; default: smollm2 gemma3) answer
#           the sample's question suite and 4 defog questions per database through CALL
#           ask.evaluate: EX, SQL read from replies, tokens, time split, tokens/s; beside them the
#           bare model's EX and seconds on the same questions and server (the schema's CREATE
#           TABLE statements and the question in one message), and for the sample ask() itself
#           from new connections, answer included (not in `all`; tens of minutes per model). PG_ASK_REAL_CORPUS=DIR also keeps every reply; PG_ASK_REAL_EACH=1 prints each question's outcome; PG_ASK_REAL_BARE_SQL=FILE writes the bare model's SQL per question (JSON lines); PG_ASK_REAL_PG_ASK=0 runs the bare model alone (its side does not depend on pg_ask's code), PG_ASK_REAL_BARE=0 pg_ask alone.
#           Built in debug unless PG_ASK_RELEASE=1: the model's time dwarfs pg_ask's.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/cache/pg_ask/target}
WORK=${PG_ASK_BENCH_DIR:-/var/tmp/pg_ask-bench}
PORT=${PG_ASK_BENCH_PORT:-55440}
MODE=${1:-all}
if [ "$MODE" = knowledge-offered ]; then
  cargo build -q -p pg_ask_bench --bin bench_knowledge_offered
  exec "$CARGO_TARGET_DIR/debug/bench_knowledge_offered"
fi
# shellcheck source=scripts/cluster.sh
source scripts/cluster.sh
trap 'cluster_stop "$WORK/db"; if [ "$MODE" = real ] || [ "$MODE" = grammar ] || [ "$MODE" = values-llm ] || [ "$MODE" = templates ] || [ "$MODE" = conversations ]; then bash scripts/llm.sh stop >/dev/null 2>&1 || true; fi' EXIT
export PG_ASK_LLM_PORT=${PG_ASK_LLM_BENCH_PORT:-47813} PG_ASK_LLM_RUN=$WORK/llm

PROFILE=(--release); OUT=release
if { [ "$MODE" = real ] || [ "$MODE" = verified ] || [ "$MODE" = templates ] || [ "$MODE" = conversations ]; } && [ "${PG_ASK_RELEASE:-0}" != 1 ]; then PROFILE=(); OUT=debug; fi
cargo pgrx install "${PROFILE[@]}" -p pg_ask --pg-config /usr/lib/postgresql/15/bin/pg_config >/dev/null
cluster_start "$WORK/db" "$PORT"
cargo build -q "${PROFILE[@]}" -p pg_ask_bench --bins
export PG_ASK_IT_HOST=$WORK PG_ASK_IT_PORT=$PORT

if [ "$MODE" = all ] || [ "$MODE" = ask ]; then
  echo "== ask() outside the LLM"
  "$CARGO_TARGET_DIR/release/bench_ask"
fi

if [ "$MODE" = all ] || [ "$MODE" = shadow ]; then
  "$CARGO_TARGET_DIR/release/bench_shadow" all
  echo "== many small transactions (pgbench, 2 clients, 20 s each): capture off vs on"
  PSQL=(runuser -u postgres -- "$PGBIN/psql" -X -q -h "$WORK" -p "$PORT" -d postgres -v ON_ERROR_STOP=1)
  "${PSQL[@]}" -c "DROP TABLE IF EXISTS bench_tx; CREATE TABLE bench_tx (id int PRIMARY KEY, qty int NOT NULL, note text);
                   INSERT INTO bench_tx SELECT g, 0, 'row ' || g FROM generate_series(1, 100000) g;"
  "${PSQL[@]}" -c "VACUUM ANALYZE bench_tx"
  cat >"$WORK/tx.sql" <<'SQL'
\set id random(1, 100000)
\set nid random(100001, 100000000)
BEGIN;
UPDATE bench_tx SET qty = qty + 1 WHERE id = :id;
INSERT INTO bench_tx VALUES (:nid, 1, 'new') ON CONFLICT (id) DO NOTHING;
COMMIT;
SQL
  chown postgres: "$WORK/tx.sql"
  for capture in off on; do
    if [ "$capture" = on ]; then "${PSQL[@]}" -c "SELECT ask.shadow_enable('bench_tx', snapshot => false)" >/dev/null; fi
    tps=$(runuser -u postgres -- "$PGBIN/pgbench" -n -h "$WORK" -p "$PORT" -c 2 -j 2 -T 20 -f "$WORK/tx.sql" postgres 2>/dev/null \
          | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
    echo "capture $capture: $tps transactions/s"
  done
  "${PSQL[@]}" -c "SELECT ask.shadow_disable('bench_tx'); DROP TABLE bench_tx;" >/dev/null
fi

if [ "$MODE" = capture ]; then
  "$CARGO_TARGET_DIR/release/bench_shadow" overhead
fi

if [ "$MODE" = values ]; then
  # Value memory: lookups against 1,000,000 values, local embeddings, a 100k-value build.
  # The HNSW build of a million values wants its graph in memory; warm lookups want the
  # memory's heap (1.5 GB) and indexes (HNSW 1.1 GB, btrees) in shared buffers: at 2 GB,
  # evictions put p95 at 6 ms instead of 3.
  runuser -u postgres -- "$PGBIN/psql" -h "$WORK" -p "$PORT" -qAt -c "ALTER SYSTEM SET shared_buffers = '4GB'" \
    -c "ALTER SYSTEM SET maintenance_work_mem = '3GB'" -c "ALTER SYSTEM SET max_parallel_maintenance_workers = 1" postgres
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/db" -l "$WORK/db.log" -w restart >/dev/null
  "$CARGO_TARGET_DIR/release/bench_values"
fi

if [ "$MODE" = schema ]; then
  echo "== schema selection memory (200 tables)"
  "$CARGO_TARGET_DIR/release/bench_schema"
fi

if [ "$MODE" = grammar ]; then
  echo "== the SQL grammar by described tables (best of three builds)"
  "$CARGO_TARGET_DIR/release/bench_grammar"
  "$CARGO_TARGET_DIR/release/bench_grammar" --print <bench/fixtures/sample_tables.txt >"$WORK/sample.gbnf"
  for model in smollm2 gemma3; do
    echo "== constrained sampling: $model"
    python3 bench/sampling.py "$(bash scripts/llm.sh start "$model")" "$model" "$WORK/sample.gbnf" bench/fixtures/sample_tables.txt
  done
fi

if [ "$MODE" = scale ]; then
  echo "== a 10,000-table catalog"
  "$CARGO_TARGET_DIR/release/bench_scale"
fi

if [ "$MODE" = soak ]; then
  echo "== soak: one backend's memory"
  "$CARGO_TARGET_DIR/release/bench_soak" "${2:-all}"
fi

if [ "$MODE" = concurrent ]; then
  echo "== concurrent sessions"
  PGBIN=$PGBIN "$CARGO_TARGET_DIR/release/bench_concurrent" "${2:-all}"
fi

if [ "$MODE" = faults ]; then
  echo "== faults mid-run"
  cargo build -q --release -p llm-standin --bin llm-standin
  PGBIN=$PGBIN PG_ASK_BENCH_DATA=$WORK/db "$CARGO_TARGET_DIR/release/bench_faults" "${2:-all}"
fi

if [ "$MODE" = verified ]; then
  echo "== verified queries and clarifying questions"
  "$CARGO_TARGET_DIR/$OUT/bench_verified"
fi

if [ "$MODE" = templates ]; then
  shift || true
  models=("$@"); [ ${#models[@]} -gt 0 ] || models=(qwen-coder smollm2)
  for model in "${models[@]}"; do
    echo "== verified templates with a real model: $model"
    PG_ASK_LLM_URL=$(bash scripts/llm.sh start "$model") PG_ASK_LLM_MODEL=$model "$CARGO_TARGET_DIR/$OUT/bench_templates"
  done
fi

if [ "$MODE" = conversations ]; then
  shift || true
  models=("$@"); [ ${#models[@]} -gt 0 ] || models=(stand-in qwen-coder)
  for model in "${models[@]}"; do
    echo "== follow-up questions in conversations: $model"
    if [ "$model" = stand-in ]; then
      PG_ASK_LLM_MODEL=stand-in "$CARGO_TARGET_DIR/$OUT/bench_conversations"
    else
      PG_ASK_LLM_URL=$(bash scripts/llm.sh start "$model") PG_ASK_LLM_MODEL=$model "$CARGO_TARGET_DIR/$OUT/bench_conversations"
    fi
  done
fi

if [ "$MODE" = values-llm ]; then
  shift || true
  models=("$@"); [ ${#models[@]} -gt 0 ] || models=(smollm2 gemma3)
  for model in "${models[@]}"; do
    echo "== value correction with a real model: $model"
    PG_ASK_LLM_URL=$(bash scripts/llm.sh start "$model") PG_ASK_LLM_MODEL=$model "$CARGO_TARGET_DIR/release/bench_values_llm"
  done
fi

if [ "$MODE" = real ]; then
  shift || true
  models=("$@"); [ ${#models[@]} -gt 0 ] || models=(smollm2 gemma3)
  for model in "${models[@]}"; do
    echo "== real model: $model"
    PG_ASK_LLM_URL=$(bash scripts/llm.sh start "$model") PG_ASK_LLM_MODEL=$model "$CARGO_TARGET_DIR/$OUT/bench_real"
  done
fi
