#!/usr/bin/env bash
# Coop beside the official MCP SDK servers doing the same job, in the same
# run (issue 14: Coop at no less than 4x the best of them): authenticated
# `tools/call list_flocks` per second at 16 and 64 connections.
#
#   bench/sdk.sh [seconds=10] [wire=2025|2026] [servers="coop python ts-v2 ts-v1"]
#
# (ts-v1 is left out of the default list on the 2026 wire, which it does not speak.)
#
# SDK_BENCH_JWT_CACHE=1 lets the SDK servers keep a verified token's claims
# until its exp, the shortcut Coop's verified-signature cache takes (off by
# default: the SDK servers then check ES256 on every call).
#
# The servers (each gets the same POST /mcp, bench/lua/mcp.lua, from wrk):
# - coop: the release binary on SQLite with a test farm of 5 flocks made by
#   the CLI (bench/lib.sh), per-grant rate limit off; its token comes from
#   the real OAuth flow (tests/tools/get-token.py). Per call: bearer token,
#   ES256 (or its verified-signature cache), iss/aud/exp, one store look-up
#   (grant, user, membership, farm, revoked jti), the tool's SQL.
# - python: the official Python SDK, mcp 2.3.0 (bench/sdk/python_server.py),
#   MCPServer, stateless Streamable HTTP with JSON responses, uvicorn with 2
#   workers, uvloop and httptools, no access log.
# - ts-v2: the official TypeScript SDK v2, @modelcontextprotocol/server 2.4.0
#   with @modelcontextprotocol/node 2.1.2 (bench/sdk/ts_server.mjs), Node 22,
#   2 processes (node:cluster on one port), stateless, JSON responses.
# - ts-v1: the same file on @modelcontextprotocol/sdk 1.32.2 (2025 wire only).
# Each SDK server does what Coop does per call: verifies the ES256 JWT
# (signature against a JWKS read once at start, iss, aud, exp; PyJWT or
# jose), runs Coop's own per-call SQL on a SQLite database of the same
# shape (bench/sdk/queries.json; grant, user, membership, farm, revoked jti,
# joins by primary key), decides it as Coop does (revoked, epoch, disabled,
# suspended, scopes), and answers list_flocks from SQLite with the same
# five rows, the same text and structuredContent (the same 1,1xx-byte
# body). bench/sdk/fixture.py makes their database and key pair and mints
# their tokens, with Coop's claim set. Before wrk, each server is checked by
# curl: the answer must carry the five flocks, and tokens it must refuse
# (another key, expired, another audience, a revoked grant: only the SQLite
# look-up catches that one; for Coop a forged signature) must get 401.
#
# Why it is fair: same body, same token size and claims, same SQL, same
# rows, same answer, same machine and same wrk in the same run; every
# server's runs alternate within each concurrency so a change in the
# machine's load falls on all of them. The SDK servers get the advantages a
# tuned deployment has: 2 processes for the 2 cores, read-only SQLite with
# statements prepared once, no logging, JSON instead of SSE, the fastest
# event loop and HTTP parser each SDK can run on, no output-schema
# validation. Coop is one process. They do less than Coop in places: no
# last-used write, no rate limiter, no request ids or security headers, and
# the TypeScript servers no Host/Origin check. Beside calls/s, each run
# prints the server's CPU time per call (its processes' user + system time
# over the run / calls), which a loaded machine disturbs less.
#
# Installs on first use, into ${COOP_TOOLS_CACHE:-~/.cache/coop-tools},
# outside the clone: a venv with the Python packages and, with Node 22 from
# tests/tools/node22.sh, the npm packages, at the versions pinned below.
# Builds nothing: run `cargo build --release` first, or point COOP_BIN at a
# build. wrk and every server share the machine's cores; the load average
# is printed before and after.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

seconds="${1:-10}"
export BENCH_MCP_WIRE="${2:-2025}"
# SDK 1.32.2 knows no 2026-07-28, so it sits that wire out by default.
servers="${3:-coop python ts-v2$([[ $BENCH_MCP_WIRE == 2026 ]] || echo ' ts-v1')}"
export SDK_BENCH_JWT_CACHE="${SDK_BENCH_JWT_CACHE:-0}"

PY_MCP=2.3.0
PY_PACKAGES=("mcp==$PY_MCP" "PyJWT[crypto]==2.15.1" "uvloop==0.23.0" "httptools==0.9.0" "uvicorn==0.54.0")
TS_SERVER=2.4.0
TS_NODE=2.1.2
TS_SDK_V1=1.32.2
NPM_PACKAGES=("@modelcontextprotocol/server@$TS_SERVER" "@modelcontextprotocol/node@$TS_NODE"
  "@modelcontextprotocol/sdk@$TS_SDK_V1" "jose@6.2.17" "better-sqlite3@12.11.1")
