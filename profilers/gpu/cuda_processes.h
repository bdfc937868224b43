// The running processes that have libdormant_cupti.so loaded, from /proc/PID/maps, and the files
// they loaded it from. Each file is opened through a process's mapping of it
// (/proc/PID/map_files): the very file the process runs, in a container or deleted and replaced
// since (a package upgrade), never a path another user could swap for a FIFO or a link. Only
// files a user could not have forged are kept: regular, owned by root (or by the agent's user),
// writable by their owner alone, on a filesystem that is not FUSE.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace dormant::profilers::gpu {

inline constexpr size_t kMaxLibraryFiles = 64;
inline constexpr size_t kMaxRefusalsSaid = 8;

struct LibraryFile {
  UniqueFd fd;
  std::string name;  // as the processes' maps name it, for messages

  // Where libbpf and the kernel reach it, by this descriptor.
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd.get()); }
};

struct CudaLibraries {
  std::vector<int> pids;             // processes that map a kept file
  std::vector<LibraryFile> files;    // distinct (device, inode), at most kMaxLibraryFiles
  std::vector<std::string> refused;  // files left out, each with why: the first few
  size_t files_refused = 0;
};

CudaLibraries find_injected_processes(const std::filesystem::path& proc = "/proc");

// Opens a library file named by path (the one `gpu --` injects), held to the same rules.
Result<LibraryFile> open_library_file(const std::filesystem::path& path);

}  // namespace dormant::profilers::gpu
