#!/usr/bin/env bash
# Coverage-guided fuzzing of pg_ask's parsers (cargo fuzz, libFuzzer with AddressSanitizer).
# Not part of CI. As root, on a machine prepared by scripts/setup.sh:
#   bash scripts/fuzz.sh [TARGET...] [-- SECONDS]
# runs each TARGET (default: all of them) for SECONDS (default 600), one after another, and
# stops at the first crash, hang (a run over 10 s) or allocation over 512 MB, leaving the
# input under fuzz/artifacts/TARGET/. Turn each one into a regression test (see
# crates/core/tests/fuzz_regressions.rs) before fixing it.
#   guard     the guard: generated SQL and ask.do() steps
#   extract   SQL extraction from replies
#   literals  literal resolution, LIKE patterns, rewriting, masking
#   replies   every stage's reply parser (answer, context, steps, plans, value choices and
#             corrections, ask.do() plans, shadow answers, structured replies, suite rows)
#   workload  InConDB workload translation
#   protocol  chat and embedding response decoders, the stand-in's request decoders
#   http      the stand-in's HTTP/1.1 framing
# The corpus grows under /var/cache/pg_ask/fuzz/corpus/TARGET (kept between runs), seeded from
# the hostile-reply corpus and the sample's SQL.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
ALL=(guard extract literals replies workload protocol http)
TARGETS=(); SECONDS_EACH=600
while [ $# -gt 0 ]; do
  case "$1" in
    --) SECONDS_EACH=${2:?seconds after --}; shift 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz --version 0.13.2
# cargo fuzz passes -Z flags (sanitizers, coverage); the one stable toolchain takes them so.
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR=${PG_ASK_FUZZ_TARGET:-/var/cache/pg_ask/fuzz/target}
CORPUS=${PG_ASK_FUZZ_CORPUS:-/var/cache/pg_ask/fuzz/corpus}

seed() { # seed TARGET: first inputs from the project's own files
  local dir=$CORPUS/$1
  [ -d "$dir" ] && return 0
  mkdir -p "$dir"
  python3 - "$1" "$dir" <<'PY'
import hashlib, json, pathlib, sys
target, out = sys.argv[1], pathlib.Path(sys.argv[2])
def put(text):
    data = text.encode() if isinstance(text, str) else text
    (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
hostile = json.loads(pathlib.Path("crates/core/tests/fixtures/hostile_replies.json").read_text())
for e in hostile["hostile"] + hostile["safe"]:
    put(e["reply"])
for f in pathlib.Path("sample").rglob("*.sql"):
    for stmt in f.read_text(errors="replace").split(";\n")[:200]:
        put(stmt)
if target in ("replies", "extract"):
    for s in ['{"answer": "ROWS"}', '{"answerable": true, "answer": "x"}', '{"answer": "ROWS 2"}',
              '{"steps": [{"goal": "g", "sql": "SELECT 1", "schema": "public"}]}',
              '{"steps": [{"purpose": "p", "sql": "UPDATE t SET a = 1"}]}', '{"rows": [[1, "a"]]}',
              '{"result": "Succeed"}', '{"choices": ["Los Angeles", null]}', "```sql\nSELECT 1\n```"]:
        put(s)
if target == "protocol":
    for s in ['{"choices":[{"message":{"role":"assistant","content":"SELECT 1"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}',
              '{"content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":1}}',
              '{"message":{"content":"x"},"prompt_eval_count":1,"eval_count":1}',
              '{"data":[{"embedding":[0.1,0.2]}]}', '{"embeddings":[[0.1],[0.2],[0.3]]}',
              '{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":5}']:
        put(s)
if target == "http":
    for s in ["POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
              "POST /v1/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
              "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.1\r\nConnection: close\r\n\r\n"]:
        put(s)
PY
}

findings() { # findings TARGET: how many inputs it has left under fuzz/artifacts
  if [ -d "fuzz/artifacts/$1" ]; then find "fuzz/artifacts/$1" -type f | wc -l; else echo 0; fi
}

failed=()
for target in "${TARGETS[@]}"; do
  seed "$target"
  echo "== fuzz $target for ${SECONDS_EACH}s"
  before=$(findings "$target")
  # -malloc_limit_mb: an input that makes a parser allocate 512 MB at once is a finding
  # (unbounded allocation); -timeout: one that runs 10 s is a hang. The full output is kept
  # under /var/cache/pg_ask/fuzz/TARGET.log.
  cargo fuzz run --fuzz-dir fuzz "$target" "$CORPUS/$target" -- \
    -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=65536 -print_final_stats=1 \
    >"$CORPUS/../$target.log" 2>&1 || true
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|Test unit written)' "$CORPUS/../$target.log" || true
  echo "corpus: $(ls "$CORPUS/$target" | wc -l) inputs"
  if [ "$(findings "$target")" -gt "$before" ]; then
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "findings under fuzz/artifacts/ for: ${failed[*]}" >&2
  exit 1
fi
