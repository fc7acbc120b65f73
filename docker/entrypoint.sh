#!/usr/bin/env bash
# The image's entrypoint. On the first start (an empty $PGDATA) it makes the cluster, with
# pg_ask in shared_preload_libraries, and runs /docker-entrypoint-initdb.d/* (*.sql with psql,
# *.sh with bash) on a server listening on its socket only; then, every time, it runs the
# server in the foreground, with the arguments given (`-c name=value` ...).
#
# Environment: POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust),
# POSTGRES_USER (postgres), POSTGRES_DB (postgres), and ASK_BASE_URL, ASK_MODEL, ASK_PROVIDER,
# ASK_API_KEY for the LLM (see 20-llm.sh).
set -euo pipefail
# `docker run IMAGE -c port=5433` passes options to the server; any other command runs as is.
if [ "${1:-}" = "" ] || [ "${1:0:1}" = "-" ]; then set -- postgres "$@"; fi
if [ "$1" != postgres ]; then exec "$@"; fi
shift
: "${PGDATA:=/var/lib/postgresql/data/pgdata}"
export POSTGRES_USER=${POSTGRES_USER:-postgres} POSTGRES_DB=${POSTGRES_DB:-postgres}

# Written last by the first start: a cluster without it was left half made.
marker="$PGDATA/.pg_ask-initialised"
if [ -s "$PGDATA/PG_VERSION" ] && [ ! -f "$marker" ]; then
  echo "pg_ask: $PGDATA holds a cluster whose first start did not finish (initdb or an init script failed)." >&2
  echo "        Look at the first start's log, then remove the volume's contents to start again." >&2
  exit 1
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
    echo "pg_ask: the database is not initialised and POSTGRES_PASSWORD is not set." >&2
    echo "        Set it (-e POSTGRES_PASSWORD=...), or POSTGRES_HOST_AUTH_METHOD=trust to allow anyone in." >&2
    exit 1
  fi
  echo "pg_ask: initialising the cluster in $PGDATA"
  mkdir -p "$PGDATA" && chmod 700 "$PGDATA"
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host="$auth" --pwfile="$pwfile" >/dev/null
  rm -f "$pwfile"
  cat >>"$PGDATA/postgresql.conf" <<CONF
listen_addresses = '*'
unix_socket_directories = '/var/run/postgresql, /tmp'
shared_preload_libraries = 'pg_ask'
CONF
  echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -c unix_socket_directories=/tmp" start >/dev/null
  export PGHOST=/tmp PGUSER=$POSTGRES_USER
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\""
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) echo "pg_ask: running $f"; psql -X -q -v ON_ERROR_STOP=1 -d "$POSTGRES_DB" -f "$f" ;;
      *.sh)  echo "pg_ask: running $f"; bash "$f" ;;
      *)     ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  touch "$marker"
  unset PGHOST PGUSER
  echo "pg_ask: initialised; starting PostgreSQL"
fi
exec postgres -D "$PGDATA" "$@"
