#!/usr/bin/env bash
# Start a PostgreSQL 15 with pg_ask installed and the sample database loaded, as root, on a machine
# prepared by `bash scripts/setup.sh`.
#
#   scripts/run.sh [start]      build and install pg_ask, start the server (or reuse the running
#                               one), create the database pg_ask_demo, create the extension and
#                               load sample/sample.sql into it if it is not there yet; start the
#                               local LLM (scripts/llm.sh) and point pg_ask_demo at it
#   scripts/run.sh status       say whether the server runs, where, and what pg_ask_demo holds
#   scripts/run.sh stop         stop the server and the local LLM (the data stays for the next start)
#   scripts/run.sh psql [ARGS]  open psql on pg_ask_demo as postgres
#
# Environment:
#   PG_ASK_RUN_DIR=/var/lib/pg_ask/run  where the cluster lives: data/ and postgresql.log
#   PG_ASK_PORT=5433                    port; the socket is in /tmp, TCP listens on localhost only
#   PG_ASK_RELEASE=0                    build the extension's debug profile (quicker to build the
#                                       first time, slower to run; the release build is the default)
#   PG_ASK_RELOAD_SAMPLE=1              drop and reload the sample tables even if present
#   PG_ASK_LLM=qwen-coder               the local model to start: qwen-coder, smollm2, gemma3, or none (leave
#                                       the LLM settings alone, e.g. for Ollama or a hosted API)
#   PG_ASK_RECREATE=1                   DROP EXTENSION pg_ask CASCADE and create it again (after
#                                       changing its SQL without a new version)
#
# Connections over the socket are trusted without a password (the socket is only open to root and
# the postgres group); TCP connections need a password, and no role has one until you set it.
set -euo pipefail

PG_MAJOR=15
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
PG_CONFIG=$PG_BIN/pg_config
RUN_DIR=${PG_ASK_RUN_DIR:-/var/lib/pg_ask/run}
DATA=$RUN_DIR/data
LOG=$RUN_DIR/postgresql.log
PORT=${PG_ASK_PORT:-5433}
SOCKET_DIR=/tmp
DB=pg_ask_demo
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)

say()  { printf '\n== %s\n' "$*"; }
note() { printf '   %s\n' "$*"; }
die()  { printf 'run.sh: %s\n' "$*" >&2; exit 1; }

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

