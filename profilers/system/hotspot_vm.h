// A running HotSpot JVM as the sampler walks its Java frames and the agent names them: where its
// code cache and interpreter are, and the offsets of the structures read there (from
// HotSpotStructs, so any JDK build whose tables name these fields works).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "common/result.h"
#include "profilers/system/hotspot_structs.h"
#include "profilers/system/process_maps.h"
#include "profilers/system/unwind_table.h"

namespace dormant::profilers::system {

struct HotSpotOffsets {
  uint64_t heap_block_size = 0;  // a code heap block's header; its CodeBlob follows
  uint64_t blob_name = 0;
  uint64_t blob_frame_size = 0;      // int, in words
  uint64_t blob_frame_complete = 0;  // int: where the prologue ends, from the code's start
  uint64_t blob_code_begin = 0;
  uint64_t nmethod_method = 0;
  uint64_t nmethod_comp_level = 0;
  uint64_t nmethod_metadata_offset = 0;  // int, from the blob
  uint64_t nmethod_scopes_data_begin = 0;
  uint64_t nmethod_scopes_pcs_offset = 0;    // int, from the blob
  uint64_t nmethod_dependencies_offset = 0;  // int: the end of the PcDescs
  uint64_t pc_desc_size = 0;
  uint64_t pc_desc_pc_offset = 0;
  uint64_t pc_desc_scope_decode_offset = 0;
  uint64_t method_const_method = 0;
  uint64_t const_method_constants = 0;
  uint64_t const_method_name_index = 0;  // u2
  uint64_t constant_pool_holder = 0;
  uint64_t constant_pool_size = 0;  // its entries follow it
  uint64_t klass_name = 0;
  uint64_t symbol_length = 0;  // u2
  uint64_t symbol_body = 0;
};

// One code heap: its reserved range, and its segment map (one byte per segment: 0xff free, 0 a
// block's first segment, else how many segments back to go on looking).
struct CodeHeapRange {
  uint64_t low = 0;
  uint64_t high = 0;
  uint64_t segment_map = 0;
};

struct HotSpotVm {
  HotSpotOffsets offsets;
  std::vector<CodeHeapRange> heaps;
  uint32_t segment_shift = 0;  // log2 of a segment's bytes, the same in every heap
  uint64_t code_low = 0;       // the whole code cache
  uint64_t code_high = 0;
  uint64_t interpreter_low = 0;  // the template interpreter's code
  uint64_t interpreter_high = 0;

  static constexpr size_t kMaxHeaps = 4;

  // Reads where the code cache and interpreter of process `pid` are. kConflict while the JVM has
  // not made them yet: to be read again later.
  static Result<HotSpotVm> read(pid_t pid, const HotSpotStructs& structs);
  static Result<HotSpotOffsets> offsets_of(const HotSpotStructs& structs);

  // The CodeBlob holding `address`, found by the segment map; nullopt where none does.
  std::optional<uint64_t> blob_at(pid_t pid, uint64_t address) const;
  bool in_code_cache(uint64_t address) const { return address >= code_low && address < code_high; }
};

// The HotSpot JVMs of processes: the libjvm.so among an image's executable mappings, whose
// exported symbols are read once per file, and the JVM read from the process. Not thread-safe.
class HotSpotJvms {
 public:
  static bool named_like_libjvm(const std::string& path);

  // The image's JVM: nullopt when it maps no libjvm; an error when it does but the JVM cannot be
  // walked (not started yet, a JDK whose tables lack what we read), which says why.
  Result<std::optional<HotSpotVm>> find(pid_t pid, const std::vector<Mapping>& mappings);

 private:
  struct Library {
    LoadSegments segments;
    std::map<std::string, uint64_t, std::less<>> symbols;  // in the file
  };
  using FileKey = std::pair<uint64_t, uint64_t>;  // device, inode
  Result<const Library*> library(pid_t pid, const Mapping& mapping);

  std::map<FileKey, Result<Library>> libraries_;
};

}  // namespace dormant::profilers::system
