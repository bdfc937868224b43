#!/usr/bin/env bash
# What profiling the whole host costs (issue 6): CPU time of dormant-agent per second of profiling
# at 99 Hz while both CPUs are busy, for the eBPF sampler and for the perf pipeline (perf record,
# perf script, parse), one after the other under the same load: continuous sessions with a
# snapshot every 20 s, as Studio's continuous profiling runs, start and stop included.
# Each profiler runs a SHORT and a LONG session; the difference between the two is the cost of
# profiling on (per second, snapshots included), the rest the cost of starting and stopping.
#   cost = user + sys of the agent and every child it reaped (perf record, perf script)
#        + the run time of its BPF program (kernel.bpf_stats_enabled; the program runs in the
#          interrupted task's context, so no rusage holds it)
# perf's own in-kernel sampling (the callchain walk at each sample) is charged to the interrupted
# tasks and is not counted: the comparison favours perf. eBPF runs twice: walking user stacks by
# the binaries' unwind tables (the default; reading the tables is the agent's user time) and by
# frame pointer only (ebpf-fp).
# Usage: cpu_profiler_bench.sh BUILD_DIR [SHORT (default 40)] [LONG (default 100)]: seconds, in
# whole snapshots of 20 s. LOADS (default "busy build python") picks the loads. Needs root.
set -euo pipefail
build=${1:?usage: cpu_profiler_bench.sh BUILD_DIR [SHORT] [LONG]}
short=${2:-40}
long=${3:-100}
interval=20
if [[ ! $short =~ ^[0-9]+$ || ! $long =~ ^[0-9]+$ ]] ||
  ((short == 0 || short % interval || long % interval || long <= short)); then
  echo "SHORT and LONG are multiples of $interval s, LONG the longer" >&2
  exit 2
fi
agent_bin="$build/agent/dormant-agent"
known_ratio="$build/tests/fakes/known_ratio"
child_cpu="$build/tests/bench/child_cpu"
python_ratio="$(dirname "$0")/../fakes/python_ratio.py"
work=$(mktemp -d)
# Its own state and lock, so that an agent already running on this host changes nothing.
own_state=(--state-dir "$work/state" --host-lock "$work/agent.lock")
load_pids=()
stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
cleanup() {
  stop_load
  echo "$stats_before" >/proc/sys/kernel/bpf_stats_enabled
  rm -rf "$work"
}
trap cleanup EXIT
echo 1 >/proc/sys/kernel/bpf_stats_enabled

