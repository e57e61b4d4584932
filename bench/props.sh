#!/usr/bin/env bash
# The long run of the property tests (issue 16): every property of the
# parsers that read untrusted input (src/oauth/props.rs, src/mcp/props.rs,
# src/oauth/dpop/props.rs, src/oauth/client_assertion/props.rs),
# each with PROPTEST_CASES cases (default one million), and the count each
# ran, read from the test harness's own output.
#
#   bench/props.sh [cases=1000000]
#
# CI runs the same properties with proptest's default of 256 cases, inside
# `cargo test`. A failing case is shrunk by proptest and printed, its seed
# saved under proptest-regressions/ (commit it: every later run, CI's too,
# tries that case first); the run then exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

cases="${1:-1000000}"
export PROPTEST_CASES="$cases"
filters=(oauth::props mcp::props oauth::dpop::props oauth::client_assertion::props)
echo "$(date -u +%FT%TZ) property tests, $cases cases per property, release profile (opt-level 3, debug assertions off)"
cargo test --release --lib --locked --no-run 2>&1 | tail -1
for filter in "${filters[@]}"; do
  start=$(date +%s)
  out=$(cargo test --release --lib --locked -q "$filter" -- --test-threads 2 2>&1) || { echo "$out"; exit 1; }
  passed=$(grep -o '[0-9]* passed' <<<"$out" | head -1)
  echo "$filter: $passed properties x $cases cases, $(( $(date +%s) - start )) s"
  cargo test --release --lib --locked -q "$filter" -- --list 2>/dev/null | sed -n 's/: test$//p' | sed 's/^/   /'
done
