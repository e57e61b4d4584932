-- Shared by the bench Lua scripts (loaded with dofile): numbers the threads
-- and prints the one line every run reports. Socket errors, non-2xx
-- answers and answers a script judged wrong (its global `bad`, per thread)
-- are all counted as errors: a benchmark of refusals would be meaningless,
-- so the shell scripts mark any run with errors as invalid.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

bad = 0

function done(summary, latency, requests)
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout
  for _, thread in ipairs(threads) do
    errors = errors + (thread:get("bad") or 0)
  end
  io.write(string.format(
    "RESULT %8.0f req/s   p50 %7.3f ms   p99 %7.3f ms   (%d requests, %d errors)\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests, errors))
end
