#!/usr/bin/env bash
# PostgreSQL in the image, for one major (15 or 17):
#   postgres.sh build MAJOR OUT   the builder: the server and its headers (17 is built by
#                                 scripts/pg17.sh into /usr/lib/postgresql/17, and also staged
#                                 under OUT)
#   postgres.sh runtime MAJOR     the final image: the server (15 from Debian; 17's libraries,
#                                 its files come from the builder) and the postgres user
set -euo pipefail
MODE=$1 MAJOR=$2 OUT=${3:-/out}
apt_install() {
  apt-get update -q
  apt-get install -y -q --no-install-recommends "$@"
  rm -rf /var/lib/apt/lists/*
}

debian_postgres() {
  # Debian's packages, without the cluster they would create and start.
  apt_install postgresql-common
  sed -i 's/^#\?\s*create_main_cluster.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt_install "$@"
  rm -f /usr/sbin/policy-rc.d
}

case "$MODE:$MAJOR" in
  build:15)
    debian_postgres postgresql-15 postgresql-server-dev-15
    mkdir -p "$OUT" ;;
  build:17)
    # The same build, pins and checks as the host's (scripts/pg17.sh, copied beside this
    # script), into the flat prefix the image uses; then staged under OUT.
    PG_ASK_PG17_PREFIX=/usr/lib/postgresql/17 bash "$(dirname "$0")/pg_ask-pg17.sh"
    mkdir -p "$OUT/usr/lib/postgresql"
    cp -a /usr/lib/postgresql/17 "$OUT/usr/lib/postgresql/17"
    rm -rf /var/cache/pg_ask/src
    # Headers and static libraries are for building extensions, not for running them.
    rm -rf "$OUT/usr/lib/postgresql/17/include" "$OUT"/usr/lib/postgresql/17/lib/*.a "$OUT/usr/lib/postgresql/17/.pg_ask-built" ;;
  runtime:15)
    debian_postgres postgresql-15 ca-certificates ;;
  runtime:17)
    apt_install libicu72 libssl3 libreadline8 zlib1g tzdata locales ca-certificates
    groupadd -r postgres && useradd -r -g postgres -d /var/lib/postgresql -s /bin/bash postgres ;;
  *) echo "postgres.sh: unknown mode or major: $MODE $MAJOR (build|runtime, 15|17)" >&2; exit 2 ;;
esac
