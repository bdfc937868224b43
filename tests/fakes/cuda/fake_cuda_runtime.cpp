// The fake libcudart.so.13: see fake_cuda.h. Each runtime API wraps the driver API that CUDA's
// runtime calls for it, through an internal function of namespace cudart as CUDA's runtime does.
// Linked into a program (fake_cuda_app_static) it plays nvcc's default static runtime.
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "fake_cuda.h"
#include "fake_cupti.h"

namespace cudart {

__attribute__((noinline)) int launch(CUpti_runtime_api_trace_cbid runtime,
                                     CUpti_driver_api_trace_cbid driver, const char* kernel,
                                     uint64_t duration_ns) {
  FakeWork work{1, &kernel, &duration_ns, 1, 0, 0};
  return fake_cuda_call(static_cast<int32_t>(runtime), -static_cast<int32_t>(driver), &work);
}

}  // namespace cudart

extern "C" {

#define FAKE_RUNTIME_LAUNCH(function, runtime_cbid, driver_cbid)            \
  __attribute__((noinline)) int function(const char* kernel, uint64_t ns) { \
    return cudart::launch(runtime_cbid, driver_cbid, kernel, ns);           \
  }
FAKE_RUNTIME_LAUNCH(cudaLaunchKernel, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
FAKE_RUNTIME_LAUNCH(cudaLaunchKernel_ptsz, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz)
FAKE_RUNTIME_LAUNCH(cudaLaunchKernelExC, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx)
FAKE_RUNTIME_LAUNCH(cudaLaunchKernelExC_ptsz,
                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)
FAKE_RUNTIME_LAUNCH(cudaLaunchCooperativeKernel,
                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel)
FAKE_RUNTIME_LAUNCH(cudaLaunchCooperativeKernel_ptsz,
                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz)
FAKE_RUNTIME_LAUNCH(cudaLaunchCooperativeKernelMultiDevice,
                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice)
FAKE_RUNTIME_LAUNCH(__cudaLaunchKernel, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx)
FAKE_RUNTIME_LAUNCH(__cudaLaunchKernel_ptsz,
                    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)
#undef FAKE_RUNTIME_LAUNCH

__attribute__((noinline)) int cudaGraphLaunch(const char* const* kernels,
                                              const uint64_t* durations_ns, int count) {
  FakeWork work{1, kernels, durations_ns, count, 0, 0};
  return fake_cuda_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                        -CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &work);
}

__attribute__((noinline)) int cudaMemcpy(uint64_t bytes, int copy_kind, uint64_t duration_ns) {
  FakeWork work{2, nullptr, &duration_ns, 0, bytes, copy_kind};
  return fake_cuda_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                        -CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &work);
}

__attribute__((noinline)) int cudaMemset(uint64_t bytes, uint64_t duration_ns) {
  FakeWork work{3, nullptr, &duration_ns, 0, bytes, 0};
  return fake_cuda_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
                        -CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, &work);
}
}
