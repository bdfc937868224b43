// JavaScript frames by name, as V8's perf maps name them: "JS:function /path/file.js:line", the
// line the function starts on. A frame is named from its JSFunction, read from the process's
// memory (process_vm_readv) when the sampler first meets it and again at its first use in each
// snapshot: the function's SharedFunctionInfo, its name (or, for an anonymous function, the
// name V8 inferred for it), and its Script's name and source up to the function's start (its
// newlines counted, no more kept). V8's
// collector moves objects, so a reading that does not find a JSFunction there keeps the name read
// before, and a frame never named is left to its native name (nullopt). Names are read within
// kMaxNameBytes, sources within kMaxSourceBytes. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "profilers/system/kept_names.h"
#include "profilers/system/v8_runtime.h"

namespace dormant::profilers::system {

class JavaScriptFrameNames {
 public:
  static constexpr size_t kMaxNameBytes = 1024;
  // Of a script's source, at most this many characters are read for a function's line: those
  // before its start.
  static constexpr int64_t kMaxSourceBytes = 16 << 20;
  static constexpr size_t kMaxFrames = 1 << 17;

  std::optional<std::string> name(pid_t pid, const V8Layout& layout, uint64_t function);
  // Names a frame now (as name() would later), while its process lives.
  void remember(pid_t pid, const V8Layout& layout, uint64_t function);
  // Ends a snapshot: the names of `exited` processes are forgotten, the others are read again at
  // their next use.
  void end_snapshot(const std::vector<pid_t>& exited);

 private:
  std::mutex mutex_;
  KeptNames<std::pair<pid_t, uint64_t>, std::optional<std::string>> frames_{kMaxFrames};
};

// The JavaScript function `function` of process `pid` by name; nullopt where it is not one.
std::optional<std::string> read_javascript_name(pid_t pid, const V8Layout& layout,
                                                uint64_t function);

}  // namespace dormant::profilers::system
