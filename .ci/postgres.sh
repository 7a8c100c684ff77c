#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: `start DIR` initdbs into DIR
# (as the postgres user when root), starts it on 127.0.0.1 with a free port and
# prints its URL; `stop DIR` stops it and removes DIR, whatever state it is in.
set -u
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "${1:-}" in
  start)
    dir=$2
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    as_pg "$bin/initdb" -D "$dir/data" -A trust -U muster --no-sync >/dev/null || exit 1
    port=$(bun -e 'const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }); console.log(s.port); s.stop(true)')
    as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" start >/dev/null || { cat "$dir/log" >&2; exit 1; }
    echo "postgres://muster@127.0.0.1:$port/postgres"
    ;;
  stop)
    dir=$2
    [ -d "$dir/data" ] && as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start DIR | stop DIR" >&2; exit 2 ;;
esac
