#include "inventory/process_census.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/procfs.h"
#include "common/text.h"
#include "common/unique_fd.h"
#include "inventory/container_metadata.h"
#include "inventory/process_cgroups.h"

namespace dormant::inventory {
namespace {

// /proc/<pid>/cgroup lists one line per hierarchy: a few hundred bytes, a few KiB on hosts with
// deep cgroup trees.
constexpr size_t kMaxCgroupFileBytes = 64 << 10;
constexpr size_t kMaxCommBytes = 64;
constexpr size_t kMaxStatBytes = 4096;  // 52 numbers and a comm of 16 bytes

std::optional<pid_t> pid_of(const char* name) {
  if (*name == '\0') return std::nullopt;
  pid_t pid = 0;
  for (const char* c = name; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || pid > 100'000'000) return std::nullopt;
    pid = pid * 10 + (*c - '0');
  }
  return pid > 0 ? std::optional(pid) : std::nullopt;
}

// A small file under the proc root; nullopt when it cannot be read (the process has exited).
std::optional<std::string> read_small(int proc_fd, const std::string& relative, size_t max_bytes) {
  UniqueFd fd(::openat(proc_fd, relative.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  std::string content;
  char buffer[4096];
  while (content.size() < max_bytes) {
    ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::nullopt;
    if (got == 0) return content;
    content.append(buffer, static_cast<size_t>(got));
  }
  return std::nullopt;  // larger than any such file: not one
}

std::string printable(std::string_view text) {
  std::string shown(trim_back(text));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return shown;
}

// The container of the process whose /proc folder is `dir`: nullopt when it cannot be read,
// an empty inner optional when it is in none.
std::optional<std::optional<ContainerCgroup>> read_container(int proc_fd, const std::string& dir) {
  auto text = read_small(proc_fd, dir + "/cgroup", kMaxCgroupFileBytes);
  if (!text) return std::nullopt;
  auto cgroups = parse_process_cgroups(*text);
  if (!cgroups) return std::nullopt;
  return container_of(*cgroups);
}

}  // namespace

Result<Census> ProcessCensus::take(size_t max_processes) {
  UniqueFd proc_fd(::open(proc_root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!proc_fd) return Error::from_errno("cannot open " + proc_root_.string());
  UniqueFd listing_fd(::dup(proc_fd.get()));
  DIR* listing = listing_fd ? ::fdopendir(listing_fd.get()) : nullptr;
  if (listing == nullptr) return Error::from_errno("cannot list " + proc_root_.string());
  listing_fd.release();
  ++censuses_;

  Census census;
  std::vector<Remembered> remembered;
  std::vector<ContainerCgroup> containers;            // of `remembered`, and the census's slots
  std::vector<std::vector<InventoryProcess>> listed;  // by slot
  std::map<ContainerCgroup, int32_t> slots;
  std::vector<int32_t> slot_of_remembered(containers_.size(), -1);
  auto slot_of = [&](const ContainerCgroup& cgroup) {
    auto [at, added] = slots.try_emplace(cgroup, static_cast<int32_t>(containers.size()));
    if (added) {
      containers.push_back(cgroup);
      listed.emplace_back();
    }
    return at->second;
  };

  while (const dirent* found = ::readdir(listing)) {
    std::optional<pid_t> pid = pid_of(found->d_name);
    if (!pid) continue;
    auto known = std::lower_bound(remembered_.begin(), remembered_.end(), *pid,
                                  [](const Remembered& r, pid_t p) { return r.pid < p; });
    bool seen = known != remembered_.end() && known->pid == *pid;
    Remembered entry;
    if (seen && known->confirmed && (static_cast<uint32_t>(*pid) + censuses_) % kRereadEvery != 0) {
      entry = std::move(*known);
      if (entry.container >= 0) {
        int32_t& slot = slot_of_remembered[static_cast<size_t>(entry.container)];
        if (slot < 0) slot = slot_of(containers_[static_cast<size_t>(entry.container)]);
        entry.container = slot;
      }
    } else {
      std::string dir = found->d_name;
      auto container = read_container(proc_fd.get(), dir);
      ++census.files_read;
      if (!container) continue;
      entry.pid = *pid;
      // What the first census finds had been running before the agent started: the next
      // census need not read it again.
      entry.confirmed = seen || censuses_ == 1;
      if (*container && census.processes == max_processes) {
        ++census.processes_left_out;
        continue;  // read again next time
      }
      // In a container, its name; outside, its stat, which also tells a kernel thread (a child
      // of kthreadd, pid 2): those are no program to profile.
      auto name = *container ? read_small(proc_fd.get(), dir + "/comm", kMaxCommBytes)
                             : read_small(proc_fd.get(), dir + "/stat", kMaxStatBytes);
      ++census.files_read;
      if (!name) continue;
      if (*container) {
        entry.container = slot_of(**container);
      } else {
        auto stat = procfs::parse_process_stat(*name);
        if (!stat) continue;
        entry.kernel_thread = *pid == 2 || stat->ppid == 2;
        *name = std::move(stat->comm);
      }
      entry.name = printable(*name);
    }
    if (entry.kernel_thread) {
      if (remembered.size() < kMaxRemembered) remembered.push_back(std::move(entry));
      continue;
    }
    if (entry.container >= 0) {
      if (census.processes == max_processes) {
        ++census.processes_left_out;
      } else {
        listed[static_cast<size_t>(entry.container)].push_back({entry.pid, entry.name});
        ++census.processes;
      }
    } else if (entry.confirmed) {
      // Outside containers, only what outlived a census: a host's short-lived processes (cron,
      // shells) would change the list, and send it whole, at every reading. They take what the
      // containers leave of max_processes, below.
      if (census.host_processes.size() == max_processes) {
        ++census.processes_left_out;
      } else {
        census.host_processes.push_back({entry.pid, entry.name});
      }
    }
    if (remembered.size() < kMaxRemembered) remembered.push_back(std::move(entry));
  }
  ::closedir(listing);

  auto by_pid = [](const auto& a, const auto& b) { return a.pid < b.pid; };
  std::sort(remembered.begin(), remembered.end(), by_pid);
  std::sort(census.host_processes.begin(), census.host_processes.end(), by_pid);
  size_t room = max_processes - census.processes;
  if (census.host_processes.size() > room) {
    census.processes_left_out += census.host_processes.size() - room;
    census.host_processes.resize(room);
  }
  census.processes += census.host_processes.size();
  for (auto& [cgroup, slot] : slots) {
    std::vector<InventoryProcess>& processes = listed[static_cast<size_t>(slot)];
    if (processes.empty()) continue;
    std::sort(processes.begin(), processes.end(), by_pid);
    census.containers.push_back({cgroup, std::move(processes)});
  }
  remembered_ = std::move(remembered);
  containers_ = std::move(containers);
  return census;
}

}  // namespace dormant::inventory
