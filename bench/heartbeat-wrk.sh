#!/usr/bin/env bash
# Heartbeats per second: the compiled Platform against a bare Bun.serve
# answering the same JSON, both driven by wrk in the same run, round after
# round (muster, then bare), with the 1-minute load average before each.
#   bench/heartbeat-wrk.sh [--nodes 1000] [--duration 15] [--rounds 3] [--threads 2] [--connections 64] [--against BIN]
# --against BIN: another build's binary, on a copy of the same data, in every round too (muster, it, bare):
# two builds compared in one run, on the same machine load.
# Installs wrk from Debian when missing (as root); builds dist/muster when src/
# or commands/ changed since the last build.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=1000 DURATION=15 ROUNDS=3 THREADS=2 CONNECTIONS=64 AGAINST=
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --against) AGAINST=$2; shift 2 ;;
    *) echo "usage: $0 [--nodes N] [--duration S] [--rounds R] [--threads T] [--connections C] [--against BIN]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/lib.sh
. bench/lib.sh
need_wrk_and_build

# shellcheck disable=SC2119 # no extra serve arguments
start_platform
bun bench/enroll-nodes.ts --url "$URL" --data-dir "$TMP/data" --nodes "$NODES" --out "$TMP/credentials"

# The exact body the Agent sends (src/agent/agent.ts): version, capacity of this machine, no replicas.
BODY=$(bun -e 'import { capacity } from "./src/agent/agent.ts"; import { VERSION } from "./src/version.ts"; process.stdout.write(JSON.stringify({ version: VERSION, capacity: capacity(), replicas: [] }))')
ANSWER=$(curl -sf -X POST "$URL/api/v1/nodes/register" -H "authorization: Bearer $(head -1 "$TMP/credentials")" -H 'content-type: application/json' -d "$BODY")
if [ -n "$AGAINST" ]; then
  # The same nodes for both builds: a copy of the stopped Platform's data directory, each started on its own.
  kill "$PLATFORM_PID"
  wait "$PLATFORM_PID" 2>/dev/null || true
  cp -a "$TMP/data" "$TMP/data-against"
  start_platform_on "$AGAINST" "$TMP/data-against" "$TMP/against.log"
  AGAINST_URL=$URL AGAINST_PID=$ENGINE_PID
  # shellcheck disable=SC2119 # no extra serve arguments
  start_platform
fi
bun bench/bare-server.ts "$ANSWER" >"$TMP/bare.log" &
PIDS+=($!)
BARE_PID=$!
BARE_URL=$(wait_url "$TMP/bare.log")

echo "heartbeat-wrk: $NODES enrolled nodes, wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --latency, $ROUNDS round(s); $(nproc) cores, $(bun --version | sed 's/^/bun /')"
echo "body $BODY"
echo "answer $ANSWER"
# CPU seconds (user+system) a process has used: the cost per request, which other
# processes on the machine disturb far less than requests per second.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() { # name url pid
  local load before out after
  load=$(cut -d' ' -f1 /proc/loadavg)
  before=$(cpu "$3")
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s bench/wrk/heartbeat.lua "$2" -- "$TMP/credentials" "$BODY" | grep '^WRK ')
  after=$(cpu "$3")
  local requests
  requests=$(echo "$out" | sed -n 's/.* requests=\([0-9]*\).*/\1/p')
  echo "$1 load=$load ${out#WRK } cpu_us_per_request=$(echo "scale=1; ($after - $before) * 10000 / $requests" | bc)" >&2
  echo "$(echo "$out" | sed -n 's/.*rps=\([0-9.]*\).*/\1/p') $(echo "($after - $before)" | bc) $requests"
}
M_SUM=0 B_SUM=0 M_CPU=0 B_CPU=0 M_REQ=0 B_REQ=0 A_SUM=0 A_CPU=0 A_REQ=0
for r in $(seq "$ROUNDS"); do
  read -r m mc mr < <(run "round $r muster" "$URL" "$ENGINE_PID")
  if [ -n "$AGAINST" ]; then
    read -r a ac ar < <(run "round $r against" "$AGAINST_URL" "$AGAINST_PID")
    A_SUM=$(echo "$A_SUM + $a" | bc) A_CPU=$((A_CPU + ac)) A_REQ=$((A_REQ + ar))
  fi
  read -r b bc br < <(run "round $r bare  " "$BARE_URL" "$BARE_PID")
  echo "round $r ratio $(echo "scale=3; $m / $b" | bc)${AGAINST:+, against $(echo "scale=3; $a / $b" | bc)}"
  M_SUM=$(echo "$M_SUM + $m" | bc) B_SUM=$(echo "$B_SUM + $b" | bc)
  M_CPU=$((M_CPU + mc)) B_CPU=$((B_CPU + bc)) M_REQ=$((M_REQ + mr)) B_REQ=$((B_REQ + br))
done
if [ -n "$AGAINST" ]; then
  echo "heartbeat-wrk: against $AGAINST: $(echo "scale=0; $A_SUM / $ROUNDS" | bc) req/s, ratio $(echo "scale=3; $A_SUM / $B_SUM" | bc); server CPU per request $(echo "scale=1; $A_CPU * 10000 / $A_REQ" | bc) us, ratio bare/it $(echo "scale=3; ($B_CPU * $A_REQ) / ($A_CPU * $B_REQ)" | bc)"
fi
RSS=$(awk '/VmHWM/ {print int($2/1024)}' "/proc/$ENGINE_PID/status")
echo "heartbeat-wrk: muster $(echo "scale=0; $M_SUM / $ROUNDS" | bc) req/s, bare $(echo "scale=0; $B_SUM / $ROUNDS" | bc) req/s, ratio $(echo "scale=3; $M_SUM / $B_SUM" | bc) (mean over $ROUNDS rounds); Platform peak RSS $RSS MB"
echo "heartbeat-wrk: server CPU per request: muster $(echo "scale=1; $M_CPU * 10000 / $M_REQ" | bc) us, bare $(echo "scale=1; $B_CPU * 10000 / $B_REQ" | bc) us, ratio bare/muster $(echo "scale=3; ($B_CPU * $M_REQ) / ($M_CPU * $B_REQ)" | bc)"
