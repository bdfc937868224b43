// HotSpotProcesses: the HotSpot JVMs the sampler walks Java frames of. For each process image
// that maps a libjvm.so (system::HotSpotJvms), it gives the sampler's hotspot_processes map where
// the JVM's code cache and interpreter are and the offsets read there, and keeps what naming the
// frames needs. A JVM announced before it has made its code cache is tried again at each
// snapshot. At most `max_processes` images get Java frames; the rest keep native frames only,
// counted. Why a JVM is not walked is kept (the last few reasons) for the profile's header.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "profilers/ebpf/process_walks.h"
#include "profilers/system/hotspot_vm.h"
#include "profilers/system/process_maps.h"

namespace dormant::profilers::ebpf {

struct HotSpotCounts {
  uint64_t processes = 0;     // images whose Java frames are walked
  uint64_t over_limit = 0;    // JVMs past the limit: native frames only
  uint64_t not_walked = 0;    // JVMs whose structures could not be read (see reasons)
  uint64_t without_room = 0;  // the map had no room for them
  uint64_t waiting = 0;       // JVMs announced before their code cache was made, now
  RecentReasons reasons;
  nlohmann::json to_json() const;
};

class HotSpotProcesses {
 public:
  // `processes_fd`: the sampler's hotspot_processes map, which outlives this object. 0: no limit.
  HotSpotProcesses(int processes_fd, size_t max_processes);

  void add_process(pid_t pid, uint32_t generation, const std::vector<system::Mapping>& mappings);
  // Tries again the JVMs that had not made their code cache yet.
  void retry_waiting();
  void forget_processes(const std::vector<pid_t>& pids);

  // The image's JVM, if its Java frames are walked.
  std::shared_ptr<const system::HotSpotVm> vm(pid_t pid, uint32_t generation) const;
  HotSpotCounts counts() const;

 private:
  struct Waiting {
    uint32_t generation;
    std::vector<system::Mapping> mappings;
  };
  void add_locked(pid_t pid, uint32_t generation, const std::vector<system::Mapping>& mappings);
  void give_reason(pid_t pid, const std::string& why);

  mutable std::mutex mutex_;
  system::HotSpotJvms jvms_;
  ProcessWalks<std::shared_ptr<const system::HotSpotVm>> walks_;
  std::map<pid_t, Waiting> waiting_;
  HotSpotCounts counts_;
};

}  // namespace dormant::profilers::ebpf
