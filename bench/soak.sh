#!/usr/bin/env bash
# A ten-minute soak (issue 16): mixed traffic at about 80 % of the measured
# capacity against the release build, on SQLite and on PostgreSQL.
#
#   bench/soak.sh [minutes=10] [engines="sqlite postgres"]
#
# Traffic: wrk on 64 connections sends MCP tool calls (nine `list_flocks`
# reads to one `record_daily_entry` write, bench/lua/soak.lua), paced by a
# per-request delay computed from a 20-second capacity run at full speed
# and corrected after each minute towards 80 %;
# beside it bench/soak-side.py signs a person in with a fresh browser,
# approves the consent screen and exchanges the code about once a second
# (every tenth grant then disconnected at /revoke), and keeps a refresh
# chain rotating about four times a second.
# Prints per minute: calls/s and its share of capacity, p50 and p99, errors;
# then RSS after the first minute and at the end (target: growth under 5 %),
# the side traffic's counts, and the rows of every table at the end
# (bounded: expired codes, tokens and sessions are purged). Any error makes
# the exit status non-zero.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

minutes="${1:-10}"
engines="${2:-sqlite postgres}"
connections=64
bench_require
# Not `kill "${side_pid:-0}"`: pid 0 is this process group, the caller's too.
trap '[[ -z "${side_pid:-}" ]] || kill "$side_pid" 2>/dev/null || true; bench_cleanup' EXIT
bench_failed=0

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$coop_pid/status"; }

table_rows() {
  case "$1" in
    sqlite)
      python3 - "${coop_db#sqlite://}" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
names = [r[0] for r in db.execute("select name from sqlite_master where type='table' and name not like 'sqlite_%' and name not like '_sqlx%' order by name")]
counts = [(n, db.execute('select count(*) from "%s"' % n).fetchone()[0]) for n in names]
print("   rows: " + ", ".join(f"{n} {c}" for n, c in counts))
PY
      ;;
    postgres)
      psql "$coop_db" -At -c "select string_agg(format('%s %s', table_name,
          (xpath('/row/c/text()', query_to_xml(format('select count(*) as c from %I', table_name), false, true, '')))[1]::text), ', ' order by table_name)
        from information_schema.tables where table_schema = 'public' and table_name not like '\_sqlx%'" \
        | sed 's/^/   rows: /'
      ;;
  esac
}

echo "$COOP_BIN ($("$COOP_BIN" --version)), $(nproc) cores shared by the load and the server, $minutes min per engine"
for engine in $engines; do
  coop_start "$engine" --mcp-rate-limit 0 --mcp-subject-rate-limit 0 --access-token-ttl 7200
  BENCH_TOKEN="$(python3 "$ROOT/tests/tools/get-token.py" --issuer "$coop_url" --email "$coop_email" \
    --password-stdin --scope "farm:read daily-entries:write" <<<"$coop_password" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
  export BENCH_TOKEN
  echo "== $engine"
  BENCH_DELAY_MS=0 run_wrk "capacity (no pause)" "$connections" 20 "$BENCH_DIR/lua/soak.lua" "$coop_url/mcp"
  capacity="$last_rps"
  # Each connection's cycle is its pause plus the answer's time (about a
  # millisecond below capacity): 64 connections at 80 % of capacity.
  delay="$(awk -v c="$capacity" -v n="$connections" 'BEGIN { d = n * 1000 / (0.8 * c) - 1; if (d < 1) d = 1; printf "%d", d + 0.5 }')"
  echo "   capacity $capacity calls/s; pause ${delay} ms per request per connection"
  python3 "$BENCH_DIR/soak-side.py" "$coop_url" "$coop_email" <<<"$coop_password" >"$bench_work/side-$engine" 2>&1 &
  side_pid=$!
  rss_start=""
  for minute in $(seq 1 "$minutes"); do
    BENCH_DELAY_MS="$delay" run_wrk "minute $minute" "$connections" 60 "$BENCH_DIR/lua/soak.lua" "$coop_url/mcp"
    echo "   share of capacity: $(awk -v r="$last_rps" -v c="$capacity" 'BEGIN { printf "%.0f %%", 100 * r / c }')"
    # The side traffic shares the cores, so the first pause falls short of
    # 80 %: each minute moves the pause by the gap between the cycle it
    # took and the cycle 80 % needs.
    delay="$(awk -v d="$delay" -v r="$last_rps" -v c="$capacity" -v n="$connections" 'BEGIN { d += n * 1000 / (0.8 * c) - n * 1000 / r; if (d < 1) d = 1; printf "%d", d + 0.5 }')"
    [[ -n "$rss_start" ]] || rss_start="$(rss_kb)"
  done
  rss_end="$(rss_kb)"
  kill -TERM "$side_pid"
  side_status=0; wait "$side_pid" || side_status=$?
  side_pid=""
  echo "   side traffic (sign-ins with consent, refreshes, disconnects):"
  cat "$bench_work/side-$engine"
  (( side_status == 0 )) || bench_failed=1
  awk -v s="$rss_start" -v e="$rss_end" 'BEGIN { printf "   RSS after minute 1 %.1f MB, at the end %.1f MB, growth %+.1f %%\n", s/1024, e/1024, 100 * (e - s) / s }'
  echo "   $(coop_memory)"
  table_rows "$engine"
  coop_stop
done
exit "$bench_failed"
