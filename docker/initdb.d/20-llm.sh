#!/usr/bin/env bash
# First start of the image: the LLM server pg_ask talks to, from the container's environment,
# set server-wide (ALTER SYSTEM), where ask.api_key may be set (the library is preloaded).
#   ASK_BASE_URL   e.g. http://llm:8080/v1 (the compose file's llama.cpp server)
#   ASK_MODEL      e.g. smollm2
#   ASK_PROVIDER   openai (the default), anthropic or ollama
#   ASK_API_KEY    for a hosted service; never needed by a local server
set -euo pipefail
set_ask() {
  [ -n "$2" ] || return 0
  # (psql interpolates variables in what it reads, not in -c.)
  echo "ALTER SYSTEM SET ask.$1 = :'value'" | psql -X -q -v ON_ERROR_STOP=1 -d postgres -v value="$2"
  echo "pg_ask: ask.$1 set"
}
set_ask base_url "${ASK_BASE_URL:-}"
set_ask model "${ASK_MODEL:-}"
set_ask provider "${ASK_PROVIDER:-}"
set_ask api_key "${ASK_API_KEY:-}"
psql -X -q -d postgres -c "SELECT pg_reload_conf()" >/dev/null