TOOLS="${COOP_TOOLS_CACHE:-$HOME/.cache/coop-tools}"
ISSUER="https://sdk-bench.example"
AUDIENCE="$ISSUER/mcp"

sdk_python() {
  local venv="$TOOLS/python-mcp-$PY_MCP-sdkbench"
  if [[ ! -f "$venv/.installed" ]]; then
    echo "installing the Python SDK server's packages into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_PACKAGES[@]}" >&2
    touch "$venv/.installed"
  fi
  echo "$venv/bin/python"
}

sdk_node_modules() {
  local dir="$TOOLS/node-sdkbench-server-$TS_SERVER-sdk-$TS_SDK_V1"
  if [[ ! -f "$dir/.installed" ]]; then
    echo "installing the TypeScript SDK servers' packages into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    echo '{"name":"coop-bench-sdk","private":true}' >"$dir/package.json"
    # better-sqlite3 compiles against Node 22's own headers (node22.sh's
    # package ships them), not the machine's Node 20.
    npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")" \
      npm install --prefix "$dir" --no-audit --no-fund --silent --save-exact "${NPM_PACKAGES[@]}" >&2
    (cd "$dir" && node -e "require('better-sqlite3')(':memory:')") >&2
    touch "$dir/.installed"
  fi
  echo "$dir"
}

declare -A url token label pid
sdk_refused=()

wait_listening() {
  local name="$1" log="$2"
  for _ in $(seq 1 150); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "${url[$name]}" 2>/dev/null)" == 401 ]] && return 0
    sleep 0.1
  done
  echo "$name did not come up; log:" >&2
  cat "$log" >&2
  exit 1
}

