#!/usr/bin/env bash
# What profiling the whole host costs (issue 6): CPU time of dormant-agent per second of profiling
# at 99 Hz while both CPUs are busy, for the eBPF sampler and for the perf pipeline (perf record,
# perf script, parse), one after the other under the same load: a continuous session of SECONDS
# with a snapshot every SECONDS/3, as Studio's continuous profiling runs, start and stop included.
#   cost = user + sys of the agent and every child it reaped (perf record, perf script)
#        + the run time of its BPF program (kernel.bpf_stats_enabled; the program runs in the
#          interrupted task's context, so no rusage holds it)
# perf's own in-kernel sampling (the callchain walk at each sample) is charged to the interrupted
# tasks and is not counted: the comparison favours perf.
# Usage: cpu_profiler_bench.sh BUILD_DIR [SECONDS (default 60)]. Needs root.
set -euo pipefail
build=${1:?usage: cpu_profiler_bench.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
agent_bin="$build/agent/dormant-agent"
known_ratio="$build/tests/fakes/known_ratio"
child_cpu="$build/tests/bench/child_cpu"
work=$(mktemp -d)
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

# profile LOAD PROFILER: `seconds` s of the whole host at 99 Hz in 3 snapshots; prints the cost.
profile() {
  local out="$work/out-$2" started elapsed user=0 sys=0 bpf=0 samples snapshots status=0
  rm -rf "$out"
  started=$(date +%s.%N)
  # SIGTERM half a second after the third snapshot is due. On it the agent writes what it holds:
  # eBPF a short fourth snapshot; perf, whose snapshots come later by the time perf script takes,
  # the rest of its third. The cost is divided by `seconds` for both.
  "$child_cpu" --term-after "$seconds.5" "$agent_bin" -c -d $((seconds / 3)) -f 99 -o "$out" \
    --no-flamegraph --system-profiler "$2" --log-level info >"$work/cpu" 2>"$work/agent-$2.log" ||
    status=$?
  elapsed=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { print e - s }')
  read -r user sys bpf <"$work/cpu" || true
  samples=$( (find "$out" -type f -name '*.col' -exec cat {} + 2>/dev/null || true) |
    awk '!/^#/ { n += $NF } END { print n + 0 }')
  snapshots=$(grep -c "wrote .*\.col" "$work/agent-$2.log" || true)
  awk -v p="$2" -v u="$user" -v s="$sys" -v b="$bpf" -v d="$seconds" -v e="$elapsed" \
    -v n="$samples" -v k="$snapshots" 'BEGIN {
      cpu = u + s + b
      printf "  %-5s %d snapshots, %6d samples; user %.3f s + sys %.3f s + BPF %.3f s = %.3f s in %.1f s wall",
        p, k, n, u, s, b, cpu, e
      printf " -> %.3f%% of one core\n", 100 * cpu / d
    }'
  awk -v u="$user" -v s="$sys" -v b="$bpf" 'BEGIN { print u + s + b }' >"$work/cost-$1-$2"
  # What the eBPF maps could not hold, summed over the snapshots' warnings.
  awk -F'[:,] ' '/lost samples or stacks/ {
      for (i = 3; i <= NF; ++i) { split($i, words, " "); lost[substr($i, length(words[1]) + 2)] += words[1] }
    }
    END { for (what in lost) printf "        %d %s\n", lost[what], what }' "$work/agent-$2.log"
  if ((samples == 0 || status != 0)); then
    echo "  $2 exited with $status, $samples samples:" && cat "$work/agent-$2.log"
  fi
}

for load in busy build; do
  echo "== whole host at 99 Hz for $seconds s, load: $load ($(nproc) CPUs busy)"
  "${load}_load"
  sleep 2  # the load settles
  profile "$load" ebpf
  profile "$load" perf
  stop_load
  awk -v e="$(cat "$work/cost-$load-ebpf")" -v p="$(cat "$work/cost-$load-perf")" \
    'BEGIN { if (e > 0) printf "  perf costs %.1f times what eBPF costs\n", p / e }'
done
