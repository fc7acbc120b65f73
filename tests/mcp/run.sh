#!/usr/bin/env bash
# pg_ask-mcp under a real MCP client (the Python `mcp` SDK), over stdio and streamable HTTP,
# against a PostgreSQL with pg_ask installed, with the stand-in LLM answering from
# tests/mcp/standin.json. Creates its own database (pg_ask_mcp_test) and roles (mcp_*).
#
#   PG_ASK_IT_HOST=/var/tmp/pg_ask-test PG_ASK_IT_PORT=55439 bash tests/mcp/run.sh
#   bash tests/mcp/run.sh --bench      # the overhead and concurrency benchmark instead
#
# PG_ASK_IT_HOST / PG_ASK_IT_PORT: the socket directory (or host) and port, superuser
# `postgres` (scripts/test.sh sets them in its step 4). PYTHON: the venv's python with mcp 2.x
# (default /var/cache/pg_ask/venv/bin/python3, made by scripts/setup.sh). CARGO_TARGET_DIR as
# for every build (default /var/cache/pg_ask/target).
set -euo pipefail

cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
: "${PG_ASK_IT_HOST:?PG_ASK_IT_HOST: where the PostgreSQL with pg_ask listens (socket directory or host)}"
: "${PG_ASK_IT_PORT:?PG_ASK_IT_PORT: its port}"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/cache/pg_ask/target}
PYTHON=${PYTHON:-/var/cache/pg_ask/venv/bin/python3}
if ! "$PYTHON" -c 'import mcp, httpx2' 2>/dev/null; then
  echo "tests/mcp: $PYTHON has no mcp package: run scripts/setup.sh (or pip install mcp==2.3.0)" >&2
  exit 2
fi
PSQL=${PSQL:-$(command -v psql || echo /usr/lib/postgresql/15/bin/psql)}

cargo build -q -p pg_ask_mcp --bin pg_ask-mcp
cargo build -q -p llm-standin --bin llm-standin

work=$(mktemp -d /tmp/pg_ask-mcp-test.XXXXXX)
# shellcheck source=scripts/standin.sh
source scripts/standin.sh
cleanup() {
  [ -n "$STANDIN_PID" ] && kill "$STANDIN_PID" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
standin_start tests/mcp/standin.json "$work"

export PG_ASK_IT_HOST PG_ASK_IT_PORT PSQL
export PG_ASK_MCP_BIN="$CARGO_TARGET_DIR/debug/pg_ask-mcp"
export PG_ASK_STANDIN_URL="$STANDIN_URL"
if [ "${1:-}" = "--bench" ]; then
  shift
  "$PYTHON" tests/mcp/bench_mcp.py "$@"
  exit
fi
"$PYTHON" tests/mcp/test_mcp.py
