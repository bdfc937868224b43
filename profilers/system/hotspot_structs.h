// HotSpot's description of its own structures: the gHotSpotVM* tables libjvm.so exports for
// serviceability tools (each field's type, name, offset or static address; each type's size),
// read from a running JVM. What reading its code cache and methods needs, with no offsets of
// our own: they move between JDK builds.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "common/result.h"

namespace dormant::profilers::system {

class HotSpotStructs {
 public:
  // Bounds on what a hostile or corrupt table can make us read.
  static constexpr size_t kMaxEntries = 1 << 14;
  static constexpr size_t kMaxNameBytes = 256;

  // The libjvm symbols the tables are found by.
  static const std::string_view kSymbols[];
  static const size_t kSymbolCount;

  // Reads the tables of process `pid`; `symbols`: the kSymbols' addresses in that process.
  static Result<HotSpotStructs> read(pid_t pid,
                                     const std::map<std::string, uint64_t, std::less<>>& symbols);

  // A field's offset in its type ("CodeBlob", "_frame_size"), or a static field's address.
  std::optional<uint64_t> field(std::string_view type, std::string_view name) const;
  std::optional<uint64_t> type_size(std::string_view type) const;

  // For tests: a description built by hand.
  void add_field(std::string_view type, std::string_view name, uint64_t offset_or_address);
  void add_type(std::string_view type, uint64_t size);

 private:
  std::map<std::string, uint64_t, std::less<>> fields_;  // "Type::name"
  std::map<std::string, uint64_t, std::less<>> sizes_;
};

}  // namespace dormant::profilers::system
