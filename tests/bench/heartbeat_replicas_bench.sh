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
for file in "$server_src" "$load_src" "$pg_bin/initdb" "$pg_bin/postgres"; do
  [[ -x $file ]] || { echo "heartbeat_replicas_bench: $file is missing" >&2; exit 1; }
done

# shellcheck source=tests/bench/bench_servers.sh
source "$here/bench_servers.sh"
bench_init "$server_src"
read -r -a server_args <<<"${BENCH_SERVER_ARGS:-}"
read -r -a pg_args <<<"${BENCH_PG_ARGS:-}"
cp "$load_src" "$work/heartbeat_load"
start_postgres "$pg_bin" "${pg_args[@]}"

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
