#include "profilers/system/java_frames.h"

#include <algorithm>

#include "bpf/runtime_frames.h"
#include "profilers/system/process_memory.h"

namespace dormant::profilers::system {
namespace {

constexpr uint32_t kFirstByteValues = 192;  // a first byte below this is the whole int
constexpr uint32_t kBitsPerLaterByte = 6;
constexpr size_t kMaxIntBytes = 5;
const std::string kUnknownMethod = "[unknown Java method]";

// A Symbol's text (u2 length, then its bytes), within `max_bytes`.
std::optional<std::string> read_symbol(pid_t pid, const HotSpotOffsets& offsets, uint64_t symbol,
                                       size_t max_bytes) {
  if (symbol == 0) return std::nullopt;
  auto length = read_process_value<uint16_t>(pid, symbol + offsets.symbol_length);
  if (!length || *length == 0 || *length > max_bytes) return std::nullopt;
  std::string text(*length, '\0');
  if (!read_process_memory(pid, symbol + offsets.symbol_body, text.data(), text.size())) {
    return std::nullopt;
  }
  return text;
}

const char* suffix_of(int kind, int level) {
  if (kind == DORMANT_JAVA_INTERPRETED) return "_[0]";
  return level >= 1 && level <= 3 ? "_[1]" : "_[j]";
}

// `text` with what a collapsed stack or a terminal cannot carry replaced, packages dotted.
void append_frame_text(std::string& name, std::string_view text) {
  for (char c : text) {
    if (c == '/') {
      name.push_back('.');
    } else if (c == ';') {
      name.push_back('|');
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      name.push_back('?');
    } else {
      name.push_back(c);
    }
  }
}

}  // namespace

std::string java_method_name(std::string_view class_symbol, std::string_view method_symbol) {
  std::string name;
  name.reserve(class_symbol.size() + method_symbol.size() + 1);
  append_frame_text(name, class_symbol);
  name.push_back('.');
  append_frame_text(name, method_symbol);
  return name;
}

std::optional<uint32_t> read_compressed_int(std::span<const uint8_t> stream, size_t& at) {
  if (at >= stream.size()) return std::nullopt;
  uint32_t value = stream[at++];
  if (value < kFirstByteValues) return value;
  uint32_t shift = kBitsPerLaterByte;
  for (size_t i = 1; i < kMaxIntBytes; ++i, shift += kBitsPerLaterByte) {
    if (at >= stream.size()) return std::nullopt;
    uint32_t byte = stream[at++];
    value += byte << shift;
    if (byte < kFirstByteValues) break;
  }
  return value;
}

std::optional<std::string> JavaFrameNames::method_name(pid_t pid, const HotSpotVm& vm,
                                                       uint64_t method) {
  auto found = methods_.find({pid, method});
  if (found != methods_.end()) return found->second;
  const HotSpotOffsets& at = vm.offsets;
  std::optional<std::string> name;
  auto const_method = read_process_value<uint64_t>(pid, method + at.method_const_method);
  auto pool = const_method
                  ? read_process_value<uint64_t>(pid, *const_method + at.const_method_constants)
                  : std::nullopt;
  auto index = const_method
                   ? read_process_value<uint16_t>(pid, *const_method + at.const_method_name_index)
                   : std::nullopt;
  auto holder =
      pool ? read_process_value<uint64_t>(pid, *pool + at.constant_pool_holder) : std::nullopt;
  auto class_symbol =
      holder ? read_process_value<uint64_t>(pid, *holder + at.klass_name) : std::nullopt;
  auto method_symbol =
      pool && index ? read_process_value<uint64_t>(pid, *pool + at.constant_pool_size + 8 * *index)
                    : std::nullopt;
  if (class_symbol && method_symbol) {
    auto class_text = read_symbol(pid, at, *class_symbol, kMaxNameBytes);
    auto method_text = read_symbol(pid, at, *method_symbol, kMaxNameBytes);
    if (class_text && method_text) name = java_method_name(*class_text, *method_text);
  }
  if (methods_.size() < kMaxMethods) methods_.emplace(std::pair(pid, method), name);
  return name;
}

std::vector<uint64_t> JavaFrameNames::scopes(pid_t pid, const HotSpotVm& vm, uint64_t address,
                                             uint64_t method, int level) {
  const HotSpotOffsets& at = vm.offsets;
  auto blob = vm.blob_at(pid, address);
  if (!blob) return {};
  auto own_method = read_process_value<uint64_t>(pid, *blob + at.nmethod_method);
  auto own_level = read_process_value<int32_t>(pid, *blob + at.nmethod_comp_level);
  if (!own_method || *own_method != method || !own_level || (*own_level & 0xf) != level) return {};
  auto code_begin = read_process_value<uint64_t>(pid, *blob + at.blob_code_begin);
  auto pcs_offset = read_process_value<int32_t>(pid, *blob + at.nmethod_scopes_pcs_offset);
  auto pcs_end_offset = read_process_value<int32_t>(pid, *blob + at.nmethod_dependencies_offset);
  auto metadata_offset = read_process_value<int32_t>(pid, *blob + at.nmethod_metadata_offset);
  auto data_begin = read_process_value<uint64_t>(pid, *blob + at.nmethod_scopes_data_begin);
  if (!code_begin || !pcs_offset || !pcs_end_offset || !metadata_offset || !data_begin ||
      *pcs_offset < 0 || *pcs_end_offset < *pcs_offset || address < *code_begin) {
    return {};
  }
  size_t count = static_cast<size_t>(*pcs_end_offset - *pcs_offset) / at.pc_desc_size;
  if (count == 0 || count > kMaxPcDescs) return {};
  // The first record at or after the address: a return address's is at it exactly.
  int64_t wanted = static_cast<int64_t>(address - *code_begin);
  uint64_t pcs = *blob + static_cast<uint64_t>(*pcs_offset);
  size_t low = 0;
  size_t high = count;
  while (low < high) {
    size_t middle = low + (high - low) / 2;
    auto pc =
        read_process_value<int32_t>(pid, pcs + middle * at.pc_desc_size + at.pc_desc_pc_offset);
    if (!pc) return {};
    if (*pc < wanted) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  if (low == count) return {};
  auto scope = read_process_value<int32_t>(
      pid, pcs + low * at.pc_desc_size + at.pc_desc_scope_decode_offset);
  if (!scope) return {};
  uint64_t metadata = *blob + static_cast<uint64_t>(*metadata_offset);
  std::vector<uint64_t> methods;
  uint32_t offset = static_cast<uint32_t>(*scope);
  while (offset != 0 && methods.size() < kMaxInlined) {
    uint8_t bytes[kMaxIntBytes * 2];
    if (!read_process_memory(pid, *data_begin + offset, bytes, sizeof(bytes))) return {};
    size_t read_at = 0;
    auto sender = read_compressed_int(bytes, read_at);
    auto index = read_compressed_int(bytes, read_at);
    if (!sender || !index || *index == 0 || *sender >= offset) return {};
    auto inlined = read_process_value<uint64_t>(pid, metadata + 8 * (uint64_t{*index} - 1));
    if (!inlined) return {};
    methods.push_back(*inlined);
    offset = *sender;
  }
  if (methods.empty() || methods.back() != method) return {};
  return methods;
}

KeptNames<JavaFrameNames::Key, std::vector<std::string>>::Reading JavaFrameNames::read(
    pid_t pid, const HotSpotVm& vm, uint64_t marked, uint64_t word) {
  int kind = static_cast<int>((marked >> DORMANT_RUNTIME_KIND_SHIFT) & 7);
  int level = static_cast<int>((marked >> DORMANT_RUNTIME_LEVEL_SHIFT) & 0xf);
  uint64_t address = marked & DORMANT_RUNTIME_ADDRESS_MASK;
  KeptNames<Key, std::vector<std::string>>::Reading named;
  if (kind == DORMANT_JAVA_STUB) {
    auto name_at = read_process_value<uint64_t>(pid, word + vm.offsets.blob_name);
    auto name = name_at ? read_process_string(pid, *name_at, kMaxNameBytes) : std::nullopt;
    named.names.emplace_back();
    append_frame_text(named.names.back(), name.value_or("[unknown JVM stub]"));
    named.whole = name.has_value();
    return named;
  }
  std::vector<uint64_t> inlined;
  if (kind == DORMANT_JAVA_COMPILED) inlined = scopes(pid, vm, address, word, level);
  named.whole = kind != DORMANT_JAVA_COMPILED || !inlined.empty();
  if (inlined.empty()) inlined.push_back(word);
  for (size_t i = inlined.size(); i-- > 0;) {
    auto name = method_name(pid, vm, inlined[i]);
    named.whole = named.whole && name.has_value();
    named.names.push_back(name.value_or(kUnknownMethod) +
                          (i + 1 == inlined.size() ? suffix_of(kind, level) : "_[i]"));
  }
  return named;
}

std::vector<std::string> JavaFrameNames::names(pid_t pid, const HotSpotVm& vm, uint64_t marked,
                                               uint64_t word) {
  std::lock_guard lock(mutex_);
  return frames_.get({pid, marked, word}, [&] { return read(pid, vm, marked, word); });
}

void JavaFrameNames::remember(pid_t pid, const HotSpotVm& vm, uint64_t marked, uint64_t word) {
  std::lock_guard lock(mutex_);
  (void)frames_.get({pid, marked, word}, [&] { return read(pid, vm, marked, word); });
}

void JavaFrameNames::end_snapshot(const std::vector<pid_t>& exited) {
  std::lock_guard lock(mutex_);
  methods_.clear();
  frames_.end_snapshot(exited);
}

size_t JavaFrameNames::size() const {
  std::lock_guard lock(mutex_);
  return frames_.size();
}

}  // namespace dormant::profilers::system
