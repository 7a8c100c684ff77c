-- wrk script: enrolls, each request a distinct pre-made body (its own key,
-- certificate and proof of key), as `worker join` sends it.
-- wrk -s enroll.lua URL -- BODIES_FILE THREADS
-- Thread k takes lines k, k+T, k+2T… of the file; once its share is spent it
-- starts over (repeats of finished enrollments), and done() says how many
-- requests were repeats so the script can leave them out.
-- n and sent are globals: done() reads them from each thread.
local reqs = {}
n = 0
sent = 0
local i = 0
local counter = 0

function init(args)
  local threads = tonumber(args[2])
  local line_no = 0
  for line in io.lines(args[1]) do
    if #line > 0 then
      if line_no % threads == id then
        n = n + 1
        reqs[n] = wrk.format("POST", "/api/v1/nodes/enroll", {
          ["Accept"] = "application/json",
          ["Content-Type"] = "application/json",
          ["Connection"] = "keep-alive",
          ["User-Agent"] = "Bun/1.4.4",
          ["Accept-Encoding"] = "gzip, deflate, br, zstd",
        }, line)
      end
      line_no = line_no + 1
    end
  end
end

function request()
  i = i % n + 1
  sent = sent + 1
  return reqs[i]
end

local all = {}
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(all, thread)
end

function done(summary, latency, requests)
  local repeats = 0
  for _, t in ipairs(all) do
    local s = t:get("sent")
    local m = t:get("n")
    if s > m then repeats = repeats + (s - m) end
  end
  local e = summary.errors
  io.write(string.format("WRK rps=%.1f p50=%.3f p90=%.3f p99=%.3f max=%.3f requests=%d non2xx=%d socket_errors=%d repeats=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    summary.requests, e.status, e.connect + e.read + e.write + e.timeout, repeats))
end
