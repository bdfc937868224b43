// Python frames by name, gProfiler's way: "qualified.name (file.py:first line)_[p]". A frame is
// named from its code object, read from the process's memory (process_vm_readv) when the sampler
// first meets it, and remembered per process. A code object that is gone or not one (its type is
// not PyCode_Type) is "[unknown Python frame]". At its first use in each snapshot a name is
// checked against its code object: one that could not be read is read again, and one whose
// address now holds another code object (CPython reuses freed memory at once) is read anew; a
// code object freed since, with no other in its place, keeps the name it had. Strings are read
// within kMaxNameBytes; names kept within kMaxNames. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
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
  // Ends a snapshot: the names of `exited` processes are forgotten, the others are checked again
  // at their next use.
  void end_snapshot(const std::vector<pid_t>& exited);
  size_t size() const;

  // What a name was read from: the code object's type, the strings' addresses and its first line.
  struct CodeIdentity {
    uint64_t type = 0;
    uint64_t function = 0;
    uint64_t file = 0;
    int32_t line = 0;
    friend bool operator==(const CodeIdentity&, const CodeIdentity&) = default;
  };

 private:
  struct Name {
    std::string text;
    std::optional<CodeIdentity> read_from;  // nullopt: it could not be read
    uint64_t checked_in = 0;                // the snapshot that last checked it
  };
  // The code object's name, checked (or read) now and marked as checked in `checked_in`.
  const std::string& name(pid_t pid, const PythonOffsets& offsets, uint64_t code_type,
                          uint64_t code, uint64_t checked_in);

  mutable std::mutex mutex_;
  std::map<std::pair<pid_t, uint64_t>, Name> names_;
  uint64_t snapshot_ = 0;
};

// Puts each evaluation loop's Python frames where the loop's native frame
// (_PyEval_EvalFrameDefault) is among `frames[user_begin, user_end)` (root first), and marks the
// other native frames there as a Python process's ("_[pn]"). Groups as groups() gives them; those
// no loop frame was found for go root-most. Returns where the user frames end now.
size_t merge_python_frames(std::vector<std::string>& frames, size_t user_begin, size_t user_end,
                           std::vector<std::vector<std::string>> groups);

}  // namespace dormant::profilers::system
