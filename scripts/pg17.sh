#!/usr/bin/env bash
# PostgreSQL 17 beside Debian's 15: built from the upstream tarball of Debian's source package
# into its own prefix (server, client programs, headers and pg_trgm; no documentation, no tests
# of its own), kept there as the Rust targets are kept. Run by scripts/setup.sh; idempotent: a
# stamp written last records the version and the flags, and a build that matches is kept.
#
#   bash scripts/pg17.sh          build unless present
#   bash scripts/pg17.sh --print  print the pg_config path
set -euo pipefail

PREFIX=${PG_ASK_PG17_PREFIX:-/var/cache/pg_ask/pg17}
SRC=/var/cache/pg_ask/src
CONFIGURE=(--prefix="$PREFIX" --without-llvm --with-icu --with-openssl --with-system-tzdata=/usr/share/zoneinfo)
# The newest release Debian's next release lists comes first. The mirror does not always carry
# it yet: then a pinned older one, fetched by URL and checked against the SHA-256 that its
# signed .dsc gives (apt checks the one it fetches itself).
PINNED_VERSION=17.11
PINNED_SHA256=dd27f2b3c59e73ed14aa3324901242bf69a032a6347805f274e6260322d42979
POOL=http://deb.debian.org/debian/pool/main/p/postgresql-17

if [ "${1:-}" = --print ]; then echo "$PREFIX/bin/pg_config"; exit 0; fi
say() { printf '\n== %s\n' "$*"; }

stamp="$PREFIX/.pg_ask-built"
if [ -f "$stamp" ] && [ -x "$PREFIX/bin/pg_config" ] && grep -qsF -- "${CONFIGURE[*]}" "$stamp" \
   && [ -f "$("$PREFIX/bin/pg_config" --pkglibdir)/pg_trgm.so" ]; then
  say "$("$PREFIX/bin/pg_config" --version) present in $PREFIX"
  exit 0
fi

mkdir -p "$SRC"
cd "$SRC"
tarball=$(ls postgresql-17_17.*.orig.tar.bz2 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$tarball" ]; then
  say "fetching PostgreSQL 17's source package"
  if ! apt-get source --download-only postgresql-17 >/dev/null 2>&1; then
    echo "the mirror has not got the newest postgresql-17 source package; fetching $PINNED_VERSION" >&2
    curl -fsS -o "postgresql-17_$PINNED_VERSION.orig.tar.bz2.part" "$POOL/postgresql-17_$PINNED_VERSION.orig.tar.bz2"
    echo "$PINNED_SHA256  postgresql-17_$PINNED_VERSION.orig.tar.bz2.part" | sha256sum -c --quiet -
    mv "postgresql-17_$PINNED_VERSION.orig.tar.bz2.part" "postgresql-17_$PINNED_VERSION.orig.tar.bz2"
  fi
  rm -f postgresql-17_*.dsc postgresql-17_*.debian.tar.*
  tarball=$(ls postgresql-17_17.*.orig.tar.bz2 | sort -V | tail -1)
fi
version=${tarball#postgresql-17_}
version=${version%.orig.tar.bz2}

say "building PostgreSQL $version into $PREFIX (several minutes on two cores)"
work=$(mktemp -d /var/tmp/pg17.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar xjf "$SRC/$tarball" -C "$work"
cd "$work/postgresql-$version"
./configure -q "${CONFIGURE[@]}" >/dev/null
# Installed to a staging directory first, so that a build cut short leaves no half prefix.
make -s -j"$(nproc)" >/dev/null
make -s -C contrib/pg_trgm >/dev/null
make -s install DESTDIR="$work/stage" >/dev/null
make -s -C contrib/pg_trgm install DESTDIR="$work/stage" >/dev/null
rm -rf "$PREFIX"
mkdir -p "$(dirname "$PREFIX")"
mv "$work/stage$PREFIX" "$PREFIX"
chmod -R a+rX "$PREFIX"
echo "$version ${CONFIGURE[*]}" >"$stamp"
say "$("$PREFIX/bin/pg_config" --version) installed in $PREFIX"
