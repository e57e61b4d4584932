#!/usr/bin/env bash
# The MCP conformance suites against a fresh Coop on SQLite:
#   - the authorization server scenarios (conformance 0.2.0-alpha.12
#     `authorization`: metadata endpoint, authorization code grant),
#   - the MCP server on the 2025 wire (conformance 0.1.16 `server`),
#   - the MCP server on the 2026-07-28 wire (0.2.0-alpha.12 `server
#     --requirements 2026-07-28`).
# Prints PASS / XFAIL / FAIL per scenario and exits 1 on any failure not in
# tests/conformance/expected-failures.txt, or any listed failure that passed.
#
#   tests/conformance/run.sh [--suites as,2025,2026] [--keep] [--database-url URL]
#
# Needs the built binary ($COOP_BIN, default $CARGO_TARGET_DIR/debug/coop;
# run `cargo build` first), Python 3 and network access to npm the first
# time: Node 22 and the two pinned suite versions are installed into
# $COOP_TOOLS_CACHE (default ~/.cache/coop-tools), never into the clone.
set -euo pipefail
cd "$(dirname "$0")/../.."

CACHE="${COOP_TOOLS_CACHE:-$HOME/.cache/coop-tools}"
COOP_BIN="${COOP_BIN:-${CARGO_TARGET_DIR:-target}/debug/coop}"
[[ -x "$COOP_BIN" ]] || { echo "no coop binary at $COOP_BIN; run cargo build" >&2; exit 1; }

NODE_BIN="$(tests/tools/node22.sh)"
export PATH="$NODE_BIN:$PATH"

# Installs @modelcontextprotocol/conformance@$1 once; prints its .bin dir.
suite() {
  local dir="$CACHE/conformance-$1"
  if [[ ! -x "$dir/node_modules/.bin/conformance" ]]; then
    # Installed beside the cache and renamed into place, so two runs that
    # start together never see (or leave) a half-installed suite.
    local staging
    mkdir -p "$CACHE"
    staging="$(mktemp -d "$CACHE/.conformance-$1.XXXXXX")"
    npm install --prefix "$staging" --no-audit --no-fund --silent \
      "@modelcontextprotocol/conformance@$1" >&2
    if [[ -x "$dir/node_modules/.bin/conformance" ]]; then
      rm -rf "$staging"   # another run finished first: use its copy
    else
      rm -rf "$dir"       # an interrupted install of an earlier version of this script
      mv -T "$staging" "$dir"
    fi
  fi
  echo "$dir/node_modules/.bin"
}

exec python3 tests/conformance/run.py \
  --coop "$COOP_BIN" \
  --node-bin "$NODE_BIN" \
  --suite-2025 "$(suite 0.1.16)" \
  --suite-2026 "$(suite 0.2.0-alpha.12)" \
  "$@"
