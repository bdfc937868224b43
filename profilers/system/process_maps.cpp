#include "profilers/system/process_maps.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/line_reader.h"
#include "common/unique_fd.h"

namespace dormant::profilers::system {
namespace {

bool parse_hex(std::string_view text, uint64_t& value) {
  auto parsed = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  return parsed.ec == std::errc() && parsed.ptr == text.data() + text.size();
}

// The next space-separated field of `line`, which loses it.
std::string_view next_field(std::string_view& line) {
  size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos) return line = {}, std::string_view();
  line.remove_prefix(start);
  size_t end = std::min(line.find(' '), line.size());
  std::string_view field = line.substr(0, end);
  line.remove_prefix(end);
  return field;
}

}  // namespace

// "55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:00 1234567    /usr/bin/foo"
std::optional<Mapping> parse_maps_line(std::string_view line) {
  std::string_view range = next_field(line);
  std::string_view perms = next_field(line);
  std::string_view offset = next_field(line);
  std::string_view device = next_field(line);
  std::string_view inode = next_field(line);
  size_t dash = range.find('-');
  size_t colon = device.find(':');
  Mapping mapping;
  uint64_t major = 0, minor = 0;
  if (dash == std::string_view::npos || perms.size() != 4 || colon == std::string_view::npos ||
      !parse_hex(range.substr(0, dash), mapping.start) ||
      !parse_hex(range.substr(dash + 1), mapping.end) || !parse_hex(offset, mapping.offset) ||
      !parse_hex(device.substr(0, colon), major) || !parse_hex(device.substr(colon + 1), minor)) {
    return std::nullopt;
  }
  auto parsed = std::from_chars(inode.data(), inode.data() + inode.size(), mapping.inode);
  if (parsed.ec != std::errc() || mapping.end <= mapping.start || perms[2] != 'x') {
    return std::nullopt;
  }
  mapping.device = major << 32 | minor;
  size_t path = line.find_first_not_of(' ');
  if (path != std::string_view::npos) mapping.path = line.substr(path);
  return mapping;
}

Result<std::vector<Mapping>> executable_mappings(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/maps";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno("open(" + path + ")");
  LineReader reader(fd.get());
  std::vector<Mapping> mappings;
  for (;;) {
    auto line = reader.next();
    if (!line) return Error(line.error()).with_context("reading " + path);
    if (!*line) break;
    if (auto mapping = parse_maps_line(**line)) mappings.push_back(std::move(*mapping));
  }
  std::sort(mappings.begin(), mappings.end(),
            [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  return mappings;
}

std::vector<std::string> mapped_file_paths(pid_t pid, const Mapping& mapping) {
  char range[64];
  std::snprintf(range, sizeof(range), "%llx-%llx", static_cast<unsigned long long>(mapping.start),
                static_cast<unsigned long long>(mapping.end));
  std::vector<std::string> paths = {"/proc/" + std::to_string(pid) + "/map_files/" + range};
  struct stat file;
  if (::stat(mapping.path.c_str(), &file) == 0 && file.st_ino == mapping.inode &&
      (uint64_t{major(file.st_dev)} << 32 | minor(file.st_dev)) == mapping.device) {
    paths.push_back(mapping.path);
  }
  return paths;
}

}  // namespace dormant::profilers::system
