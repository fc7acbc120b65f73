#!/usr/bin/env bash
# Rust in the builder stage:
#   rust.sh install              the toolchain and cargo-pgrx: kept when mounted from the host
#                                (docker/test.sh mounts its own, where rustup cannot download),
#                                else installed with rustup and cargo
#   rust.sh package MAJOR OUT    build pg_ask for MAJOR (release) and stage the extension's
#                                files under OUT with pg_config's paths
set -euo pipefail
# Certificate authorities the build was given (a proxy's, mounted into
# /usr/local/share/ca-certificates) join the trusted ones before anything is downloaded.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then update-ca-certificates >/dev/null 2>&1 || true; fi
RUST_VERSION=1.95.0
PGRX_VERSION=0.18.0
export PATH=/root/.cargo/bin:$PATH

case "$1" in
  install)
    if command -v cargo >/dev/null && cargo pgrx --version 2>/dev/null | grep -q " $PGRX_VERSION"; then
      echo "== Rust $(cargo --version | cut -d' ' -f2) and cargo-pgrx $PGRX_VERSION present"
      exit 0
    fi
    curl -fsS https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain "$RUST_VERSION"
    cargo install --locked cargo-pgrx --version "$PGRX_VERSION" ;;
  package)
    MAJOR=$2 OUT=$3
    PG_CONFIG=/usr/lib/postgresql/$MAJOR/bin/pg_config
    export PGRX_HOME=/tmp/pgrx CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/build/target}
    cargo pgrx init "--pg$MAJOR" "$PG_CONFIG" >/dev/null
    rm -rf /tmp/pkg
    cargo pgrx package -p pg_ask --pg-config "$PG_CONFIG" --out-dir /tmp/pkg
    # The library without its debug information (hundreds of MB with it).
    find /tmp/pkg -name 'pg_ask.so' -exec strip --strip-debug {} +
    cp -a /tmp/pkg/. "$OUT/"
    rm -rf /tmp/pkg ;;
  *) echo "rust.sh install | package MAJOR OUT" >&2; exit 2 ;;
esac
