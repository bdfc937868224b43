// The fake libcuda.so.1: see fake_cuda.h.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <cupti_driver_cbid.h>
#include <dlfcn.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "fake_cupti.h"

namespace {

std::once_flag g_init;

// What libcuda does at cuInit: loads the injection library and calls its InitializeInjection.
void inject() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || *path == 0) return;
  void* library = dlopen(path, RTLD_NOW);
  if (library == nullptr) {
    std::fprintf(stderr, "fake libcuda: cannot load %s: %s\n", path, dlerror());
    return;
  }
  using Initialize = int (*)();
  auto initialize = reinterpret_cast<Initialize>(dlsym(library, "InitializeInjection"));
  if (initialize == nullptr || initialize() != 1) {
    std::fprintf(stderr, "fake libcuda: InitializeInjection of %s failed\n", path);
  }
}

void submit(uint32_t correlation_id, const FakeWork& work) {
  switch (work.kind) {
    case 1:
      for (int i = 0; i < work.count; ++i) {
        fake_cupti_kernel(correlation_id, work.kernels[i], work.durations_ns[i],
                          work.count > 1 ? 42 : 0);
      }
      break;
    case 2:
      fake_cupti_memcpy(correlation_id, static_cast<uint32_t>(work.copy_kind), work.bytes,
                        work.durations_ns[0]);
      break;
    default:
      fake_cupti_memset(correlation_id, work.bytes, work.durations_ns[0]);
      break;
  }
}

long runtime_work_us() {
  static const long us = [] {
    const char* value = std::getenv("FAKE_CUDA_RUNTIME_WORK_US");
    return value != nullptr ? std::strtol(value, nullptr, 10) : 0;
  }();
  return us;
}

bool driver_has_own_id() {
  static const bool own = [] {
    const char* value = std::getenv("FAKE_CUDA_DRIVER_OWN_ID");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return own;
}

__attribute__((noinline)) void driver_call(int32_t driver_cbid, uint32_t correlation_id,
                                           const FakeWork* work) {
  auto cbid = static_cast<uint32_t>(-driver_cbid);
  const char* symbol = work->kind == 1 ? work->kernels[0] : nullptr;
  fake_cupti_api(kFakeDriverApi, cbid, kFakeApiEnter, correlation_id, symbol);
  submit(correlation_id, *work);
  fake_cupti_api(kFakeDriverApi, cbid, kFakeApiExit, correlation_id, symbol);
}

FakeWork kernel_work(const char* const* kernel, const uint64_t* duration_ns) {
  return FakeWork{1, kernel, duration_ns, 1, 0, 0};
}

}  // namespace

extern "C" {

int cuInit(unsigned) {
  std::call_once(g_init, inject);
  return 0;
}

__attribute__((noinline)) int fake_cuda_call(int32_t cbid, int32_t driver_cbid,
                                             const FakeWork* work) {
  cuInit(0);
  uint32_t correlation_id = fake_cupti_next_correlation_id();
  if (cbid < 0) {
    driver_call(cbid, correlation_id, work);
    return 0;
  }
  auto runtime_cbid = static_cast<uint32_t>(cbid);
  const char* symbol = work->kind == 1 ? work->kernels[0] : nullptr;
  fake_cupti_api(kFakeRuntimeApi, runtime_cbid, kFakeApiEnter, correlation_id, symbol);
  if (runtime_work_us() > 0) usleep(static_cast<useconds_t>(runtime_work_us()));
  uint32_t driver_id = driver_has_own_id() ? fake_cupti_next_correlation_id() : correlation_id;
  if (driver_cbid != 0) {
    driver_call(driver_cbid, driver_id, work);
  } else {
    submit(driver_id, *work);
  }
  fake_cupti_api(kFakeRuntimeApi, runtime_cbid, kFakeApiExit, correlation_id, symbol);
  return 0;
}

int cuLaunchKernel(const char* kernel, uint64_t duration_ns) {
  FakeWork work = kernel_work(&kernel, &duration_ns);
  return fake_cuda_call(-CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, &work);
}
int cuLaunchKernel_ptsz(const char* kernel, uint64_t duration_ns) {
  FakeWork work = kernel_work(&kernel, &duration_ns);
  return fake_cuda_call(-CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, 0, &work);
}
int cuLaunchKernelEx(const char* kernel, uint64_t duration_ns) {
  FakeWork work = kernel_work(&kernel, &duration_ns);
  return fake_cuda_call(-CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 0, &work);
}
int cuLaunchCooperativeKernel(const char* kernel, uint64_t duration_ns) {
  FakeWork work = kernel_work(&kernel, &duration_ns);
  return fake_cuda_call(-CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, 0, &work);
}
int cuGraphLaunch(const char* const* kernels, const uint64_t* durations_ns, int count) {
  FakeWork work{1, kernels, durations_ns, count, 0, 0};
  return fake_cuda_call(-CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, 0, &work);
}
}
