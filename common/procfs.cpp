#include "common/procfs.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <string_view>

#include <dirent.h>
#include <unistd.h>

#include "common/atomic_file.h"

namespace dormant::procfs {
namespace {

std::string proc_dir(pid_t pid) {
  return pid == 0 ? std::string("/proc/self") : "/proc/" + std::to_string(pid);
}

template <typename Int>
bool parse_int(std::string_view text, Int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Numeric names of the entries of a /proc directory ("fd", "task", "/proc" itself).
Result<std::vector<long>> numeric_entries(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> handle(::opendir(dir.c_str()), ::closedir);
  if (!handle) return Error::from_errno("opendir(" + dir + ")");
  int own_fd = ::dirfd(handle.get());
  std::vector<long> entries;
  while (const dirent* entry = ::readdir(handle.get())) {
    long value = 0;
    if (!parse_int(std::string_view(entry->d_name), value)) continue;
    if (dir.ends_with("/fd") && value == own_fd) continue;
    entries.push_back(value);
  }
  return entries;
}

// "VmRSS:     1234 kB" → 1234.
uint64_t status_kb(std::string_view status, std::string_view key) {
  size_t at = status.find(key);
  if (at == std::string_view::npos) return 0;
  std::string_view rest = status.substr(at + key.size());
  size_t begin = rest.find_first_of("0123456789");
  if (begin == std::string_view::npos) return 0;
  size_t end = rest.find_first_not_of("0123456789", begin);
  uint64_t value = 0;
  parse_int(rest.substr(begin, end - begin), value);
  return value;
}

}  // namespace

Result<std::vector<OpenFd>> open_fds(pid_t pid) {
  std::string dir = proc_dir(pid) + "/fd";
  auto entries = numeric_entries(dir);
  if (!entries) return entries.error();
  std::vector<OpenFd> fds;
  for (long fd : *entries) {
    std::string link = dir + "/" + std::to_string(fd);
    char target[4096];
    ssize_t n = ::readlink(link.c_str(), target, sizeof(target));
    if (n < 0) continue;  // closed while we listed
    fds.push_back({static_cast<int>(fd), std::string(target, static_cast<size_t>(n))});
  }
  return fds;
}

Result<int> thread_count(pid_t pid) {
  auto tasks = numeric_entries(proc_dir(pid) + "/task");
  if (!tasks) return tasks.error();
  return static_cast<int>(tasks->size());
}

Result<MemoryUsage> memory_usage(pid_t pid, bool with_rollup) {
  auto status = read_file(proc_dir(pid) + "/status");
  if (!status) return status.error();
  MemoryUsage usage;
  usage.rss_kb = status_kb(*status, "VmRSS:");
  usage.rss_anon_kb = status_kb(*status, "RssAnon:");
  usage.rss_file_kb = status_kb(*status, "RssFile:");
  usage.peak_rss_kb = status_kb(*status, "VmHWM:");
  if (!with_rollup) return usage;
  auto rollup = read_file(proc_dir(pid) + "/smaps_rollup");
  if (!rollup) return rollup.error();
  usage.uss_kb = status_kb(*rollup, "\nPrivate_Clean:") + status_kb(*rollup, "\nPrivate_Dirty:");
  usage.pss_kb = status_kb(*rollup, "\nPss:");
  return usage;
}

Result<std::vector<std::string>> mapped_files(pid_t pid) {
  auto maps = read_file(proc_dir(pid) + "/maps");
  if (!maps) return maps.error();
  // "start-end perms offset dev inode   /path": the path is all after the sixth column.
  std::vector<std::string> files;
  std::string_view rest = *maps;
  while (!rest.empty()) {
    std::string_view line = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(std::min(rest.size(), line.size() + 1));
    size_t path = line.find('/');
    if (path == std::string_view::npos) continue;  // anonymous, [heap], [stack], [vdso]...
    std::string file(line.substr(path));
    if (files.empty() || files.back() != file) files.push_back(std::move(file));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

Result<ProcessStat> process_stat(pid_t pid) {
  auto text = read_file(proc_dir(pid) + "/stat");
  if (!text) return text.error();
  auto stat = parse_process_stat(*text);
  if (!stat) return std::move(stat).take_error().with_context(proc_dir(pid) + "/stat");
  return stat;
}

Result<ProcessStat> parse_process_stat(std::string_view line) {
  // "PID (COMM) S PPID PGRP ...": comm is everything between the first '(' and the last ')'.
  size_t open = line.find('(');
  size_t close = line.rfind(')');
  if (open == std::string_view::npos || open == 0 || close == std::string_view::npos ||
      close < open || close + 2 >= line.size()) {
    return Error::parse("malformed stat");
  }
  ProcessStat stat;
  parse_int(line.substr(0, open - 1), stat.pid);
  stat.comm = std::string(line.substr(open + 1, close - open - 1));
  std::string_view rest = line.substr(close + 2);
  stat.state = rest[0];
  rest.remove_prefix(std::min<size_t>(2, rest.size()));
  size_t space = rest.find(' ');
  parse_int(rest.substr(0, space), stat.ppid);
  rest.remove_prefix(space == std::string_view::npos ? rest.size() : space + 1);
  parse_int(rest.substr(0, rest.find(' ')), stat.pgid);
  return stat;
}

Result<ProcessIds> process_ids(pid_t pid) {
  auto status = read_file(proc_dir(pid) + "/status");
  if (!status) return status.error();
  // "NSpid:\t4321\t7" (outermost first), "Uid:\t0\t0\t0\t0" (real uid first).
  auto fields = [&](std::string_view key) {
    size_t at = status->find("\n" + std::string(key));
    std::string_view line = at == std::string::npos
                                ? std::string_view()
                                : std::string_view(*status).substr(at + key.size() + 1);
    return line.substr(0, line.find('\n'));
  };
  ProcessIds ids;
  std::string_view uid = fields("Uid:");
  size_t begin = uid.find_first_not_of(" \t");
  std::string_view nspid = fields("NSpid:");
  size_t last = nspid.find_last_of(" \t");
  if (begin == std::string_view::npos || last == std::string_view::npos ||
      !parse_int(uid.substr(begin, uid.find_first_of(" \t", begin) - begin), ids.uid) ||
      !parse_int(nspid.substr(last + 1), ids.namespace_pid)) {
    return Error::parse("malformed " + proc_dir(pid) + "/status");
  }
  return ids;
}

Result<std::vector<pid_t>> all_pids() {
  auto entries = numeric_entries("/proc");
  if (!entries) return entries.error();
  return std::vector<pid_t>(entries->begin(), entries->end());
}

Result<std::vector<pid_t>> children(pid_t pid) {
  pid_t parent = pid == 0 ? ::getpid() : pid;
  auto pids = all_pids();
  if (!pids) return pids.error();
  std::vector<pid_t> found;
  for (pid_t candidate : *pids) {
    auto stat = process_stat(candidate);
    if (stat && stat->ppid == parent) found.push_back(candidate);
  }
  return found;
}

Result<ResourceUsage> resource_usage(pid_t pid, bool with_children, bool with_rollup) {
  ResourceUsage usage;
  auto fds = open_fds(pid);
  if (!fds) return fds.error();
  usage.fds = std::move(*fds);
  if (with_children) {
    auto kids = children(pid);
    if (!kids) return kids.error();
    usage.children = std::move(*kids);
  }
  auto threads = thread_count(pid);
  if (!threads) return threads.error();
  usage.threads = *threads;
  auto memory = memory_usage(pid, with_rollup);
  if (!memory) return memory.error();
  usage.memory = *memory;
  return usage;
}

}  // namespace dormant::procfs
