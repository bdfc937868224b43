// UnwindTables: what the sampler's table walk reads, kept in its maps. Each process image gets
// its executable mappings at once, each with its file's id and the bias from address to row (from
// the file's program headers); each file's call-frame information is read later, once per
// session, off the sampling path (load_queued(), on the profiler's reader thread), into an array
// map of its own under that id. Until a file's table is in, the walk steps through it by frame
// pointer.
//
// The rows' kernel memory has a bound: past it, the least recently used files are given up (their
// maps freed; a process still mapping one is walked there by frame pointer until it is read
// again) and what did not fit is counted. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "common/unique_fd.h"
#include "profilers/system/process_maps.h"
#include "profilers/system/unwind_table.h"

namespace dormant::profilers::ebpf {

struct UnwindLimits {
  uint64_t max_table_bytes = uint64_t{64} << 20;  // kernel memory for every file's rows
  size_t max_files = 16384;  // files known at once (those past it are walked by frame pointer)
};

// What the tables came to, for the profile header and agent_health.
struct UnwindTableCounts {
  uint64_t files_loaded = 0;         // tables in the kernel now
  uint64_t rows = 0;                 // their rows
  uint64_t kernel_bytes = 0;         // what their maps hold
  uint64_t files_waiting = 0;        // tables still to be read
  uint64_t files_read = 0;           // tables read (a file given up and needed again: twice)
  uint64_t files_without_table = 0;  // no call-frame information, not x86_64, unreadable, too big
  uint64_t files_given_up = 0;       // given up for a file used more recently
  uint64_t files_without_room = 0;   // larger than the bound, or no room left in the kernel
  uint64_t files_left_out = 0;       // past max_files
  uint64_t mappings_left_out = 0;    // past DORMANT_UNWIND_MAX_MAPPINGS in one process
  uint64_t processes_left_out = 0;   // the process map had no room for them
  nlohmann::json to_json() const;
};

class UnwindTables {
 public:
  // `files_fd` and `processes_fd`: the sampler's unwind_files and unwind_processes maps, which
  // outlive this object. `cancel`, set from another thread (a session stopping), ends the table
  // being read and the queue.
  UnwindTables(int files_fd, int processes_fd, UnwindLimits limits,
               const std::atomic<bool>* cancel = nullptr);
  ~UnwindTables();
  UnwindTables(const UnwindTables&) = delete;
  UnwindTables& operator=(const UnwindTables&) = delete;

  // Gives the walk image {pid, generation}'s mappings, and queues the tables of its files that
  // are not loaded. An image older than the pid's newest is left alone.
  void add_process(pid_t pid, uint32_t generation, const std::vector<system::Mapping>& mappings);
  // Reads queued tables into the kernel until `budget` has passed; true while some still wait.
  bool load_queued(std::chrono::milliseconds budget);
  // Gives the walk again the mappings of each image whose mappings `read` now gives differ from
  // those it has (a library loaded since): `read` is the symbolizer's, which reads them again
  // when a sample lands outside them.
  void refresh(const std::function<std::vector<system::Mapping>(pid_t, uint32_t)>& read);
  // Forgets the mappings of processes that have exited. (An image replaced by an exec is forgotten
  // when its successor is added.)
  void forget_processes(const std::vector<pid_t>& pids);

  UnwindTableCounts counts() const;

 private:
  using FileKey = std::pair<uint64_t, uint64_t>;  // device, inode; {0, 0}: the vDSO
  enum class FileState { kWaiting, kQueued, kLoaded, kUnusable };
  struct File {
    uint32_t id = 0;
    std::optional<system::LoadSegments> segments;
    FileState state = FileState::kWaiting;
    uint32_t rows = 0;
    UniqueFd map;  // holds the rows in the kernel while loaded
    uint64_t kernel_bytes = 0;
    uint64_t last_used = 0;
  };
  struct QueuedTable {
    FileKey key;
    pid_t pid;
    system::Mapping mapping;
  };
  struct Image {
    uint32_t generation = 0;
    uint64_t mappings_digest = 0;
  };

  // The file's entry, with its segments read; null for anonymous code or past max_files.
  File* file_of(pid_t pid, const system::Mapping& mapping);
  Result<system::UnwindTable> read_table(pid_t pid, const system::Mapping& mapping) const;
  Result<void> put_in_kernel(File& file, const system::UnwindTable& table);
  // Gives up least recently used files (never those used at `now`) until `bytes` more fit.
  bool make_room(uint64_t bytes, uint64_t now);
  void give_up(File& file);

  const std::atomic<bool>* const cancel_;
  const int files_fd_;
  const int processes_fd_;
  const UnwindLimits limits_;
  mutable std::mutex mutex_;
  std::map<FileKey, File> files_;
  std::deque<QueuedTable> queue_;
  std::map<pid_t, Image> images_;  // the image of each pid the walk has mappings of
  uint32_t next_id_ = 1;
  uint64_t uses_ = 0;
  uint64_t kernel_bytes_ = 0;
  UnwindTableCounts counts_;
};

}  // namespace dormant::profilers::ebpf
