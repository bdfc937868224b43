// The CUDA APIs whose calls submit GPU work, as CUPTI numbers them: the library subscribes to
// these, and the agent names a launch's frame after them. Runtime ids are positive, driver ids
// negative (minus the driver's id), as the launch probe carries them. cupti_lib checks the numbers
// against CUPTI's headers at compile time.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace dormant::cupti {

enum class Submits { kKernel, kGraph, kCopy };

struct LaunchApi {
  int32_t cbid;  // signed: runtime > 0, driver < 0
  std::string_view name;
  Submits submits;
};

inline constexpr LaunchApi kLaunchApis[] = {
    // Runtime.
    {211, "cudaLaunchKernel", Submits::kKernel},
    {214, "cudaLaunchKernel_ptsz", Submits::kKernel},
    {430, "cudaLaunchKernelExC", Submits::kKernel},
    {431, "cudaLaunchKernelExC_ptsz", Submits::kKernel},
    {269, "cudaLaunchCooperativeKernel", Submits::kKernel},
    {270, "cudaLaunchCooperativeKernel_ptsz", Submits::kKernel},
    {272, "cudaLaunchCooperativeKernelMultiDevice", Submits::kKernel},
    {505, "__cudaLaunchKernel", Submits::kKernel},
    {506, "__cudaLaunchKernel_ptsz", Submits::kKernel},
    {311, "cudaGraphLaunch", Submits::kGraph},
    {312, "cudaGraphLaunch_ptsz", Submits::kGraph},
    {31, "cudaMemcpy", Submits::kCopy},
    {41, "cudaMemcpyAsync", Submits::kCopy},
    {49, "cudaMemset", Submits::kCopy},
    {51, "cudaMemsetAsync", Submits::kCopy},
    {215, "cudaMemcpy_ptds", Submits::kCopy},
    {225, "cudaMemcpyAsync_ptsz", Submits::kCopy},
    {233, "cudaMemset_ptds", Submits::kCopy},
    {235, "cudaMemsetAsync_ptsz", Submits::kCopy},
    // Driver.
    {-307, "cuLaunchKernel", Submits::kKernel},
    {-442, "cuLaunchKernel_ptsz", Submits::kKernel},
    {-652, "cuLaunchKernelEx", Submits::kKernel},
    {-653, "cuLaunchKernelEx_ptsz", Submits::kKernel},
    {-477, "cuLaunchCooperativeKernel", Submits::kKernel},
    {-478, "cuLaunchCooperativeKernel_ptsz", Submits::kKernel},
    {-480, "cuLaunchCooperativeKernelMultiDevice", Submits::kKernel},
    {-115, "cuLaunch", Submits::kKernel},
    {-116, "cuLaunchGrid", Submits::kKernel},
    {-117, "cuLaunchGridAsync", Submits::kKernel},
    {-514, "cuGraphLaunch", Submits::kGraph},
    {-515, "cuGraphLaunch_ptsz", Submits::kGraph},
    {-305, "cuMemcpy", Submits::kCopy},
    {-306, "cuMemcpyAsync", Submits::kCopy},
    {-276, "cuMemcpyHtoD", Submits::kCopy},
    {-277, "cuMemcpyHtoDAsync", Submits::kCopy},
    {-278, "cuMemcpyDtoH", Submits::kCopy},
    {-279, "cuMemcpyDtoHAsync", Submits::kCopy},
    {-249, "cuMemsetD8", Submits::kCopy},
};

// The API of a launch probe's cbid; null for one not in the table.
inline const LaunchApi* find_launch_api(int32_t cbid) {
  for (const LaunchApi& api : kLaunchApis) {
    if (api.cbid == cbid) return &api;
  }
  return nullptr;
}

}  // namespace dormant::cupti
