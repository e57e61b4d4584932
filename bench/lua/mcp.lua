-- An authenticated MCP `tools/call list_flocks`, every request the same.
-- BENCH_TOKEN: the access token; BENCH_MCP_WIRE: 2025 (default,
-- MCP-Protocol-Version 2025-11-25) or 2026 (2026-07-28: per-request _meta
-- and the Mcp-Method / Mcp-Name headers). An answer that is not a
-- successful tool result counts as an error.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")

local wire = os.getenv("BENCH_MCP_WIRE") or "2025"
local headers = {
  ["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN"),
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
}
local body
if wire == "2026" then
  headers["MCP-Protocol-Version"] = "2026-07-28"
  headers["Mcp-Method"] = "tools/call"
  headers["Mcp-Name"] = "list_flocks"
  body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_flocks","arguments":{},'
    .. '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientCapabilities":{},'
    .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'
else
  headers["MCP-Protocol-Version"] = "2025-11-25"
  body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_flocks","arguments":{}}}'
end

-- A static request: wrk builds it once, no Lua per request.
wrk.method = "POST"
wrk.body = body
for name, value in pairs(headers) do
  wrk.headers[name] = value
end

function response(status, headers, body)
  if status ~= 200 or not body:find('"result"', 1, true) or body:find('"isError":true', 1, true) then
    bad = bad + 1
  end
end
