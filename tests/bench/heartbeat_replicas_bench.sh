#!/usr/bin/env bash
# Heartbeats per second that dormant-server takes with its state in
#   sqlite      SQLite under --data-dir
#   pg x1       PostgreSQL, one server
#   pg x2       PostgreSQL, two server processes on the same database, the load split between them
# The same closed-loop load in each case: heartbeat_load with AGENTS keep-alive TLS connections
# taking turns over HOSTS host names, measured for SECONDS after WARMUP. PostgreSQL is a private
# cluster in a temporary folder with its durability defaults (fsync, synchronous_commit on), so the
# figures include real commits. Each case starts on an empty store. The load generator, the servers
# and PostgreSQL all share this machine's cores.
# Usage: heartbeat_replicas_bench.sh [BUILD_DIR (default build/dev)]
# Environment: DORMANT_SERVER_BIN, HEARTBEAT_LOAD_BIN (default: under BUILD_DIR), PG_BIN (default:
# the newest /usr/lib/postgresql/*/bin), BENCH_AGENTS (50), BENCH_HOSTS (1000), BENCH_SECONDS (10),
# BENCH_WARMUP (2), BENCH_SERVER_ARGS (more dormant-server flags, e.g. "--threads 8"), BENCH_PG_ARGS
# (more postgres flags, e.g. "-c synchronous_commit=off").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build/dev}
server_src=${DORMANT_SERVER_BIN:-$build/server/dormant-server}
load_src=${HEARTBEAT_LOAD_BIN:-$build/tests/bench/heartbeat_load}
pg_bin=${PG_BIN:-$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
agents=${BENCH_AGENTS:-50}
hosts=${BENCH_HOSTS:-1000}
seconds=${BENCH_SECONDS:-10}
warmup=${BENCH_WARMUP:-2}
read -r -a server_args <<<"${BENCH_SERVER_ARGS:-}"
read -r -a pg_args <<<"${BENCH_PG_ARGS:-}"
for file in "$server_src" "$load_src" "$pg_bin/initdb" "$pg_bin/postgres"; do
  [[ -x $file ]] || { echo "heartbeat_replicas_bench: $file is missing" >&2; exit 1; }
done

work=$(mktemp -d)
chmod 711 "$work"  # PostgreSQL's account must reach its folder inside
server_pids=()
pg_pid=
cleanup() {
  for pid in "${server_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  if [[ -n $pg_pid ]]; then
    kill -INT "$pg_pid" 2>/dev/null && wait "$pg_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Copies, so that every case runs the same binaries even if a build replaces them meanwhile.
cp "$server_src" "$work/dormant-server"
cp "$load_src" "$work/heartbeat_load"
"$here/../../scripts/gen-certs" "$work/certs" >/dev/null
(umask 077 && echo "bench-token agent" >"$work/tokens")

# PostgreSQL runs as its own account when we are root.
as_pg=()
if [[ $(id -u) -eq 0 ]]; then
  as_pg=(setpriv --reuid=postgres --regid=postgres --clear-groups --)
fi
pg="$work/pg"
mkdir "$pg"
[[ ${#as_pg[@]} -gt 0 ]] && chown postgres:postgres "$pg"
"${as_pg[@]}" "$pg_bin/initdb" -D "$pg/data" -A trust -U dormant -E UTF8 --no-locale \
  --no-instructions >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; exit 1; }
"${as_pg[@]}" "$pg_bin/postgres" -D "$pg/data" -k "$pg" -c listen_addresses= \
  -c max_connections=300 -c logging_collector=off "${pg_args[@]}" 2>"$work/postgres.log" &
pg_pid=$!
for _ in $(seq 150); do
  "$pg_bin/pg_isready" -q -h "$pg" -d postgres -U dormant && break
  kill -0 "$pg_pid" 2>/dev/null || { cat "$work/postgres.log" >&2; exit 1; }
  sleep 0.1
done
"$pg_bin/pg_isready" -q -h "$pg" -d postgres -U dormant

# start_server NAME STORAGE_ARGS... starts a server in the background and adds its pid to
# server_pids; wait_for_servers NAME... waits until they listen and adds their ports to ports.
ports=()
start_server() {
  local name=$1
  shift
  "$work/dormant-server" --listen 127.0.0.1 --port 0 --tokens-file "$work/tokens" \
    --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server.key" --log-level warn \
    "${server_args[@]}" "$@" >"$work/$name.out" 2>"$work/$name.log" &
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
rss_mb() { awk '$1 == "VmRSS:" { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

rows=()
# measure CASE: runs the load against the servers started, adds a row to the table.
measure() {
  local port_list
  port_list=$(IFS=,; echo "${ports[*]}")
  local out
  out=$("$work/heartbeat_load" --port "$port_list" --ca "$work/certs/ca.pem" --token bench-token \
    --agents "$agents" --hosts "$hosts" --rate 0 --seconds "$seconds" --warmup "$warmup" \
    2>"$work/load.err") || true
  echo "  $1: ${out:-no result}" >&2
  [[ -s $work/load.err ]] && sed 's/^/    /' "$work/load.err" >&2
  local rss=() pid
  for pid in "${server_pids[@]}"; do rss+=("$(rss_mb "$pid")"); done
  local rss_text
  rss_text=$(IFS=+; echo "${rss[*]}")
  local rate p50 p99 errors
  rate=$(sed -n 's/.* \([0-9]*\) heartbeats\/s.*/\1/p' <<<"$out")
  p50=$(sed -n 's/.*p50 \([0-9.]*\) ms.*/\1/p' <<<"$out")
  p99=$(sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' <<<"$out")
  errors=$(sed -n 's/.*; \([0-9]*\) errors.*/\1/p' <<<"$out")
  rows+=("$(printf '%-8s %12s %10s %10s %8s %16s' "$1" "${rate:--}" "${p50:--}" "${p99:--}" \
    "${errors:--}" "$rss_text")")
}

echo "== dormant-server heartbeats: SQLite vs PostgreSQL (1 and 2 replicas), closed loop, $agents" \
  "TLS connections over $hosts hosts, ${seconds} s after ${warmup} s warm-up"
echo "   PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') with fsync on${BENCH_PG_ARGS:+, $BENCH_PG_ARGS};" \
  "$(nproc) cores shared by the load generator, the servers and PostgreSQL"
[[ -n ${BENCH_SERVER_ARGS:-} ]] && echo "   dormant-server $BENCH_SERVER_ARGS"

start_server sqlite --data-dir "$work/sqlite"
wait_for_servers sqlite
measure sqlite
stop_servers

"$pg_bin/createdb" -h "$pg" -U dormant bench1
start_server pg1 --database "postgresql://dormant@/bench1?host=$pg"
wait_for_servers pg1
measure "pg x1"
stop_servers

"$pg_bin/createdb" -h "$pg" -U dormant bench2
# Both at once, as replicas usually start: the migrations run once, under PostgreSQL's lock.
start_server pg2a --database "postgresql://dormant@/bench2?host=$pg"
start_server pg2b --database "postgresql://dormant@/bench2?host=$pg"
wait_for_servers pg2a pg2b
measure "pg x2"
stop_servers

printf '%-8s %12s %10s %10s %8s %16s\n' case heartbeats/s "p50 ms" "p99 ms" errors "server RSS MB"
printf '%s\n' "${rows[@]}"
