#!/usr/bin/env bash
# Issue 42: what rollups cost at upload and what they save in views. PROFILES one-minute profiles
# of a service from 200 hosts, spread over the day before now (tests/bench/upload_fleet.py), are
# uploaded; the 24 h view of the service (GET /api/flamegraph, collapsed and SVG) is timed, and
# the view of one host (just uploaded, and once the server has compacted the day's hours), and each call of Performance Studio's UI's Profiles page over that day;
# then 1.5 x PROFILES more in the same day (2.5 x in all) and the views
# again, with the ratio. With BASELINE_SERVER (a build without rollups), the upload rate of 2,000
# profiles on each, side by side.
# Usage: rollup_bench.sh BUILD_DIR [sqlite|postgres] [PROFILES (25000)] [BASELINE_SERVER]
set -euo pipefail
build=${1:?usage: rollup_bench.sh BUILD_DIR [sqlite|postgres] [PROFILES] [BASELINE_SERVER]}
database=${2:-sqlite}
profiles=${3:-25000}
baseline=${4:-}
# shellcheck source=tests/bench/bench_servers.sh
source "$(dirname "$0")/bench_servers.sh"
bench_init "$build/server/dormant-server"
pg_bin_dir=${PG_BIN:-$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
[[ $database == postgres ]] && start_postgres "$pg_bin_dir"
store_of() {  # store_of NAME: where a server keeps its data
  if [[ $database == postgres ]]; then
    "$pg_bin_dir/createdb" -h "$pg" -U dormant "$1"
    echo --database "postgresql://dormant@/$1?host=$pg"
  else
    echo --data-dir "$work/data-$1"
  fi
}
end=$(date +%s)
upload() {  # upload PORT PROFILES SEED
  python3 "$bench_dir/upload_fleet.py" --port "$1" --ca "$work/certs/ca.pem" --token bench-token \
    --service fleet --profiles "$2" --seed "$3" --end "$end"
}
# time_view PATH: the best and the median of five, in ms
time_view() {
  local times=() code took
  for _ in 1 2 3 4 5; do
    read -r code took < <(curl -s -o "$work/view" -w '%{http_code} %{time_total}\n' \
      --cacert "$work/certs/ca.pem" -H "Authorization: Bearer bench-operator" \
      "https://localhost:${ports[0]}$1")
    [[ $code == 200 || $code == 204 ]] ||
      { echo "$1: HTTP $code: $(head -c 300 "$work/view")" >&2; exit 1; }
    times+=("$took")
  done
  printf '%s\n' "${times[@]}" | sort -g |
    awk '{ t[NR] = $1 * 1000 } END { printf "best %.0f ms, median %.0f ms", t[1], t[3] }'
}
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
day="since=$(iso $((end - 86400)))&until=$(iso "$end")"
views() {  # views LABEL
  echo "$1: 24 h of the service as collapsed text: $(time_view "/api/flamegraph?service=fleet&$day&format=collapsed")"
  echo "$1: 24 h of the service as SVG:            $(time_view "/api/flamegraph?service=fleet&$day")"
  echo "$1: 24 h of one host as collapsed text:    $(time_view "/api/flamegraph?service=fleet&$day&hostname=fleet-007&format=collapsed")"
  echo "$1: distinct stacks in the view: $(($(curl -s --cacert "$work/certs/ca.pem" -H "Authorization: Bearer bench-operator" "https://localhost:${ports[0]}/api/flamegraph?service=fleet&$day&format=collapsed" | wc -l) - 1))"
}
# The calls of Performance Studio's web UI's Profiles page (its flamegraph, table and service
# views) over the same day, as its query-string writes them; each should take at most 200 ms.
studio_views() {  # studio_views LABEL
  local range filter function
  range="endTime=$(iso "$end" | sed 's/Z$/.000Z/')&serviceName=fleet&startTime=$(iso $((end - 86400)) | sed 's/Z$/.000Z/')"
  filter="filter=%7B%22id%22%3A%22%22%2C%22filter%22%3A%7B%22%24and%22%3A%5B%7B%22HostName%22%3A%7B%22%24eq%22%3A%22fleet-007%22%7D%7D%5D%7D%7D"
  function="functionName=app%3A%3Amodule3%3A%3AHandler2%3A%3Amethod1%28std%3A%3Astring%20const%26%2C%20int%29"
  local week="endTime=$(iso "$end" | sed 's/Z$/.000Z/')&serviceName=fleet&startTime=$(iso $((end - 7 * 86400)) | sed 's/Z$/.000Z/')"
  local calls=(
    "services|/api/services" "overview|/api/overview" "overview/services|/api/overview/services"
    "saved filters|/api/v1/filters/service/fleet" "cpu_trend|/api/metrics/cpu_trend?$range"
    "flamegraph|/api/flamegraph?enrichment=lang&$range"
    "flamegraph, one host|/api/flamegraph?enrichment=lang&$filter&$range"
    "flamegraph, 7 days (table view)|/api/flamegraph?enrichment=lang&$week"
    "summary|/api/metrics/summary?$range"
    "nodes_cores/summary|/api/metrics/nodes_cores/summary?ignoreZeros=true&$range"
    "instance_type_count|/api/metrics/instance_type_count?$range"
    "datetime_with_data|/api/flamegraph/datetime_with_data?serviceName=fleet"
    "graph|/api/metrics/graph?$range" "graph/nodes_and_cores|/api/metrics/graph/nodes_and_cores?$range"
    "samples|/api/metrics/samples?$range" "function_cpu|/api/metrics/function_cpu?$function&$range"
    "filters/tags/HostName|/api/v1/filters/tags/HostName?$range"
    "filters/tags/ContainerName|/api/v1/filters/tags/ContainerName?$range"
    "download_svg|/api/flamegraph/download_svg/?$range")
  for call in "${calls[@]}"; do
    printf '%s: Studio UI %-32s %s\n' "$1" "${call%%|*}" "$(time_view "${call#*|}")"
  done
}
beat_fleet() {  # 200 hosts' heartbeats, so that services and overview count them
  for n in $(seq 0 199); do
    curl -s -o /dev/null --cacert "$work/certs/ca.pem" -H "Authorization: Bearer bench-token" \
      -H "Content-Type: application/json" "https://localhost:${ports[0]}/api/metrics/heartbeat" \
      --data-binary "{\"hostname\":\"fleet-$(printf %03d "$n")\",\"service_name\":\"fleet\",\"ip_address\":\"10.0.0.1\",\"status\":\"active\",\"agent_version\":\"1.56.0\"}"
  done
}
size() {
  if [[ $database == postgres ]]; then
    psql -h "$pg" -U dormant -d rollups -Atc "SELECT pg_size_pretty(pg_database_size('rollups'))"
  else
    du -sh "$work/data-rollups" | cut -f1
  fi
}

echo "== rollups on $database: $profiles profiles from 200 hosts over 24 h, then 2.5 x as many"
if [[ -n $baseline ]]; then
  cp "$baseline" "$work/baseline-server"
  for which in baseline rollups; do
    binary="$work/dormant-server"
    [[ $which == baseline ]] && binary="$work/baseline-server"
    # shellcheck disable=SC2046
    "$binary" --listen 127.0.0.1 --port 0 --tokens-file "$work/tokens" \
      --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server.key" --log-level warn \
      $(store_of "ingest-$which") >"$work/ingest-$which.out" 2>"$work/ingest-$which.log" &
    server_pids+=($!)
    wait_for_servers "ingest-$which"
    echo "ingest, $which server: $(upload "${ports[0]}" 2000 9)"
    stop_servers
  done
fi
# shellcheck disable=SC2046
start_server rollups $(store_of rollups)
wait_for_servers rollups
echo "first: $(upload "${ports[0]}" "$profiles" 1)"
views "$profiles profiles, just uploaded"
# The server compacts hours and days that are over from their minutes every minute: views after
# that read them.
sleep "${COMPACTION_WAIT:-150}"
views "$profiles profiles"
beat_fleet
studio_views "$profiles profiles"
echo "stored: $(size)"
echo "then: $(upload "${ports[0]}" $((profiles * 3 / 2)) 2)"
sleep "${COMPACTION_WAIT:-150}"
views "$((profiles * 5 / 2)) profiles"
echo "stored: $(size)"
grep -E 'VmHWM|RssAnon' "/proc/${server_pids[0]}/status" | tr -s ' \t' ' ' | paste -sd ' '
