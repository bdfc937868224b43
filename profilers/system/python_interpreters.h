// The CPython interpreters of processes: among a process image's executable mappings, the one
// CPython lives in (an executable it is linked into, or libpython) and where its structures are
// in that process. Each file is read once. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "common/result.h"
#include "profilers/system/process_maps.h"
#include "profilers/system/python_runtime.h"

namespace dormant::profilers::system {

// A CPython process image, as its frames are walked and named.
struct PythonImage {
  PythonOffsets offsets{};
  uint64_t runtime = 0;    // _PyRuntime's address in the process
  uint64_t code_type = 0;  // PyCode_Type's address in the process: a code object's type
  int minor = 0;
};

class PythonInterpreters {
 public:
  // The image's interpreter: nullopt when it has none; an error when it has one whose frames
  // cannot be read (a version without a layout, a debug build), which says why.
  Result<std::optional<PythonImage>> find(pid_t pid, const std::vector<Mapping>& mappings);

 private:
  using FileKey = std::pair<uint64_t, uint64_t>;  // device, inode
  // The interpreter of one mapping, read once per file; null when it is none.
  const PythonBinary* binary(pid_t pid, const Mapping& mapping);

  std::map<FileKey, std::optional<PythonBinary>> binaries_;
};

}  // namespace dormant::profilers::system
