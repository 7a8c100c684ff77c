#!/usr/bin/env bash
# Installs the Debian tools the tests use when any is missing (as root; else
# says what to install). Idempotent and quiet when everything is there.
#   openssl (certificate oracle), script (pty), systemd-analyze (unit checks),
#   shellcheck (install.sh lint), useradd, chromium (dashboard), postgresql
#   (the PostgreSQL store), faketime (moved clocks), wrk (benchmarks),
#   stress-ng (flake hunting), curl, iproute2, debootstrap and systemd-container
#   (machines with systemd as PID 1: test/helpers/machines.ts), prometheus (a real
#   Prometheus and promtool for the metrics tests), zstd (the Platform makes
#   release deltas with it: docs/upgrading.md).
set -u
need=()
have() { command -v "$1" >/dev/null 2>&1; }
have curl || need+=(curl)
have ip || need+=(iproute2)
have openssl || need+=(openssl)
have script || need+=(bsdutils)
have systemd-analyze || need+=(systemd)
have shellcheck || need+=(shellcheck)
have useradd || need+=(passwd)
have chromium || need+=(chromium)
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || need+=(faketime)
have wrk || need+=(wrk)
have stress-ng || need+=(stress-ng)
have debootstrap || need+=(debootstrap)
have systemd-nspawn || need+=(systemd-container)
{ have prometheus && have promtool; } || need+=(prometheus)
have zstd || need+=(zstd)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "deps: installing ${need[*]}" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null 2>&1 || echo "deps: could not install ${need[*]}" >&2
else
  echo "deps: missing ${need[*]}; install them with: sudo apt-get install ${need[*]}" >&2
fi
exit 0
