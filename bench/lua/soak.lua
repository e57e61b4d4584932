-- The soak's MCP traffic: nine `list_flocks` reads to one
-- `record_daily_entry` write, each write a new figure for one of the five
-- flocks on a day between the placement and today, so every write changes
-- a row and adds an audit row (the 300 flock-days come round every 300
-- writes, each time with another figure: a figure already stored would be
-- a replay, which changes nothing). BENCH_TOKEN: an access token with both
-- scopes; BENCH_DELAY_MS: the pause each connection takes before each
-- request (the soak sets it so the rate is about 80 % of the measured
-- capacity; 0 for the capacity run). An answer that is not a successful
-- tool result counts as an error.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")

local delay_ms = tonumber(os.getenv("BENCH_DELAY_MS") or "0")
local headers = {
  ["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN"),
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
  ["MCP-Protocol-Version"] = "2025-11-25",
}
local read
local n = 0

-- Built here, not when the script loads: wrk.format takes the Host header
-- from wrk.headers, which wrk fills in only before init (a request without
-- Host is refused, 403).
function init(args)
  read = wrk.format("POST", nil, headers,
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_flocks","arguments":{}}}')
end

function request()
  n = n + 1
  if n % 10 ~= 0 then
    return read
  end
  local w = math.floor(n / 10)
  local day = os.date("!%Y-%m-%d", os.time() - 86400 * (1 + w % 300))
  local body = string.format(
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"record_daily_entry",'
      .. '"arguments":{"flock":"Flock %d","date":"%s","eggs_collected":%d}}}',
    1 + w % 5, day, (w + 7 * math.floor(w / 300)) % 1000)
  return wrk.format("POST", nil, headers, body)
end

function delay()
  return delay_ms
end

function response(status, headers, body)
  if status ~= 200 or not body:find('"result"', 1, true) or body:find('"isError":true', 1, true) then
    bad = bad + 1
  end
end
