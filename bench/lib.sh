# Shared by the bench scripts (sourced, not run): wrk, a fresh Coop on
# either engine with a test farm, and a clean stop.
#
# After `coop_start ENGINE [serve flags…]`: $coop_pid, $coop_url, $coop_db,
# $coop_email, $coop_password (and $coop_slug, the fixture farm's). With BENCH_DEMO=1 the database starts empty
# and the server runs with `--demo` (its four members' passwords hashed at
# start-up); the owner it prints is the one signed in. `coop_stop` ends the server and drops a
# PostgreSQL database it made. Linux only (/proc for memory).

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
COOP_BIN="${COOP_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/coop}"
PG_URL="${COOP_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432}"

bench_require() {
  [[ -x "$COOP_BIN" ]] || { echo "no release binary at $COOP_BIN; run cargo build --release" >&2; exit 1; }
  if ! command -v wrk >/dev/null; then
    echo "installing wrk" >&2
    apt-get install -y -q wrk >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q wrk >/dev/null; }
  fi
  bench_work="$(mktemp -d)"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

coop_cli() {
  COOP_DATABASE_URL="$coop_db" RUST_LOG=warn "$COOP_BIN" "$@"
}

# A farm, a house, 5 flocks and an owner, through the real CLI.
coop_fixture() {
  local slug
  slug="$(coop_cli admin farm add --name "Bench Farm")"
  coop_slug="$slug"
  coop_cli admin house add --farm "$slug" --name "House 1" >/dev/null
  for n in 1 2 3 4 5; do
    coop_cli admin flock add --farm "$slug" --house "House 1" --name "Flock $n" \
      --breed "ISA Brown" --placed 2026-01-15 --head-count 1200 >/dev/null
  done
  coop_email="owner@bench.example"
  coop_password="bench password $(date +%s)"
  printf '%s' "$coop_password" | coop_cli admin user add --farm "$slug" \
    --email "$coop_email" --role owner --password-stdin >/dev/null
}

coop_start() {
  local engine="$1"; shift
  local port; port="$(free_port)"
  case "$engine" in
    sqlite) coop_db="sqlite://$bench_work/coop-$port.db"; coop_pgdb="" ;;
    postgres)
      coop_pgdb="coop_bench_$$_$port"
      psql "$PG_URL/postgres" -q -c "create database $coop_pgdb" >/dev/null
      coop_db="$PG_URL/$coop_pgdb" ;;
    *) echo "unknown engine $engine" >&2; exit 1 ;;
  esac
  local demo=()
  if [[ "${BENCH_DEMO:-0}" == 1 ]]; then demo=(--demo); else coop_fixture; fi
  COOP_DATABASE_URL="$coop_db" RUST_LOG=warn "$COOP_BIN" serve --bind "127.0.0.1:$port" "${demo[@]}" "$@" \
    >"$bench_work/coop-$port.log" 2>&1 &
  coop_pid=$!
  coop_url="http://127.0.0.1:$port"
  for _ in $(seq 1 100); do
    if curl -fsS "$coop_url/readyz" >/dev/null 2>&1; then
      if [[ "${BENCH_DEMO:-0}" == 1 ]]; then
        read -r coop_email coop_password < <(awk '$1 == "owner" {print $2, $3}' "$bench_work/coop-$port.log")
        [[ -n "$coop_email" ]] || { echo "--demo printed no owner:" >&2; cat "$bench_work/coop-$port.log" >&2; exit 1; }
      fi
      return 0
    fi
    sleep 0.1
  done
  echo "coop not ready; log:" >&2; cat "$bench_work/coop-$port.log" >&2; exit 1
}

coop_stop() {
  if [[ -n "${coop_pid:-}" ]]; then
    kill -TERM "$coop_pid" 2>/dev/null || true
    wait "$coop_pid" 2>/dev/null || true
    coop_pid=""
  fi
  if [[ -n "${coop_pgdb:-}" ]]; then
    psql "$PG_URL/postgres" -q -c "drop database if exists $coop_pgdb" >/dev/null 2>&1 || true
    coop_pgdb=""
  fi
}

