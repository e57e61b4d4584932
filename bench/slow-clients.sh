#!/usr/bin/env bash
# Threats 45 and 46 (issue 31, items 1 and 2): slow and idle clients from
# one network, and another member's tool calls meanwhile. Prints
# tools/call list_flocks (calls/s, p50, p99) at concurrency 4 on a quiet
# server, then again while one network holds SLOW slow-bodied tools/call
# requests and IDLE idle kept-alive connections, the attack's own account
# of what it held, and the p99 under attack over the quiet one. On SQLite
# and PostgreSQL.
#
#   bench/slow-clients.sh [seconds=10] [engines="sqlite postgres"] [slow=64] [idle=500] [serve flags…]
#   bench/slow-clients.sh 10 sqlite 64 500 --max-connections-per-network 0
#     (no share per network: the server's cap and its closing of idle
#     connections alone)
#
# Target (issue 37 item 5): 64 slow-bodied calls and 500 idle connections
# from one network change another member's tools/call p99 by less than
# 20 % (a ratio under 1.20).
#
# How: a fresh release Coop per engine with the bench fixture (bench/lib.sh)
# plus a viewer, default connection settings (512 connections, 128 per
# network, 20 s body timeout) and the MCP rate limits off for the measured
# member (`--mcp-rate-limit 0 --mcp-subject-rate-limit 0`); one real OAuth
# flow each for the owner (measured, wrk from 127.0.0.1,
# bench/lua/mcp.lua) and the viewer (the attacker, whose good token the slow
# calls carry). bench/slow-clients.py runs the attack from 127.0.0.2 (Linux
# routes 127/8 to the loopback interface): the slow calls first, then the
# idle connections, and holds them through the measured run, opening a slow
# call again when the server ends one. wrk, the attack and the server share
# the machine's cores. Builds nothing: run `cargo build --release` first, or
# set COOP_BIN.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

seconds="${1:-10}"
engines="${2:-sqlite postgres}"
slow="${3:-64}"
idle="${4:-500}"
shift $(( $# < 4 ? $# : 4 ))
bench_require
trap bench_cleanup EXIT
bench_failed=0
export BENCH_MCP_WIRE=2025

token_of() {
  python3 "$ROOT/tests/tools/get-token.py" --issuer "$coop_url" --email "$1" \
    --password-stdin --scope "farm:read" <<<"$2" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}

echo "$COOP_BIN ($("$COOP_BIN" --version)), $(nproc) cores shared by wrk, the attack and the server, ${seconds}s per run, serve flags: ${*:-none}, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for engine in $engines; do
  coop_start "$engine" --mcp-rate-limit 0 --mcp-subject-rate-limit 0 --access-token-ttl 3600 "$@"
  viewer_password="bench viewer $(date +%s)"
  printf '%s' "$viewer_password" | coop_cli admin user add --farm "$coop_slug" \
    --email viewer@bench.example --role viewer --password-stdin >/dev/null
  BENCH_TOKEN="$(token_of "$coop_email" "$coop_password")"
  export BENCH_TOKEN
  attacker_token="$(token_of viewer@bench.example "$viewer_password")"

  echo "== $engine"
  run_wrk "warm-up" 4 2 "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp" >/dev/null
  run_wrk "tools/call, quiet" 4 "$seconds" "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp"
  quiet_p99="$last_p99"

  attack_out="$bench_work/attack-$engine.out"
  python3 "$BENCH_DIR/slow-clients.py" "$coop_url" "$attacker_token" "$((seconds + 8))" "$slow" "$idle" \
    >"$attack_out" &
  attack_pid=$!
  # The attack's connections are all open before the measured run starts.
  sleep 5
  run_wrk "tools/call, under attack" 4 "$seconds" "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp"
  attacked_p99="$last_p99"
  wait "$attack_pid"
  echo "   $(cat "$attack_out")"
  echo "   p99 under attack / quiet: $(awk -v a="$attacked_p99" -v q="$quiet_p99" 'BEGIN { printf "%.2f", (q > 0 ? a / q : 0) }') (target < 1.20)"
  echo "   $(coop_memory)"
  coop_stop
done
exit "$bench_failed"
