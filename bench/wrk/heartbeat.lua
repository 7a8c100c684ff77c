-- wrk script: the Agent's heartbeat, byte for byte as Bun's fetch sends it
-- (src/agent/agent.ts through src/client), rotating over the enrolled nodes'
-- credentials. wrk -s heartbeat.lua URL -- CREDENTIALS_FILE BODY
-- Each thread starts at its own offset in the list.
local reqs = {}
local n = 0
local i = 0

function setup(thread)
  thread:set("offset", tostring(math.random(1, 1000000)))
end

function init(args)
  local body = args[2]
  for line in io.lines(args[1]) do
    if #line > 0 then
      n = n + 1
      reqs[n] = wrk.format("POST", "/api/v1/nodes/register", {
        ["Accept"] = "application/json",
        ["Authorization"] = "Bearer " .. line,
        ["Content-Type"] = "application/json",
        ["Connection"] = "keep-alive",
        ["User-Agent"] = "Bun/1.4.4",
        ["Accept-Encoding"] = "gzip, deflate, br, zstd",
      }, body)
    end
  end
  i = (tonumber(offset) or 0) % n
end

function request()
  i = i % n + 1
  return reqs[i]
end

-- One line the shell script reads: requests/s, latency percentiles (ms), failures.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK rps=%.1f p50=%.3f p90=%.3f p99=%.3f max=%.3f requests=%d non2xx=%d socket_errors=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    summary.requests, e.status, e.connect + e.read + e.write + e.timeout))
end
