#!/usr/bin/env bash
# What a crash loses: nothing that was acknowledged (issue 16). Kills a
# release `coop serve` with SIGKILL, again and again, while four clients
# record daily entries through `record_daily_entry` and two rotate refresh
# tokens; after each kill the server is started again on the same database
# and the database is checked against what the clients were told: every
# call answered 200 present as sent with its audit row, nothing
# half-written, no refresh-token family with two live tokens, no grant
# revoked, each client's last refresh token still good.
#
#   bench/crash.sh [runs per engine=50] [engines="sqlite postgres"]
#
# The clients and the checks are the CI test
# (tests/api/crash.rs::kill_9_loses_no_acknowledged_call_and_leaves_one_live_token_per_family,
# two kills per engine there), pointed at the release binary with more
# kills. It prints, per engine, the test's figure line:
#   crash runs: N on ENGINE, calls acknowledged: …, unanswered at the kills: …, lost: 0
# and fails if anything was lost. PostgreSQL at 127.0.0.1:5432 (or
# COOP_TEST_POSTGRES_URL), as for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-50}"
engines="${2:-sqlite postgres}"
target="${CARGO_TARGET_DIR:-target}"

cargo build --release --locked --quiet
binary="$target/release/coop"
echo "$binary ($("$binary" --version)), $(nproc) cores shared by the clients and the server, $runs kills per engine"

failed=0
for engine in $engines; do
  log="$(mktemp)"
  if COOP_CRASH_BIN="$binary" COOP_CRASH_RUNS="$runs" COOP_TEST_REQUIRE_POSTGRES=1 \
    cargo test --locked --quiet --test api -- --exact --nocapture \
    "crash::kill_9_loses_no_acknowledged_call_and_leaves_one_live_token_per_family::$engine" \
    >"$log" 2>&1; then
    grep '^crash runs:' "$log"
  else
    grep '^crash runs:' "$log" || true
    echo "FAILED on $engine:" >&2
    tail -40 "$log" >&2
    failed=1
  fi
  rm -f "$log"
done
exit "$failed"