stop_load() {
  ((${#load_pids[@]} == 0)) && return
  local pid
  for pid in "${load_pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  wait "${load_pids[@]}" 2>/dev/null || true
  load_pids=()
}

# Each load process leads a process group of its own, so that stop_load ends all it started.

# Two processes that never exit, with a handful of stacks between them.
busy_load() {
  for _ in 1 2; do
    setsid "$known_ratio" 100000 &
    load_pids+=($!)
  done
}

# Two loops compiling a C++ file: a new process every few hundred ms (cc1plus, as, ld), large
# binaries to symbolize and thousands of distinct stacks.
build_load() {
  cat >"$work/load.cpp" <<'EOF'
#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  std::map<std::string, std::vector<int>> index;
  std::regex word("[a-z]+");
  for (int i = 0; i < argc; ++i) {
    std::string text(argv[i]);
    for (std::sregex_iterator it(text.begin(), text.end(), word), end; it != end; ++it)
      index[it->str()].push_back(i);
  }
  std::vector<std::string> keys;
  for (const auto& [key, positions] : index) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return static_cast<int>(keys.size());
}
EOF
  for n in 1 2; do
    setsid bash -c "while true; do g++ -O2 -o '$work/load$n' '$work/load.cpp'; done" &
    load_pids+=($!)
  done
}

# Two Debian python3.11 processes, each with two threads, whose Python frames the eBPF sampler
# walks.
python_load() {
  for _ in 1 2; do
    setsid /usr/bin/python3.11 "$python_ratio" 100000 &
    load_pids+=($!)
  done
}

# profile LOAD PROFILER SECONDS: a session of SECONDS at 99 Hz, a snapshot every `interval`; prints
# the cost and keeps it in $work/cost-LOAD-PROFILER-SECONDS. PROFILER: ebpf, ebpf-fp or perf.
profile() {
  local seconds=$3 out="$work/out-$2" log="$work/agent-$2-$3.log" started elapsed
  local profiler_flags=(--system-profiler "${2%-fp}")
  [[ $2 == *-fp ]] && profiler_flags+=(--ebpf-unwind fp)
  local user=0 sys=0 bpf=0 samples snapshots status=0
  rm -rf "$out"
  started=$(date +%s.%N)
  # SIGTERM half a second after the last snapshot is due. On it the agent writes what it holds:
  # eBPF a short extra snapshot; perf, whose snapshots come later by the time perf script takes,
  # the rest of its last one.
  "$child_cpu" --term-after "$seconds.5" "$agent_bin" -c -d "$interval" -f 99 -o "$out" \
    --no-flamegraph "${profiler_flags[@]}" --log-level info "${own_state[@]}" >"$work/cpu" \
    2>"$log" ||
    status=$?
  elapsed=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { print e - s }')
  read -r user sys bpf <"$work/cpu" || true
  samples=$( (find "$out" -type f -name '*.col' -exec cat {} + 2>/dev/null || true) |
    awk '!/^#/ { n += $NF } END { print n + 0 }')
  snapshots=$(grep -c "wrote .*\.col" "$log" || true)
  awk -v p="$2" -v u="$user" -v s="$sys" -v b="$bpf" -v d="$seconds" -v e="$elapsed" \
    -v n="$samples" -v k="$snapshots" 'BEGIN {
      cpu = u + s + b
      printf "  %-7s %3d s, %d snapshots, %6d samples; user %.3f s + sys %.3f s + BPF %.3f s = %.3f s",
        p, d, k, n, u, s, b, cpu
      printf " -> %.3f%% of one core\n", 100 * cpu / d
    }'
  awk -v u="$user" -v s="$sys" -v b="$bpf" 'BEGIN { print u + s + b }' >"$work/cost-$1-$2-$3"
  # What the eBPF maps could not hold, summed over the snapshots' warnings.
  awk -F'[:,] ' '/lost samples or stacks/ {
      for (i = 3; i <= NF; ++i) { split($i, words, " "); lost[substr($i, length(words[1]) + 2)] += words[1] }
    }
    END { for (what in lost) printf "        %d %s\n", lost[what], what }' "$log"
  if ((samples == 0 || status != 0)); then
    echo "  $2 exited with $status, $samples samples:" && cat "$log"
  fi
}

# summarize LOAD: each profiler's start-and-stop cost and steady cost per second, and the ratios.
summarize() {
  local profiler
  for profiler in ebpf ebpf-fp perf; do
    awk -v p="$profiler" -v s="$short" -v l="$long" -v cs="$(cat "$work/cost-$1-$profiler-$short")" \
      -v cl="$(cat "$work/cost-$1-$profiler-$long")" 'BEGIN {
        per_second = (cl - cs) / (l - s)
        if (per_second <= 0) {
          printf "  %-7s the longer session cost less: noise hides the cost per second\n", p
          exit
        }
        printf "  %-7s steady %.2f ms per second (%.3f%% of one core); start and stop %.3f s\n",
          p, 1000 * per_second, 100 * per_second, cs - per_second * s
      }'
  done
  awk -v l="$long" -v s="$short" \
    -v es="$(cat "$work/cost-$1-ebpf-$short")" -v el="$(cat "$work/cost-$1-ebpf-$long")" \
    -v ps="$(cat "$work/cost-$1-perf-$short")" -v pl="$(cat "$work/cost-$1-perf-$long")" 'BEGIN {
      if (el > 0) printf "  perf costs %.1f times what eBPF costs over a %d s session", pl / el, l
      if (el - es > 0 && pl - ps > 0) printf ", %.1f times once profiling", (pl - ps) / (el - es)
      print ""
    }'
}

for load in ${LOADS:-busy build python}; do
  echo "== whole host at 99 Hz, a snapshot every $interval s, load: $load ($(nproc) CPUs busy)"
  "${load}_load"
  sleep 2  # the load settles
  for seconds in "$short" "$long"; do
    profile "$load" ebpf "$seconds"
    profile "$load" ebpf-fp "$seconds"
    profile "$load" perf "$seconds"
  done
  stop_load
  summarize "$load"
done
