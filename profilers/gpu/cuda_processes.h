// The running processes that have libdormant_cupti.so loaded, from /proc/PID/maps, and the files
// they loaded it from, each named once, through the process's root (a container's file is reached
// from the host).
#pragma once

#include <filesystem>
#include <vector>

namespace dormant::profilers::gpu {

struct CudaLibraries {
  std::vector<int> pids;                     // processes that map the library
  std::vector<std::filesystem::path> files;  // distinct library files, as the host reaches them
};

CudaLibraries find_injected_processes(const std::filesystem::path& proc = "/proc");

}  // namespace dormant::profilers::gpu
