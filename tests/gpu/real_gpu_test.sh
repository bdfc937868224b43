#!/usr/bin/env bash
# ctest's real-GPU check: skipped (exit 77) where no GPU answers; elsewhere stages what
# run_checks.sh needs from BUILD and runs it.
#   tests/gpu/real_gpu_test.sh BUILD WORK
set -uo pipefail
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU on this machine (nvidia-smi -L found none); tests/gpu/run_checks.sh runs the check where one is"
  exit 77
fi
here=$(dirname "$(realpath "$0")")
rm -rf "$2"
"$here/stage.sh" "$1" "$2/stage" || exit 1
"$here/run_checks.sh" "$2/stage" "$2/out"
