#!/usr/bin/env bash
# Puts what run_checks.sh needs into STAGE, for a GPU machine that has CUDA but not this
# project's build: the agent, its profiler module, libdormant_cupti.so and the server from BUILD
# (debug information stripped), known_kernels built here with nvcc, and in STAGE/lib the shared
# libraries they load beyond glibc, libstdc++ and CUDA's own (the GPU machine may lack them, or
# have other versions).
#   tests/gpu/stage.sh BUILD STAGE
set -euo pipefail
build=$1
stage=$2
here=$(dirname "$(realpath "$0")")
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$stage/lib"
for file in agent/dormant-agent agent/libdormant_profilers.so agent/libdormant_cupti.so \
  server/dormant-server; do
  strip --strip-debug -o "$stage/$(basename "$file")" "$build/$file"
done
# Hopper (sm_90) code, and PTX for newer GPUs; the CUDA runtime as a shared library, as most
# programs (PyTorch among them) load it.
"$nvcc" -O2 -g -arch=sm_90 -cudart shared \
  -Xcompiler -fno-omit-frame-pointer,-fno-optimize-sibling-calls \
  -o "$stage/known_kernels" "$here/known_kernels.cu"
cp "$here/run_checks.sh" "$here/check_profile.py" "$here/launch_cost.sh" "$stage/"
ldd "$stage/dormant-agent" "$stage/libdormant_profilers.so" "$stage/dormant-server" |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' |
  while read -r library; do cp -L "$library" "$stage/lib/"; done
du -sh "$stage"
