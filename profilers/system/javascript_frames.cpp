#include "profilers/system/javascript_frames.h"

#include <algorithm>

#include "profilers/system/frame_text.h"
#include "profilers/system/process_memory.h"

namespace dormant::profilers::system {
namespace {

constexpr int kMaxStringParts = 16;            // cons strings followed
constexpr int64_t kMaxLocals = 1 << 16;        // a ScopeInfo's context locals
constexpr size_t kScopeInfoSlotsSearched = 8;  // for the function variable, and four after it
constexpr int64_t kInlinedLocalNames = 75;     // past it, the names are one hash table

class V8Reader {
 public:
  V8Reader(pid_t pid, const V8Layout& layout) : pid_(pid), layout_(layout) {}

  uint64_t untagged(uint64_t object) const { return object - layout_.heap_object_tag; }
  bool read(uint64_t address, void* into, size_t size) const {
    return read_process_memory(pid_, address, into, size);
  }
  bool is_heap_object(uint64_t word) const {
    return (word & layout_.heap_object_tag_mask) == layout_.heap_object_tag;
  }
  std::optional<uint64_t> field(uint64_t object, uint64_t offset) const {
    return read_process_value<uint64_t>(pid_, object - layout_.heap_object_tag + offset);
  }
  std::optional<uint32_t> type_of(uint64_t object) const {
    if (!is_heap_object(object)) return std::nullopt;
    auto map = field(object, layout_.object_map);
    if (!map || !is_heap_object(*map)) return std::nullopt;
    auto type = read_process_value<uint16_t>(
        pid_, *map - layout_.heap_object_tag + layout_.map_instance_type);
    return type ? std::optional<uint32_t>(*type) : std::nullopt;
  }
  bool is_string(uint64_t object) const {
    auto type = type_of(object);
    return type && *type < layout_.first_nonstring_type;
  }
  std::optional<int64_t> smi(uint64_t word) const {
    if (is_heap_object(word)) return std::nullopt;
    return static_cast<int64_t>(word) >> layout_.smi_shift;
  }

  // A string's characters (one-byte, or two-byte as UTF-8 of its BMP code points) within
  // `max_bytes`; nullopt where it is not a string we read (external, sliced) or is longer.
  std::optional<std::string> string(uint64_t object, size_t max_bytes, int depth = 0) const {
    auto type = type_of(object);
    if (!type || *type >= layout_.first_nonstring_type || depth > kMaxStringParts) {
      return std::nullopt;
    }
    auto length =
        read_process_value<int32_t>(pid_, object - layout_.heap_object_tag + layout_.string_length);
    if (!length || *length < 0 || static_cast<size_t>(*length) > max_bytes) return std::nullopt;
    uint32_t representation = *type & layout_.string_representation_mask;
    uint64_t base = object - layout_.heap_object_tag;
    if (representation == layout_.cons_string_tag) {
      auto first = field(object, layout_.cons_first);
      auto second = field(object, layout_.cons_second);
      auto head = first ? string(*first, max_bytes, depth + 1) : std::nullopt;
      if (!head) return std::nullopt;
      auto tail = second ? string(*second, max_bytes - head->size(), depth + 1) : std::nullopt;
      if (!tail) return std::nullopt;
      return *head + *tail;
    }
    if (representation == layout_.thin_string_tag) {
      auto actual = field(object, layout_.thin_actual);
      return actual ? string(*actual, max_bytes, depth + 1) : std::nullopt;
    }
    if (representation != layout_.seq_string_tag) return std::nullopt;
    if ((*type & layout_.string_encoding_mask) == layout_.one_byte_string_tag) {
      std::string text(static_cast<size_t>(*length), '\0');
      if (!read_process_memory(pid_, base + layout_.seq_one_byte_chars, text.data(), text.size())) {
        return std::nullopt;
      }
      return text;
    }
    std::vector<uint16_t> units(static_cast<size_t>(*length));
    if (!read_process_memory(pid_, base + layout_.seq_two_byte_chars, units.data(),
                             units.size() * 2)) {
      return std::nullopt;
    }
    std::string text;
    for (uint16_t unit : units) append_utf8(text, unit);
    return text;
  }

  // The newlines among a string's first `chars` characters (its whole length at most); nullopt
  // where it is not a string we read.
  std::optional<int64_t> newlines(uint64_t object, int64_t chars, int depth = 0) const {
    auto type = type_of(object);
    if (!type || *type >= layout_.first_nonstring_type || depth > kMaxStringParts) {
      return std::nullopt;
    }
    auto length = read_process_value<int32_t>(pid_, untagged(object) + layout_.string_length);
    if (!length || *length < 0) return std::nullopt;
    chars = std::min<int64_t>(chars, *length);
    uint32_t representation = *type & layout_.string_representation_mask;
    if (representation == layout_.cons_string_tag) {
      auto first = field(object, layout_.cons_first);
      auto second = field(object, layout_.cons_second);
      auto first_length =
          first ? read_process_value<int32_t>(pid_, untagged(*first) + layout_.string_length)
                : std::nullopt;
      if (!first_length || !second) return std::nullopt;
      auto head = newlines(*first, chars, depth + 1);
      if (!head || chars <= *first_length) return head;
      auto tail = newlines(*second, chars - *first_length, depth + 1);
      return tail ? std::optional(*head + *tail) : std::nullopt;
    }
    if (representation == layout_.thin_string_tag) {
      auto actual = field(object, layout_.thin_actual);
      return actual ? newlines(*actual, chars, depth + 1) : std::nullopt;
    }
    if (representation != layout_.seq_string_tag) return std::nullopt;
    bool one_byte = (*type & layout_.string_encoding_mask) == layout_.one_byte_string_tag;
    uint64_t at =
        untagged(object) + (one_byte ? layout_.seq_one_byte_chars : layout_.seq_two_byte_chars);
    int64_t found = 0;
    uint8_t chunk[16 * 1024];
    size_t unit = one_byte ? 1 : 2;
    for (int64_t done = 0; done < chars;) {
      size_t take = std::min<size_t>(sizeof(chunk) / unit, static_cast<size_t>(chars - done));
      if (!read(at + static_cast<uint64_t>(done) * unit, chunk, take * unit)) return std::nullopt;
      for (size_t i = 0; i < take; ++i) {
        found += one_byte ? chunk[i] == '\n' : (chunk[2 * i] == '\n' && chunk[2 * i + 1] == 0);
      }
      done += static_cast<int64_t>(take);
    }
    return found;
  }

