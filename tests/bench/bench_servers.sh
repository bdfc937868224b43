# Sourced by the server benchmarks (heartbeat_replicas_bench.sh, long_poll_bench.sh): a temporary
# folder with a copy of dormant-server, test certificates and tokens; a private PostgreSQL
# cluster; servers started on port 0 and found by what they print.
#
#   bench_init SERVER_BIN      makes $work (removed at exit, with everything started in it), copies
#                              the server there, writes $work/certs and $work/tokens: bench-token
#                              (agent) and bench-operator (operator)
#   start_postgres PG_BIN [FLAG...]
#                              starts PostgreSQL on a socket in $pg, user dormant, trust
#   start_server NAME [FLAG...]
#                              starts a server (flags after the common ones and ${server_args[@]});
#                              its pid goes to server_pids, its output to $work/NAME.{out,log}
#   wait_for_servers NAME...   waits until they listen; their ports go to ports
#   stop_servers               SIGTERM, reaps, empties server_pids and ports
# shellcheck shell=bash

bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
server_pids=()
server_args=()
ports=()
pg_pid=

bench_cleanup() {
  local pid
  for pid in "${server_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  if [[ -n $pg_pid ]]; then
    kill -INT "$pg_pid" 2>/dev/null && wait "$pg_pid" 2>/dev/null
  fi
  rm -rf "$work"
}

bench_init() {
  work=$(mktemp -d)
  chmod 711 "$work"  # PostgreSQL's account must reach its folder inside
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
  # A copy, so that every case runs the same binary even if a build replaces it meanwhile.
  cp "$1" "$work/dormant-server"
  "$bench_dir/../../scripts/gen-certs" "$work/certs" >/dev/null
  (umask 077 && printf 'bench-token agent\nbench-operator operator\n' >"$work/tokens")
}

start_postgres() {
  local bin=$1
  shift
  # PostgreSQL runs as its own account when we are root.
  local as_pg=()
  if [[ $(id -u) -eq 0 ]]; then
    as_pg=(setpriv --reuid=postgres --regid=postgres --clear-groups --)
  fi
  pg="$work/pg"
  mkdir "$pg"
  [[ ${#as_pg[@]} -gt 0 ]] && chown postgres:postgres "$pg"
  "${as_pg[@]}" "$bin/initdb" -D "$pg/data" -A trust -U dormant -E UTF8 --no-locale \
    --no-instructions >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; exit 1; }
  "${as_pg[@]}" "$bin/postgres" -D "$pg/data" -k "$pg" -c listen_addresses= \
    -c max_connections=300 -c logging_collector=off "$@" 2>"$work/postgres.log" &
  pg_pid=$!
  for _ in $(seq 150); do
    "$bin/pg_isready" -q -h "$pg" -d postgres -U dormant && break
    kill -0 "$pg_pid" 2>/dev/null || { cat "$work/postgres.log" >&2; exit 1; }
    sleep 0.1
  done
  "$bin/pg_isready" -q -h "$pg" -d postgres -U dormant
}

start_server() {
  local name=$1
  shift
  # The simulated fleet connects from one address: no per-address cap.
  "$work/dormant-server" --listen 127.0.0.1 --port 0 --tokens-file "$work/tokens" \
    --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server.key" --log-level warn \
    --max-connections-per-address 0 "${server_args[@]}" "$@" >"$work/$name.out" 2>"$work/$name.log" &
  server_pids+=($!)
}

wait_for_servers() {
  local name
  for name in "$@"; do
    for _ in $(seq 300); do  # migrations on PostgreSQL take a moment
      grep -q listening "$work/$name.out" 2>/dev/null && break
      sleep 0.1
    done
    grep -q listening "$work/$name.out" ||
      { echo "dormant-server ($name) did not start:" >&2; cat "$work/$name.log" >&2; exit 1; }
    ports+=("$(sed -n 's/.*://p' "$work/$name.out")")
  done
}

stop_servers() {
  local pid
  for pid in "${server_pids[@]}"; do
    kill -TERM "$pid"
    wait "$pid" || true
  done
  server_pids=()
  ports=()
}
