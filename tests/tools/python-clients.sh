#!/usr/bin/env bash
# Prints the path of a Python interpreter that has the official MCP Python
# SDK and the FastMCP client at pinned versions, making a virtual environment
# for them in a cache outside the clone the first time. FastMCP 4.2.3 itself
# requires mcp 2.3.0, so one environment holds both.
#
# Usage: PYTHON="$(tests/tools/python-clients.sh)"
set -euo pipefail

MCP_PY_VERSION="${MCP_PY_VERSION:-2.3.0}"
FASTMCP_VERSION="${FASTMCP_VERSION:-4.2.3}"
CACHE="${COOP_TOOLS_CACHE:-$HOME/.cache/coop-tools}/python-mcp-$MCP_PY_VERSION-fastmcp-$FASTMCP_VERSION"
PY="$CACHE/bin/python"

if [ ! -x "$PY" ] || ! "$PY" -c "import mcp.client.auth, fastmcp" 2>/dev/null; then
  rm -rf "$CACHE"
  python3 -m venv "$CACHE" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check \
    "mcp==$MCP_PY_VERSION" "fastmcp==$FASTMCP_VERSION" >&2
fi

echo "$PY"
