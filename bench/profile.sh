#!/usr/bin/env bash
# Where the time of an authenticated `tools/call list_flocks` goes: a
# sampling profile (perf, 999 Hz, call graphs) of a release Coop while wrk
# sends the same call at 16 connections, printed as the top symbols and a
# breakdown by area (kernel, TLS-free HTTP, rmcp and JSON, ES256, SQLite,
# the allocator).
#
#   bench/profile.sh [seconds=10] [engine=sqlite]
#
# Needs perf (Debian's linux-perf; installed on first use) and a release
# build (`cargo build --release`, or COOP_BIN). wrk shares the cores, so the
# profile is of the server as it runs under load, not alone.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

seconds="${1:-10}"
engine="${2:-sqlite}"
bench_require
command -v perf >/dev/null || apt-get install -y -q linux-perf >/dev/null
trap bench_cleanup EXIT

coop_start "$engine" --mcp-rate-limit 0 --mcp-subject-rate-limit 0 --access-token-ttl 3600
BENCH_TOKEN="$(python3 "$ROOT/tests/tools/get-token.py" --issuer "$coop_url" --email "$coop_email" \
  --password-stdin --scope "farm:read" <<<"$coop_password" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
export BENCH_TOKEN BENCH_LUA_DIR="$BENCH_DIR/lua" BENCH_MCP_WIRE=2025

# Warm up (the signature cache, prepared statements), then profile.
wrk -t2 -c16 -d2s -s "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp" >/dev/null
perf record -q -F 999 -g -p "$coop_pid" -o "$bench_work/perf.data" -- sleep "$seconds" &
perf_pid=$!
wrk -t2 -c16 -d"${seconds}s" -s "$BENCH_DIR/lua/mcp.lua" "$coop_url/mcp" | grep -E "Requests/sec|errors" || true
wait "$perf_pid" || true

report="$bench_work/report.txt"
perf report -i "$bench_work/perf.data" --no-children --sort symbol --stdio 2>/dev/null \
  | grep -E '^ +[0-9.]+%' | sed -E 's/[[:space:]]+-[[:space:]]+-[[:space:]]*$//; s/[[:space:]]+$//' > "$report" || true
echo "== top symbols ($engine, c=16, ${seconds}s, self time)"
head -25 "$report" | cut -c1-110
echo "== by area"
python3 - "$report" <<'PY'
import re, sys
areas = [
    ("kernel (syscalls, scheduling, network)", r"\[k\]"),
    ("SQLite", r"sqlite3|sqlite3Vdbe|pcache|btree|Btree|Pager|vdbe"),
    ("ES256 / SHA-256 (aws-lc)", r"aws_lc|ec_|p256|sha256|bn_|ecp_|EC_|SHA256"),
    ("allocator", r"malloc|free|realloc|_int_|cfree|arena"),
    ("JSON (serde_json)", r"serde_json|serde::"),
    ("rmcp", r"rmcp"),
    ("hyper / HTTP", r"hyper|http::|httparse|h2::"),
    ("tokio", r"tokio"),
    ("PostgreSQL client (sqlx)", r"sqlx"),
]
totals = {name: 0.0 for name, _ in areas}
other = 0.0
for line in open(sys.argv[1]):
    m = re.match(r"\s+([0-9.]+)%\s+(.*)", line)
    if not m:
        continue
    pct, sym = float(m.group(1)), m.group(2)
    for name, pattern in areas:
        if re.search(pattern, sym):
            totals[name] += pct
            break
    else:
        other += pct
for name, _ in areas:
    print(f"   {totals[name]:5.1f} %  {name}")
print(f"   {other:5.1f} %  everything else (Coop's own code, axum, tower, std)")
PY
coop_stop
