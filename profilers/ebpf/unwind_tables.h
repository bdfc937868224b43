// UnwindTables: what the sampler's table walk reads, kept in its maps. Each file a process maps
// executable gets its call-frame information read once (system::UnwindTable), off the sampling
// path, into an array map of its own under an id that stays the file's for the session; each
// process image gets its mappings, each with the file's id and the bias from address to row.
//
// The rows' kernel memory has a bound: past it, the least recently used files are given up (their
// maps freed; a process still mapping one is walked there by frame pointer) and what did not fit
// is counted. Thread-safe.
#pragma once

#include <cstdint>
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
};

// What the tables came to, for the profile header and agent_health.
struct UnwindTableCounts {
  uint64_t files_loaded = 0;         // tables in the kernel now
  uint64_t rows = 0;                 // their rows
  uint64_t kernel_bytes = 0;         // what their maps hold
  uint64_t files_read = 0;           // tables read (a file given up and needed again: twice)
  uint64_t files_without_table = 0;  // no call-frame information, not x86_64, unreadable, too big
  uint64_t files_given_up = 0;       // given up for a file used more recently
  uint64_t files_without_room = 0;   // larger than the bound, or no room left in the kernel
  uint64_t mappings_left_out = 0;    // past DORMANT_UNWIND_MAX_MAPPINGS in one process
  uint64_t processes_left_out = 0;   // the process map had no room for them
  nlohmann::json to_json() const;
};

class UnwindTables {
 public:
  // `files_fd` and `processes_fd`: the sampler's unwind_files and unwind_processes maps, which
  // outlive this object.
  UnwindTables(int files_fd, int processes_fd, UnwindLimits limits);
  ~UnwindTables();
  UnwindTables(const UnwindTables&) = delete;
  UnwindTables& operator=(const UnwindTables&) = delete;

  // Loads the tables of the files image {pid, generation} maps at `mappings` that are not loaded,
  // and gives the walk the image's mappings.
  void add_process(pid_t pid, uint32_t generation, const std::vector<system::Mapping>& mappings);
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
  struct File {
    uint32_t id = 0;
    std::optional<system::UnwindTable> table;  // its segments; rows only while being loaded
    uint32_t rows = 0;
    UniqueFd map;  // holds the rows in the kernel; empty when given up or never loaded
    uint64_t kernel_bytes = 0;
    uint64_t last_used = 0;
    bool readable = true;  // false: no table can be read from it
  };

  // The file's entry, its table loaded into the kernel where it can be; null when it has none.
  File* load(pid_t pid, const system::Mapping& mapping);
  Result<system::UnwindTable> read_table(pid_t pid, const system::Mapping& mapping) const;
  Result<void> put_in_kernel(File& file);
  // Gives up least recently used files (never those used at `now`) until `bytes` more fit.
  bool make_room(uint64_t bytes, uint64_t now);
  void give_up(File& file);

  const int files_fd_;
  const int processes_fd_;
  const UnwindLimits limits_;
  mutable std::mutex mutex_;
  std::map<FileKey, File> files_;
  struct Image {
    uint32_t generation = 0;
    uint64_t mappings_digest = 0;
  };
  std::map<pid_t, Image> images_;  // the image of each pid the walk has mappings of
  uint32_t next_id_ = 1;
  uint64_t uses_ = 0;
  uint64_t kernel_bytes_ = 0;
  UnwindTableCounts counts_;
};

}  // namespace dormant::profilers::ebpf
