// What a GPU session attaches to when it starts: the library files (named, or those the running
// programs have loaded), the loaded probes, and the processes attached in.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "profilers/gpu/cuda_processes.h"
#include "profilers/gpu/gpu_probes.h"

namespace dormant::profilers::gpu {

struct GpuAttachment {
  std::vector<LibraryFile> files;
  std::unique_ptr<GpuProbes> probes;
  std::vector<int> pids_tried;      // of those named
  uint64_t processes_attached = 0;  // of those named, in at least one file
  uint64_t files_refused = 0;       // mapped files not trusted
  std::string failures;             // attaches that failed, each with why
};

// Attaches to every file in `libraries` (empty: those the running processes have loaded), in the
// processes `pids` (empty: in every process that maps them), the probes passing on at most
// `records_per_second` GPU records of each process (0: all). An error when nothing is attached.
Result<GpuAttachment> attach_gpu_probes(const std::vector<std::filesystem::path>& libraries,
                                        const std::vector<int>& pids, uint64_t records_per_second);

// Attaches to each of `files` in process `pid` (-1: every process that maps them); whether any
// attach held. Failures are added to `failures`.
bool attach_files(GpuProbes& probes, const std::vector<LibraryFile>& files, int pid,
                  std::string& failures);

}  // namespace dormant::profilers::gpu
