// The fake CUDA runtime (libcudart.so.13) and driver (libcuda.so.1) that the fake CUDA program
// calls: the launch APIs CUPTI reports, with the work reduced to a kernel name and how long the
// fake GPU takes. Each runtime call wraps the driver call CUDA's runtime makes, as the real ones
// do, and the first call injects CUDA_INJECTION64_PATH as libcuda does. Environment:
//   FAKE_CUDA_DRIVER_OWN_ID=1   a driver call inside a runtime call gets its own correlation id,
//                               which its records carry
//   FAKE_CUDA_RUNTIME_WORK_US=N a runtime call works N µs between its entry and its driver call
//                               (a stop then most likely lands inside one)
#pragma once

#include <cstdint>

extern "C" {

// Driver (libcuda.so.1).
int cuInit(unsigned flags);
int cuLaunchKernel(const char* kernel, uint64_t duration_ns);
int cuLaunchKernel_ptsz(const char* kernel, uint64_t duration_ns);
int cuLaunchKernelEx(const char* kernel, uint64_t duration_ns);
int cuLaunchCooperativeKernel(const char* kernel, uint64_t duration_ns);
int cuGraphLaunch(const char* const* kernels, const uint64_t* durations_ns, int count);

// Runtime (libcudart.so.13).
int cudaLaunchKernel(const char* kernel, uint64_t duration_ns);
int cudaLaunchKernel_ptsz(const char* kernel, uint64_t duration_ns);
int cudaLaunchKernelExC(const char* kernel, uint64_t duration_ns);
int cudaLaunchKernelExC_ptsz(const char* kernel, uint64_t duration_ns);
int cudaLaunchCooperativeKernel(const char* kernel, uint64_t duration_ns);
int cudaLaunchCooperativeKernel_ptsz(const char* kernel, uint64_t duration_ns);
int cudaLaunchCooperativeKernelMultiDevice(const char* kernel, uint64_t duration_ns);
int __cudaLaunchKernel(const char* kernel, uint64_t duration_ns);
int __cudaLaunchKernel_ptsz(const char* kernel, uint64_t duration_ns);
int cudaGraphLaunch(const char* const* kernels, const uint64_t* durations_ns, int count);
int cudaMemcpy(uint64_t bytes, int copy_kind, uint64_t duration_ns);
int cudaMemset(uint64_t bytes, uint64_t duration_ns);

// Shared by both: one API call of `domain_cbid` (runtime > 0, driver < 0) around `driver_cbid`'s
// nested call (0: none), submitting the work `submit` describes under the id its records carry.
struct FakeWork {
  int kind;  // 1 kernel, 2 memcpy, 3 memset
  const char* const* kernels;
  const uint64_t* durations_ns;
  int count;  // kernels; > 1 for a graph
  uint64_t bytes;
  int copy_kind;
};
int fake_cuda_call(int32_t cbid, int32_t driver_cbid, const FakeWork* work);
}
