#include "profilers/gpu/cuda_processes.h"

#include <charconv>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "dormant_cupti/probes.h"

namespace dormant::profilers::gpu {
namespace {

bool is_library(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name.starts_with(DORMANT_CUPTI_LIBRARY_NAME);
}

}  // namespace

CudaLibraries find_injected_processes(const std::filesystem::path& proc) {
  CudaLibraries found;
  std::set<std::pair<std::string, std::string>> seen;  // device, inode
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(proc, error)) {
    std::string name = entry.path().filename();
    int pid = 0;
    auto [end, parsed] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (parsed != std::errc() || end != name.data() + name.size()) continue;
    std::ifstream maps(entry.path() / "maps");
    std::string line;
    bool maps_library = false;
    while (std::getline(maps, line)) {
      // address perms offset device inode path
      auto path_at = line.find('/');
      if (path_at == std::string::npos || !is_library(std::string_view(line).substr(path_at))) {
        continue;
      }
      maps_library = true;
      std::string fields[5];
      size_t at = 0;
      for (std::string& field : fields) {
        at = line.find_first_not_of(' ', at);
        size_t stop = line.find(' ', at);
        field = line.substr(at, stop - at);
        at = stop;
      }
      if (seen.emplace(fields[3], fields[4]).second) {
        found.files.push_back(entry.path() / "root" / line.substr(path_at + 1));
      }
    }
    if (maps_library) found.pids.push_back(pid);
  }
  return found;
}

}  // namespace dormant::profilers::gpu
