// Java frames by name, as gProfiler's Java profiler (async-profiler) names them:
// "package.Class.method" with "_[0]" interpreted, "_[1]" compiled by C1, "_[j]" by C2 and "_[i]"
// inlined into the frame below it. Names are read from the JVM's memory, when the sampler first
// meets a frame (remember(), while the JVM lives) and again at the frame's first use in each
// snapshot: a Method*'s class and method names, and a compiled frame's inlined methods from its
// nmethod's debug information at the frame's address, used only while the nmethod there still
// compiles the method sampled at the level sampled. A reading that gets less than the one kept
// (the JVM has exited, the nmethod is gone) keeps the names it had. Every read is bounded; names
// are kept within kMaxFrames. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "profilers/system/hotspot_vm.h"
#include "profilers/system/kept_names.h"

namespace dormant::profilers::system {

class JavaFrameNames {
 public:
  static constexpr size_t kMaxNameBytes = 1024;
  static constexpr size_t kMaxInlined = 64;       // methods inlined at one address
  static constexpr size_t kMaxPcDescs = 1 << 20;  // an nmethod's debug records searched
  static constexpr size_t kMaxFrames = 1 << 17;   // frames whose names are kept
  static constexpr size_t kMaxMethods = 1 << 16;  // methods named in one snapshot

  // The names of the Java frame a sampler recorded as `marked` and `word` (bpf/hotspot.h), root
  // first: the method, then those inlined into it down to the one running at its address.
  std::vector<std::string> names(pid_t pid, const HotSpotVm& vm, uint64_t marked, uint64_t word);
  // Names a frame now (as names() would later), while its JVM lives.
  void remember(pid_t pid, const HotSpotVm& vm, uint64_t marked, uint64_t word);
  // Ends a snapshot: the names of `exited` processes are forgotten, the others are read again at
  // their next use.
  void end_snapshot(const std::vector<pid_t>& exited);
  size_t size() const;

 private:
  using Key = std::tuple<pid_t, uint64_t, uint64_t>;  // pid, marked address, word
  KeptNames<Key, std::vector<std::string>>::Reading read(pid_t pid, const HotSpotVm& vm,
                                                         uint64_t marked, uint64_t word);
  std::optional<std::string> method_name(pid_t pid, const HotSpotVm& vm, uint64_t method);
  // The methods inlined at `address` of the nmethod compiling `method` at `level`, innermost
  // first, the nmethod's own last; empty where they cannot be read.
  std::vector<uint64_t> scopes(pid_t pid, const HotSpotVm& vm, uint64_t address, uint64_t method,
                               int level);

  mutable std::mutex mutex_;
  std::map<std::pair<pid_t, uint64_t>, std::optional<std::string>> methods_;  // this snapshot's
  KeptNames<Key, std::vector<std::string>> frames_{kMaxFrames};
};

// A method's name from its class's and its own symbols ("java/util/HashMap", "get"): dotted, with
// bytes that a collapsed stack or a terminal cannot carry replaced.
std::string java_method_name(std::string_view class_symbol, std::string_view method_symbol);

// One int of HotSpot's compressed debug-information stream (CompressedReadStream::read_int: one
// to five bytes, 192 values in the first, 6 bits in each of the rest); advances `at`. nullopt at
// a stream cut short.
std::optional<uint32_t> read_compressed_int(std::span<const uint8_t> stream, size_t& at);

}  // namespace dormant::profilers::system