bench_cleanup() {
  coop_stop
  [[ -n "${bench_work:-}" ]] && rm -rf "$bench_work"
}

# Peak and current resident memory of the server, from /proc.
coop_memory() {
  awk '/^VmHWM/ {h=$2} /^VmRSS/ {r=$2} END {printf "peak RSS (VmHWM) %.1f MB, RSS now %.1f MB\n", h/1024, r/1024}' \
    "/proc/$coop_pid/status"
}

# wrk with the reporting Lua; prints one line:
#   <label> c=<connections> <rps> req/s p50 <ms> p99 <ms> (<n> requests, <e> errors)
# and leaves the rate in $last_rps and the p99 (ms) in $last_p99; a run with
# errors sets $bench_failed.
# Usage: run_wrk LABEL CONNECTIONS DURATION SCRIPT URL
run_wrk() {
  local label="$1" c="$2" d="$3" script="$4" url="$5"
  local t=2; (( c < 2 )) && t=1
  local out before after
  before="$(bench_cpu_ticks)"
  out="$(BENCH_THREADS="$t" BENCH_LUA_DIR="$BENCH_DIR/lua" wrk -t"$t" -c"$c" -d"${d}s" --timeout 5s -s "$script" "$url")"
  after="$(bench_cpu_ticks)"
  local result; result="$(grep '^RESULT' <<<"$out" || true)"
  [[ -n "$result" ]] || { echo "$out" >&2; echo "wrk printed no RESULT line" >&2; exit 1; }
  printf '%-28s c=%-3s %s\n' "$label" "$c" "${result#RESULT }"
  last_rps="$(awk '{print $2}' <<<"$result")"
  last_p99="$(awk '{for (i = 1; i < NF; i++) if ($i == "p99") print $(i + 1)}' <<<"$result")"
  # bench/sdk.sh measures each of its servers' CPU itself.
  [[ "${BENCH_CPU_LINE:-1}" == 1 ]] &&
    bench_cpu_per_request "$before" "$after" "$(awk '{gsub(/\(/, "", $(NF-3)); print $(NF-3)}' <<<"$result")"
  if ! grep -q ', 0 errors)' <<<"$result"; then
    echo "  ^ errors: the figures above are not valid" >&2
    bench_failed=1
  fi
}

# CPU time (clock ticks) of the server, of the PostgreSQL processes, and of
# the whole machine (busy time from /proc/stat), as
# "coop machine pid:ticks,pid:ticks…" (the PostgreSQL processes one by one,
# so that one that starts or ends during a run is counted only for its part).
# CPU per request is steadier than requests per second when the machine is
# shared, and it says where a request's time goes (the server, the database
# server, or the load generator and kernel).
bench_cpu_ticks() {
  local coop=0 pg="" pid t
  [[ -n "${coop_pid:-}" && -r "/proc/$coop_pid/stat" ]] &&
    coop="$(awk '{print $14 + $15}' "/proc/$coop_pid/stat")"
  for pid in $(pgrep -x postgres || true); do
    t="$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null)" && pg+="$pid:$t,"
  done
  echo "$coop $(awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat) ${pg:-none}"
}

# Prints CPU microseconds per request between two bench_cpu_ticks readings.
# Usage: bench_cpu_per_request BEFORE AFTER REQUESTS
bench_cpu_per_request() {
  local hz; hz="$(getconf CLK_TCK)"
  awk -v b="$1" -v a="$2" -v n="$3" -v hz="$hz" 'BEGIN {
    split(b, x, " "); split(a, y, " ");
    if (n <= 0) exit;
    pb = split(x[3], before, ","); for (i = 1; i <= pb; i++) { split(before[i], kv, ":"); was[kv[1]] = kv[2] }
    pa = split(y[3], after, ","); pg = 0
    for (i = 1; i <= pa; i++) { split(after[i], kv, ":"); if (kv[1] != "" && kv[1] != "none") pg += kv[2] - ((kv[1] in was) ? was[kv[1]] : 0) }
    f = 1e6 / hz / n;
    printf "   cpu per request: server %.0f us, postgres %.0f us, machine %.0f us\n",
      (y[1] - x[1]) * f, pg * f, (y[2] - x[2]) * f
  }'
}
