#!/usr/bin/env bash
# Threat 16, "a sign-in flood exhausting CPU": how `/mcp` answers while
# wrong passwords pour in. Prints tools/call list_flocks (calls/s, p50, p99)
# at concurrency 4 without a flood, then again during one, and the flood's
# own rate and answers (401: a wrong password checked with argon2id; 429:
# refused by the sign-in throttle before any hashing).
#
#   bench/signin-flood.sh [seconds=10] [engine=sqlite] [flood-threads=16]
#
# How: a fresh release Coop with the bench fixture (bench/lib.sh), one real
# OAuth flow for an owner's token, wrk on /mcp (bench/lua/mcp.lua).
# bench/signin-flood.py floods POST /login from 127.0.0.2–254 with made-up
# emails, so neither the per-account nor, for its burst, the per-address
# throttle stops it: every admitted attempt costs one argon2id verification
# (19 MiB, t=2) on the blocking pool, at most `password_hash_concurrency`
# (default: the number of cores) at once. wrk, the flood and the server
# share the machine's cores, which makes the flood a harsh one.
# Builds nothing: run `cargo build --release` first, or set COOP_BIN.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

seconds="${1:-10}"
engine="${2:-sqlite}"
flood_threads="${3:-16}"
bench_require
trap bench_cleanup EXIT
bench_failed=0

echo "$COOP_BIN ($("$COOP_BIN" --version)), $(nproc) cores shared by wrk, the flood and the server, ${seconds}s per run, $engine"
coop_start "$engine" --mcp-rate-limit 0 --mcp-subject-rate-limit 0 --access-token-ttl 3600
BENCH_TOKEN="$(python3 "$ROOT/tests/tools/get-token.py" --issuer "$coop_url" --email "$coop_email" \
  --password-stdin --scope "farm:read" <<<"$coop_password" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
export BENCH_TOKEN
export BENCH_MCP_WIRE=2025

run_wrk "warm-up" 4 2 "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp" >/dev/null
run_wrk "tools/call, no flood" 4 "$seconds" "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp"
quiet="$last_rps"

flood_out="$bench_work/flood.out"
python3 "$BENCH_DIR/signin-flood.py" "$coop_url" "$((seconds + 4))" "$flood_threads" >"$flood_out" &
flood_pid=$!
sleep 2
run_wrk "tools/call, during flood" 4 "$seconds" "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp"
wait "$flood_pid"
echo "   $(cat "$flood_out")"
echo "   calls during the flood / calls without: $(awk -v a="$last_rps" -v b="$quiet" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
echo "   $(coop_memory)"
exit "$bench_failed"
