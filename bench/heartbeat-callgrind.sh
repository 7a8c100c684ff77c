#!/usr/bin/env bash
# Instructions a heartbeat costs the compiled Platform's engine, against a bare
# Bun.serve answering the same JSON, counted by valgrind's callgrind: a count
# that other work on the machine does not change (unlike a rate or a time).
# Each server runs under callgrind with counting off; WARM heartbeats warm it
# up (the JIT's tiers), then counting is on for exactly COUNT heartbeats
# (bench/heartbeat-count.ts, 8 keep-alive connections, the Agent's request).
# User-space instructions only: the kernel's share of a request (the socket)
# is the same for both servers and is not in the count.
#   bench/heartbeat-callgrind.sh [--nodes 20] [--warm 20000] [--count 5000] [--against BIN] [--keep DIR]
# Few nodes by default: the engine's own timers (the heartbeat flush writes a row a node each second)
# run on wall time, which valgrind stretches ~50 times, so with many nodes their share of a request
# would be inflated as much. --against BIN: the same count for another build's binary (same data).
# --keep DIR: the two counts are copied there (callgrind_annotate DIR/muster.out shows where they go).
# Ends with: heartbeat-callgrind: muster I instructions a heartbeat, bare B, ratio bare/muster R
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=20 WARM=20000 COUNT=5000 KEEP= AGAINST=
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --warm) WARM=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --against) AGAINST=$2; shift 2 ;;
    *) echo "usage: $0 [--nodes N] [--warm W] [--count C] [--against BIN] [--keep DIR]" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }

# shellcheck source=bench/lib.sh
. bench/lib.sh
need_wrk_and_build

# Enroll the nodes through the real route on a Platform run normally, then stop it.
# shellcheck disable=SC2119 # no extra serve arguments
start_platform
bun bench/enroll-nodes.ts --url "$URL" --data-dir "$TMP/data" --nodes "$NODES" --out "$TMP/credentials"
BODY=$(bun -e 'import { capacity } from "./src/agent/agent.ts"; import { VERSION } from "./src/version.ts"; process.stdout.write(JSON.stringify({ version: VERSION, capacity: capacity(), replicas: [] }))')
ANSWER=$(curl -sf -X POST "$URL/api/v1/nodes/register" -H "authorization: Bearer $(head -1 "$TMP/credentials")" -H 'content-type: application/json' -d "$BODY")
kill "$PLATFORM_PID"; wait "$PLATFORM_PID" 2>/dev/null || true
PIDS=()

VG=(valgrind --tool=callgrind --instr-atstart=no --smc-check=all-non-file --trace-children=yes --callgrind-out-file="$TMP/callgrind.%p")
# Instructions of one process over COUNT heartbeats, after WARM of them.
count() { # name url pid
  bun bench/heartbeat-count.ts "$2" "$TMP/credentials" "$BODY" "$WARM" >&2
  callgrind_control -i on "$3" >/dev/null
  callgrind_control -z "$3" >/dev/null
  bun bench/heartbeat-count.ts "$2" "$TMP/credentials" "$BODY" "$COUNT" >&2
  callgrind_control -d "$1" "$3" >/dev/null
  callgrind_control -i off "$3" >/dev/null
  local file
  file=$(ls -t "$TMP"/callgrind."$3".* | head -1)
  if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp "$file" "$KEEP/$1.out"; fi
  awk '/^(summary|totals):/ {print $2; exit}' "$file"
}

# Starts BIN under callgrind on a copy of the data directory; sets URL and ENGINE.
start_counted() { # bin dir
  cp -a "$TMP/data" "$2"
  MUSTER_LOG_LEVEL=3 "${VG[@]}" "$1" serve --data-dir "$2" --port 0 --remote-dispatch --no-local-node \
    --enroll-rate 1000000 --enroll-burst 1000000 --heartbeat-rate 10000000 --heartbeat-burst 100000000 2>"$2.log" &
  PIDS+=($!)
  local serve=$!
  for _ in $(seq 1200); do grep -qo 'listening on http://[^ ]*' "$2.log" && break; sleep 0.5; done
  URL=$(grep -o 'listening on http://[^ ]*' "$2.log" | head -1 | cut -d' ' -f3)
  [ -n "$URL" ] || { echo "the Platform did not start under valgrind:" >&2; tail -20 "$2.log" >&2; exit 1; }
  # serve supervises an engine child that does the serving (valgrind follows the exec): count the engine.
  ENGINE=$(pgrep -n -P "$serve")
}
start_counted dist/muster "$TMP/counted"
MUSTER_URL=$URL MUSTER_ENGINE=$ENGINE
if [ -n "$AGAINST" ]; then start_counted "$AGAINST" "$TMP/against"; OTHER_URL=$URL OTHER_ENGINE=$ENGINE; fi
"${VG[@]}" bun bench/bare-server.ts "$ANSWER" >"$TMP/bare.log" 2>&1 &
PIDS+=($!)
BARE_PID=$!
BARE_URL=$(wait_url "$TMP/bare.log")
for _ in $(seq 100); do curl -sf -X POST "$BARE_URL" -d '{}' >/dev/null && break; sleep 0.5; done

echo "heartbeat-callgrind: $NODES enrolled nodes, $WARM heartbeats to warm up, then $COUNT counted; load $(cut -d' ' -f1 /proc/loadavg)"
M=$(count muster "$MUSTER_URL" "$MUSTER_ENGINE")
if [ -n "$AGAINST" ]; then A=$(count against "$OTHER_URL" "$OTHER_ENGINE"); fi
B=$(count bare "$BARE_URL" "$BARE_PID")
echo "heartbeat-callgrind: muster $((M / COUNT)) instructions a heartbeat, bare $((B / COUNT)), ratio bare/muster $(echo "scale=3; $B / $M" | bc)${AGAINST:+; $AGAINST $((A / COUNT)), ratio bare/it $(echo "scale=3; $B / $A" | bc)}"
