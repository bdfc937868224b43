// PythonProcesses: the CPython processes the sampler walks Python frames of. For each process
// image whose mappings hold a CPython interpreter (system::PythonInterpreters), it gives the
// sampler's python_processes map where the runtime is and the offsets of that version's
// structures, and keeps what naming the frames needs. Interpreter files are read once per
// session. At most `max_processes` images get Python frames; the rest keep native frames
// only, counted. Thread-safe.
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
#include "profilers/system/python_interpreters.h"

namespace dormant::profilers::ebpf {

struct PythonCounts {
  uint64_t processes = 0;         // images whose Python frames are walked
  uint64_t over_limit = 0;        // CPython images past the limit: native frames only
  uint64_t unknown_versions = 0;  // CPython images of a version we have no layout of
  uint64_t without_room = 0;      // the map had no room for them
  nlohmann::json to_json() const;
};

class PythonProcesses {
 public:
  // `processes_fd`: the sampler's python_processes map, which outlives this object. 0: no limit.
  PythonProcesses(int processes_fd, size_t max_processes);

  // Looks for an interpreter among the image's mappings and, where there is one we can walk,
  // gives the sampler its runtime.
  void add_process(pid_t pid, uint32_t generation, const std::vector<system::Mapping>& mappings);
  void forget_processes(const std::vector<pid_t>& pids);

  // The image's interpreter, if its Python frames are walked.
  std::optional<system::PythonImage> image(pid_t pid, uint32_t generation) const;
  PythonCounts counts() const;

 private:
  mutable std::mutex mutex_;
  system::PythonInterpreters interpreters_;
  ProcessWalks<system::PythonImage> walks_;
  PythonCounts counts_;
};

}  // namespace dormant::profilers::ebpf
