#!/usr/bin/env bash
# Workload-level profiling on the control server: 10,000 hosts heartbeating every 30 s
# (333 heartbeats/s over 100 keep-alive connections), without inventory (one server), and with 50
# processes in 10 pods per host (another), the list sent in every heartbeat (as gProfiler's agent
# does) or, in its place, the digest the server answered for it (as ours does). The three runs
# take turns, ROUNDS times (default 3), so that the machine's drift falls on each alike; heartbeat
# p99 of every run, then the median of each. Then, over the 10,000 inventories, the time of
# workload_status for each scope and of resolving a namespace selector (a dry-run request).
# On SQLite, or with "postgres" on PostgreSQL (a private cluster; fsync on).
# Usage: workload_bench.sh BUILD_DIR [sqlite|postgres] [ROUNDS]
set -euo pipefail
build=${1:?usage: workload_bench.sh BUILD_DIR [sqlite|postgres] [ROUNDS]}
database=${2:-sqlite}
rounds=${3:-3}
# shellcheck source=tests/bench/bench_servers.sh
source "$(dirname "$0")/bench_servers.sh"
bench_init "$build/server/dormant-server"
pg_bin_dir=${PG_BIN:-$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
[[ $database == postgres ]] && start_postgres "$pg_bin_dir"
# store_of NAME: where a server keeps its data
store_of() {
  if [[ $database == postgres ]]; then
    "$pg_bin_dir/createdb" -h "$pg" -U dormant "$1"
    echo --database "postgresql://dormant@/$1?host=$pg"
  else
    echo --data-dir "$work/data-$1"
  fi
}
load=("$build/tests/bench/heartbeat_load" --ca "$work/certs/ca.pem" --token bench-token
  --agents 100 --hosts 10000)
api() {  # api PATH [JSON]: prints "seconds status"
  local args=(-s -o /dev/null -w '%{time_total} %{http_code}' --cacert "$work/certs/ca.pem"
    -H "Authorization: Bearer bench-operator")
  [[ $# -gt 1 ]] && args+=(-d "$2")
  curl "${args[@]}" "https://localhost:${ports[0]}$1"
}
# The best of five: the machine is shared.
best_of_five() {
  local best=999 took
  for _ in 1 2 3 4 5; do
    took=$(api "$@" | cut -d' ' -f1)
    best=$(awk -v a="$best" -v b="$took" 'BEGIN { print (b < a) ? b : a }')
  done
  awk -v s="$best" 'BEGIN { printf "%.1f ms", s * 1000 }'
}

# heartbeats NAME PORT PROCESSES DIGESTS: one measured run; prints heartbeat_load's line and
# appends its p99 to $work/p99-NAME
heartbeats() {
  local warmup=5 line
  (($4)) && warmup=35  # every host has been answered a digest before the measured window
  line=$("${load[@]}" --port "$2" --processes "$3" --digests "$4" --rate 333 --seconds 30 \
    --warmup "$warmup")
  echo "$1: ${line#*: }"
  sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' <<<"$line" >>"$work/p99-$1"
}
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for processes in 0 50; do
  read -r -a store <<<"$(store_of "s$processes")"
  start_server "s$processes" "${store[@]}"
done
wait_for_servers s0 s50
echo "== $database: 10,000 hosts, a heartbeat every 30 s each; $rounds rounds"
# Every host heard from, and every inventory written, as fast as it goes.
"${load[@]}" --port "${ports[0]}" --processes 0 --rate 0 --seconds 20 --warmup 0 >/dev/null
for _ in 1 2 3 4 5 6; do
  "${load[@]}" --port "${ports[1]}" --processes 50 --rate 0 --seconds 20 --warmup 0 >/dev/null
  pods=$(curl -s --cacert "$work/certs/ca.pem" -H "Authorization: Bearer bench-operator" \
    "https://localhost:${ports[1]}/api/metrics/profiling/workload_status?scope=service" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["tabCounts"]["pod"])')
  ((pods == 100000)) && break
done
for round in $(seq "$rounds"); do
  echo "-- round $round"
  heartbeats none "${ports[0]}" 0 0
  heartbeats lists "${ports[1]}" 50 0
  heartbeats digests "${ports[1]}" 50 1
done
none=$(median "$work/p99-none")
for run in none lists digests; do
  p99=$(median "$work/p99-$run")
  echo "heartbeat p99, median of $rounds, $run: $p99 ms ($(awk -v a="$p99" -v b="$none" \
    'BEGIN { printf "%+.0f%%", (a / b - 1) * 100 }') against none)"
done
ports=("${ports[1]}")  # what follows asks the server that holds the inventories
for scope in service namespace host pod container process; do
  echo "workload_status?scope=$scope: $(best_of_five "/api/metrics/profiling/workload_status?scope=$scope&page_size=50")"
done
echo "resolving a namespace selector (dry run): $(best_of_five \
  /api/metrics/profile_request \
  '{"service_name":"load","request_type":"start","dry_run":true,"target_scope":"namespace","target_entities":[{"namespace":"ns-7"}]}')"
echo "resolving a pod selector (dry run): $(best_of_five /api/metrics/profile_request \
  '{"service_name":"load","request_type":"start","dry_run":true,"target_scope":"pod","target_entities":[{"podName":"w20-7f8d9cb4d-17x0"}]}')"
stop_servers
