#!/usr/bin/env bash
# Benchmarks (slow, not part of CI). As root, on a machine prepared by scripts/setup.sh:
#   bash scripts/bench.sh           # ask() outside the LLM
#   bash scripts/bench.sh values    # value memory: 1M-value lookups, local embeddings, 100k build
# Builds pg_ask in release mode, installs it into PostgreSQL 15, starts a throwaway cluster
# and runs each benchmark; the numbers go to stdout (see BENCHMARKS.md for recorded ones).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/cache/pg_ask/target}
WORK=${PG_ASK_BENCH_DIR:-/var/tmp/pg_ask-bench}
PORT=${PG_ASK_BENCH_PORT:-55440}
# shellcheck source=scripts/cluster.sh
source scripts/cluster.sh
trap 'cluster_stop "$WORK/db"' EXIT

cargo pgrx install --release -p pg_ask --pg-config /usr/lib/postgresql/15/bin/pg_config >/dev/null
cluster_start "$WORK/db" "$PORT"
case "${1:-}" in
  values)
    # Value memory: lookups against 1,000,000 values, local embeddings, a 100k-value build.
    # The HNSW build of a million values wants its graph in memory; warm lookups want the
    # index in shared buffers.
    runuser -u postgres -- "$PGBIN/psql" -h "$WORK" -p "$PORT" -qAt -c "ALTER SYSTEM SET shared_buffers = '2GB'" \
      -c "ALTER SYSTEM SET maintenance_work_mem = '3GB'" -c "ALTER SYSTEM SET max_parallel_maintenance_workers = 1" postgres
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/db" -l "$WORK/db.log" -w restart >/dev/null
    cargo build -q --release -p pg_ask_it --bin bench_values
    PG_ASK_IT_HOST=$WORK PG_ASK_IT_PORT=$PORT "$CARGO_TARGET_DIR/release/bench_values"
    exit 0
    ;;
esac
cargo build -q --release -p pg_ask_it --bin bench_ask
echo "== ask() outside the LLM"
PG_ASK_IT_HOST=$WORK PG_ASK_IT_PORT=$PORT "$CARGO_TARGET_DIR/release/bench_ask"
