#include "profilers/system/hotspot_structs.h"

#include <array>

#include "profilers/system/process_memory.h"

namespace dormant::profilers::system {
namespace {

using Symbols = std::map<std::string, uint64_t, std::less<>>;

constexpr std::string_view kStructs = "gHotSpotVMStructs";
constexpr std::string_view kTypes = "gHotSpotVMTypes";
// The layout of an entry of each table: what each table's own symbols give.
constexpr std::array kStructLayout = {
    "gHotSpotVMStructEntryArrayStride",     "gHotSpotVMStructEntryTypeNameOffset",
    "gHotSpotVMStructEntryFieldNameOffset", "gHotSpotVMStructEntryIsStaticOffset",
    "gHotSpotVMStructEntryOffsetOffset",    "gHotSpotVMStructEntryAddressOffset"};
constexpr std::array kTypeLayout = {"gHotSpotVMTypeEntryArrayStride",
                                    "gHotSpotVMTypeEntryTypeNameOffset",
                                    "gHotSpotVMTypeEntrySizeOffset"};
// An entry's fields are found within this many bytes of its start.
constexpr uint64_t kMaxEntryBytes = 256;

std::string key(std::string_view type, std::string_view name) {
  return std::string(type) + "::" + std::string(name);
}

// The values of a table's layout symbols (each a word in libjvm's data).
template <size_t N>
Result<std::array<uint64_t, N>> read_layout(pid_t pid, const Symbols& symbols,
                                            const std::array<const char*, N>& names) {
  std::array<uint64_t, N> values{};
  for (size_t i = 0; i < N; ++i) {
    auto symbol = symbols.find(std::string_view(names[i]));
    if (symbol == symbols.end()) {
      return Error(ErrorKind::kUnavailable, std::string("libjvm exports no ") + names[i]);
    }
    auto value = read_process_value<uint64_t>(pid, symbol->second);
    if (!value) return Error(ErrorKind::kUnavailable, std::string("cannot read ") + names[i]);
    if (*value == 0 && i == 0) return Error(ErrorKind::kUnavailable, "an empty table stride");
    if (*value >= kMaxEntryBytes) {
      return Error(ErrorKind::kInvalidArgument,
                   std::string(names[i]) + " is " + std::to_string(*value) + ": not a table's");
    }
    values[i] = *value;
  }
  return values;
}

Result<uint64_t> table_address(pid_t pid, const Symbols& symbols, std::string_view name) {
  auto symbol = symbols.find(name);
  if (symbol == symbols.end()) {
    return Error(ErrorKind::kUnavailable, "libjvm exports no " + std::string(name));
  }
  auto address = read_process_value<uint64_t>(pid, symbol->second);
  if (!address || *address == 0) {
    return Error(ErrorKind::kUnavailable, "cannot read " + std::string(name));
  }
  return *address;
}

std::optional<std::string> read_name(pid_t pid, uint64_t entry, uint64_t offset) {
  auto address = read_process_value<uint64_t>(pid, entry + offset);
  if (!address) return std::nullopt;
  if (*address == 0) return std::string();
  return read_process_string(pid, *address, HotSpotStructs::kMaxNameBytes);
}

}  // namespace

const std::string_view HotSpotStructs::kSymbols[] = {
    kStructs,         kTypes,           kStructLayout[0], kStructLayout[1],
    kStructLayout[2], kStructLayout[3], kStructLayout[4], kStructLayout[5],
    kTypeLayout[0],   kTypeLayout[1],   kTypeLayout[2]};
const size_t HotSpotStructs::kSymbolCount = std::size(HotSpotStructs::kSymbols);

Result<HotSpotStructs> HotSpotStructs::read(pid_t pid, const Symbols& symbols) {
  auto struct_layout = read_layout(pid, symbols, kStructLayout);
  if (!struct_layout) return struct_layout.error();
  auto type_layout = read_layout(pid, symbols, kTypeLayout);
  if (!type_layout) return type_layout.error();
  auto structs = table_address(pid, symbols, kStructs);
  if (!structs) return structs.error();
  auto types = table_address(pid, symbols, kTypes);
  if (!types) return types.error();

  HotSpotStructs read;
  auto [stride, type_name, field_name, is_static, offset, address] = *struct_layout;
  size_t entries = 0;
  for (uint64_t entry = *structs;; entry += stride) {
    if (++entries > kMaxEntries) {
      return Error(ErrorKind::kInvalidArgument, "gHotSpotVMStructs has no end within " +
                                                    std::to_string(kMaxEntries) + " entries");
    }
    auto type = read_name(pid, entry, type_name);
    if (!type) return Error(ErrorKind::kUnavailable, "cannot read gHotSpotVMStructs");
    if (type->empty()) break;  // the table's end
    auto name = read_name(pid, entry, field_name);
    auto static_field = read_process_value<int32_t>(pid, entry + is_static);
    auto value =
        read_process_value<uint64_t>(pid, entry + (static_field.value_or(0) ? address : offset));
    if (!name || !static_field || !value) {
      return Error(ErrorKind::kUnavailable, "cannot read gHotSpotVMStructs");
    }
    read.add_field(*type, *name, *value);
  }
  auto [type_stride, type_type_name, type_size] = *type_layout;
  entries = 0;
  for (uint64_t entry = *types;; entry += type_stride) {
    if (++entries > kMaxEntries) {
      return Error(ErrorKind::kInvalidArgument,
                   "gHotSpotVMTypes has no end within " + std::to_string(kMaxEntries) + " entries");
    }
    auto type = read_name(pid, entry, type_type_name);
    if (!type) return Error(ErrorKind::kUnavailable, "cannot read gHotSpotVMTypes");
    if (type->empty()) break;
    auto size = read_process_value<uint64_t>(pid, entry + type_size);
    if (!size) return Error(ErrorKind::kUnavailable, "cannot read gHotSpotVMTypes");
    read.add_type(*type, *size);
  }
  return read;
}

std::optional<uint64_t> HotSpotStructs::field(std::string_view type, std::string_view name) const {
  auto found = fields_.find(key(type, name));
  return found == fields_.end() ? std::nullopt : std::optional(found->second);
}

std::optional<uint64_t> HotSpotStructs::type_size(std::string_view type) const {
  auto found = sizes_.find(type);
  return found == sizes_.end() ? std::nullopt : std::optional(found->second);
}

void HotSpotStructs::add_field(std::string_view type, std::string_view name,
                               uint64_t offset_or_address) {
  fields_.insert_or_assign(key(type, name), offset_or_address);
}

void HotSpotStructs::add_type(std::string_view type, uint64_t size) {
  sizes_.insert_or_assign(std::string(type), size);
}

}  // namespace dormant::profilers::system
