#include "module/session_builder.h"

#include "module/first_that_starts.h"
#include "profilers/perf/perf_profiler.h"
#if DORMANT_WITH_EBPF
#include "profilers/ebpf/ebpf_profiler.h"
#include "profilers/gpu/gpu_profiler.h"
#endif

namespace dormant::module {
namespace {

std::unique_ptr<profilers::Profiler> perf_profiler(const ProfilingSettings& settings) {
  profilers::perf::PerfProfilerOptions options;
  options.target = settings.target;
  options.perf = settings.perf;
  if (!settings.work_dir.empty()) options.temp_root = settings.work_dir;
  return std::make_unique<profilers::perf::PerfProfiler>(std::move(options));
}

#if DORMANT_WITH_EBPF
std::unique_ptr<profilers::Profiler> ebpf_profiler(const ProfilingSettings& settings) {
  profilers::ebpf::EbpfProfilerOptions options;
  options.target = settings.target;
  options.ebpf = settings.ebpf;
  return std::make_unique<profilers::ebpf::EbpfProfiler>(std::move(options));
}

std::unique_ptr<profilers::Profiler> gpu_profiler(const ProfilingSettings& settings) {
  profilers::gpu::GpuProfilerOptions options;
  options.target = settings.target;
  options.gpu = settings.gpu;
  return std::make_unique<profilers::gpu::GpuProfiler>(std::move(options));
}
#endif

}  // namespace

std::vector<std::unique_ptr<profilers::Profiler>> build_profilers(
    const ProfilingSettings& settings) {
  std::vector<std::unique_ptr<profilers::Profiler>> built;
  switch (settings.cpu) {
    case CpuProfilers::kNone:
      break;
    case CpuProfilers::kPerf:
      built.push_back(perf_profiler(settings));
      break;
#if DORMANT_WITH_EBPF
    case CpuProfilers::kEbpf:
      built.push_back(ebpf_profiler(settings));
      break;
    case CpuProfilers::kEbpfElsePerf: {
      std::vector<std::unique_ptr<profilers::Profiler>> candidates;
      candidates.push_back(ebpf_profiler(settings));
      candidates.push_back(perf_profiler(settings));
      built.push_back(std::make_unique<FirstThatStarts>(std::move(candidates)));
      break;
    }
#else
    case CpuProfilers::kEbpf:  // refused by the agent's validation in a build without eBPF
    case CpuProfilers::kEbpfElsePerf:
      built.push_back(perf_profiler(settings));
      break;
#endif
  }
#if DORMANT_WITH_EBPF
  if (settings.gpu.enabled) built.push_back(gpu_profiler(settings));
#endif
  return built;
}

}  // namespace dormant::module
