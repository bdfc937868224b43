// What the agent needs of a V8 binary (node, libnode) to tell JavaScript frames and name them:
// the post-mortem debug constants it exports for debuggers (v8dbg_*: frame slots, object
// offsets, type tags), read from the file once. Not thread-safe.
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
#include "profilers/system/process_maps.h"

namespace dormant::profilers::system {

struct V8Layout {
  int32_t fp_function = 0;  // bytes from a JavaScript frame's frame pointer
  int32_t fp_context = 0;
  uint64_t heap_object_tag = 0;
  uint64_t heap_object_tag_mask = 0;
  uint32_t smi_shift = 0;  // a Smi's value is its word shifted right by this: tag + shift sizes
  uint64_t object_map = 0;
  uint64_t map_instance_type = 0;  // u16
  uint32_t first_nonstring_type = 0;
  uint32_t string_representation_mask = 0;
  uint32_t string_encoding_mask = 0;
  uint32_t seq_string_tag = 0;
  uint32_t cons_string_tag = 0;
  uint32_t thin_string_tag = 0;
  uint32_t one_byte_string_tag = 0;
  uint64_t string_length = 0;  // int32
  uint64_t seq_one_byte_chars = 0;
  uint64_t seq_two_byte_chars = 0;
  uint64_t cons_first = 0;
  uint64_t cons_second = 0;
  uint64_t thin_actual = 0;
  uint32_t js_function_type = 0;
  uint32_t scope_info_type = 0;
  uint32_t script_type = 0;
  uint64_t js_function_shared = 0;
  uint64_t shared_name_or_scope_info = 0;
  uint64_t shared_script_or_debug_info = 0;
  uint64_t script_name = 0;
  uint64_t script_source = 0;
};

class V8Binaries {
 public:
  // Whether `path`'s file name is node's or libnode's.
  static bool named_like_v8(const std::string& path);
  // The image's V8 layout: nullopt when it maps no V8 binary; an error when its binary lacks a
  // constant we read.
  Result<std::optional<V8Layout>> find(pid_t pid, const std::vector<Mapping>& mappings);

 private:
  using FileKey = std::pair<uint64_t, uint64_t>;  // device, inode
  std::map<FileKey, Result<V8Layout>> binaries_;
};

// Reads a V8 binary's layout from its file (`name` in errors).
Result<V8Layout> read_v8_layout(const std::string& path, const std::string& name);

}  // namespace dormant::profilers::system
