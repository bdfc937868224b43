#!/usr/bin/env bash
# What runtimes cost the eBPF sampler, and what the sampler costs them (Java and Node frames):
#   1. the agent's CPU (user + sys + BPF run time, as cpu_profiler_bench.sh counts it) for
#      whole-host profiling at 99 Hz, a snapshot every 20 s, with 4 JVMs and 4 Node processes busy
#      (started with default flags): a session of SECONDS and one of 3 x SECONDS, whose difference
#      is the cost per second once profiling, the rest that of starting (reading the JVMs' and
#      node's tables) and stopping;
#   2. the agent's memory (USS, RssAnon, PSS; VmRSS reported) 30 s into a session with 1 JVM and
#      with 4: what each JVM adds;
#   3. how soon a method compiled mid-session is named: the JVM's own compile log
#      (-XX:+PrintCompilation, which prints and changes nothing) against the first 1-second
#      snapshot that names it;
#   4. a JVM's throughput (KnownRatio's rounds per second, one thread) alone and during a session,
#      alternated, RUNS times each.
# Usage: runtime_bench.sh BUILD_DIR [SECONDS (default 60)] [RUNS (default 3)]. Needs root.
set -euo pipefail
build=${1:?usage: runtime_bench.sh BUILD_DIR [SECONDS] [RUNS]}
seconds=${2:-60}
runs=${3:-3}
agent_bin="$build/agent/dormant-agent"
child_cpu="$build/tests/bench/child_cpu"
classes="$build/tests/integration/java"
node_ratio="$(dirname "$0")/../fakes/node_ratio.js"
java=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
for needed in "$agent_bin" "$child_cpu" "$classes/KnownRatio.class" "$java" /usr/bin/node; do
  [[ -e $needed ]] || { echo "runtime_bench: $needed is missing" >&2; exit 2; }
done
work=$(mktemp -d)
own_state=(--state-dir "$work/state" --host-lock "$work/agent.lock")
load_pids=()
stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
stop_load() {
  local pid
  for pid in "${load_pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  ((${#load_pids[@]} == 0)) || wait "${load_pids[@]}" 2>/dev/null || true
  load_pids=()
}
cleanup() {
  stop_load
  echo "$stats_before" >/proc/sys/kernel/bpf_stats_enabled
  rm -rf "$work"
}
trap cleanup EXIT
echo 1 >/proc/sys/kernel/bpf_stats_enabled

start_jvms() {
  for _ in $(seq "$1"); do
    setsid "$java" -cp "$classes" KnownRatio 100000 >/dev/null &
    load_pids+=($!)
  done
}
start_nodes() {
  for _ in $(seq "$1"); do
    setsid /usr/bin/node "$node_ratio" 100000 >/dev/null &
    load_pids+=($!)
  done
}
# The agent's session at 99 Hz, whole host, a snapshot every $2 s, for $1 s, under child_cpu.
agent_session() {
  "$child_cpu" --term-after "$1.5" "$agent_bin" -c -d "$2" -f 99 -o "$work/out" --no-flamegraph \
    --system-profiler ebpf --log-level warn "${own_state[@]}"
}

echo "== 1. agent CPU at 99 Hz, whole host, 4 JVMs + 4 Node processes busy on $(nproc) CPUs"
start_jvms 4
start_nodes 4
sleep 5  # past the JITs' first compilations
for length in "$seconds" "$((3 * seconds))"; do
  read -r user sys bpf < <(agent_session "$length" 20 2>"$work/cpu.log")
  awk -v u="$user" -v s="$sys" -v b="$bpf" -v d="$length" 'BEGIN {
    printf "  %4d s: user %.3f s + sys %.3f s + BPF %.3f s = %.3f s -> %.3f%% of one core\n",
      d, u, s, b, u + s + b, 100 * (u + s + b) / d }'
  awk -v u="$user" -v s="$sys" -v b="$bpf" 'BEGIN { print u + s + b }' >"$work/cost-$length"
done
awk -v s="$seconds" -v cs="$(cat "$work/cost-$seconds")" -v cl="$(cat "$work/cost-$((3 * seconds))")" \
  'BEGIN { per = (cl - cs) / (2 * s)
    printf "  steady %.3f%% of one core; start and stop %.3f s\n", 100 * per, cs - per * s }'
stop_load

# The agent's memory 30 s into a session, with $1 JVMs busy.
memory_with() {
  start_jvms "$1"
  sleep 5
  agent_session 40 20 >/dev/null 2>&1 &
  local runner=$!
  sleep 30
  local agent
  agent=$(pgrep -n -x dormant-agent)
  awk -v jvms="$1" '
    /^Private_(Clean|Dirty):/ { uss += $2 } /^Pss:/ { pss = $2 }
    END { printf "  %d JVMs: USS %.1f MiB, PSS %.1f MiB", jvms, uss / 1024, pss / 1024 }' \
    "/proc/$agent/smaps_rollup"
  awk '/^RssAnon:/ { a = $2 } /^VmRSS:/ { r = $2 }
    END { printf ", RssAnon %.1f MiB (VmRSS %.1f MiB)\n", a / 1024, r / 1024 }' "/proc/$agent/status"
  awk '/^Private_(Clean|Dirty):/ { uss += $2 } END { print uss }' "/proc/$agent/smaps_rollup" \
    >"$work/uss-$1"
  wait "$runner" || true
  stop_load
}
echo "== 2. agent memory 30 s into a session (whole host, 99 Hz)"
memory_with 1
memory_with 4
awk -v one="$(cat "$work/uss-1")" -v four="$(cat "$work/uss-4")" 'BEGIN {
  printf "  each JVM past the first: %.2f MiB of USS\n", (four - one) / 3 / 1024 }'

echo "== 3. a method compiled mid-session, to its name in a 1-second snapshot"
rm -rf "$work/out"
agent_session 14 1 >/dev/null 2>"$work/latency.log" &
runner=$!
sleep 3
started_ms=$(date +%s%3N)
"$java" -XX:+PrintCompilation -cp "$classes" KnownRatio 10 >"$work/compilations" &
jvm=$!
wait "$jvm"
wait "$runner" || true
compiled_ms=$(awk '$NF != "" && /KnownRatio::delta / { print $1; exit }' "$work/compilations")
named_ms=""
for file in $(ls "$work/out"/profile_*.col 2>/dev/null | sort); do
  if grep -q 'KnownRatio\.delta_\[[1j]\]' "$file"; then
    named_ms=$(stat -c %.3Y "$file" | awk '{ printf "%.0f", $1 * 1000 }')
    break
  fi
done
if [[ -n $compiled_ms && -n $named_ms ]]; then
  echo "  delta() compiled $compiled_ms ms into the JVM; named in the snapshot written" \
    "$((named_ms - started_ms - compiled_ms)) ms later (snapshots every 1 s)"
else
  echo "  not measured: compiled '${compiled_ms}' named '${named_ms}'"
fi

echo "== 4. a JVM's throughput (rounds/s, one thread, 20 s), alone and during a session"
for run in $(seq "$runs"); do
  alone=$("$java" -cp "$classes" KnownRatio 20 | awk '{ print $NF }')
  agent_session 24 20 >/dev/null 2>&1 &
  runner=$!
  sleep 2
  profiled=$("$java" -cp "$classes" KnownRatio 20 | awk '{ print $NF }')
  wait "$runner" || true
  awk -v a="$alone" -v p="$profiled" -v r="$run" 'BEGIN {
    printf "  run %d: alone %.1f, profiled %.1f rounds/s (%+.2f%%)\n", r, a, p, 100 * (p - a) / a }'
done
