-- Refresh-token grants, each token used exactly once.
--
-- Coop rotates refresh tokens and treats a second use of one as theft
-- (the whole grant is revoked), so a benchmark must never replay one. Each
-- wrk connection runs its own rotation chain: wrk calls response() for a
-- connection's answer and then, at once and on the same thread, request()
-- for that connection's next request, so the token a response hands back
-- is the one the next request spends. A thread starts with its share of
-- the pre-minted tokens (one per connection, plus spares that replace a
-- chain broken by a timeout). Environment: BENCH_TOKENS (file: client_id
-- on the first line, then one refresh token a line), BENCH_LUA_DIR.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")

local client_id
local queue = {}
local head, tail = 1, 0

local function push(token)
  tail = tail + 1
  queue[tail] = token
end

function init(args)
  local lines = {}
  for line in io.lines(os.getenv("BENCH_TOKENS")) do
    table.insert(lines, line)
  end
  client_id = lines[1]
  local nthreads = tonumber(os.getenv("BENCH_THREADS"))
  for i = 2, #lines do
    if (i - 2) % nthreads == id then
      push(lines[i])
    end
  end
end

local function form(token)
  return "grant_type=refresh_token&client_id=" .. client_id .. "&refresh_token=" .. token
end

local headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }

function request()
  local token = queue[head]
  if token == nil then
    -- Out of chains: an unknown token is refused (400) without harm and
    -- counted as an error in the report.
    token = "exhausted"
  else
    queue[head] = nil
    head = head + 1
  end
  return wrk.format("POST", "/token", headers, form(token))
end

function response(status, headers, body)
  if status == 200 then
    local next = body:match('"refresh_token"%s*:%s*"([^"]+)"')
    if next then
      push(next)
    else
      bad = bad + 1
    end
  end
end
