#!/usr/bin/env bash
# Run every test of pg_ask, as root, on a machine prepared by scripts/setup.sh:
#   0. formatting (cargo fmt --check), and that crates/deps is what cargo hakari generates
#      (where cargo-hakari is installed),
#   1. plain `cargo test` of the core and the stand-in LLM server, then clippy with -D warnings,
#   2. the in-backend #[pg_test] tests (cargo pgrx test), on PostgreSQL 15 and 17,
#   3. on each of 15 and 17: the golden SQL tests (tests/pg_regress: sql/ input, expected/
#      output, run by pg_regress), then the upgrade test from every earlier version
#      (tests/upgrade/test.sh),
#   4. the client-side integration tests (tests/client/) against a PostgreSQL 15 with pg_ask,
#      with the stand-in LLM and with real models (llama-server with SmolLM2-135M and Gemma 3 270M,
#      and one question to the default model, Qwen2.5-Coder-1.5B; scripts/llm.sh), then the MCP
#      server pg_ask-mcp under the Python MCP SDK over stdio and HTTP (tests/mcp/run.sh).
# PG_ASK_TEST_MAJORS="17" runs steps 2 and 3 on 17 only (and PG_ASK_CLIENT_MAJOR=17 step 4 there).
# PostgreSQL always runs as the `postgres` user (initdb refuses root).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$HOME/.cargo/bin:$PATH"
PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PG17_CONFIG=$(bash scripts/pg17.sh --print)
read -r -a MAJORS <<<"${PG_ASK_TEST_MAJORS:-15 17}"
CLIENT_MAJOR=${PG_ASK_CLIENT_MAJOR:-15}
case " ${MAJORS[*]} " in
  *" $CLIENT_MAJOR "*) ;;
  *) echo "PG_ASK_CLIENT_MAJOR=$CLIENT_MAJOR is not among PG_ASK_TEST_MAJORS (${MAJORS[*]}): step 4 needs its cluster" >&2; exit 2 ;;
esac
pg_config_of() {
  case $1 in
    15) echo "$PG15_CONFIG" ;;
    17) echo "$PG17_CONFIG" ;;
    *) echo "PostgreSQL $1 is not set up here (15 and 17 are)" >&2; return 1 ;;
  esac
}
# Compiled dependencies are kept outside the checkout so that a fresh clone builds only pg_ask.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/cache/pg_ask/target}
WORK=${PG_ASK_TEST_DIR:-/var/tmp/pg_ask-test}
STANDIN_PORT=47811          # the golden tests point ask.base_url here
IT_PORT=${PG_ASK_IT_PORT:-55439}  # PostgreSQL 15's cluster; 17's is two ports up

step() { printf '\n==== %s\n' "$*"; }
mkdir -p "$CARGO_TARGET_DIR" "$WORK"
chown postgres: "$WORK"

# shellcheck source=scripts/cluster.sh
source scripts/cluster.sh
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "${LLM_STARTED:-}" ]; then
    bash scripts/llm.sh stop >/dev/null 2>&1 || true
    PG_ASK_LLM_RUN=$WORK/llm-gemma bash scripts/llm.sh stop >/dev/null 2>&1 || true
    PG_ASK_LLM_RUN=$WORK/llm-default bash scripts/llm.sh stop >/dev/null 2>&1 || true
  fi
  for m in 15 17; do cluster_stop "$WORK/it$m"; done
}
trap cleanup EXIT

step "0/4 formatting"
cargo fmt --all --check
if cargo hakari --version >/dev/null 2>&1; then
  cargo hakari generate --diff || { echo "crates/deps is out of date: run cargo hakari generate"; exit 1; }
fi

step "1/4 core, embedding and stand-in tests; lints"
# llama.cpp's grammar checker referees the SQL grammar tests (no model needed).
PG_ASK_GBNF_VALIDATOR=$(bash scripts/llm.sh validator)
export PG_ASK_GBNF_VALIDATOR
cargo test -p pg_ask_core -p pg_ask_embed -p llm-standin -p pg_ask_mcp --features pg_ask_core/recall
cargo clippy -q --workspace --all-targets --features pg_ask/pg_test -- -D warnings

