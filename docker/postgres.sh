#!/usr/bin/env bash
# PostgreSQL in the image, for one major (15 or 17):
#   postgres.sh build MAJOR OUT   the builder: the server and its headers (17 is built from
#                                 the upstream tarball of Debian's source package into
#                                 /usr/lib/postgresql/17, and also staged under OUT)
#   postgres.sh runtime MAJOR     the final image: the server (15 from Debian; 17's libraries,
#                                 its files come from the builder) and the postgres user
set -euo pipefail
MODE=$1 MAJOR=$2 OUT=${3:-/out}
# PostgreSQL 17: the release scripts/pg17.sh pins (Debian's pool keeps it).
PG17_VERSION=17.11
PG17_SHA256=dd27f2b3c59e73ed14aa3324901242bf69a032a6347805f274e6260322d42979
PG17_URL=http://deb.debian.org/debian/pool/main/p/postgresql-17/postgresql-17_$PG17_VERSION.orig.tar.bz2

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
    work=$(mktemp -d)
    curl -fsS -o "$work/pg.tar.bz2" "$PG17_URL"
    echo "$PG17_SHA256  $work/pg.tar.bz2" | sha256sum -c --quiet -
    tar xjf "$work/pg.tar.bz2" -C "$work"
    cd "$work/postgresql-$PG17_VERSION"
    ./configure -q --prefix=/usr/lib/postgresql/17 --without-llvm --with-icu --with-openssl \
      --with-system-tzdata=/usr/share/zoneinfo >/dev/null
    make -s -j"$(nproc)" >/dev/null
    make -s -C contrib/pg_trgm >/dev/null
    for dest in / "$OUT"; do
      make -s install DESTDIR="$dest" >/dev/null
      make -s -C contrib/pg_trgm install DESTDIR="$dest" >/dev/null
    done
    cd / && rm -rf "$work"
    # Headers and static libraries are for building extensions, not for running them.
    rm -rf "$OUT/usr/lib/postgresql/17/include" "$OUT"/usr/lib/postgresql/17/lib/*.a ;;
  runtime:15)
    debian_postgres postgresql-15 ca-certificates ;;
  runtime:17)
    apt_install libicu72 libssl3 libreadline8 zlib1g tzdata locales ca-certificates
    groupadd -r postgres && useradd -r -g postgres -d /var/lib/postgresql -s /bin/bash postgres ;;
  *) echo "postgres.sh: unknown mode or major: $MODE $MAJOR (build|runtime, 15|17)" >&2; exit 2 ;;
esac
