#!/usr/bin/env bash
# Authenticated MCP tool calls (issue 4): requests per second and p50/p99
# latency of `tools/call list_flocks` at concurrency 1, 16 and 64, beside
# GET /healthz at the same concurrency, on SQLite and on PostgreSQL, and the
# server's peak resident memory (VmHWM from /proc) after each engine's runs.
#
#   bench/mcp.sh [seconds=10] [engines="sqlite postgres"] [wire=2025|2026]
#   BENCH_DEMO=1 bench/mcp.sh …   (the server started with --demo: memory with its members hashed)
#
# Targets (issue 4): tool calls at no less than 0.15 of the /healthz rate,
# at least 15 000/s on SQLite, under 80 MB peak RSS. For scale on 2 cores:
# rmcp alone (no auth, no database) 0.2–0.3 of /healthz.
#
# How: a fresh release Coop per engine with the per-grant MCP rate limit
# off (`--mcp-rate-limit 0 --mcp-subject-rate-limit 0`) and a test farm of 5 flocks made with the CLI;
# one real OAuth flow (tests/tools/get-token.py) gives an owner's access
# token for <issuer>/mcp with farm:read; wrk sends the same POST /mcp with
# it (bench/lua/mcp.lua). Each call is the full per-call check (JWT
# signature, audience, the store look-up of grant, user and farm) plus the
# tool's keyset-paged SQL. Any answer that is not a successful tool result
# marks the run invalid. The ratio line is calls/s over /healthz/s at the
# same concurrency. wrk and the server share the machine's cores.
# Builds nothing: run `cargo build --release` first, or point COOP_BIN at
# another build (the figures then say which binary they measured).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

seconds="${1:-10}"
engines="${2:-sqlite postgres}"
export BENCH_MCP_WIRE="${3:-2025}"
bench_require
trap bench_cleanup EXIT
bench_failed=0

echo "$COOP_BIN ($("$COOP_BIN" --version)), $(nproc) cores shared by wrk and the server, ${seconds}s per run, MCP wire $BENCH_MCP_WIRE"
for engine in $engines; do
  coop_start "$engine" --mcp-rate-limit 0 --mcp-subject-rate-limit 0 --access-token-ttl 3600
  BENCH_TOKEN="$(python3 "$ROOT/tests/tools/get-token.py" --issuer "$coop_url" --email "$coop_email" \
    --password-stdin --scope "farm:read" <<<"$coop_password" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
  export BENCH_TOKEN
  # One call by hand first, so a refusal is shown plainly rather than as errors.
  BENCH_LUA_DIR="$BENCH_DIR/lua" BENCH_THREADS=1 wrk -t1 -c1 -d1s -s "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp" \
    | grep -q ', 0 errors)' || {
      echo "a single tools/call failed:" >&2
      curl -sS -i -X POST "$coop_url/mcp" -H "Authorization: Bearer $BENCH_TOKEN" \
        -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H 'MCP-Protocol-Version: 2025-11-25' \
        -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_flocks","arguments":{}}}' >&2
      exit 1
    }
  echo "== $engine"
  for c in 1 16 64; do
    run_wrk "GET /healthz" "$c" "$seconds" "$BENCH_DIR/lua/get.lua" "$coop_url/healthz"
    h="$last_rps"
    run_wrk "tools/call list_flocks" "$c" "$seconds" "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp"
    echo "   calls / healthz at c=$c: $(awk -v m="$last_rps" -v h="$h" 'BEGIN { printf "%.2f", (h > 0 ? m / h : 0) }')"
  done
  echo "   $(coop_memory)"
  coop_stop
done
exit "$bench_failed"
