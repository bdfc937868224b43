#include "profilers/system/hotspot_vm.h"

#include "profilers/system/elf_file.h"
#include "profilers/system/process_memory.h"

namespace dormant::profilers::system {
namespace {

constexpr uint8_t kFreeSegment = 0xff;
// A block's start is at most this many hops back in the segment map (254 segments a hop): code
// blobs of up to ~2 MB with 64-byte segments.
constexpr int kMaxSegmentHops = 128;

class FieldReader {
 public:
  explicit FieldReader(const HotSpotStructs& structs) : structs_(structs) {}

  uint64_t field(const char* type, const char* name) {
    auto value = structs_.field(type, name);
    if (!value && missing_.empty()) missing_ = std::string(type) + "::" + name;
    return value.value_or(0);
  }
  uint64_t size(const char* type) {
    auto value = structs_.type_size(type);
    if (!value && missing_.empty()) missing_ = std::string("the size of ") + type;
    return value.value_or(0);
  }
  const std::string& missing() const { return missing_; }

 private:
  const HotSpotStructs& structs_;
  std::string missing_;
};

Error unreadable(const std::string& what) {
  return Error(ErrorKind::kUnavailable, "cannot read the JVM's " + what);
}

}  // namespace

Result<HotSpotOffsets> HotSpotVm::offsets_of(const HotSpotStructs& structs) {
  FieldReader read(structs);
  HotSpotOffsets offsets;
  offsets.heap_block_size = read.size("HeapBlock");
  offsets.blob_name = read.field("CodeBlob", "_name");
  offsets.blob_frame_size = read.field("CodeBlob", "_frame_size");
  offsets.blob_frame_complete = read.field("CodeBlob", "_frame_complete_offset");
  offsets.blob_code_begin = read.field("CodeBlob", "_code_begin");
  offsets.nmethod_method = read.field("CompiledMethod", "_method");
  offsets.nmethod_scopes_data_begin = read.field("CompiledMethod", "_scopes_data_begin");
  offsets.nmethod_comp_level = read.field("nmethod", "_comp_level");
  offsets.nmethod_metadata_offset = read.field("nmethod", "_metadata_offset");
  offsets.nmethod_scopes_pcs_offset = read.field("nmethod", "_scopes_pcs_offset");
  offsets.nmethod_dependencies_offset = read.field("nmethod", "_dependencies_offset");
  offsets.pc_desc_size = read.size("PcDesc");
  offsets.pc_desc_pc_offset = read.field("PcDesc", "_pc_offset");
  offsets.pc_desc_scope_decode_offset = read.field("PcDesc", "_scope_decode_offset");
  offsets.method_const_method = read.field("Method", "_constMethod");
  offsets.const_method_constants = read.field("ConstMethod", "_constants");
  offsets.const_method_name_index = read.field("ConstMethod", "_name_index");
  offsets.constant_pool_holder = read.field("ConstantPool", "_pool_holder");
  offsets.constant_pool_size = read.size("ConstantPool");
  offsets.klass_name = read.field("Klass", "_name");
  offsets.symbol_length = read.field("Symbol", "_length");
  offsets.symbol_body = read.field("Symbol", "_body");
  if (!read.missing().empty()) {
    return Error(ErrorKind::kUnavailable,
                 "a HotSpot whose structures lack " + read.missing() + " (a JDK before 9?)");
  }
  if (offsets.pc_desc_size == 0) return Error(ErrorKind::kInvalidArgument, "PcDesc of size 0");
  return offsets;
}

Result<HotSpotVm> HotSpotVm::read(pid_t pid, const HotSpotStructs& structs) {
  auto offsets = offsets_of(structs);
  if (!offsets) return offsets.error();
  FieldReader read(structs);
  uint64_t heaps_at = read.field("CodeCache", "_heaps");
  uint64_t low_bound_at = read.field("CodeCache", "_low_bound");
  uint64_t high_bound_at = read.field("CodeCache", "_high_bound");
  uint64_t array_length = read.field("GrowableArrayBase", "_len");
  uint64_t array_data = read.field("GrowableArray<int>", "_data");
  uint64_t heap_memory = read.field("CodeHeap", "_memory");
  uint64_t heap_segment_map = read.field("CodeHeap", "_segmap");
  uint64_t heap_segment_shift = read.field("CodeHeap", "_log2_segment_size");
  uint64_t space_low = read.field("VirtualSpace", "_low_boundary");
  uint64_t space_high = read.field("VirtualSpace", "_high_boundary");
  uint64_t interpreter_at = read.field("AbstractInterpreter", "_code");
  uint64_t queue_buffer = read.field("StubQueue", "_stub_buffer");
  uint64_t queue_limit = read.field("StubQueue", "_buffer_limit");
  if (!read.missing().empty()) {
    return Error(ErrorKind::kUnavailable, "a HotSpot whose structures lack " + read.missing());
  }

  HotSpotVm vm;
  vm.offsets = *offsets;
  auto heaps = read_process_value<uint64_t>(pid, heaps_at);
  auto interpreter = read_process_value<uint64_t>(pid, interpreter_at);
  if (!heaps || !interpreter) return unreadable("code cache");
  if (*heaps == 0 || *interpreter == 0) {
    return Error(ErrorKind::kConflict, "a JVM whose code cache has not started");
  }
  auto count = read_process_value<int32_t>(pid, *heaps + array_length);
  auto data = read_process_value<uint64_t>(pid, *heaps + array_data);
  if (!count || !data) return unreadable("code heaps");
  if (*count <= 0 || static_cast<size_t>(*count) > kMaxHeaps) {
    return Error(ErrorKind::kInvalidArgument,
                 "a JVM with " + std::to_string(*count) + " code heaps (at most 4 are read)");
  }
  for (int32_t i = 0; i < *count; ++i) {
    auto heap = read_process_value<uint64_t>(pid, *data + 8 * static_cast<uint64_t>(i));
    if (!heap) return unreadable("code heaps");
    auto low = read_process_value<uint64_t>(pid, *heap + heap_memory + space_low);
    auto high = read_process_value<uint64_t>(pid, *heap + heap_memory + space_high);
    auto map = read_process_value<uint64_t>(pid, *heap + heap_segment_map + space_low);
    auto shift = read_process_value<int32_t>(pid, *heap + heap_segment_shift);
    if (!low || !high || !map || !shift) return unreadable("code heaps");
    if (*low >= *high || *shift < 4 || *shift > 16 ||
        (i > 0 && vm.segment_shift != static_cast<uint32_t>(*shift))) {
      return Error(ErrorKind::kInvalidArgument, "a JVM whose code heaps make no sense");
    }
    vm.segment_shift = static_cast<uint32_t>(*shift);
    vm.heaps.push_back({*low, *high, *map});
  }
  auto code_low = read_process_value<uint64_t>(pid, low_bound_at);
  auto code_high = read_process_value<uint64_t>(pid, high_bound_at);
  auto buffer = read_process_value<uint64_t>(pid, *interpreter + queue_buffer);
  auto limit = read_process_value<int32_t>(pid, *interpreter + queue_limit);
  if (!code_low || !code_high || !buffer || !limit) return unreadable("interpreter");
  if (*code_low >= *code_high || *limit <= 0 || *buffer < *code_low ||
      *buffer + static_cast<uint64_t>(*limit) > *code_high) {
    return Error(ErrorKind::kInvalidArgument, "a JVM whose code cache makes no sense");
  }
  vm.code_low = *code_low;
  vm.code_high = *code_high;
  vm.interpreter_low = *buffer;
  vm.interpreter_high = *buffer + static_cast<uint64_t>(*limit);
  return vm;
}

std::optional<uint64_t> HotSpotVm::blob_at(pid_t pid, uint64_t address) const {
  for (const CodeHeapRange& heap : heaps) {
    if (address < heap.low || address >= heap.high) continue;
    uint64_t segment = (address - heap.low) >> segment_shift;
    for (int hop = 0; hop < kMaxSegmentHops; ++hop) {
      auto tag = read_process_value<uint8_t>(pid, heap.segment_map + segment);
      if (!tag || *tag == kFreeSegment || *tag > segment) return std::nullopt;
      if (*tag == 0) return heap.low + (segment << segment_shift) + offsets.heap_block_size;
      segment -= *tag;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

bool HotSpotJvms::named_like_libjvm(const std::string& path) {
  return path == "libjvm.so" || path.ends_with("/libjvm.so");
}

Result<const HotSpotJvms::Library*> HotSpotJvms::library(pid_t pid, const Mapping& mapping) {
  auto [found, added] = libraries_.try_emplace(FileKey{mapping.device, mapping.inode},
                                               Error(ErrorKind::kUnavailable, "not read"));
  if (added) {
    for (const std::string& path : mapped_file_paths(pid, mapping)) {
      auto file = open_elf_file(path, mapping.path, "its Java frames are not walked");
      if (!file) {
        found->second = file.error();
        continue;
      }
      auto segments = LoadSegments::of(file->elf.get(), mapping.path);
      if (!segments) {
        found->second = segments.error();
        continue;
      }
      std::span<const std::string_view> wanted(HotSpotStructs::kSymbols,
                                               HotSpotStructs::kSymbolCount);
      found->second = Library{std::move(*segments), dynamic_symbols(file->elf.get(), wanted)};
      break;
    }
  }
  if (!found->second) return found->second.error();
  return &*found->second;
}

Result<std::optional<HotSpotVm>> HotSpotJvms::find(pid_t pid,
                                                   const std::vector<Mapping>& mappings) {
  for (const Mapping& mapping : mappings) {
    if (!mapping.is_file() || !named_like_libjvm(mapping.path)) continue;
    auto read = library(pid, mapping);
    if (!read) return read.error();
    const Library& jvm = **read;
    auto bias = jvm.segments.bias(mapping.start, mapping.offset);
    if (!bias) continue;
    std::map<std::string, uint64_t, std::less<>> symbols;
    for (const auto& [name, value] : jvm.symbols) {
      symbols.emplace(name, value - jvm.segments.base() + *bias);
    }
    auto structs = HotSpotStructs::read(pid, symbols);
    if (!structs) return structs.error();
    auto vm = HotSpotVm::read(pid, *structs);
    if (!vm) return vm.error();
    return std::optional(std::move(*vm));
  }
  return std::optional<HotSpotVm>();
}

}  // namespace dormant::profilers::system
