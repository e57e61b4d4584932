#!/usr/bin/env bash
# Prints the path of a Python interpreter that has the official MCP Python
# SDK at a pinned version, making a virtual environment for it in a cache
# outside the clone the first time.
#
# Usage: PYTHON="$(tests/tools/python-clients.sh)"
set -euo pipefail

MCP_PY_VERSION="${MCP_PY_VERSION:-2.3.0}"
CACHE="${COOP_TOOLS_CACHE:-$HOME/.cache/coop-tools}/python-mcp-$MCP_PY_VERSION"
PY="$CACHE/bin/python"

if [ ! -x "$PY" ] || ! "$PY" -c "import mcp.client.auth" 2>/dev/null; then
  rm -rf "$CACHE"
  python3 -m venv "$CACHE" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_PY_VERSION" >&2
fi

echo "$PY"
