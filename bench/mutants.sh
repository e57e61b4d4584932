#!/usr/bin/env bash
# Mutation testing of the authorization paths (issue 16) with cargo-mutants:
# each mutant is a deliberate bug (a condition flipped, a check skipped, a
# value replaced); a mutant the tests do not notice is a missing test.
# Prints, per module, mutants caught, missed, unviable and timed out, and
# the score (caught / (caught + missed)); target at least 95 %.
#
#   bench/mutants.sh [module…]      default: every module below
#
# Modules: src/oauth/ (protocol code), src/mcp/bearer.rs, the /mcp guard
# (src/http/mcp/guard.rs), the per-call store look-up
# (src/storage/call_context.rs) and src/identity/. Each mutant runs the
# library's unit tests and the integration suite on SQLite only
# (`COOP_TEST_POSTGRES_URL` pointed at nothing reachable would fail them, so
# PostgreSQL tests are skipped by leaving COOP_TEST_REQUIRE_POSTGRES unset
# and pointing the URL at a closed port): both engines run one SQL text,
# so the engine does not change which mutant a test catches. Not part of
# CI: a full run takes hours on 2 cores. Mutants known to be equivalent are
# listed with a reason in .cargo/mutants-equivalent.txt and excluded.
# Needs `cargo install cargo-mutants`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || { echo "cargo install cargo-mutants --locked" >&2; exit 1; }

modules=("$@")
[[ ${#modules[@]} -gt 0 ]] || modules=(src/oauth src/mcp/bearer.rs src/http/mcp/guard.rs src/storage/call_context.rs src/identity)
out="${MUTANTS_OUT:-$(mktemp -d)}"
export COOP_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:1/postgres"
exclude=()
if [[ -f .cargo/mutants-equivalent.txt ]]; then
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    exclude+=(--exclude-re "${line%% #*}")
  done < .cargo/mutants-equivalent.txt
fi
printf '%-32s %7s %7s %9s %8s %7s\n' module caught missed unviable timeout score
for module in "${modules[@]}"; do
  dir="$out/$(tr '/' '_' <<<"$module")"
  glob="$module"; [[ -d "$module" ]] && glob="$module/**/*.rs"
  cargo mutants --no-shuffle -j 1 --timeout-multiplier 3 -f "$glob" "${exclude[@]}" \
    --output "$dir" -- --lib --test api >/dev/null 2>&1 || true
  m="$dir/mutants.out"
  count() { [[ -f "$m/$1.txt" ]] && grep -c . "$m/$1.txt" || echo 0; }
  caught=$(count caught); missed=$(count missed); unviable=$(count unviable); timeout=$(count timeout)
  printf '%-32s %7s %7s %9s %8s %6s%%\n' "$module" "$caught" "$missed" "$unviable" "$timeout" \
    "$(awk -v c="$caught" -v m="$missed" 'BEGIN { printf "%.1f", (c + m) ? 100 * c / (c + m) : 0 }')"
  [[ -s "$m/missed.txt" ]] && sed 's/^/    missed: /' "$m/missed.txt"
done
echo "(full reports under $out)"
