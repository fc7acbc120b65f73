#!/usr/bin/env bash
# The container image, built with podman and checked from outside, for PostgreSQL 15 and 17
# (or the majors given):
#   1. on first start the image creates pg_ask (with vector and pg_trgm) through its init scripts;
#   2. ask() answers, through a stand-in LLM on the host that the container reaches (the
#      containers run on the host's network);
#   3. the data survives a new container on the same volume, and the init scripts do not run
#      again.
# The base image is made with debootstrap (docker/base.sh; no registry is reached), the build
# mounts this machine's Rust toolchain and keeps its Cargo target in /var/cache/pg_ask/docker.
#
#   bash docker/test.sh [15] [17]      after scripts/setup.sh, as root
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export CONTAINERS_CONF=$ROOT/docker/containers.conf
export PATH="$HOME/.cargo/bin:$PATH" CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/cache/pg_ask/target}
MAJORS=("$@"); [ ${#MAJORS[@]} -gt 0 ] || MAJORS=(15 17)
BASE=localhost/pg_ask-base:bookworm
PORT=${PG_ASK_DOCKER_PORT:-55450}
STANDIN_PORT=${PG_ASK_DOCKER_STANDIN_PORT:-47817}
CACHE=/var/cache/pg_ask/docker
PSQL=(/usr/lib/postgresql/15/bin/psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d postgres)
export PGPASSWORD=pg_ask-test
for tool in podman runc debootstrap; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed: run scripts/setup.sh" >&2; exit 1; }
done

# This machine's own extra certificate authorities (a proxy's, which PyPI and crates.io are
# reached through), trusted by the build's ca-certificates too.
CA_MOUNT=()
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  CA_MOUNT=(-v /usr/local/share/ca-certificates:/usr/local/share/ca-certificates:ro)
fi

say() { printf '\n== %s\n' "$*"; }
standin=""
name=""
cleanup() {
  [ -n "$standin" ] && kill "$standin" 2>/dev/null || true
  if [ -n "$name" ]; then podman rm -f "$name" >/dev/null 2>&1 || true; podman volume rm -f "$name" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

# The compose file (no compose tool runs here, nor the bridge network it needs): it must name
# the images this script builds, and point the database at the LLM service.
python3 - <<'PY'
import yaml
services = yaml.safe_load(open("docker/compose.yaml"))["services"]
db, llm = services["db"], services["llm"]
assert db["build"]["dockerfile"] == "docker/Dockerfile" and db["build"]["args"]["PG_MAJOR"] in ("15", "17"), db
assert llm["build"]["dockerfile"] == "docker/Dockerfile.llm", llm
assert db["environment"]["ASK_BASE_URL"] == "http://llm:8080/v1", db["environment"]
assert "pgdata:/var/lib/postgresql/data" in db["volumes"], db["volumes"]
print("ok: docker/compose.yaml")
PY
bash docker/base.sh "$BASE"
cargo build -q -p llm-standin --bin llm-standin
"$CARGO_TARGET_DIR/debug/llm-standin" --port "$STANDIN_PORT" --script tests/pg_regress/standin.json >/var/tmp/pg_ask-docker-standin.log 2>&1 &
standin=$!

wait_ready() {
  for _ in $(seq 1 120); do
    if "${PSQL[@]}" -c 'SELECT 1' >/dev/null 2>&1; then return 0; fi
    if ! podman container exists "$name" || [ "$(podman inspect -f '{{.State.Running}}' "$name")" != true ]; then
      podman logs "$name" >&2 || true; echo "the container stopped" >&2; return 1
    fi
    sleep 1
  done
  podman logs "$name" >&2; echo "PostgreSQL in the container did not accept connections in 120 s" >&2; return 1
}
q() { "${PSQL[@]}" -At -c "$1"; }
expect() {
  local got; got=$(q "$1")
  [ "$got" = "$2" ] || { echo "FAILED: $1"; echo "   got: $got"; echo "  want: $2"; podman logs "$name" 2>&1 | tail -20; exit 1; }
  echo "ok: $1"
}

for m in "${MAJORS[@]}"; do
  image=localhost/pg_ask:pg$m
  say "building $image"
  mkdir -p "$CACHE/target"
  start=$(date +%s)
  podman build --network host --pull=never --layers "${CA_MOUNT[@]}" \
    --build-arg BASE="$BASE" --build-arg PG_MAJOR="$m" \
    -v "$HOME/.rustup:/root/.rustup:ro" -v "$HOME/.cargo/bin:/root/.cargo/bin:ro" \
    -v "$HOME/.cargo/registry:/root/.cargo/registry" -v "$CACHE/target:/build/target" \
    -f docker/Dockerfile -t "$image" . >"$CACHE/build-pg$m.log" 2>&1 \
    || { tail -40 "$CACHE/build-pg$m.log"; echo "podman build failed (log: $CACHE/build-pg$m.log)"; exit 1; }
  echo "built in $(( $(date +%s) - start )) s; image size $(podman image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}')"

  name=pg_ask_test_pg$m
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman volume rm -f "$name" >/dev/null 2>&1 || true
  podman volume create "$name" >/dev/null
  run() {
    podman run -d --name "$name" --network host -v "$name:/var/lib/postgresql/data" \
      -e POSTGRES_PASSWORD="$PGPASSWORD" -e ASK_BASE_URL="http://127.0.0.1:$STANDIN_PORT/v1" -e ASK_MODEL=standin \
      "$image" -c port="$PORT" >/dev/null
  }

  say "first start of $image"
  run
  wait_ready
  expect "SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension WHERE extname IN ('pg_ask', 'vector', 'pg_trgm')" "pg_ask,pg_trgm,vector"
  expect "SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'pg_ask') FROM pg_extension WHERE extname = 'pg_ask'" "t"
  expect "SELECT current_setting('server_version_num')::int / 10000" "$m"
  expect "SHOW shared_preload_libraries" "pg_ask"
  expect "SHOW ask.base_url" "http://127.0.0.1:$STANDIN_PORT/v1"
  # The local embedding model is in the image: the value memory embeds without an LLM.
  expect "SELECT vector_dims(ask.embed('Los Angeles'))" "384"
  "${PSQL[@]}" <<'SQL'
CREATE TABLE cities (id int PRIMARY KEY, name text NOT NULL, state_code char(2));
CREATE TABLE restaurants (id int PRIMARY KEY, name text NOT NULL, city_id int NOT NULL REFERENCES cities(id),
                          cuisine text NOT NULL, rating numeric(2,1));
INSERT INTO cities VALUES (1, 'Los Angeles', 'CA'), (2, 'San Francisco', 'CA'), (3, 'New York', 'NY');
INSERT INTO restaurants VALUES (1, 'Roma', 1, 'Italian', 4.5), (2, 'Trattoria Nona', 1, 'Italian', 4.1),
    (3, 'Le Petit', 2, 'French', 4.7), (4, 'Sushi Ko', 3, 'Japanese', 4.4);
SELECT ask.index_values('restaurants');
SQL
  expect "SELECT ask('which Italian restaurants are in LA?')" "Los Angeles has two Italian restaurants: Roma (4.5) and Trattoria Nona (4.1)."
  expect "SELECT count(*) > 0 FROM ask.llm_calls" "t"

  say "a new container on the same volume"
  podman stop -t 30 "$name" >/dev/null
  podman rm "$name" >/dev/null
  run
  wait_ready
  expect "SELECT count(*) FROM restaurants" "4"
  expect "SELECT count(*) > 0 FROM ask.value_memory" "t"
  expect "SELECT extname FROM pg_extension WHERE extname = 'pg_ask'" "pg_ask"
  inits=$(podman logs "$name" 2>&1 | grep -c 'running /docker-entrypoint-initdb.d' || true)
  [ "$inits" = 0 ] || { echo "FAILED: the init scripts ran again on the second start"; exit 1; }
  echo "ok: the init scripts did not run again"
  expect "SELECT ask('which Italian restaurants are in LA?')" "Los Angeles has two Italian restaurants: Roma (4.5) and Trattoria Nona (4.1)."
  podman rm -f "$name" >/dev/null
  podman volume rm -f "$name" >/dev/null
  name=""
done
# The pair compose.yaml runs, on the host's network (no bridge here): the LLM image with
# Qwen2.5-Coder-1.5B, and the last database image pointed at it: a question goes through
# it, the ledger records the calls, and the count it answers is the rows' count.
if [ "${PG_ASK_DOCKER_LLM:-1}" = 1 ]; then
  say "building localhost/pg_ask-llm:qwen-coder (docker/Dockerfile.llm)"
  start=$(date +%s)
  podman build --network host --pull=never --layers "${CA_MOUNT[@]}" --build-arg BASE="$BASE" \
    -f docker/Dockerfile.llm -t localhost/pg_ask-llm:qwen-coder . >"$CACHE/build-llm.log" 2>&1 \
    || { tail -40 "$CACHE/build-llm.log"; echo "podman build failed (log: $CACHE/build-llm.log)"; exit 1; }
  echo "built in $(( $(date +%s) - start )) s; image size $(podman image inspect -f '{{.Size}}' localhost/pg_ask-llm:qwen-coder | awk '{printf "%.0f MB", $1/1e6}')"
  llm_port=${PG_ASK_DOCKER_LLM_PORT:-8080}
  llm_name=pg_ask_test_llm
  podman rm -f "$llm_name" >/dev/null 2>&1 || true
  podman run -d --name "$llm_name" --network host localhost/pg_ask-llm:qwen-coder --port "$llm_port" >/dev/null
  trap 'cleanup; podman rm -f "$llm_name" >/dev/null 2>&1 || true' EXIT
  for _ in $(seq 1 60); do curl -fsS "http://127.0.0.1:$llm_port/health" >/dev/null 2>&1 && break; sleep 1; done
  curl -fsS "http://127.0.0.1:$llm_port/health" >/dev/null || { podman logs "$llm_name" | tail -20; echo "the LLM image did not become healthy"; exit 1; }
  m=${MAJORS[${#MAJORS[@]}-1]}
  image=localhost/pg_ask:pg$m
  name=pg_ask_test_pair
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman volume rm -f "$name" >/dev/null 2>&1 || true
  podman run -d --name "$name" --network host -v "$name:/var/lib/postgresql/data" -e POSTGRES_PASSWORD="$PGPASSWORD" \
    -e ASK_BASE_URL="http://127.0.0.1:$llm_port/v1" -e ASK_MODEL=qwen-coder "$image" -c port="$PORT" >/dev/null
  wait_ready
  "${PSQL[@]}" -c "CREATE TABLE cities (id int PRIMARY KEY, name text NOT NULL); INSERT INTO cities VALUES (1, 'Los Angeles'), (2, 'Rome')"
  # ask.explain() returns the trace whatever the model writes (ask() may raise a documented
  # error for a reply that does not answer).
  expect "SELECT jsonb_path_exists(t, '\$.stages[*] ? (@.stage == \"generate\" && exists(@.output.reply))') FROM ask.explain('how many cities are there?') t" "t"
  expect "SELECT count(*) > 0 AND bool_and(outcome = 'ok') FROM ask.llm_calls" "t"
  echo "the model's answer: $(q "SELECT coalesce(t->>'answer', t->>'error', '') FROM ask.explain('how many cities are there?') t")"
  # Whatever the model writes, a written answer states only what the rows say: the count.
  expect "SELECT ask('how many cities are there?') ~ '(^|[^0-9])2([^0-9]|\$)'" "t"
  podman rm -f "$name" "$llm_name" >/dev/null
  podman volume rm -f "$name" >/dev/null
  name=""
fi
say "docker/test.sh: all checks passed (PostgreSQL ${MAJORS[*]})"
