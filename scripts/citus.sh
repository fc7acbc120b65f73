#!/usr/bin/env bash
# Citus for pg_ask's distributed tests: built from a source release the user gives (a directory
# or a tarball; Citus is not packaged in Debian's archive) into a PostgreSQL, PostgreSQL 17 of
# scripts/pg17.sh by default, and a coordinator with two workers on this machine. Not part of
# setup.sh or test.sh; tests/citus/run.sh runs where this script ran. As root.
#
#   bash scripts/citus.sh [SRC]     build and install unless present (SRC, or $CITUS_SRC, or the
#                                   pinned tarball in /var/cache/pg_ask/src)
#   bash scripts/citus.sh start     (re)create and start the coordinator and two workers
#   bash scripts/citus.sh stop      stop them (their directories are kept until the next start)
#   bash scripts/citus.sh status    print the nodes the coordinator knows
#   bash scripts/citus.sh --print   print the coordinator's connection settings as shell lines
#
# Environment: PG_CONFIG (default: PostgreSQL 17's, from scripts/pg17.sh), CITUS_SRC,
# CITUS_DIR (default /var/tmp/pg_ask-citus), CITUS_PORT (coordinator; workers take the next two,
# default 55450-55452).
#
# Idempotent: a stamp written last, beside citus.so's control file, records the version, the
# source's SHA-256 (tarballs) and the configure flags; a build that matches is kept.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC_CACHE=/var/cache/pg_ask/src
PINNED_VERSION=13.2.2
# Tag v13.2.2 of citusdata/citus (tag object f539ebf3, commit cc91f4c2): the tarball as
# `git archive --format=tar.gz --prefix=citus-13.2.2/ v13.2.2` writes it (git 2.47), and, for
# a tarball of the same release compressed otherwise (GitHub's download), its content: the
# SHA-256 of `sha256sum` over every file, sorted by path.
PINNED_TARBALL=citus-$PINNED_VERSION.tar.gz
PINNED_SHA256=dd2453caec20a830e5e63f1def5c5a98cb6f57ae510407cdcd800916fcdab430
PINNED_CONTENT=e67ffd3b983963283115e07f54f511398ef77b1e37fce0282121095aaadad1c9
CONFIGURE=(--with-libcurl --with-lz4 --with-zstd)

PG_CONFIG=${PG_CONFIG:-$(bash "$HERE/pg17.sh" --print)}
DIR=${CITUS_DIR:-/var/tmp/pg_ask-citus}
PORT=${CITUS_PORT:-55450}
BIN=$("$PG_CONFIG" --bindir)
NODES=(coord w1 w2)

say() { printf '\n== %s\n' "$*"; }
need_root() { [ "$(id -u)" = 0 ] || { echo "citus.sh must run as root" >&2; exit 1; }; }

# -- clusters --------------------------------------------------------------------------------------
# Three throwaway clusters run as `postgres`, as scripts/cluster.sh starts the project's: trust
# authentication, no TCP listener. The nodes reach one another over the Unix socket directory,
# which Citus takes as a node's host name (libpq reads a host starting with '/' as a directory).
node_port() { case $1 in coord) echo "$PORT" ;; w1) echo $((PORT + 1)) ;; w2) echo $((PORT + 2)) ;; esac; }
psql_node() { local n=$1; shift; runuser -u postgres -- "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$DIR" -p "$(node_port "$n")" -U postgres -d postgres "$@"; }

stop_all() {
  for n in "${NODES[@]}"; do
    [ -f "$DIR/$n/postmaster.pid" ] || continue
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/$n" -m fast -w stop >/dev/null 2>&1 || true
  done
}

start_all() {
  need_root
  [ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ] || { echo "Citus is not installed in $("$PG_CONFIG" --version); run scripts/citus.sh first" >&2; exit 1; }
  for ext in pg_ask vector pg_trgm; do
    [ -f "$("$PG_CONFIG" --sharedir)/extension/$ext.control" ] \
      || { echo "$ext is not installed in $("$PG_CONFIG" --version)" >&2; exit 1; }
  done
  stop_all
  mkdir -p "$DIR"
  chown postgres: "$DIR"
  chmod 700 "$DIR"
  for n in "${NODES[@]}"; do
    rm -rf "${DIR:?}/$n"
    runuser -u postgres -- "$BIN/initdb" -D "$DIR/$n" -A trust -U postgres -E UTF8 --locale=C >/dev/null
    # Citus must come first in shared_preload_libraries. No statistics are sent home (the
    # machine has no way out, and a test cluster has nothing to report).
    cat >>"$DIR/$n/postgresql.conf" <<CONF
port = $(node_port "$n")
listen_addresses = ''
unix_socket_directories = '$DIR'
shared_preload_libraries = 'citus,pg_ask'
citus.enable_statistics_collection = off
max_connections = 100
max_prepared_transactions = 100
CONF
    # Without RUST_BACKTRACE from the caller's shell: errors raised through pgrx would carry a
    # backtrace in their DETAIL.
    env -u RUST_BACKTRACE runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/$n" -l "$DIR/$n.log" -w start >/dev/null
  done
  # Citus and pg_ask's prerequisites on every node (Citus copies extensions it knows of to
  # workers added later; creating them everywhere first keeps the order plain).
  for n in w1 w2 coord; do
    psql_node "$n" -c "CREATE EXTENSION citus" -c "CREATE EXTENSION vector" -c "CREATE EXTENSION pg_trgm"
  done
  psql_node coord \
    -c "SELECT citus_set_coordinator_host('$DIR', $PORT)" \
    -c "SELECT citus_add_node('$DIR', $((PORT + 1)))" \
    -c "SELECT citus_add_node('$DIR', $((PORT + 2)))" >/dev/null
  # pg_ask on the coordinator; Citus creates it on the workers too (it propagates CREATE
  # EXTENSION), where nothing of pg_ask runs unless someone connects to a worker to ask.
  psql_node coord -c "CREATE EXTENSION pg_ask" >/dev/null
  say "Citus coordinator on port $PORT, workers on $((PORT + 1)) and $((PORT + 2)) (sockets in $DIR)"
  psql_node coord -c "SELECT nodeid, nodename, nodeport, noderole FROM pg_dist_node ORDER BY nodeid"
}

