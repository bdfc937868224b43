#include "profilers/system/v8_runtime.h"

#include <array>
#include <string_view>

#include <unistd.h>

#include "profilers/system/elf_file.h"
#include "profilers/system/unwind_table.h"

namespace dormant::profilers::system {
namespace {

// Each constant we read, and where it goes.
struct Constant {
  std::string_view symbol;
  void (*store)(V8Layout&, int64_t);
};

#define DORMANT_V8_CONSTANT(symbol, field)                       \
  Constant {                                                     \
    "v8dbg_" symbol, [](V8Layout& layout, int64_t value) {       \
      layout.field = static_cast<decltype(layout.field)>(value); \
    }                                                            \
  }

const std::array kConstants = {
    DORMANT_V8_CONSTANT("off_fp_function", fp_function),
    DORMANT_V8_CONSTANT("off_fp_context", fp_context),
    DORMANT_V8_CONSTANT("HeapObjectTag", heap_object_tag),
    DORMANT_V8_CONSTANT("HeapObjectTagMask", heap_object_tag_mask),
    // The Smi tag's size, then the shift above it, added to it (in this order).
    DORMANT_V8_CONSTANT("SmiValueShift", smi_shift),
    Constant{
        "v8dbg_SmiShiftSize",
        [](V8Layout& layout, int64_t value) { layout.smi_shift += static_cast<uint32_t>(value); }},
    DORMANT_V8_CONSTANT("class_HeapObject__map__Map", object_map),
    DORMANT_V8_CONSTANT("class_Map__instance_type__uint16_t", map_instance_type),
    DORMANT_V8_CONSTANT("FirstNonstringType", first_nonstring_type),
    DORMANT_V8_CONSTANT("StringRepresentationMask", string_representation_mask),
    DORMANT_V8_CONSTANT("StringEncodingMask", string_encoding_mask),
    DORMANT_V8_CONSTANT("SeqStringTag", seq_string_tag),
    DORMANT_V8_CONSTANT("ConsStringTag", cons_string_tag),
    DORMANT_V8_CONSTANT("ThinStringTag", thin_string_tag),
    DORMANT_V8_CONSTANT("OneByteStringTag", one_byte_string_tag),
    DORMANT_V8_CONSTANT("class_String__length__int32_t", string_length),
    DORMANT_V8_CONSTANT("class_SeqOneByteString__chars__char", seq_one_byte_chars),
    DORMANT_V8_CONSTANT("class_SeqTwoByteString__chars__char", seq_two_byte_chars),
    DORMANT_V8_CONSTANT("class_ConsString__first__String", cons_first),
    DORMANT_V8_CONSTANT("class_ConsString__second__String", cons_second),
    DORMANT_V8_CONSTANT("class_ThinString__actual__String", thin_actual),
    DORMANT_V8_CONSTANT("type_JSFunction__JS_FUNCTION_TYPE", js_function_type),
    DORMANT_V8_CONSTANT("type_ScopeInfo__SCOPE_INFO_TYPE", scope_info_type),
    DORMANT_V8_CONSTANT("type_Script__SCRIPT_TYPE", script_type),
    DORMANT_V8_CONSTANT("class_JSFunction__shared__SharedFunctionInfo", js_function_shared),
    DORMANT_V8_CONSTANT("class_SharedFunctionInfo__name_or_scope_info__Object",
                        shared_name_or_scope_info),
    DORMANT_V8_CONSTANT("class_SharedFunctionInfo__script_or_debug_info__HeapObject",
                        shared_script_or_debug_info),
    DORMANT_V8_CONSTANT("class_Script__name__Object", script_name),
    DORMANT_V8_CONSTANT("class_Script__source__Object", script_source),
};

#undef DORMANT_V8_CONSTANT

}  // namespace

bool V8Binaries::named_like_v8(const std::string& path) {
  std::string_view name(path);
  name.remove_prefix(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
  return name == "node" || name == "nodejs" || name.starts_with("libnode.so");
}

Result<V8Layout> read_v8_layout(const std::string& path, const std::string& name) {
  auto file = open_elf_file(path, name, "its JavaScript frames are not named");
  if (!file) return file.error();
  auto segments = LoadSegments::of(file->elf.get(), name);
  if (!segments) return segments.error();
  std::vector<std::string_view> wanted;
  for (const Constant& constant : kConstants) wanted.push_back(constant.symbol);
  auto symbols = dynamic_symbols(file->elf.get(), wanted);
  V8Layout layout;
  for (const Constant& constant : kConstants) {
    auto symbol = symbols.find(constant.symbol);
    if (symbol == symbols.end()) {
      return Error(ErrorKind::kUnavailable,
                   name + " exports no " + std::string(constant.symbol) + ": a V8 we cannot read");
    }
    // A constant of 0 is in .bss: exported, with no bytes in the file.
    int32_t value = 0;
    auto at = segments->file_offset(symbol->second, sizeof(value));
    if (at &&
        ::pread(file->fd.get(), &value, sizeof(value), static_cast<off_t>(*at)) != sizeof(value)) {
      return Error::from_errno("reading " + std::string(constant.symbol) + " of " + name);
    }
    constant.store(layout, value);
  }
  if (layout.smi_shift == 0 || layout.smi_shift >= 64 || layout.heap_object_tag_mask == 0) {
    return Error(ErrorKind::kInvalidArgument, name + ": V8 constants that make no sense");
  }
  return layout;
}

Result<std::optional<V8Layout>> V8Binaries::find(pid_t pid, const std::vector<Mapping>& mappings) {
  for (const Mapping& mapping : mappings) {
    if (!mapping.is_file() || !named_like_v8(mapping.path)) continue;
    auto [found, added] = binaries_.try_emplace(FileKey{mapping.device, mapping.inode},
                                                Error(ErrorKind::kUnavailable, "not read"));
    if (added) {
      for (const std::string& path : mapped_file_paths(pid, mapping)) {
        found->second = read_v8_layout(path, mapping.path);
        if (found->second) break;
      }
    }
    if (!found->second) return found->second.error();
    return std::optional(*found->second);
  }
  return std::optional<V8Layout>();
}

}  // namespace dormant::profilers::system
