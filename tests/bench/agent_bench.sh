#!/usr/bin/env bash
# The heartbeat agent's figures (issue 5), against a real dormant-server on loopback TLS:
#   idle    USS, PSS and RssAnon (what the agent costs the host), VmRSS (reported only), threads,
#           fds and CPU over 60 s of heartbeats every second
#   inventory  the same, with 200 docker containers of 10 processes each on the host (real
#           processes in real cgroups; the docker state they are named by is in a private mount
#           namespace that only the agent sees), reported in every heartbeat
#   latency from the curl that creates a start request to perf recording, and from the curl of
#           the stop request to the end of teardown, at heartbeat intervals of 1 s and 5 s
# Usage: agent_bench.sh BUILD_DIR [idle|inventory|latency|all]. Needs root (perf -a, cgroups).
set -euo pipefail
build=${1:?usage: agent_bench.sh BUILD_DIR [idle|inventory|latency|all]}
what=${2:-all}
agent_bin="$build/agent/dormant-agent"
server_bin="$build/server/dormant-server"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
server_pid=
agent_pid=
agent_prefix=()  # what the agent runs under
fleet_pids=()
fleet_cgroups=
made_docker_dir=
cleanup() {
  [[ -n $agent_pid ]] && kill -TERM "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  [[ -n $server_pid ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  remove_fleet
  rm -rf "$work"
}
trap cleanup EXIT

"$here/../../scripts/gen-certs" "$work/certs" >/dev/null
(umask 077 && echo "bench-token" >"$work/tokens")
"$server_bin" --listen 127.0.0.1 --port 0 --data-dir "$work/data" --tokens-file "$work/tokens" \
  --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server.key" --log-level warn \
  >"$work/server.out" &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*://p' "$work/server.out")
url="https://localhost:$port"
host=$(hostname)

