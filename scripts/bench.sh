#!/usr/bin/env bash
# Benchmarks (slow, not part of CI). As root, on a machine prepared by scripts/setup.sh:
#   bash scripts/bench.sh
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
schema)
    # bash scripts/bench.sh schema: the schema selection memory on 200 tables (BENCHMARKS.md).
    cargo build -q --release -p pg_ask_it --bin bench_schema
    echo "== schema selection memory"
    PG_ASK_IT_HOST=$WORK PG_ASK_IT_PORT=$PORT "$CARGO_TARGET_DIR/release/bench_schema"
    exit 0 ;;
esac
cargo build -q --release -p pg_ask_it --bin bench_ask
echo "== ask() outside the LLM"
PG_ASK_IT_HOST=$WORK PG_ASK_IT_PORT=$PORT "$CARGO_TARGET_DIR/release/bench_ask"
