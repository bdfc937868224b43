#include "profilers/system/python_frames.h"

#include <algorithm>
#include <optional>

#include <sys/uio.h>

#include "profilers/system/frame_text.h"
#include "profilers/system/process_memory.h"

namespace dormant::profilers::system {
namespace {

constexpr uint64_t kEntry = 1;
constexpr uint64_t kNeverChecked = UINT64_MAX;
constexpr std::string_view kEvaluationLoop = "_PyEval_EvalFrameDefault";
const std::string kUnknown = "[unknown Python frame]_[p]";

// A compact str object's text as UTF-8, cut at kMaxNameBytes characters; nullopt where it is not
// one we can read.
std::optional<std::string> read_string(pid_t pid, const PythonOffsets& offsets, uint64_t object) {
  if (object == 0) return std::nullopt;
  auto length = read_process_value<int64_t>(pid, object + offsets.unicode_length);
  auto state = read_process_value<uint32_t>(pid, object + offsets.unicode_state);
  if (!length || !state || *length < 0) return std::nullopt;
  uint32_t kind = (*state >> 2) & 7;
  bool compact = (*state >> 5) & 1;
  bool ascii = (*state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return std::nullopt;
  size_t count = std::min<size_t>(static_cast<size_t>(*length), PythonFrameNames::kMaxNameBytes);
  uint64_t data = object + (ascii ? offsets.unicode_ascii_data : offsets.unicode_compact_data);
  std::string raw(count * kind, '\0');
  if (count > 0 && !read_process_memory(pid, data, raw.data(), raw.size())) return std::nullopt;
  if (ascii) return raw;
  std::string text;
  for (size_t i = 0; i < count; ++i) {
    uint32_t code_point = 0;
    for (uint32_t byte = 0; byte < kind; ++byte) {
      code_point |= static_cast<uint32_t>(static_cast<unsigned char>(raw[i * kind + byte]))
                    << (8 * byte);
    }
    append_utf8(text, code_point);
  }
  return text;
}

std::string without_separators(std::string text) {
  clean_frame_text(text);
  return text;
}

// What names a code object, read at once; nullopt where the process's memory cannot be read.
std::optional<PythonFrameNames::CodeIdentity> read_identity(pid_t pid, const PythonOffsets& offsets,
                                                            uint64_t code) {
  PythonFrameNames::CodeIdentity identity;
  uint16_t function =
      offsets.code_qualname >= 0 ? static_cast<uint16_t>(offsets.code_qualname) : offsets.code_name;
  iovec local[] = {
      {&identity.type, 8}, {&identity.function, 8}, {&identity.file, 8}, {&identity.line, 4}};
  iovec remote[] = {{reinterpret_cast<void*>(code + offsets.object_type), 8},
                    {reinterpret_cast<void*>(code + function), 8},
                    {reinterpret_cast<void*>(code + offsets.code_filename), 8},
                    {reinterpret_cast<void*>(code + offsets.code_first_line), 4}};
  if (::process_vm_readv(pid, local, 4, remote, 4, 0) != 28) return std::nullopt;
  return identity;
}

}  // namespace

void PythonFrameNames::remember(pid_t pid, const PythonOffsets& offsets, uint64_t code_type,
                                uint64_t code) {
  std::lock_guard lock(mutex_);
  (void)name(pid, offsets, code_type, code, kNeverChecked);  // read now, checked at its use
}

size_t PythonFrameNames::size() const {
  std::lock_guard lock(mutex_);
  return names_.size();
}

const std::string& PythonFrameNames::name(pid_t pid, const PythonOffsets& offsets,
                                          uint64_t code_type, uint64_t code, uint64_t checked_in) {
  auto known = names_.find({pid, code});
  if (known != names_.end() && known->second.checked_in == snapshot_) return known->second.text;
  auto identity = read_identity(pid, offsets, code);
  if (known != names_.end() && known->second.read_from) {
    // Kept while its code object is there, or while no other code object took its place.
    if (!identity || *identity == *known->second.read_from || identity->type != code_type) {
      known->second.checked_in = checked_in;
      return known->second.text;
    }
  }
  Name name{kUnknown, std::nullopt, checked_in};
  if (identity && identity->type == code_type) {
    auto function_name = read_string(pid, offsets, identity->function);
    auto file_name = read_string(pid, offsets, identity->file);
    if (function_name && file_name) {
      name.text = without_separators(*function_name + " (" + *file_name + ":" +
                                     std::to_string(identity->line) + ")_[p]");
      name.read_from = identity;
    }
  }
  if (known != names_.end()) {
    known->second = std::move(name);
    return known->second.text;
  }
  if (names_.size() >= kMaxNames) return kUnknown;  // not kept: read again when met again
  return names_.emplace(std::make_pair(pid, code), std::move(name)).first->second.text;
}

std::vector<std::vector<std::string>> PythonFrameNames::groups(pid_t pid,
                                                               const PythonOffsets& offsets,
                                                               uint64_t code_type,
                                                               std::span<const uint64_t> frames) {
  std::lock_guard lock(mutex_);
  std::vector<std::vector<std::string>> groups(1);
  for (size_t i = 0; i + 1 < frames.size(); i += 2) {
    uint64_t code = frames[i] & ~kEntry;
    groups.back().push_back(name(pid, offsets, code_type, code, snapshot_));
    if ((frames[i] & kEntry) != 0) groups.emplace_back();
  }
  if (groups.back().empty()) groups.pop_back();
  for (auto& group : groups) std::reverse(group.begin(), group.end());
  return groups;
}

void PythonFrameNames::end_snapshot(const std::vector<pid_t>& exited) {
  std::lock_guard lock(mutex_);
  for (pid_t pid : exited) {
    names_.erase(names_.lower_bound({pid, 0}), names_.lower_bound({pid + 1, 0}));
  }
  ++snapshot_;
}

size_t merge_python_frames(std::vector<std::string>& frames, size_t user_begin, size_t user_end,
                           std::vector<std::vector<std::string>> groups) {
  std::vector<size_t> loops;  // root first
  for (size_t i = user_begin; i < user_end; ++i) {
    if (frames[i] == kEvaluationLoop) loops.push_back(i);
  }
  std::vector<std::string> merged(frames.begin(), frames.begin() + user_begin);
  size_t next_loop = 0;
  // Groups innermost loop first; the loop frames root first: the last loop gets group 0, and the
  // groups past the loops found go before the first.
  size_t unplaced = groups.size() > loops.size() ? groups.size() - loops.size() : 0;
  auto group_of_loop = [&](size_t loop) -> std::vector<std::string>* {
    size_t from_innermost = loops.size() - 1 - loop;
    return from_innermost < groups.size() ? &groups[from_innermost] : nullptr;
  };
  auto place_unplaced = [&] {
    for (size_t k = groups.size(); k-- > groups.size() - unplaced;) {
      merged.insert(merged.end(), groups[k].begin(), groups[k].end());
    }
    unplaced = 0;
  };
  if (loops.empty()) place_unplaced();
  for (size_t i = user_begin; i < user_end; ++i) {
    if (next_loop < loops.size() && i == loops[next_loop]) {
      if (next_loop == 0) place_unplaced();
      std::vector<std::string>* group = group_of_loop(next_loop++);
      if (group != nullptr) {
        merged.insert(merged.end(), group->begin(), group->end());
        continue;
      }
    }
    merged.push_back(frames[i] + "_[pn]");
  }
  size_t end = merged.size();
  merged.insert(merged.end(), frames.begin() + user_end, frames.end());
  frames = std::move(merged);
  return end;
}

}  // namespace dormant::profilers::system
