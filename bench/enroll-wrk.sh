#!/usr/bin/env bash
# Enrolls per second: the compiled Platform against a bare Bun.serve answering
# the same JSON, both driven by wrk in the same run. Every request to the
# Platform is a distinct enrollment (its own key, certificate and proof of key,
# pre-made); the rate counted is the nodes the Platform enrolled during the run.
#   bench/enroll-wrk.sh [--bodies 60000] [--duration 10] [--threads 2] [--connections 64] [--postgres]
# --postgres: the Platform's store is a throwaway PostgreSQL cluster (.ci/postgres.sh: loopback,
# fsync off, as in the tests) instead of SQLite in the data directory.
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
    *) echo "usage: $0 [--bodies N] [--duration S] [--threads T] [--connections C] [--postgres]" >&2; exit 2 ;;
  esac
done

if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" != 0 ]; then echo "wrk is missing: apt-get install wrk (as root)" >&2; exit 1; fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
if [ ! -x dist/muster ] || [ -n "$(find src commands build.ts -newer dist/muster -print -quit)" ]; then bun run build >/dev/null; fi

TMP=$(mktemp -d)
PGDIR=""
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -z "$PGDIR" ] || { bash .ci/postgres.sh stop "$PGDIR/pg"; rm -rf "$PGDIR"; }
  rm -rf "$TMP"
}
trap cleanup EXIT

wait_url() {
  for _ in $(seq 300); do
    if grep -qo 'listening on http://[^ ]*' "$1"; then grep -o 'listening on http://[^ ]*' "$1" | head -1 | cut -d' ' -f3; return; fi
    sleep 0.1
  done
  echo "server did not start:" >&2; cat "$1" >&2; exit 1
}

DATABASE=()
STORE=sqlite
if [ -n "$POSTGRES" ]; then
  # A directory of its own: as root the cluster runs as the postgres user, who cannot enter $TMP (0700).
  PGDIR=$(mktemp -d)
  chmod 755 "$PGDIR"
  DATABASE=(--database "$(bash .ci/postgres.sh start "$PGDIR/pg")") || { echo "PostgreSQL did not start" >&2; exit 1; }
  STORE=postgres
fi
MUSTER_LOG_LEVEL=3 dist/muster serve --data-dir "$TMP/data" --port 0 --remote-dispatch --no-local-node "${DATABASE[@]}" \
  --enroll-rate 1000000 --enroll-burst 1000000 --enroll-in-flight 100000 2>"$TMP/platform.log" &
PIDS+=($!)
PLATFORM_PID=$!
URL=$(wait_url "$TMP/platform.log")
# serve supervises an engine child that does the serving (engine swap, README): measure the engine.
ENGINE_PID=$(pgrep -n -P "$PLATFORM_PID" || true)
[ -n "$ENGINE_PID" ] || ENGINE_PID=$PLATFORM_PID
ADMIN=$(dist/muster admin api-token --data-dir "$TMP/data" --json | bun -e 'process.stdout.write(JSON.parse(await Bun.stdin.text()).token)')
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
echo "enroll-wrk: store $STORE; $BODIES distinct pre-made enrollments, wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --latency; $(nproc) cores, bun $(bun --version)"
BEFORE=$(count_nodes)
LOAD=$(cut -d' ' -f1 /proc/loadavg)
M=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s bench/wrk/enroll.lua "$URL" -- "$TMP/bodies" "$THREADS" | grep '^WRK ')
AFTER=$(count_nodes)
echo "muster load=$LOAD ${M#WRK }"
LOAD=$(cut -d' ' -f1 /proc/loadavg)
B=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s bench/wrk/enroll.lua "$BARE_URL" -- "$TMP/bodies" "$THREADS" | grep '^WRK ')
echo "bare   load=$LOAD ${B#WRK }"
ENROLLED=$((AFTER - BEFORE))
RATE=$(echo "scale=1; $ENROLLED / $DURATION" | bc)
BARE_RATE=$(echo "$B" | sed -n 's/.*rps=\([0-9.]*\).*/\1/p')
echo "enroll-wrk: $ENROLLED nodes enrolled in ${DURATION}s = $RATE enrolls/s (non-2xx and repeats excluded); bare $BARE_RATE req/s; ratio $(echo "scale=3; $RATE / $BARE_RATE" | bc); Platform peak RSS $(awk '/VmHWM/ {print int($2/1024)}' "/proc/$ENGINE_PID/status") MB"