# The same request mcp.lua sends, by curl: prints the HTTP status, then the body.
call_once() {
  local target="$1" bearer="$2" meta="" headers=()
  if [[ "$BENCH_MCP_WIRE" == 2026 ]]; then
    headers=(-H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: list_flocks')
    meta=',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}'
  else
    headers=(-H 'MCP-Protocol-Version: 2025-11-25')
  fi
  curl -sS -o "$bench_work/answer" -w '%{http_code}\n' -X POST "$target" \
    -H "Authorization: Bearer $bearer" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' "${headers[@]}" \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_flocks","arguments":{}'"$meta"'}}'
  cat "$bench_work/answer"
}

# One good call must list the five flocks; each refused token must get 401.
check_server() {
  local name="$1"; shift
  local answer
  answer="$(call_once "${url[$name]}" "${token[$name]}")"
  python3 -c '
import json, sys
status, _, body = sys.argv[1].partition("\n")
assert status == "200", f"status {status}: {body}"
result = json.loads(body)["result"]
names = [f["name"] for f in result["structuredContent"]["flocks"]]
assert names == [f"Flock {n}" for n in range(1, 6)], names
assert not result.get("isError") and "Flock 5 (House 1): ISA Brown" in result["content"][0]["text"]
' "$answer" || { echo "$name: the good token did not get the five flocks" >&2; exit 1; }
  local refused=() bad status
  for bad in "$@"; do
    status="$(call_once "${url[$name]}" "$bad")"
    status="${status%%$'\n'*}"
    [[ "$status" == 401 ]] || { echo "$name: a token it must refuse got $status" >&2; exit 1; }
    refused+=("$status")
  done
  echo "   checked $name: five flocks for the good token, 401 for ${#refused[@]} bad ones"
}

# CPU time (user + system, clock ticks) of a server's process and its
# children (uvicorn's and node's workers) so far.
cpu_ticks() {
  local p total=0 stat
  for p in "$1" $(pgrep -P "$1" || true); do
    stat="$(cat "/proc/$p/stat" 2>/dev/null)" || continue
    stat="${stat##*) }"
    total=$(( total + $(awk '{print $12 + $13}' <<<"$stat") ))
  done
  echo "$total"
}

stop_servers() {
  local name
  for name in "${!pid[@]}"; do
    kill -TERM "${pid[$name]}" 2>/dev/null || true
    wait "${pid[$name]}" 2>/dev/null || true
  done
  pid=()
}

cleanup() {
  stop_servers
  bench_cleanup
}

BENCH_CPU_LINE=0
bench_require
trap cleanup EXIT
bench_failed=0
wants() { [[ " $servers " == *" $1 "* ]]; }

if wants python || wants ts-v2 || wants ts-v1; then
  "$(sdk_python)" "$BENCH_DIR/sdk/fixture.py" "$bench_work" "$ISSUER" "$AUDIENCE" >"$bench_work/tokens.json"
  sdk_token() { python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); print(t["good"] if sys.argv[2] == "good" else t["refused"][sys.argv[2]])' "$bench_work/tokens.json" "$1"; }
  sdk_refused=("$(sdk_token 'another key')" "$(sdk_token expired)" "$(sdk_token 'another audience')" "$(sdk_token 'revoked grant')")
  export SDK_BENCH_DIR="$bench_work" SDK_BENCH_ISSUER="$ISSUER" SDK_BENCH_AUDIENCE="$AUDIENCE"
fi
if wants ts-v2 || wants ts-v1; then
  PATH="$("$ROOT/tests/tools/node22.sh"):$PATH"
  export SDK_BENCH_NODE_DIR; SDK_BENCH_NODE_DIR="$(sdk_node_modules)"
fi

echo "$COOP_BIN ($("$COOP_BIN" --version)), $(nproc) cores shared by wrk and every server, ${seconds}s per run, MCP wire $BENCH_MCP_WIRE, SDK JWT cache $([[ $SDK_BENCH_JWT_CACHE == 1 ]] && echo on || echo off)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

if wants coop; then
  coop_start sqlite --mcp-rate-limit 0 --mcp-subject-rate-limit 0 --access-token-ttl 3600
  url[coop]="$coop_url/mcp"
  pid[coop]="$coop_pid"
  label[coop]="coop (1 process)"
  token[coop]="$(python3 "$ROOT/tests/tools/get-token.py" --issuer "$coop_url" --email "$coop_email" \
    --password-stdin --scope "farm:read" <<<"$coop_password" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
  # A forged signature: the same token with its signature's first character changed.
  sig="${token[coop]##*.}"
  forged="${token[coop]%.*}.$([[ "${sig:0:1}" == A ]] && echo B || echo A)${sig:1}"
  check_server coop "$forged" ${sdk_refused[0]:+"${sdk_refused[0]}"}
fi
if wants python; then
  port="$(free_port)"
  url[python]="http://127.0.0.1:$port/mcp"
  label[python]="python mcp $PY_MCP (2 workers)"
  token[python]="$(sdk_token good)"
  (cd "$BENCH_DIR/sdk" && exec "$(sdk_python)" -m uvicorn python_server:app --workers 2 --loop uvloop \
    --http httptools --no-access-log --log-level warning --host 127.0.0.1 --port "$port") \
    >"$bench_work/python.log" 2>&1 &
  pid[python]=$!
  wait_listening python "$bench_work/python.log"
  check_server python "${sdk_refused[@]}"
fi
for v in v2 v1; do
  wants "ts-$v" || continue
  port="$(free_port)"
  url[ts-$v]="http://127.0.0.1:$port/mcp"
  label[ts-$v]="ts $([[ $v == v2 ]] && echo "server $TS_SERVER" || echo "sdk $TS_SDK_V1") (2 procs)"
  token[ts-$v]="$(sdk_token good)"
  SDK_BENCH_TS_SDK="$v" SDK_BENCH_PORT="$port" SDK_BENCH_WORKERS=2 node "$BENCH_DIR/sdk/ts_server.mjs" \
    >"$bench_work/ts-$v.log" 2>&1 &
  pid[ts-$v]=$!
  wait_listening "ts-$v" "$bench_work/ts-$v.log"
  check_server "ts-$v" "${sdk_refused[@]}"
done

for c in 16 64; do
  echo "== tools/call list_flocks, $c connections"
  best=0 best_name="" coop_rps=0
  for name in $servers; do
    export BENCH_TOKEN="${token[$name]}"
    before="$(cpu_ticks "${pid[$name]}")"
    run_wrk "${label[$name]}" "$c" "$seconds" "$BENCH_DIR/lua/mcp.lua" "${url[$name]}"
    ticks=$(( $(cpu_ticks "${pid[$name]}") - before ))
    echo "   ${name}'s CPU time: $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v r="$last_rps" -v s="$seconds" \
      'BEGIN { printf "%.0f us per call (%.2f s over the run)", (r > 0 ? t / hz / (r * s) * 1e6 : 0), t / hz }')"
    if [[ "$name" == coop ]]; then
      coop_rps="$last_rps"
    elif awk -v a="$last_rps" -v b="$best" 'BEGIN { exit !(a > b) }'; then
      best="$last_rps" best_name="${label[$name]}"
    fi
  done
  if wants coop && [[ -n "$best_name" ]]; then
    echo "   coop / best SDK server ($best_name) at c=$c: $(awk -v m="$coop_rps" -v b="$best" 'BEGIN { printf "%.2f", (b > 0 ? m / b : 0) }') (target >= 4)"
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$bench_failed"
