#include "profilers/gpu/gpu_attachment.h"

#include <spdlog/spdlog.h>

#include "dormant_cupti/probes.h"

namespace dormant::profilers::gpu {
namespace {

Result<std::vector<LibraryFile>> library_files(const std::vector<std::filesystem::path>& libraries,
                                               uint64_t& files_refused) {
  std::vector<LibraryFile> files;
  for (const auto& path : libraries) {
    auto opened = open_library_file(path);
    if (!opened) return opened.error();
    files.push_back(std::move(*opened));
  }
  if (!libraries.empty()) return files;
  CudaLibraries found = find_injected_processes();
  files_refused = found.files_refused;
  for (const std::string& refused : found.refused) spdlog::warn("gpu: {}", refused);
  if (found.files.empty()) {
    return Error(ErrorKind::kUnavailable,
                 "no running program has " DORMANT_CUPTI_LIBRARY_NAME
                 " loaded (start CUDA programs with CUDA_INJECTION64_PATH naming it)" +
                     (found.refused.empty() ? "" : "; " + found.refused.front()));
  }
  return std::move(found.files);
}

}  // namespace

bool attach_files(GpuProbes& probes, const std::vector<LibraryFile>& files, int pid,
                  std::string& failures) {
  bool any = false;
  for (const LibraryFile& file : files) {
    auto attached = probes.attach(file, pid);
    if (!attached) failures += (failures.empty() ? "" : "; ") + attached.error().message();
    any = any || attached.ok();
  }
  return any;
}

Result<GpuAttachment> attach_gpu_probes(const std::vector<std::filesystem::path>& libraries,
                                        const std::vector<int>& pids, uint64_t records_per_second) {
  GpuAttachment attachment;
  auto files = library_files(libraries, attachment.files_refused);
  if (!files) return files.error();
  auto probes = GpuProbes::make(pids, records_per_second);
  if (!probes) return probes.error();
  attachment.files = std::move(*files);
  attachment.probes = std::move(*probes);
  if (pids.empty()) {
    attach_files(*attachment.probes, attachment.files, -1, attachment.failures);
  }
  for (int pid : pids) {
    attachment.pids_tried.push_back(pid);
    if (attach_files(*attachment.probes, attachment.files, pid, attachment.failures)) {
      ++attachment.processes_attached;
    }
  }
  if (attachment.probes->attachments() == 0) {
    return Error(ErrorKind::kUnavailable,
                 "cannot attach to " DORMANT_CUPTI_LIBRARY_NAME ": " + attachment.failures);
  }
  return attachment;
}

}  // namespace dormant::profilers::gpu
