# Sourced by test and benchmark drivers: the stand-in LLM on a free port.
#   source scripts/standin.sh; standin_start SCRIPT DIR
# Starts $CARGO_TARGET_DIR/debug/llm-standin (built by the caller) answering from SCRIPT, with its
# port file and log in DIR; waits for it (10 s) or prints its log and fails. Sets STANDIN_PID
# (for the caller's cleanup) and STANDIN_URL (http://127.0.0.1:PORT).
STANDIN_PID=
STANDIN_URL=

standin_start() {
  local script=$1 dir=$2
  "$CARGO_TARGET_DIR/debug/llm-standin" --port 0 --port-file "$dir/standin.port" --script "$script" >"$dir/standin.log" 2>&1 &
  STANDIN_PID=$!
  for _ in $(seq 100); do [ -s "$dir/standin.port" ] && break; sleep 0.1; done
  if ! [ -s "$dir/standin.port" ]; then
    echo "the stand-in LLM did not start:" >&2
    cat "$dir/standin.log" >&2
    return 1
  fi
  STANDIN_URL="http://127.0.0.1:$(cat "$dir/standin.port")"
}
