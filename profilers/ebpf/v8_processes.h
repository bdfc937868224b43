// V8Processes: the V8 processes (node) whose JavaScript frames the sampler tells apart. For each
// process image that maps a V8 binary (system::V8Binaries), it gives the sampler's v8_processes
// map where a JavaScript frame keeps its context and function, and keeps the binary's layout for
// naming them. At most `max_processes` images; the rest keep native frames only, counted, with
// the reason. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "profilers/ebpf/process_walks.h"
#include "profilers/system/process_maps.h"
#include "profilers/system/v8_runtime.h"

namespace dormant::profilers::ebpf {

struct V8Counts {
  uint64_t processes = 0;     // images whose JavaScript frames are named
  uint64_t over_limit = 0;    // past the limit: native frames only
  uint64_t not_named = 0;     // a V8 binary whose constants could not be read (see reasons)
  uint64_t without_room = 0;  // the map had no room for them
  RecentReasons reasons;
  nlohmann::json to_json() const;
};

class V8Processes {
 public:
  // `processes_fd`: the sampler's v8_processes map, which outlives this object. 0: no limit.
  V8Processes(int processes_fd, size_t max_processes);

  void add_process(pid_t pid, uint32_t generation, const std::vector<system::Mapping>& mappings);
  void forget_processes(const std::vector<pid_t>& pids);

  // The image's V8 layout, if its JavaScript frames are named.
  std::optional<system::V8Layout> layout(pid_t pid, uint32_t generation) const;
  V8Counts counts() const;

 private:
  void give_reason(pid_t pid, const std::string& why);

  mutable std::mutex mutex_;
  system::V8Binaries binaries_;
  ProcessWalks<system::V8Layout> walks_;
  V8Counts counts_;
};

}  // namespace dormant::profilers::ebpf