api() {  # api PATH [JSON]
  local args=(-s --cacert "$work/certs/ca.pem" -H "Authorization: Bearer bench-token")
  [[ $# -gt 1 ]] && args+=(-d "$2")
  curl "${args[@]}" "$url$1"
}

start_agent() {  # start_agent INTERVAL
  rm -rf "$work/state"
  "${agent_prefix[@]}" "$agent_bin" --enable-heartbeat-server --api-server "$url" --tls-ca-bundle "$work/certs/ca.pem" \
    --token-file "$work/tokens" --service-name bench --heartbeat-interval "$1" -u \
    --state-dir "$work/state" --host-lock "$work/agent.lock" --log-level info 2>"$work/agent.log" &
  agent_pid=$!
  until grep -q "idle baseline" "$work/agent.log"; do
    kill -0 "$agent_pid" 2>/dev/null || { cat "$work/agent.log" >&2; exit 1; }
    sleep 0.1
  done
}

stop_agent() {
  kill -TERM "$agent_pid"
  wait "$agent_pid"
  agent_pid=
}

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
field() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$agent_pid/status"; }
# USS (Private_Clean + Private_Dirty) and PSS, in kB.
uss() { awk '$1 ~ /^Private_(Clean|Dirty):$/ { s += $2 } END { print s }' "/proc/$agent_pid/smaps_rollup"; }
pss() { awk '$1 == "Pss:" { print $2 }' "/proc/$agent_pid/smaps_rollup"; }
cpu_ns() { awk '{ print $1 }' "/proc/$agent_pid/schedstat"; }

idle() {
  echo "== dormant-agent idle: heartbeats every 1 s for 60 s (sampled every second)"
  start_agent 1
  measure_idle
  stop_agent
}

measure_idle() {
  local rss=0 anon=0 uss_kb=0 pss_kb=0 threads=0 fds=0 value
  local cpu_before
  cpu_before=$(cpu_ns)
  local started=$SECONDS
  for _ in $(seq 60); do
    sleep 1
    value=$(field VmRSS) && ((value > rss)) && rss=$value
    value=$(field RssAnon) && ((value > anon)) && anon=$value
    value=$(uss) && ((value > uss_kb)) && uss_kb=$value
    value=$(pss) && ((value > pss_kb)) && pss_kb=$value
    value=$(field Threads) && ((value > threads)) && threads=$value
    value=$(ls "/proc/$agent_pid/fd" | wc -l) && ((value > fds)) && fds=$value
  done
  local cpu_used=$(($(cpu_ns) - cpu_before))
  local elapsed=$((SECONDS - started))
  printf "peak USS %.2f MB, peak RssAnon %.2f MB, peak PSS %.2f MB (VmRSS %.1f MB, reported only)\n" \
    "$(calc "$uss_kb / 1024")" "$(calc "$anon / 1024")" "$(calc "$pss_kb / 1024")" \
    "$(calc "$rss / 1024")"
  printf "at most %d threads, at most %d fds\n" "$threads" "$fds"
  printf "CPU: %.1f ms in %d s = %.3f%% of one core\n" "$(calc "$cpu_used / 1000000")" \
    "$elapsed" "$(calc "$cpu_used / ($elapsed * 10000000)")"
  rss_by_mapping
}

# The cgroup hierarchy a container's cgroup is made in: cgroup2's, else the v1 memory controller's.
cgroup_hierarchy() {
  local mount
  for mount in /sys/fs/cgroup /sys/fs/cgroup/unified; do
    [[ $(stat -f -c %T "$mount" 2>/dev/null) == cgroup2fs ]] && echo "$mount" && return
  done
  echo /sys/fs/cgroup/memory
}

# make_fleet CONTAINERS PROCESSES: docker containers as the systemd cgroup driver names them, each
# with PROCESSES sleeping processes and a config.v2.json under $work/docker, in 20 namespaces.
make_fleet() {
  fleet_cgroups="$(cgroup_hierarchy)/dormant-bench-$$"
  local c id dir
  for c in $(seq "$1"); do
    id=$(printf '%064x' "$((c * 7919))")
    dir="$work/docker/containers/$id"
    mkdir -p "$dir" "$fleet_cgroups/docker-$id.scope"
    printf '{"ID":"%s","Name":"/k8s_app_w%d","Config":{"Labels":{%s,%s,%s,%s}}}\n' "$id" "$c" \
      "\"io.kubernetes.pod.namespace\":\"ns-$((c % 20))\"" \
      "\"io.kubernetes.pod.name\":\"w$c-7f8d9cb4d-x$c\"" \
      "\"io.kubernetes.container.name\":\"app\"" "\"app\":\"w$c\"" >"$dir/config.v2.json"
    for _ in $(seq "$2"); do
      sleep 3600 &
      fleet_pids+=($!)
      echo $! >"$fleet_cgroups/docker-$id.scope/cgroup.procs"
    done
  done
  # The agent alone sees that state where docker keeps it.
  if [[ ! -d /var/lib/docker ]]; then
    mkdir -p /var/lib/docker
    made_docker_dir=1
  fi
  # shellcheck disable=SC2016 # expanded by that shell
  agent_prefix=(unshare --mount --propagation private -- sh -c
    'mount --bind "$0" /var/lib/docker && exec "$@"' "$work/docker")
}

remove_fleet() {
  if ((${#fleet_pids[@]} > 0)); then
    kill "${fleet_pids[@]}" 2>/dev/null || true
    wait "${fleet_pids[@]}" 2>/dev/null || true  # killed: not a failure
  fi
  fleet_pids=()
  if [[ -n $fleet_cgroups && -d $fleet_cgroups ]]; then
    local dir
    for dir in "$fleet_cgroups"/docker-*.scope; do
      [[ -d $dir ]] && until rmdir "$dir" 2>/dev/null; do sleep 0.05; done
    done
    rmdir "$fleet_cgroups"
  fi
  fleet_cgroups=
  if [[ -n $made_docker_dir ]]; then rmdir /var/lib/docker; fi
  made_docker_dir=
  agent_prefix=()
}

inventory() {
  echo "== dormant-agent idle with 200 containers x 10 processes on the host: heartbeats every 1 s"
  echo "   for 60 s, the inventory refreshed every 30 s (the default)"
  make_fleet 200 10
  start_agent 1
  measure_idle
  local tabs
  tabs=$(api "/api/metrics/profiling/workload_status?scope=container&service_name=bench&exact_match=true&page_size=1" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["tabCounts"])')
  echo "the server's tab counts for this host's service: $tabs"
  api "/api/hosts?service=bench" | python3 -c '
import json, sys
inventory = json.load(sys.stdin)["hosts"][0]["agent_health"]["inventory"]
print("the agent says: %d readings, the last took %.1f ms and read %d files of /proc"
      % (inventory["readings"], inventory["last_reading_us"] / 1000,
         inventory["last_reading_files"]))'
  stop_agent
  remove_fleet
}

# Where VmRSS lies: the agent's own code, each shared library's mapped pages (shared with every
# process that maps them; the kernel maps whole page-cache folios, not only the pages run), and
# anonymous memory.
rss_by_mapping() {
  local agent by_mapping
  agent=$(readlink -f "$agent_bin")
  by_mapping=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { name = $6 == "" ? "[anonymous]" : $6 }
                    /^Rss:/ { rss[name] += $2 }
                    END { for (n in rss) if (rss[n] > 0) print rss[n], n }' "/proc/$agent_pid/smaps")
  echo "VmRSS by mapping now (kB):"
  grep '\.so' <<<"$by_mapping" | sort -nr | awk '{ printf "  %6d  %s\n", $1, $2 }'
  awk -v agent="$agent" '
    $2 ~ /\.so/ { libraries += $1; next }
    $2 == agent { own += $1; next }
    { other += $1 }
    END {
      printf "  %6d  = shared libraries in all\n", libraries
      printf "  %6d  dormant-agent code and data\n", own
      printf "  %6d  heap, stack and other anonymous memory\n", other
    }' <<<"$by_mapping"
}

# Seconds since the epoch of the log line's ISO timestamp.
line_time() { date -d "$(cut -d' ' -f1 <<<"$1")" +%s.%N; }

# wait_for_line TEXT COUNT: waits until the log holds COUNT lines with TEXT, prints the last one.
wait_for_line() {
  until (($(grep -c -- "$1" "$work/agent.log" || true) >= $2)); do sleep 0.02; done
  grep -- "$1" "$work/agent.log" | tail -n 1
}

latency() {  # latency INTERVAL ROUNDS
  echo "== dormant-agent latency, heartbeat every $1 s, $2 start/stop rounds (values in s)"
  start_agent "$1"
  local starts=() stops=() before line
  for round in $(seq "$2"); do
    sleep "$(calc "$RANDOM / 32768 * $1")"  # requests land anywhere in the heartbeat period
    before=$(date +%s.%N)
    api /api/metrics/profile_request \
      "{\"service_name\":\"bench\",\"request_type\":\"start\",\"continuous\":true,\"duration\":60,\"frequency\":99,\"target_hosts\":{\"$host\":null}}" >/dev/null
    line=$(wait_for_line "perf: recording\|ebpf: sampling" "$round")
    starts+=("$(calc "$(line_time "$line") - $before")")
    sleep "$(calc "1 + $RANDOM / 32768 * $1")"
    before=$(date +%s.%N)
    api /api/metrics/profile_request \
      "{\"service_name\":\"bench\",\"request_type\":\"stop\",\"stop_level\":\"host\",\"target_hosts\":{\"$host\":null}}" >/dev/null
    line=$(wait_for_line "teardown took" "$round")
    stops+=("$(calc "$(line_time "$line") - $before")")
  done
  summary() { printf "%s\n" "$@" | sort -n | awk '{ v[NR] = $1 } END {
    printf "min %.3f  median %.3f  max %.3f\n", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
  echo "curl start -> perf recording:  $(summary "${starts[@]}")"
  echo "curl stop  -> teardown done:   $(summary "${stops[@]}")"
  grep -q "teardown audit:" "$work/agent.log" && echo "the audit reported leaks: see above"
  stop_agent
}

[[ $what == idle || $what == all ]] && idle
[[ $what == inventory || $what == all ]] && inventory
if [[ $what == latency || $what == all ]]; then
  latency 1 10
  latency 5 10
fi
