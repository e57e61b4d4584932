#!/usr/bin/env bash
# Prints the directory whose node_modules holds the official MCP TypeScript
# SDK (v1 `@modelcontextprotocol/sdk` and the v2 client package), the MCP
# Inspector and the OpenAI Codex CLI (its Linux binary comes as an npm
# optional dependency) at pinned versions, installing them into a cache
# outside the clone the first time. Needs Node 22 on PATH (the Inspector
# says so in its engines): PATH="$(tests/tools/node22.sh):$PATH".
#
# Usage: NODE_CLIENTS="$(tests/tools/node-clients.sh)"
set -euo pipefail

MCP_TS_SDK_VERSION="${MCP_TS_SDK_VERSION:-1.32.2}"
MCP_INSPECTOR_VERSION="${MCP_INSPECTOR_VERSION:-2.12.0}"
MCP_TS_CLIENT_VERSION="${MCP_TS_CLIENT_VERSION:-2.4.0}"
CODEX_VERSION="${CODEX_VERSION:-0.169.0}"
CACHE="${COOP_TOOLS_CACHE:-$HOME/.cache/coop-tools}/node-mcp-$MCP_TS_SDK_VERSION-inspector-$MCP_INSPECTOR_VERSION-client-$MCP_TS_CLIENT_VERSION-codex-$CODEX_VERSION"

if [ ! -f "$CACHE/.installed" ]; then
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  echo '{"name":"coop-test-clients","private":true}' >"$CACHE/package.json"
  npm install --prefix "$CACHE" --no-audit --no-fund --silent --save-exact \
    "@modelcontextprotocol/sdk@$MCP_TS_SDK_VERSION" \
    "@modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION" \
    "@modelcontextprotocol/client@$MCP_TS_CLIENT_VERSION" \
    "@openai/codex@$CODEX_VERSION" >&2
  touch "$CACHE/.installed"
fi

echo "$CACHE"
