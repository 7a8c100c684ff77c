#!/usr/bin/env bash
# Enrolls per second: the compiled Platform against a bare Bun.serve answering
# the same JSON, both driven by wrk in the same run. Every request to the
# Platform is a distinct enrollment (its own key, certificate and proof of key,
# pre-made); the rate counted is the nodes the Platform enrolled during the run.
#   bench/enroll-wrk.sh [--bodies 60000] [--duration 10] [--threads 2] [--connections 64] [--postgres] [--bin BIN]
# --postgres: the Platform's store is a throwaway PostgreSQL cluster (.ci/postgres.sh: loopback,
# fsync off, as in the tests) instead of SQLite in the data directory. --bin BIN: measure another build's
# binary (run the script once with each to compare builds).
set -euo pipefail
cd "$(dirname "$0")/.."

BODIES=60000 DURATION=10 THREADS=2 CONNECTIONS=64 POSTGRES=
while [ $# -gt 0 ]; do
  case "$1" in
    --bodies) BODIES=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --postgres) POSTGRES=1; shift ;;
    --bin) BIN=$2; shift 2 ;;
    *) echo "usage: $0 [--bodies N] [--duration S] [--threads T] [--connections C] [--postgres] [--bin BIN]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/lib.sh
. bench/lib.sh
need_wrk_and_build

DATABASE=()
STORE=sqlite
if [ -n "$POSTGRES" ]; then
  # A directory of its own: as root the cluster runs as the postgres user, who cannot enter $TMP (0700).
  PGDIR=$(mktemp -d)
  chmod 755 "$PGDIR"
  extra_cleanup() { bash .ci/postgres.sh stop "$PGDIR/pg"; rm -rf "$PGDIR"; }
  DATABASE=(--database "$(bash .ci/postgres.sh start "$PGDIR/pg")") || { echo "PostgreSQL did not start" >&2; exit 1; }
  STORE=postgres
fi
start_platform "${DATABASE[@]}"
ADMIN=$("$BIN" admin api-token --data-dir "$TMP/data" --json | bun -e 'process.stdout.write(JSON.parse(await Bun.stdin.text()).token)')
# Bodies for the Platform, and a second set (other names, another token) whose first answer feeds the bare server.
bun bench/enroll-bodies.ts --url "$URL" --data-dir "$TMP/data" --count "$BODIES" --out "$TMP/bodies"
ANSWER=$(head -1 "$TMP/bodies" | sed 's/"nodeId":"e-0"/"nodeId":"sample"/' | curl -sf -X POST "$URL/api/v1/nodes/enroll" -H 'content-type: application/json' --data-binary @- || true)
[ -n "$ANSWER" ] || ANSWER='{"nodeId":"sample"}'
bun bench/bare-server.ts "$ANSWER" >"$TMP/bare.log" &
PIDS+=($!)
BARE_URL=$(wait_url "$TMP/bare.log")

count_nodes() {
  curl -sf "$URL/api/v1/nodes?limit=1" -H "authorization: Bearer $ADMIN" | bun -e 'process.stdout.write(String(JSON.parse(await Bun.stdin.text()).counts.total))'
}
echo "enroll-wrk: $BIN, store $STORE; $BODIES distinct pre-made enrollments, wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --latency; $(nproc) cores, bun $(bun --version)"
BEFORE=$(count_nodes)
LOAD=$(cut -d' ' -f1 /proc/loadavg)
# CPU seconds (user+system) of the engine, and of the PostgreSQL cluster's processes: the cost per enroll,
# which other processes on the machine disturb far less than the rate.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The cluster's postmaster and its children (the backends live as long as the engine's pool).
pg_cpu() {
  if [ -z "$POSTGRES" ]; then echo 0; return; fi
  local pm
  pm=$(head -1 "$PGDIR/pg/data/postmaster.pid")
  for p in "$pm" $(pgrep -P "$pm"); do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done | awk '{s += $1} END {print s + 0}'
}
CPU_BEFORE=$(cpu "$ENGINE_PID") PG_BEFORE=$(pg_cpu)
M=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s bench/wrk/enroll.lua "$URL" -- "$TMP/bodies" "$THREADS" | grep '^WRK ')
CPU_AFTER=$(cpu "$ENGINE_PID") PG_AFTER=$(pg_cpu)
AFTER=$(count_nodes)
echo "muster load=$LOAD ${M#WRK }"
LOAD=$(cut -d' ' -f1 /proc/loadavg)
B=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s bench/wrk/enroll.lua "$BARE_URL" -- "$TMP/bodies" "$THREADS" | grep '^WRK ')
echo "bare   load=$LOAD ${B#WRK }"
ENROLLED=$((AFTER - BEFORE))
RATE=$(echo "scale=1; $ENROLLED / $DURATION" | bc)
BARE_RATE=$(echo "$B" | sed -n 's/.*rps=\([0-9.]*\).*/\1/p')
echo "enroll-wrk: CPU per enroll: engine $(echo "scale=0; ($CPU_AFTER - $CPU_BEFORE) * 10000 / $ENROLLED" | bc) us$([ -n "$POSTGRES" ] && echo ", PostgreSQL $(echo "scale=0; ($PG_AFTER - $PG_BEFORE) * 10000 / $ENROLLED" | bc) us")"
echo "enroll-wrk: $ENROLLED nodes enrolled in ${DURATION}s = $RATE enrolls/s (non-2xx and repeats excluded); bare $BARE_RATE req/s; ratio $(echo "scale=3; $RATE / $BARE_RATE" | bc); Platform peak RSS $(awk '/VmHWM/ {print int($2/1024)}' "/proc/$ENGINE_PID/status") MB"
