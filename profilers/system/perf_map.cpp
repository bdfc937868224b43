#include "profilers/system/perf_map.h"

#include <algorithm>
#include <cerrno>
#include <charconv>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/procfs.h"
#include "common/unique_fd.h"
#include "profilers/system/frame_text.h"

namespace dormant::profilers::system {
namespace {

std::optional<uint64_t> hexadecimal(std::string_view text) {
  if (text.starts_with("0x")) text.remove_prefix(2);
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

std::string clean_name(std::string_view name) {
  std::string clean(name.substr(0, PerfMap::kMaxNameBytes));
  clean_frame_text(clean);
  return clean;
}

}  // namespace

Result<void> PerfMap::read_more(const std::filesystem::path& path, uid_t owner) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return Error::from_errno("open(" + path.string() + ")");
  struct stat file;
  if (::fstat(fd.get(), &file) != 0) return Error::from_errno("fstat(" + path.string() + ")");
  if (!S_ISREG(file.st_mode) || file.st_uid != owner) {
    return Error(ErrorKind::kInvalidArgument,
                 path.string() + " is not a regular file of the process's user: not read");
  }
  char buffer[64 * 1024];
  while (bytes_read_ < limits_.max_bytes) {
    size_t want = std::min<uint64_t>(sizeof(buffer), limits_.max_bytes - bytes_read_);
    ssize_t got = ::pread(fd.get(), buffer, want, static_cast<off_t>(bytes_read_));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Error::from_errno("read(" + path.string() + ")");
    if (got == 0) break;
    bytes_read_ += static_cast<uint64_t>(got);
    add_text(std::string_view(buffer, static_cast<size_t>(got)));
  }
  return {};
}

Result<void> PerfMap::read_more_of(pid_t pid) {
  auto ids = procfs::process_ids(pid);
  if (!ids) return ids.error();
  return read_more("/proc/" + std::to_string(pid) + "/root/tmp/perf-" +
                       std::to_string(ids->namespace_pid) + ".map",
                   ids->uid);
}

void PerfMap::add_text(std::string_view text) {
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view piece = text.substr(0, newline);
    if (partial_line_.size() + piece.size() > kMaxLineBytes) {
      line_too_long_ = true;
    } else {
      partial_line_.append(piece);
    }
    if (newline == std::string_view::npos) return;  // the rest of the line comes later
    if (line_too_long_) {
      ++skipped_lines_;
    } else {
      add_line(partial_line_);
    }
    partial_line_.clear();
    line_too_long_ = false;
    text.remove_prefix(newline + 1);
  }
}

void PerfMap::add_line(std::string_view line) {
  size_t first = line.find(' ');
  size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  auto start = hexadecimal(line.substr(0, first));
  auto size = second == std::string_view::npos
                  ? std::nullopt
                  : hexadecimal(line.substr(first + 1, second - first - 1));
  if (!start || !size || *size == 0 || *start + *size < *start || second + 1 >= line.size()) {
    ++skipped_lines_;
    return;
  }
  uint64_t end = *start + *size;
  // Older entries the new code overlaps are given up: the addresses are the new code's now.
  auto overlap = entries_.lower_bound(*start);
  if (overlap != entries_.begin() && std::prev(overlap)->second.end > *start) --overlap;
  while (overlap != entries_.end() && overlap->first < end) overlap = entries_.erase(overlap);
  if (entries_.size() >= limits_.max_entries) {
    ++skipped_lines_;
    return;
  }
  entries_.emplace(*start, Entry{end, clean_name(line.substr(second + 1))});
}

std::optional<std::string_view> PerfMap::name_at(uint64_t address) const {
  auto after = entries_.upper_bound(address);
  if (after == entries_.begin()) return std::nullopt;
  const auto& [start, entry] = *std::prev(after);
  if (address >= entry.end) return std::nullopt;
  return std::string_view(entry.name);
}

}  // namespace dormant::profilers::system