step "2/4 in-backend tests (cargo pgrx test)"
for m in "${MAJORS[@]}"; do
  echo "== PostgreSQL $m"
  cargo pgrx test "pg$m" -p pg_ask --runas postgres --pgdata "$WORK/pgrx"
done

step "3/4 golden SQL tests (pg_regress) and the upgrade test"
cargo build -q -p llm-standin --bin llm-standin
"$CARGO_TARGET_DIR/debug/llm-standin" --port "$STANDIN_PORT" --script tests/pg_regress/standin.json >"$WORK/standin.log" 2>&1 &
pids+=($!)
for m in "${MAJORS[@]}"; do
  echo "== PostgreSQL $m"
  PGC=$(pg_config_of "$m")
  port=$((IT_PORT + m - 15))
  # A cluster with the extension as built for users (no test functions), shared by the golden
  # tests, the upgrade test and (on 15) the client tests.
  cargo pgrx install -p pg_ask --pg-config "$PGC" >/dev/null
  cluster_start "$WORK/it$m" "$port" "$($PGC --bindir)"
  rm -rf "$WORK/regress$m" && mkdir -p "$WORK/regress$m"
  if ! "$($PGC --pkglibdir)/pgxs/src/test/regress/pg_regress" \
        --inputdir=tests/pg_regress --outputdir="$WORK/regress$m" --bindir="$($PGC --bindir)" \
        --host="$WORK" --port="$port" --user=postgres --dbname=pg_ask_regress \
        $(cd tests/pg_regress/sql && ls ./*.sql | sed 's|^\./||; s|\.sql$||' | grep -vx setup | sed '1i setup'); then
    echo "golden test output on PostgreSQL $m differs from tests/pg_regress/expected:"; cat "$WORK/regress$m/regression.diffs"
    exit 1
  fi
  bash tests/upgrade/test.sh "$PGC" "$WORK" "$port"
  [ "$m" = "$CLIENT_MAJOR" ] || cluster_stop "$WORK/it$m"
done

step "4/4 client integration tests (stand-in and real model), on PostgreSQL $CLIENT_MAJOR"
# A server of the tests' own (port and run directory), apart from one scripts/run.sh started.
export PG_ASK_LLM_PORT=${PG_ASK_LLM_TEST_PORT:-47812} PG_ASK_LLM_RUN=$WORK/llm
LLM_STARTED=1
PG_ASK_LLM_URL=$(bash scripts/llm.sh start smollm2)
# Gemma 3 270M beside it, for the constrained-output tests of both models.
PG_ASK_LLM_GEMMA_URL=$(PG_ASK_LLM_PORT=$((PG_ASK_LLM_PORT + 2)) PG_ASK_LLM_RUN=$WORK/llm-gemma bash scripts/llm.sh start gemma3)
# The default local model, Qwen2.5-Coder-1.5B, for one real question (tests/client/tests/default_model.rs).
PG_ASK_LLM_DEFAULT_URL=$(PG_ASK_LLM_PORT=$((PG_ASK_LLM_PORT + 4)) PG_ASK_LLM_RUN=$WORK/llm-default bash scripts/llm.sh start qwen-coder)
export PG_ASK_LLM_URL PG_ASK_LLM_MODEL=smollm2 PG_ASK_LLM_GEMMA_URL PG_ASK_LLM_DEFAULT_URL
PG_ASK_IT_HOST=$WORK PG_ASK_IT_PORT=$((IT_PORT + CLIENT_MAJOR - 15)) cargo test -p pg_ask_it -- --test-threads 4
# pg_ask-mcp (crates/mcp) under a real MCP client, the Python mcp SDK of the venv setup.sh made,
# over stdio and streamable HTTP, on the same cluster with the stand-in LLM.
PYTHON=${PG_ASK_VENV:-/var/cache/pg_ask/venv}/bin/python3 PG_ASK_IT_HOST=$WORK PG_ASK_IT_PORT=$((IT_PORT + CLIENT_MAJOR - 15)) \
  bash tests/mcp/run.sh

step "all tests passed"
