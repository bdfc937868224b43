#!/usr/bin/env bash
# What libdormant_cupti.so costs a CUDA program per launch, on the fake CUDA stack (issue 17):
# the fake program's tight launch loop (one thread, cudaLaunchKernel, ROUNDS × 3 launches of
# kernels of a few ns, so that the fake GPU never holds a launch back) run
#   plain     without the library,
#   dormant   with the library injected and no agent attached,
#   attached  with the library under `dormant-agent gpu --gpu-mode gpu-only`, every launch's
#             stack taken (DORMANT_CUPTI_LAUNCH_RATE=0: stack unwinding, probe and BPF program
#             included, as they run in the launching thread),
#   bounded   the same at the library's default rate bound (20,000 launch stacks a second per
#             thread; the loop launches far faster, so most launches go without their stacks),
# each RUNS times, interleaved; the medians of the program's own timing of its loop give the cost
# per launch against plain. The same for a Python program launching through ctypes
# (tests/fakes/cuda/train.py, Debian's python3.11, ROUNDS steps of two launches), whose launches
# carry its Python frames too. Then the agent's CPU while attached to a program launching about
# 10,000 times a second for 5 s (one-shot mode, which finds the program as heartbeat mode does).
# Usage: gpu_launch_bench.sh BUILD_DIR [ROUNDS (default 100000)] [RUNS (default 5)]. Needs root.
set -euo pipefail
build=${1:?usage: gpu_launch_bench.sh BUILD_DIR [ROUNDS] [RUNS]}
rounds=${2:-100000}
runs=${3:-5}
agent="$build/agent/dormant-agent"
library="$build/agent/libdormant_cupti.so"
fakes="$build/tests/fakes/cuda"
app="$fakes/fake_cuda_app"
work=$(mktemp -d)
trap 'touch "$work/stop"; rm -rf "$work"' EXIT
# Its own state and lock, so that an agent already running on this host changes nothing.
own_state=(--state-dir "$work/state" --host-lock "$work/agent.lock")
export LD_LIBRARY_PATH=$fakes

elapsed_ns() { sed -n 's/.*"elapsed_ns": \([0-9]*\).*/\1/p'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for ((run = 0; run < runs; ++run)); do
  "$app" --rounds "$rounds" --kernel-ns 1 | elapsed_ns >>"$work/plain"
  CUDA_INJECTION64_PATH=$library "$app" --rounds "$rounds" --kernel-ns 1 | elapsed_ns >>"$work/dormant"
  DORMANT_CUPTI_LAUNCH_RATE=0 "$agent" gpu -o "$work/out" --gpu-mode gpu-only --log-level warn \
    "${own_state[@]}" -- "$app" --rounds "$rounds" --kernel-ns 1 | elapsed_ns >>"$work/attached"
  "$agent" gpu -o "$work/out" --gpu-mode gpu-only --log-level warn "${own_state[@]}" -- \
    "$app" --rounds "$rounds" --kernel-ns 1 | elapsed_ns >>"$work/bounded"
done
train="$(dirname "$(realpath "$0")")/../fakes/cuda/train.py"
for ((run = 0; run < runs; ++run)); do
  /usr/bin/python3.11 "$train" "$fakes" "$rounds" 1 | elapsed_ns >>"$work/python_plain"
  DORMANT_CUPTI_LAUNCH_RATE=0 "$agent" gpu -o "$work/out" --gpu-mode gpu-only --log-level warn \
    "${own_state[@]}" -- /usr/bin/python3.11 "$train" "$fakes" "$rounds" 1 |
    elapsed_ns >>"$work/python_attached"
done
launches=$((rounds * 3))
plain=$(median <"$work/plain")
dormant=$(median <"$work/dormant")
attached=$(median <"$work/attached")
bounded=$(median <"$work/bounded")
echo "launch loop, $launches launches, median of $runs runs (ns per launch):"
awk -v p="$plain" -v d="$dormant" -v a="$attached" -v b="$bounded" -v n="$launches" 'BEGIN {
  printf "  plain     %8.1f\n", p / n
  printf "  dormant   %8.1f   (+%.1f ns per launch)\n", d / n, (d - p) / n
  printf "  attached  %8.1f   (+%.1f ns per launch, every stack taken)\n", a / n, (a - p) / n
  printf "  bounded   %8.1f   (+%.1f ns per launch, 20,000 stacks a second)\n", b / n, (b - p) / n
}'
python_plain=$(median <"$work/python_plain")
python_attached=$(median <"$work/python_attached")
echo "python3.11 launch loop through ctypes, $((rounds * 2)) launches (ns per launch):"
awk -v p="$python_plain" -v a="$python_attached" -v n="$((rounds * 2))" 'BEGIN {
  printf "  plain     %8.1f\n", p / n
  printf "  attached  %8.1f   (+%.1f ns per launch, Python frames included)\n", a / n, (a - p) / n
}'

# About 10,000 launches a second: rounds of three launches, 300 µs apart.
CUDA_INJECTION64_PATH=$library "$app" --until-file "$work/stop" --pause-us 250 --kernel-ns 1 >"$work/program" &
program=$!
sleep 1
times_line=$(bash -c '"$@" >/dev/null 2>&1; times' _ "$agent" -d 5 -o "$work/out" \
  --gpu-mode gpu-only --log-level warn "${own_state[@]}" | tail -n 1)
touch "$work/stop"
wait $program
launched=$(sed -n 's/.*"launches": \([0-9]*\).*/\1/p' "$work/program")
ran_ns=$(elapsed_ns <"$work/program")
awk -v t="$times_line" -v l="$launched" -v e="$ran_ns" 'BEGIN {
  split(t, parts, " ")
  cpu = 0
  for (i = 1; i <= 2; ++i) {
    split(parts[i], ms, "m"); sub("s", "", ms[2]); cpu += ms[1] * 60 + ms[2]
  }
  rate = l / (e / 1e9)
  printf "agent attached for 5 s to a program launching %.0f times a second: %.3f s of CPU, %.2f%% of a CPU (%.2f%% per 10,000 launches/s)\n", rate, cpu, cpu / 5 * 100, cpu / 5 * 100 * 10000 / rate
}'
