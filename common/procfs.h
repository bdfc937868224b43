// Readers of /proc for one process: the numbers the teardown audit compares with its baseline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/result.h"

namespace dormant::procfs {

struct OpenFd {
  int fd;
  std::string target;  // readlink of /proc/PID/fd/N: a path, "pipe:[123]", "anon_inode:bpf-map"...
};

struct MemoryUsage {
  uint64_t rss_kb = 0;       // VmRSS
  uint64_t rss_anon_kb = 0;  // RssAnon: private memory, what a leak grows
  uint64_t rss_file_kb = 0;  // RssFile: mapped files, shared libraries
  uint64_t peak_rss_kb = 0;  // VmHWM
  // From smaps_rollup, when asked for (the kernel walks the page tables for it: about 0.3 ms for
  // the agent, ten times the rest): what the process costs the host.
  uint64_t uss_kb = 0;  // Private_Clean + Private_Dirty: freed if the process went away
  uint64_t pss_kb = 0;  // its pages, each shared one divided among the processes mapping it
};

// What a process holds, at one moment.
struct ResourceUsage {
  std::vector<OpenFd> fds;
  std::vector<pid_t> children;
  int threads = 0;
  MemoryUsage memory;
};

Result<std::vector<OpenFd>> open_fds(pid_t pid = 0);  // 0 = this process
Result<int> thread_count(pid_t pid = 0);
Result<MemoryUsage> memory_usage(pid_t pid = 0, bool with_rollup = true);
// The files mapped into the process (/proc/PID/maps), each once, sorted.
Result<std::vector<std::string>> mapped_files(pid_t pid = 0);
// Live and zombie children whose parent is `pid`.
Result<std::vector<pid_t>> children(pid_t pid = 0);
// Without `with_children`, children stays empty: finding them reads the stat of every process
// on the host. Without `with_rollup`, USS and PSS stay 0.
Result<ResourceUsage> resource_usage(pid_t pid = 0, bool with_children = true,
                                     bool with_rollup = true);

// Fields of /proc/PID/stat that callers need; comm may hold spaces and parentheses.
struct ProcessStat {
  pid_t pid = 0;
  std::string comm;
  char state = '?';  // R, S, D, Z, T, ...
  pid_t ppid = 0;
  pid_t pgid = 0;
};
Result<ProcessStat> process_stat(pid_t pid);
// The same from the text of a stat file.
Result<ProcessStat> parse_process_stat(std::string_view text);

// Who a process is to the files it writes: its pid in its own pid namespace (the last of NSpid;
// its pid where there is one namespace) and its real uid, as this host numbers them.
struct ProcessIds {
  pid_t namespace_pid = 0;
  uid_t uid = 0;
};
Result<ProcessIds> process_ids(pid_t pid);

// Every pid listed in /proc.
Result<std::vector<pid_t>> all_pids();

}  // namespace dormant::procfs
