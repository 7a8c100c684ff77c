# shellcheck shell=bash
# Shared by the wrk benches (heartbeat-wrk.sh, enroll-wrk.sh); sourced, not run.
# Installs wrk from Debian when missing (as root), builds dist/muster when src/
# or commands/ changed since the last build, and starts the compiled Platform
# (BIN: another build's binary to start instead, as the benches' --bin says).

BIN=${BIN:-dist/muster}

need_wrk_and_build() {
  if ! command -v wrk >/dev/null; then
    if [ "$(id -u)" != 0 ]; then echo "wrk is missing: apt-get install wrk (as root)" >&2; exit 1; fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
  fi
  if [ ! -x dist/muster ] || [ -n "$(find src commands build.ts -newer dist/muster -print -quit)" ]; then bun run build >/dev/null; fi
}

# TMP (a private temp dir) and PIDS (stopped at exit); a script may define extra_cleanup, run at exit too.
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if declare -F extra_cleanup >/dev/null; then extra_cleanup; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# Prints the URL a started server logs ("listening on URL") within 30 s.
wait_url() {
  for _ in $(seq 300); do
    if grep -qo 'listening on http://[^ ]*' "$1"; then grep -o 'listening on http://[^ ]*' "$1" | head -1 | cut -d' ' -f3; return; fi
    sleep 0.1
  done
  echo "server did not start:" >&2; cat "$1" >&2; exit 1
}

# Starts `muster serve` on $TMP/data with the given extra arguments and enroll and heartbeat limits out of the way;
# sets URL, PLATFORM_PID and ENGINE_PID (serve supervises an engine child that does the serving:
# the benches measure the engine).
# shellcheck disable=SC2034 # URL, PLATFORM_PID and ENGINE_PID are for the sourcing script
start_platform() {
  start_platform_on "$BIN" "$TMP/data" "$TMP/platform.log" "$@"
}

# start_platform with a given binary, data directory and log file.
# shellcheck disable=SC2034 # URL, PLATFORM_PID and ENGINE_PID are for the sourcing script
start_platform_on() { # bin data-dir log [serve arguments…]
  local bin=$1 dir=$2 logfile=$3
  shift 3
  MUSTER_LOG_LEVEL=3 "$bin" serve --data-dir "$dir" --port 0 --remote-dispatch --no-local-node "$@" \
    --enroll-rate 1000000 --enroll-burst 1000000 --enroll-in-flight 100000 --heartbeat-rate 10000000 --heartbeat-burst 100000000 2>"$logfile" &
  PIDS+=($!)
  PLATFORM_PID=$!
  URL=$(wait_url "$logfile")
  ENGINE_PID=$(pgrep -n -P "$PLATFORM_PID" || true)
  [ -n "$ENGINE_PID" ] || ENGINE_PID=$PLATFORM_PID
}
