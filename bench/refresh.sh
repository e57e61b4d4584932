#!/usr/bin/env bash
# Refresh-token grants per second and their p50/p99 latency, beside GET
# /healthz at the same concurrency in the same run, on SQLite and on
# PostgreSQL (issue 3). For scale: Keycloak's sizing guide states about 120
# refreshes per second per vCPU.
#
#   bench/refresh.sh [connections=16] [seconds=10] [engines="sqlite postgres"]
#
# How: a fresh release Coop per engine (token rate limit off, a test farm
# made with the CLI), one real OAuth flow per wrk connection plus spares
# (tests/tools/get-token.py: one sign-in, then /authorize → code → /token,
# each exchange a refresh token of its own), then wrk posts
# `grant_type=refresh_token`. Refresh tokens rotate and a replayed one
# revokes its grant, so each connection spends a chain: the Lua script
# (bench/lua/refresh.lua) takes the refresh token out of each response and
# spends it in that connection's next request; nothing is ever replayed and
# only as many tokens as connections need minting. Every request in the
# measured run is a real, successful rotation (one conditional update, one
# insert, one ES256 signature); any non-200 answer marks the run invalid.
#
# wrk and the server share this machine's cores; the figures say so.
# PostgreSQL at $COOP_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432).
# Builds nothing: run `cargo build --release` first, or point COOP_BIN at
# another build (the figures then say which binary they measured).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

connections="${1:-16}"
seconds="${2:-10}"
engines="${3:-sqlite postgres}"
spares=32
bench_require
trap bench_cleanup EXIT
bench_failed=0

echo "$COOP_BIN ($("$COOP_BIN" --version)), $(nproc) cores shared by wrk and the server, ${seconds}s per run, $connections connections"
for engine in $engines; do
  coop_start "$engine" --token-rate-limit 0
  tokens="$bench_work/tokens-$engine"
  python3 "$ROOT/tests/tools/get-token.py" --issuer "$coop_url" --email "$coop_email" \
    --password-stdin --scope "farm:read" --count $((connections + spares)) --with-client-id \
    <<<"$coop_password" >"$tokens.json"
  python3 - "$tokens.json" >"$tokens" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(rows[0]["client_id"])
for row in rows:
    print(row["refresh_token"])
PY
  echo "== $engine ($(($(wc -l <"$tokens") - 1)) refresh chains)"
  run_wrk "GET /healthz" "$connections" "$seconds" "$BENCH_DIR/lua/get.lua" "$coop_url/healthz"
  BENCH_TOKENS="$tokens" run_wrk "POST /token refresh_token" "$connections" "$seconds" \
    "$BENCH_DIR/lua/refresh.lua" "$coop_url"
  echo "   $(coop_memory)"
  coop_stop
done
exit "$bench_failed"
