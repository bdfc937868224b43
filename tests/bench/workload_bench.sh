#!/usr/bin/env bash
# Workload-level profiling on the control server: 10,000 hosts heartbeating every 30 s
# (333 heartbeats/s over 100 keep-alive connections), first without inventory, then each with 50
# processes in 10 pods, sent in every heartbeat (as gProfiler's agent does) and then in place of the
# list the digest the server answered for it (as ours does); heartbeat latency for each, then, over
# the 10,000 inventories, the time of workload_status for each scope and of resolving a namespace
# selector (a dry-run request).
# On SQLite, or with "postgres" on PostgreSQL (a private cluster; fsync on).
# Usage: workload_bench.sh BUILD_DIR [sqlite|postgres]
set -euo pipefail
build=${1:?usage: workload_bench.sh BUILD_DIR [sqlite|postgres]}
database=${2:-sqlite}
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

for processes in 0 50; do
  read -r -a store <<<"$(store_of "s$processes")"
  start_server "s$processes" "${store[@]}"
  wait_for_servers "s$processes"
  echo "== $database: 10,000 hosts, a heartbeat every 30 s each, $processes processes of inventory per host"
  # Every host's inventory written, as fast as it goes, then the measured run.
  for _ in 1 2 3 4 5 6; do
    "${load[@]}" --port "${ports[0]}" --processes "$processes" --rate 0 --seconds 20 --warmup 0 \
      >/dev/null
    ((processes == 0)) && break
    pods=$(curl -s --cacert "$work/certs/ca.pem" -H "Authorization: Bearer bench-operator" \
      "https://localhost:${ports[0]}/api/metrics/profiling/workload_status?scope=service" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["tabCounts"]["pod"])')
    ((pods == 100000)) && break
  done
  "${load[@]}" --port "${ports[0]}" --processes "$processes" --rate 333 --seconds 30 --warmup 5
  if ((processes > 0)); then
    echo "-- the same, each host sending its list's digest once the server has answered it"
    "${load[@]}" --port "${ports[0]}" --processes "$processes" --digests 1 --rate 333 \
      --seconds 30 --warmup 35
    for scope in service namespace host pod container process; do
      echo "workload_status?scope=$scope: $(best_of_five "/api/metrics/profiling/workload_status?scope=$scope&page_size=50")"
    done
    echo "resolving a namespace selector (dry run): $(best_of_five \
      /api/metrics/profile_request \
      '{"service_name":"load","request_type":"start","dry_run":true,"target_scope":"namespace","target_entities":[{"namespace":"ns-7"}]}')"
    echo "resolving a pod selector (dry run): $(best_of_five /api/metrics/profile_request \
      '{"service_name":"load","request_type":"start","dry_run":true,"target_scope":"pod","target_entities":[{"podName":"w20-7f8d9cb4d-17x0"}]}')"
  fi
  stop_servers
done
