// The real-GPU check's CUDA program: three launch sites whose kernels spin for 1, 2 and 4 times
// --cycles GPU clock cycles, one round after another (each round waits for its kernels). With
// --launch-loop N it instead launches N empty kernels back to back and prints how long the
// launching took, for the cost of a launch (launch_cost.sh).
//   known_kernels [--rounds N] [--cycles C] [--until-file PATH] [--launch-loop N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>
#include <unistd.h>

__device__ void spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void alphaKernel(long long cycles) { spin(cycles); }
__global__ void betaKernel(long long cycles) { spin(cycles); }
__global__ void gammaKernel(long long cycles) { spin(cycles); }
__global__ void emptyKernel() {}

// Launches `count` empty kernels, waiting only at the end; prints the launching time.
int launch_loop(long count) {
  emptyKernel<<<1, 1>>>();  // the first launch loads the module: not timed
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  auto began = std::chrono::steady_clock::now();
  for (long i = 0; i < count; ++i) emptyKernel<<<1, 1>>>();
  auto launched = std::chrono::steady_clock::now() - began;
  cudaError_t status = cudaDeviceSynchronize();
  if (status != cudaSuccess) {
    std::fprintf(stderr, "known_kernels: %s\n", cudaGetErrorString(status));
    return 1;
  }
  std::printf("{\"launches\": %ld, \"elapsed_ns\": %lld}\n", count,
              (long long)std::chrono::duration_cast<std::chrono::nanoseconds>(launched).count());
  return 0;
}

// Each site checks its launch after it, so that the launch is no tail call and the site keeps a
// frame of its own.
__attribute__((noinline)) cudaError_t launch_site_alpha(long long cycles) {
  alphaKernel<<<1, 1>>>(cycles);
  return cudaGetLastError();
}
__attribute__((noinline)) cudaError_t launch_site_beta(long long cycles) {
  betaKernel<<<1, 1>>>(2 * cycles);
  return cudaGetLastError();
}
__attribute__((noinline)) cudaError_t launch_site_gamma(long long cycles) {
  gammaKernel<<<1, 1>>>(4 * cycles);
  return cudaGetLastError();
}

int main(int argc, char** argv) {
  long rounds = 300;
  long long cycles = 1000000;
  const char* until_file = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--cycles") == 0) cycles = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--until-file") == 0) until_file = argv[i + 1];
    if (std::strcmp(argv[i], "--launch-loop") == 0) return launch_loop(std::atol(argv[i + 1]));
  }
  long launched = 0;
  for (long round = 0; until_file ? access(until_file, F_OK) != 0 : round < rounds; ++round) {
    cudaError_t status = launch_site_alpha(cycles);
    if (status == cudaSuccess) status = launch_site_beta(cycles);
    if (status == cudaSuccess) status = launch_site_gamma(cycles);
    launched += 3;
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
    if (status != cudaSuccess) {
      std::fprintf(stderr, "known_kernels: %s\n", cudaGetErrorString(status));
      return 1;
    }
  }
  std::printf("{\"launches\": %ld}\n", launched);
  return 0;
}
