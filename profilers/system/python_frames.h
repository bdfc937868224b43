// Python frames by name, gProfiler's way: "qualified.name (file.py:first line)_[p]". A frame is
// named from its code object, read from the process's memory (process_vm_readv) the first time a
// snapshot meets it, and remembered per process; the names of processes that exit are forgotten.
// A code object that is gone or not one (its type is not PyCode_Type) is "[unknown Python
// frame]". Strings are read within kMaxNameBytes; names kept within kMaxNames. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "profilers/system/python_runtime.h"

namespace dormant::profilers::system {

class PythonFrameNames {
 public:
  static constexpr size_t kMaxNameBytes = 1024;
  static constexpr size_t kMaxNames = 1 << 17;

  // The Python frames of a sampled thread (the sampler's pairs, innermost first: code object with
  // its lowest bit set on an evaluation loop's first frame, instruction pointer), as the names of
  // each loop's frames, innermost loop first, each root first.
  std::vector<std::vector<std::string>> groups(pid_t pid, const PythonOffsets& offsets,
                                               uint64_t code_type,
                                               std::span<const uint64_t> frames);
  // Names a code object now (as groups() would later), while its process lives.
  void remember(pid_t pid, const PythonOffsets& offsets, uint64_t code_type, uint64_t code);
  void forget(const std::vector<pid_t>& pids);
  size_t size() const;

 private:
  const std::string& name(pid_t pid, const PythonOffsets& offsets, uint64_t code_type,
                          uint64_t code);

  mutable std::mutex mutex_;
  std::map<std::pair<pid_t, uint64_t>, std::string> names_;
};

// Puts each evaluation loop's Python frames where the loop's native frame
// (_PyEval_EvalFrameDefault) is among `frames[user_begin, user_end)` (root first), and marks the
// other native frames there as a Python process's ("_[pn]"). Groups as groups() gives them; those
// no loop frame was found for go root-most. Returns where the user frames end now.
size_t merge_python_frames(std::vector<std::string>& frames, size_t user_begin, size_t user_end,
                           std::vector<std::vector<std::string>> groups);

}  // namespace dormant::profilers::system
