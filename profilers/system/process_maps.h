// The executable mappings of a process, from /proc/PID/maps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "common/result.h"

namespace dormant::profilers::system {

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;  // into the file
  uint64_t device = 0;  // major << 32 | minor
  uint64_t inode = 0;
  std::string path;  // a file, or a pseudo-name such as "[vdso]"
  bool is_file() const { return inode != 0 && !path.empty() && path.front() == '/'; }
};

// One line of /proc/PID/maps; nullopt for a line that is not one.
std::optional<Mapping> parse_maps_line(std::string_view line);

// The executable mappings of `pid`, by start address.
Result<std::vector<Mapping>> executable_mappings(pid_t pid);

// Where the very file `mapping` of `pid` can be read, whatever the process's mount namespace or
// symlinks say, and never a host file that a container named: its map_files link while the
// process lives; once it has gone (a short program can end before its maps are read through),
// the path it mapped, if the file there is that very file (its device and inode).
std::vector<std::string> mapped_file_paths(pid_t pid, const Mapping& mapping);

}  // namespace dormant::profilers::system
