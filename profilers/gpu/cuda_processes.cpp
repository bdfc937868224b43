#include "profilers/gpu/cuda_processes.h"

#include <charconv>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "dormant_cupti/probes.h"

namespace dormant::profilers::gpu {
namespace {

constexpr long kFuseMagic = 0x65735546;

bool is_library(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name.starts_with(DORMANT_CUPTI_LIBRARY_NAME);
}

// Why the file open at `fd` cannot be trusted; empty if it can.
std::string distrust(int fd, const struct stat& file) {
  if (!S_ISREG(file.st_mode)) return "not a regular file";
  if (file.st_uid != 0 && file.st_uid != ::geteuid()) {
    return "owned by uid " + std::to_string(file.st_uid) + ", not root";
  }
  if ((file.st_mode & (S_IWGRP | S_IWOTH)) != 0) return "writable by others than its owner";
  struct statfs filesystem {};
  if (::fstatfs(fd, &filesystem) != 0) return "its filesystem cannot be read";
  if (filesystem.f_type == kFuseMagic) return "on a FUSE filesystem";
  return "";
}

// Opens `path` without waiting on it (a FIFO, a device) and checks what it opened.
Result<std::pair<LibraryFile, struct stat>> open_checked(const std::string& path,
                                                         std::string name) {
  LibraryFile library{UniqueFd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)),
                      std::move(name)};
  if (!library.fd) return Error::from_errno("cannot open " + library.name);
  struct stat file {};
  if (::fstat(library.fd.get(), &file) != 0)
    return Error::from_errno("cannot stat " + library.name);
  if (std::string why = distrust(library.fd.get(), file); !why.empty()) {
    return Error(ErrorKind::kUnavailable, library.name + " is not attached to: " + why);
  }
  return std::pair{std::move(library), file};
}

}  // namespace

Result<LibraryFile> open_library_file(const std::filesystem::path& path) {
  auto opened = open_checked(path.string(), path.string());
  if (!opened) return opened.error();
  return std::move(opened->first);
}

CudaLibraries find_injected_processes(const std::filesystem::path& proc) {
  CudaLibraries found;
  std::set<std::pair<dev_t, ino_t>> kept;
  std::set<std::string> refused;  // each said once
  auto refuse = [&](const std::string& mapped, std::string why) {
    if (!refused.insert(mapped).second) return;
    if (found.refused.size() < kMaxRefusalsSaid) found.refused.push_back(std::move(why));
    ++found.files_refused;
  };
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
      std::string range = line.substr(0, line.find(' '));
      std::string mapped = line.substr(path_at);
      auto opened = open_checked((entry.path() / "map_files" / range).string(), mapped);
      if (!opened) {
        refuse(mapped, opened.error().message());
        continue;
      }
      maps_library = true;
      const struct stat& file = opened->second;
      if (kept.contains({file.st_dev, file.st_ino})) continue;
      if (found.files.size() >= kMaxLibraryFiles) {
        refuse(mapped, mapped + " is not attached to: more than " +
                           std::to_string(kMaxLibraryFiles) + " library files");
        continue;
      }
      kept.emplace(file.st_dev, file.st_ino);
      found.files.push_back(std::move(opened->first));
    }
    if (maps_library) found.pids.push_back(pid);
  }
  return found;
}

}  // namespace dormant::profilers::gpu