# Run a PostgreSQL server program as postgres (pg_ctl and initdb refuse root), from / so that
# postgres need not be able to read the current directory.
as_postgres() {
  if [ "$(id -un)" = postgres ]; then
    (cd / && "$@")
  elif [ "$(id -u)" = 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    die "run as root (or as postgres for status, stop and psql)"
  fi
}

initialised() { [ -s "$DATA/PG_VERSION" ]; }
running() { initialised && as_postgres "$PG_BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }
# Port and socket directory of the running server, from lines 4 and 5 of postmaster.pid.
running_port()   { sed -n 4p "$DATA/postmaster.pid"; }
running_socket() { sed -n 5p "$DATA/postmaster.pid"; }

# psql as postgres over the socket of the running server; extra arguments follow.
pg() {
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$(running_socket)" -p "$(running_port)" -U postgres "$@"
}

# 1. Build and install the extension ------------------------------------------------------------
install_extension() {
  export PATH="$HOME/.cargo/bin:$PATH"
  # The same compiled tree as scripts/test.sh and scripts/bench.sh: one build serves all three.
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/cache/pg_ask/target}
  command -v cargo >/dev/null || die "cargo not found in $HOME/.cargo/bin or PATH; run: bash scripts/setup.sh"
  cargo pgrx --version >/dev/null 2>&1 || die "cargo-pgrx is not installed; run: bash scripts/setup.sh"
  [ -s "${PGRX_HOME:-$HOME/.pgrx}/config.toml" ] || die "cargo pgrx init has not run; run: bash scripts/setup.sh"
  local profile=() mode=debug
  if [ "${PG_ASK_RELEASE:-1}" = 1 ]; then profile=(--release); mode=release; fi
  say "building pg_ask ($mode) and installing it into $($PG_CONFIG --sharedir) and $($PG_CONFIG --pkglibdir)"
  (cd "$REPO" && cargo pgrx install --package pg_ask --pg-config "$PG_CONFIG" "${profile[@]}")
}

# 2. Create or reuse the cluster, and start it ---------------------------------------------------
init_cluster() {
  if initialised; then
    local v; v=$(cat "$DATA/PG_VERSION")
    [ "$v" = "$PG_MAJOR" ] || die "$DATA holds a PostgreSQL $v cluster, not $PG_MAJOR; choose another PG_ASK_RUN_DIR"
    say "reusing the cluster in $DATA"
    return
  fi
  if [ -d "$RUN_DIR" ]; then
    [ "$(stat -c %U "$RUN_DIR")" = postgres ] || die "$RUN_DIR exists and is not owned by postgres; remove it or choose another PG_ASK_RUN_DIR"
  else
    mkdir -p "$RUN_DIR"
    chown postgres:postgres "$RUN_DIR"
    chmod 0700 "$RUN_DIR"
  fi
  say "creating a PostgreSQL $PG_MAJOR cluster in $DATA"
  as_postgres "$PG_BIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  # Settings this script owns live in their own file, rewritten on every start so that
  # PG_ASK_PORT takes effect; postgresql.conf and ALTER SYSTEM stay yours.
  echo "include_if_exists = 'pg_ask_run.conf'" | as_postgres tee -a "$DATA/postgresql.conf" >/dev/null
}

write_run_conf() {
  as_postgres tee "$DATA/pg_ask_run.conf" >/dev/null <<CONF
# Written by scripts/run.sh on every start; put your own settings in postgresql.conf.
port = $PORT
listen_addresses = 'localhost'
unix_socket_directories = '$SOCKET_DIR'
unix_socket_permissions = 0770
# Preloaded, so that ask.api_key is superuser-only in every session from its first statement.
shared_preload_libraries = 'pg_ask'
CONF
}

start_server() {
  if running; then
    say "PostgreSQL is already running (pid $(head -1 "$DATA/postmaster.pid"), port $(running_port))"
    if [ "$(running_port)" != "$PORT" ]; then
      note "it listens on port $(running_port), not $PORT; run scripts/run.sh stop first to change the port"
    fi
    return
  fi
  write_run_conf
  say "starting PostgreSQL $PG_MAJOR on port $PORT (socket in $SOCKET_DIR, log in $LOG)"
  if ! as_postgres "$PG_BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null; then
    printf '\nrun.sh: PostgreSQL did not start; the end of %s says:\n' "$LOG" >&2
    tail -n 15 "$LOG" >&2 || true
    exit 1
  fi
}

# 3. Database, extension, sample -----------------------------------------------------------------
prepare_database() {
  local reindex=0
  if [ "$(pg -d postgres -Atc "SELECT count(*) FROM pg_database WHERE datname = '$DB'")" = 0 ]; then
    say "creating database $DB"
    pg -d postgres -c "CREATE DATABASE $DB"
  fi

  if [ "${PG_ASK_RECREATE:-0}" = 1 ]; then
    say "dropping extension pg_ask (PG_ASK_RECREATE=1)"
    pg -d "$DB" -c "DROP EXTENSION IF EXISTS pg_ask CASCADE"
  fi
  if [ "$(pg -d "$DB" -Atc "SELECT count(*) FROM pg_extension WHERE extname = 'pg_ask'")" = 0 ]; then
    say "creating extension pg_ask (with vector and pg_trgm)"
    pg -d "$DB" -c "CREATE EXTENSION pg_ask CASCADE"
    reindex=1
  else
    local have want
    have=$(pg -d "$DB" -Atc "SELECT extversion FROM pg_extension WHERE extname = 'pg_ask'")
    want=$(pg -d "$DB" -Atc "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_ask'")
    if [ "$have" != "$want" ]; then
      say "updating extension pg_ask from $have to $want"
      pg -d "$DB" -c "ALTER EXTENSION pg_ask UPDATE" \
        || die "ALTER EXTENSION pg_ask UPDATE failed; PG_ASK_RECREATE=1 drops and recreates it instead"
    else
      say "extension pg_ask $have is there (the server was restarted with the new build)"
    fi
  fi

  if [ "${PG_ASK_RELOAD_SAMPLE:-0}" = 1 ] || [ -z "$(pg -d "$DB" -Atc "SELECT to_regclass('public.restaurants')")" ]; then
    say "loading $REPO/sample/sample.sql into $DB"
    pg -d "$DB" -f "$REPO/sample/sample.sql"
    reindex=1
  else
    say "the sample tables are there (PG_ASK_RELOAD_SAMPLE=1 reloads them)"
  fi

  if [ "$reindex" = 1 ]; then index_values; fi
  knowledge
}

# Teach pg_ask what the sample's owner knows (sample/knowledge.json: "open" and "fine dining"
# restaurants, a guest's score against the guide's rating, ...). Importing again changes
# nothing. Not fatal: ask() works without it.
knowledge() {
  [ -n "$(pg -d "$DB" -Atc "SELECT to_regproc('ask.import_knowledge')")" ] || return 0
  if pg -d "$DB" -At -v doc="$(cat "$REPO/sample/knowledge.json")" <<<"SELECT ask.import_knowledge(:'doc')" >/dev/null; then
    note "knowledge: $(pg -d "$DB" -Atc "SELECT count(*) FROM ask.knowledge") items from sample/knowledge.json"
  else
    note "importing sample/knowledge.json failed (see the error above); ask() works without it."
  fi
}

# Fill pg_ask's value memory with the sample's categorical columns, so that 'LA' or 'italian'
# can be corrected to stored values. Not fatal: ask() works without it, with less correction.
INDEX_SPECS=("states:code,name" "cities:name,state_code,country"
             "restaurants:name,neighborhood,cuisine,price_range" "chefs:full_name,role,nationality"
             "reviews:reviewer" "inspections:inspector,grade")
index_sql() { printf "SELECT ask.index_values('public.%s', '{%s}');" "${1%%:*}" "${1#*:}"; }

index_values() {
  [ -n "$(pg -d "$DB" -Atc "SELECT to_regproc('ask.index_values')")" ] || return 0
  say "indexing the sample's text values for value correction (ask.index_values)"
  local spec each
  for spec in "${INDEX_SPECS[@]}"; do
    if ! pg -d "$DB" -c "$(index_sql "$spec")" >/dev/null; then
      note "indexing ${spec%%:*} failed (see the error above); value correction will find fewer values."
      note "Once the cause is fixed, run in $DB:"
      for each in "${INDEX_SPECS[@]}"; do note "  $(index_sql "$each")"; done
      return 0
    fi
    note "${spec%%:*}: ${spec#*:}"
  done
}

# 4. The local LLM -------------------------------------------------------------------------------
# Start llama-server with a small model and point pg_ask_demo at it, unless the database was
# pointed elsewhere by hand (then its settings stay).
LLM=${PG_ASK_LLM:-qwen-coder}
LLM_URL=""
start_llm() {
  [ "$LLM" = none ] && return 0
  if ! LLM_URL=$(bash "$REPO/scripts/llm.sh" start "$LLM"); then
    note "the local LLM did not start (see above); run bash scripts/setup.sh, or set PG_ASK_LLM=none and point pg_ask at another LLM"
    LLM_URL=""
    return 0
  fi
  local current
  current=$(pg -d postgres -Atc "SELECT s FROM pg_db_role_setting r JOIN pg_database d ON d.oid = r.setdatabase,
                                   unnest(r.setconfig) s WHERE d.datname = '$DB' AND r.setrole = 0 AND s LIKE 'ask.base_url=%'")
  current=${current#ask.base_url=}
  if [ -n "$current" ] && [ "$current" != "$LLM_URL" ]; then
    note "$DB has ask.base_url = $current (set by hand): left as it is; the local LLM listens on $LLM_URL"
    return 0
  fi
  say "pointing $DB at the local LLM ($LLM at $LLM_URL)"
  pg -d postgres -c "ALTER DATABASE $DB SET ask.provider = 'openai'" \
     -c "ALTER DATABASE $DB SET ask.base_url = '$LLM_URL'" \
     -c "ALTER DATABASE $DB SET ask.model = '$LLM'"
}

# Connection help ---------------------------------------------------------------------------------
print_help() {
  local port sock
  port=$(running_port); sock=$(running_socket)
  cat <<EOF

== pg_ask is ready in database $DB

Connect (as root or postgres; the sample role ask_reader may read only cities and restaurants):
    psql -h $sock -p $port -U postgres $DB
    psql -h $sock -p $port -U ask_reader $DB
    scripts/run.sh psql

$(if [ -n "$LLM_URL" ]; then printf '%s\n' "pg_ask in $DB asks the local model $LLM at $LLM_URL (scripts/llm.sh stop stops it;" "PG_ASK_LLM=smollm2 scripts/run.sh starts a tiny, fast and often wrong one instead)." ""; fi)
Point pg_ask at another LLM (settings apply to new sessions; ask.api_key is superuser-only), e.g. a
local Ollama through its OpenAI-compatible API:
    ALTER DATABASE $DB SET ask.provider = 'openai';
    ALTER DATABASE $DB SET ask.base_url = 'http://localhost:11434/v1';
    ALTER DATABASE $DB SET ask.model = 'qwen2.5-coder:7b';
or a hosted API (ask.provider is openai, anthropic or ollama). The key is set server-wide (pg_ask
is preloaded here, so only superusers can read it) and is sent only to the base URL set there:
    ALTER SYSTEM SET ask.base_url = 'https://api.openai.com/v1';
    ALTER SYSTEM SET ask.api_key = 'sk-...';
    SELECT pg_reload_conf();
    ALTER DATABASE $DB SET ask.model = 'gpt-4o-mini';
For one session only, use SET instead of ALTER DATABASE ... SET (never for the key).

Then try:
    SELECT ask('which Italian restaurants are in LA?');
More questions: $REPO/sample/README.md

Status: scripts/run.sh status      Stop: scripts/run.sh stop      Log: $LOG
EOF
}

# Subcommands -------------------------------------------------------------------------------------
cmd_start() {
  [ "$(id -u)" = 0 ] || die "start must run as root (it installs the extension into $($PG_CONFIG --pkglibdir))"
  [ -x "$PG_BIN/postgres" ] || die "PostgreSQL $PG_MAJOR is not installed in $PG_BIN; run: bash scripts/setup.sh"
  getent passwd postgres >/dev/null || die "there is no postgres user; run: bash scripts/setup.sh"
  # pg_ask is preloaded: the postmaster holds the library, so a new build serves only after a
  # restart, and is not copied over a library a running server has mapped.
  if running; then
    say "stopping PostgreSQL to install the new build (pg_ask is preloaded)"
    as_postgres "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
  fi
  install_extension
  init_cluster
  start_server
  prepare_database
  start_llm
  print_help
}

cmd_stop() {
  bash "$REPO/scripts/llm.sh" stop || true
  if ! initialised; then
    say "no cluster in $DATA, nothing to stop"
  elif ! running; then
    say "PostgreSQL in $DATA is not running"
  else
    say "stopping PostgreSQL in $DATA (port $(running_port))"
    as_postgres "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    note "stopped; scripts/run.sh starts it again with its data"
  fi
}

cmd_status() {
  if ! initialised; then
    say "no cluster in $DATA (scripts/run.sh creates it)"
    return 3
  fi
  if ! running; then
    say "PostgreSQL in $DATA is stopped (scripts/run.sh starts it)"
    return 3
  fi
  say "PostgreSQL is running: pid $(head -1 "$DATA/postmaster.pid"), port $(running_port), socket in $(running_socket)"
  note "data: $DATA"
  note "log:  $LOG"
  if [ "$(pg -d postgres -Atc "SELECT count(*) FROM pg_database WHERE datname = '$DB'")" = 0 ]; then
    note "database $DB: absent"
    return 0
  fi
  note "connect: psql -h $(running_socket) -p $(running_port) -U postgres $DB"
  note "extensions in $DB: $(pg -d "$DB" -Atc "SELECT coalesce(string_agg(extname || ' ' || extversion, ', ' ORDER BY extname), 'none') FROM pg_extension WHERE extname <> 'plpgsql'")"
  if [ -n "$(pg -d "$DB" -Atc "SELECT to_regclass('public.restaurants')")" ]; then
    note "sample rows: $(pg -d "$DB" -Atc "SELECT format('%s cities, %s restaurants, %s chefs, %s reviews, %s inspections',
        (SELECT count(*) FROM cities), (SELECT count(*) FROM restaurants), (SELECT count(*) FROM chefs),
        (SELECT count(*) FROM reviews), (SELECT count(*) FROM inspections))")"
  else
    note "sample tables: absent"
  fi
}

cmd_psql() {
  running || die "PostgreSQL in $DATA is not running; start it with scripts/run.sh"
  exec "$PG_BIN/psql" -h "$(running_socket)" -p "$(running_port)" -U postgres "$@" "$DB"
}

case "${1:-start}" in
  -h|--help|help) ;;
  *) [ "$(id -u)" = 0 ] || [ "$(id -un)" = postgres ] || die "run as root (or as postgres for status, stop and psql)" ;;
esac
case "${1:-start}" in
  start)          cmd_start ;;
  stop)           cmd_stop ;;
  status)         cmd_status ;;
  psql)           shift; cmd_psql "$@" ;;
  -h|--help|help) usage ;;
  *)              usage >&2; exit 2 ;;
esac
