# Shared by test.sh and bench.sh: a throwaway PostgreSQL cluster run as `postgres`, with
# pg_ask preloaded as the README sets it up (install the extension before starting it).
# Usage: source scripts/cluster.sh; cluster_start DIR PORT [BINDIR]; ...; cluster_stop DIR
# BINDIR is the major's bin directory (PostgreSQL 15's by default); the cluster remembers it.
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

cluster_start() {
  local dir=$1 port=$2 bin=${3:-$PGBIN}
  mkdir -p "$(dirname "$dir")"
  chown postgres: "$(dirname "$dir")"
  if [ -f "$dir/postmaster.pid" ]; then cluster_stop "$dir"; fi
  rm -rf "$dir"
  echo "$bin" >"$dir.bindir"
  runuser -u postgres -- "$bin/initdb" -D "$dir" -A trust -U postgres -E UTF8 --locale=C >/dev/null
  runuser -u postgres -- "$bin/pg_ctl" -D "$dir" -l "$dir.log" -w \
    -o "-p $port -k $(dirname "$dir") -c listen_addresses='' -c shared_preload_libraries=pg_ask" start >/dev/null
}

cluster_stop() {
  local dir=$1 bin
  [ -f "$dir/postmaster.pid" ] || return 0
  bin=$(cat "$dir.bindir" 2>/dev/null || echo "$PGBIN")
  runuser -u postgres -- "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null 2>&1 || true
}