case "${1:-}" in
  --print)
    echo "PGHOST=$DIR"; echo "PGPORT=$PORT"; echo "PGBIN=$BIN"; echo "CITUS_WORKER_PORTS='$((PORT + 1)) $((PORT + 2))'"
    exit 0 ;;
  start) start_all; exit 0 ;;
  stop) stop_all; say "Citus clusters in $DIR stopped"; exit 0 ;;
  status) psql_node coord -c "SELECT nodeid, nodename, nodeport, noderole, isactive FROM pg_dist_node ORDER BY nodeid"; exit 0 ;;
esac

# -- build -----------------------------------------------------------------------------------------
need_root
src=${1:-${CITUS_SRC:-$SRC_CACHE/$PINNED_TARBALL}}
[ -e "$src" ] || {
  echo "no Citus source at $src: give a directory or a tarball of a release (e.g. $PINNED_VERSION from" >&2
  echo "https://github.com/citusdata/citus/archive/refs/tags/v$PINNED_VERSION.tar.gz) as an argument or CITUS_SRC" >&2
  exit 1
}
src=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")

# What is being built: a tarball is named by its SHA-256, a directory by its path.
if [ -f "$src" ]; then
  sum=$(sha256sum "$src" | cut -d' ' -f1)
  origin="tarball $sum"
else
  origin="directory $src"
fi

SHAREDIR=$("$PG_CONFIG" --sharedir)
PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
stamp="$SHAREDIR/extension/.pg_ask-citus-built"
if [ -f "$stamp" ] && [ -f "$PKGLIBDIR/citus.so" ] && [ -f "$SHAREDIR/extension/citus.control" ] \
   && grep -qsxF -- "$origin ${CONFIGURE[*]}" "$stamp"; then
  say "Citus $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$SHAREDIR/extension/citus.control") present in $("$PG_CONFIG" --version)"
  exit 0
fi

work=$(mktemp -d /var/tmp/citus-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -f "$src" ]; then
  tar xzf "$src" -C "$work"
  tree=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
else
  cp -a "$src" "$work/citus"
  tree=$work/citus
fi
[ -x "$tree/configure" ] || { echo "$src does not look like a Citus source tree (no configure)" >&2; exit 1; }
version=$(sed -n "s/^PACKAGE_VERSION='\(.*\)'/\1/p" "$tree/configure")
# A tarball of the pinned release must be that release: its bytes, or else its files.
if [ -f "$src" ] && [ "$version" = "$PINNED_VERSION" ] && [ "$sum" != "$PINNED_SHA256" ]; then
  content=$(cd "$tree" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
  if [ "$content" != "$PINNED_CONTENT" ]; then
    echo "$src says it is Citus $PINNED_VERSION but is not the release: SHA-256 $sum (expected $PINNED_SHA256)," >&2
    echo "content $content (expected $PINNED_CONTENT)" >&2
    exit 1
  fi
fi
# What Citus' configure flags build with: libcurl (statistics collection), lz4 and zstd
# (columnar compression), and the PostgreSQL build's own needs (readline, zlib, ICU, OpenSSL),
# from Debian's packages, installed unless present.
BUILD_PKGS=(build-essential autoconf flex bison libcurl4-openssl-dev liblz4-dev libzstd-dev
            libreadline-dev zlib1g-dev libicu-dev libssl-dev libkrb5-dev pkg-config)
missing=()
for p in "${BUILD_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Citus' build packages: ${missing[*]}"
  need_root
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
say "building Citus $version for $("$PG_CONFIG" --version) from $origin (several minutes on two cores)"
cd "$tree"
./configure -q PG_CONFIG="$PG_CONFIG" "${CONFIGURE[@]}" >/dev/null
nice -n 10 make -s -j"$(nproc)" >/dev/null
make -s install >/dev/null
echo "$origin ${CONFIGURE[*]}" >"$stamp"
say "Citus $version installed in $("$PG_CONFIG" --version)"
