#!/usr/bin/env bash
# What libdormant_cupti.so costs a real CUDA program per launch: known_kernels --launch-loop
# (COUNT empty kernels launched back to back) plain, with the library injected and dormant, and
# under `dormant-agent gpu --gpu-mode gpu-only`, RUNS times each, interleaved; prints the medians
# per launch. Usage: launch_cost.sh BIN [COUNT (default 200000)] [RUNS (default 5)], BIN as
# run_checks.sh takes it.
set -euo pipefail
bin=$(realpath "$1")
count=${2:-200000}
runs=${3:-5}
export LD_LIBRARY_PATH=$bin/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
elapsed_ns() { sed -n 's/.*"elapsed_ns": \([0-9]*\).*/\1/p'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for ((run = 0; run < runs; ++run)); do
  "$bin/known_kernels" --launch-loop "$count" | elapsed_ns >>"$work/plain"
  CUDA_INJECTION64_PATH=$bin/libdormant_cupti.so "$bin/known_kernels" --launch-loop "$count" |
    elapsed_ns >>"$work/dormant"
  "$bin/dormant-agent" gpu -o "$work/out" --gpu-mode gpu-only --log-level warn -- \
    "$bin/known_kernels" --launch-loop "$count" | elapsed_ns >>"$work/attached"
done
awk -v p="$(median <"$work/plain")" -v d="$(median <"$work/dormant")" \
  -v a="$(median <"$work/attached")" -v n="$count" -v r="$runs" 'BEGIN {
  printf "%d launches of an empty kernel, median of %d runs (ns per launch):\n", n, r
  printf "  plain     %8.1f\n", p / n
  printf "  dormant   %8.1f   (+%.1f)\n", d / n, (d - p) / n
  printf "  attached  %8.1f   (+%.1f)\n", a / n, (a - p) / n
}'
python3 "$(dirname "$(realpath "$0")")/check_profile.py" "$work/out/last_profile.col" 2>/dev/null |
  grep "gpu header" || true