 private:
  pid_t pid_;
  const V8Layout& layout_;
};

// What a ScopeInfo says of its function. After its flags, parameter count and context local
// count, and the locals' names and properties, come the function variable (its name, empty when
// it has none, and a slot index), the name V8 inferred for it (or undefined), then its start and
// end in the script's source (V8 11: these are where node 20 keeps names).
struct ScopeFacts {
  std::string name;
  std::optional<int64_t> start;
};

ScopeFacts read_scope_info(const V8Reader& v8, uint64_t scope_info) {
  ScopeFacts facts;
  constexpr uint64_t kFirstField = 8;  // after the map
  uint64_t counts[3] = {};             // flags, parameters, context locals
  if (!v8.read(v8.untagged(scope_info) + kFirstField, counts, sizeof(counts))) return facts;
  auto locals = v8.smi(counts[2]);
  if (!locals || *locals < 0 || *locals > kMaxLocals) return facts;
  int64_t names = *locals < kInlinedLocalNames ? *locals : 1;
  uint64_t slot = v8.untagged(scope_info) + kFirstField + sizeof(counts) +
                  8 * static_cast<uint64_t>(names + *locals);
  uint64_t slots[kScopeInfoSlotsSearched] = {};
  if (!v8.read(slot, slots, sizeof(slots))) return facts;
  size_t own = 0;  // the function variable's name
  while (own < kScopeInfoSlotsSearched && !v8.is_heap_object(slots[own])) ++own;
  if (own + 4 >= kScopeInfoSlotsSearched || !v8.is_string(slots[own])) return facts;
  facts.name = v8.string(slots[own], JavaScriptFrameNames::kMaxNameBytes).value_or("");
  if (facts.name.empty() && v8.is_string(slots[own + 2])) {
    facts.name = v8.string(slots[own + 2], JavaScriptFrameNames::kMaxNameBytes).value_or("");
  }
  auto start = v8.smi(slots[own + 3]);
  auto end = v8.smi(slots[own + 4]);
  if (start && end && *start >= 0 && *start <= *end) facts.start = start;
  return facts;
}

}  // namespace

std::optional<std::string> read_javascript_name(pid_t pid, const V8Layout& layout,
                                                uint64_t function) {
  V8Reader v8(pid, layout);
  auto type = v8.type_of(function);
  if (!type || *type != layout.js_function_type) return std::nullopt;
  auto shared = v8.field(function, layout.js_function_shared);
  if (!shared || !v8.is_heap_object(*shared)) return std::nullopt;
  auto name_or_scope = v8.field(*shared, layout.shared_name_or_scope_info);
  if (!name_or_scope) return std::nullopt;
  std::string name;
  std::optional<int64_t> start;
  if (v8.is_string(*name_or_scope)) {
    name = v8.string(*name_or_scope, JavaScriptFrameNames::kMaxNameBytes).value_or("");
  } else if (v8.type_of(*name_or_scope) == layout.scope_info_type) {
    ScopeFacts facts = read_scope_info(v8, *name_or_scope);
    name = std::move(facts.name);
    start = facts.start;
  }
  std::string text = "JS:" + (name.empty() ? std::string("(anonymous)") : name);
  auto script = v8.field(*shared, layout.shared_script_or_debug_info);
  if (script && v8.type_of(*script) == layout.script_type) {
    auto file_object = v8.field(*script, layout.script_name);
    auto file =
        file_object ? v8.string(*file_object, JavaScriptFrameNames::kMaxNameBytes) : std::nullopt;
    if (file) text += " " + *file;
    auto source = v8.field(*script, layout.script_source);
    auto lines = file && source && start && *start <= JavaScriptFrameNames::kMaxSourceBytes
                     ? v8.newlines(*source, *start)
                     : std::nullopt;
    if (lines) text += ":" + std::to_string(*lines + 1);
  }
  clean_frame_text(text);
  return text;
}

namespace {

KeptNames<std::pair<pid_t, uint64_t>, std::optional<std::string>>::Reading read_name(
    pid_t pid, const V8Layout& layout, uint64_t function) {
  auto name = read_javascript_name(pid, layout, function);
  bool whole = name.has_value();
  return {std::move(name), whole};
}

}  // namespace

std::optional<std::string> JavaScriptFrameNames::name(pid_t pid, const V8Layout& layout,
                                                      uint64_t function) {
  std::lock_guard lock(mutex_);
  return frames_.get({pid, function}, [&] { return read_name(pid, layout, function); });
}

void JavaScriptFrameNames::remember(pid_t pid, const V8Layout& layout, uint64_t function) {
  std::lock_guard lock(mutex_);
  (void)frames_.get({pid, function}, [&] { return read_name(pid, layout, function); });
}

void JavaScriptFrameNames::end_snapshot(const std::vector<pid_t>& exited) {
  std::lock_guard lock(mutex_);
  frames_.end_snapshot(exited);
}

}  // namespace dormant::profilers::system
